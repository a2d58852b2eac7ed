//! Result conversion: what a `tools/call` result, or a JSON-RPC error, becomes for a model.
//!
//! Content blocks become text in order (what a model cannot read here, a placeholder), each
//! cleaned on its own and the whole capped; `structuredContent` is checked against the tool's
//! output schema before anything of it is shown.

use serde_json::Value;

use super::CheckedTool;
use crate::policy::{MAX_DESCRIPTION_CHARS, MAX_ERROR_CHARS, MAX_RESULT_CHARS};
use crate::text::{Escape, Scrubber, Shown, Untrusted, show_joined};

/// What a `tools/call` result becomes for a model.
pub(crate) enum Outcome {
    /// The tool's text.
    Text(Shown),
    /// The tool reported an error (`isError`), or its result broke its own schema.
    ToolFailed(Shown),
}

/// Converts a `tools/call` result: each content block one piece, in order, joined by a blank
/// line; a result with no blocks but `structuredContent` gives that JSON. Calls reach it
/// through [`convert_result`](super::convert_result), which runs it off the runtime's workers.
pub(crate) fn convert_now(result: Untrusted<Value>, tool: &CheckedTool) -> Outcome {
    let mut result = result.into_for_check();
    let blocks = match result.get_mut("content") {
        Some(Value::Array(blocks)) => std::mem::take(blocks),
        _ => Vec::new(),
    };
    let mut pieces: Vec<String> = blocks.into_iter().map(block_text).collect();
    let structured = result.get("structuredContent");
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if let (false, Some(structured)) = (is_error, structured)
        && let Err(why) = tool.check_structured(structured)
    {
        return Outcome::ToolFailed(why);
    }
    if let (true, Some(structured)) = (pieces.is_empty(), structured) {
        pieces.push(structured.to_string());
    }
    let text = show_joined(&tool.scrubber, pieces, "\n\n", MAX_RESULT_CHARS);
    if is_error {
        Outcome::ToolFailed(text)
    } else {
        Outcome::Text(text)
    }
}

/// What a content block shows: its text, moved out as results can be megabytes, or a
/// placeholder for what a model cannot read here.
fn block_text(mut block: Value) -> String {
    fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
        v.get(key).and_then(Value::as_str)
    }
    fn take_str(v: &mut Value, key: &str) -> Option<String> {
        match v.get_mut(key).map(Value::take) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }
    let mime = |v: &Value, default: &str| str_of(v, "mimeType").unwrap_or(default).to_owned();
    match block.get("type").and_then(Value::as_str) {
        Some("text") => take_str(&mut block, "text").unwrap_or_default(),
        Some("image") => format!("[image omitted: {}]", mime(&block, "unknown")),
        Some("audio") => format!("[audio omitted: {}]", mime(&block, "unknown")),
        Some("resource_link") => {
            format!("[resource: {}]", str_of(&block, "uri").unwrap_or_default())
        }
        Some("resource") => {
            let mut resource = block
                .get_mut("resource")
                .map(Value::take)
                .unwrap_or_default();
            take_str(&mut resource, "text").unwrap_or_else(|| {
                let mime = mime(&resource, "application/octet-stream");
                format!("[resource omitted: {mime}]")
            })
        }
        Some(other) => format!("[{} omitted]", Escape::ascii(other)),
        None => "[content omitted]".to_owned(),
    }
}

/// The text of a JSON-RPC error a server answered with, its message scrubbed by `scrubber`.
pub(crate) fn rpc_error_text(code: i64, message: &Untrusted<String>, scrubber: &Scrubber) -> Shown {
    let message = message.show(scrubber, MAX_DESCRIPTION_CHARS);
    let words = "the server answered with error ".into();
    Shown::concat(
        [words, code.into(), ": ".into(), (&message).into()],
        MAX_ERROR_CHARS,
    )
}
