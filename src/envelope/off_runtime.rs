//! The checks of a call, run where they cannot stall the runtime.
//!
//! Checking arguments or a result against a server's schema is CPU work bounded by
//! [`MAX_VALIDATION_WORK`](crate::policy::MAX_VALIDATION_WORK), far more per byte than
//! reading the JSON was. On a runtime worker it would hold up every other call of the Host, so
//! a large check runs on the blocking pool while the call awaits it, inside the call's
//! deadline. Converting a result's text (scrubbing, cleaning, cutting) is linear, one pass
//! each, like the parsing that read the answer on the worker: it stays there unless the
//! result also has `structuredContent` to check. Handing a megabyte of text to the pool cost
//! more than converting it (two thread wake-ups, and the memory freed on another thread). A call dropped (or
//! past its deadline) before its check starts never starts it; one already running ends
//! within its bounded work and its outcome is thrown away.
//!
//! A small check (at most [`MAX_INLINE_CHECK_WORK`], with its schema already compiled) runs
//! where the call is: the hand-off to the pool and back would cost more than the check.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CheckedTool, Outcome, convert_now};
use crate::policy::{MAX_ERROR_CHARS, MAX_INLINE_CHECK_WORK};
use crate::text::{Shown, Untrusted, log_safe, show_owned};

/// Checks a model's arguments against `tool`'s input schema, and gives them back to be sent.
pub(crate) async fn check_arguments(
    tool: &Arc<CheckedTool>,
    arguments: Value,
) -> Result<Value, Shown> {
    let small = tool.input_validator.get().is_some() && is_small(&arguments, tool.input_expansion);
    let checked = Arc::clone(tool);
    let outcome = run(tool, small, move || {
        match checked.check_arguments(&arguments) {
            Ok(()) => Ok(arguments),
            // A model often writes null for an optional parameter it means to leave out. Where
            // the schema refuses that null and the arguments pass without it, they are sent
            // without it; anything else keeps the first refusal.
            Err(refusal) => match checked.without_optional_nulls(&arguments) {
                Some(trimmed) if checked.check_arguments(&trimmed).is_ok() => Ok(trimmed),
                _ => Err(refusal),
            },
        }
    });
    outcome.await.unwrap_or_else(|| {
        let text = format!(
            "the arguments could not be checked against the input schema of {}; nothing was sent",
            tool.name
        );
        Err(show_owned(&tool.scrubber, text, MAX_ERROR_CHARS))
    })
}

/// Converts a `tools/call` result of `tool` for a model, its `structuredContent` checked.
pub(crate) async fn convert_result(result: Untrusted<Value>, tool: &Arc<CheckedTool>) -> Outcome {
    let small = match (&tool.output_schema, result.peek().get("structuredContent")) {
        (Some(_), Some(structured)) => {
            tool.output_validator.get().is_some() && is_small(structured, tool.output_expansion)
        }
        _ => true,
    };
    let checked = Arc::clone(tool);
    let outcome = run(tool, small, move || convert_now(result, &checked));
    outcome.await.unwrap_or_else(|| {
        Outcome::ToolFailed(Shown::ours(
            "the result could not be checked against the tool's outputSchema; it is not shown",
        ))
    })
}

/// Whether checking `instance` against a schema of `expansion` nodes is at most
/// [`MAX_INLINE_CHECK_WORK`]: each value costs the expansion, each byte of a string or key
/// one. Counted without recursion, and only until the limit is passed.
pub(super) fn is_small(instance: &Value, expansion: u64) -> bool {
    let per_value = expansion.max(1);
    let mut work: u64 = 0;
    let mut pending = vec![instance];
    while let Some(value) = pending.pop() {
        work = work.saturating_add(per_value);
        match value {
            Value::String(text) => work = work.saturating_add(text.len() as u64),
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => {
                for (key, value) in map {
                    work = work.saturating_add(key.len() as u64);
                    pending.push(value);
                }
            }
            _ => {}
        }
        if work > MAX_INLINE_CHECK_WORK {
            return false;
        }
    }
    true
}

/// Runs `work` in place if it is `small`, else on the blocking pool; `None` when it failed (a
/// bug of the validator).
async fn run<T: Send + 'static>(
    tool: &CheckedTool,
    small: bool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    if small {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).ok();
    }
    // Tells the blocking work its call is gone when the call's future is dropped.
    let dropped = CancellationToken::new();
    let _stop = dropped.clone().drop_guard();
    let name = log_safe(&tool.name).to_string();
    let task = tokio::task::spawn_blocking(move || {
        // The pool may start this after the call is gone: then there is no one to answer.
        if dropped.is_cancelled() {
            tracing::debug!(tool = %name, "a check was not started: its call was dropped");
            return None;
        }
        Some(work())
    });
    task.await.ok().flatten()
}
