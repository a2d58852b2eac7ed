//! What the server writes to the audit trail: one line per call and one per refusal, and
//! which outcome each call had. The line's format and where it goes are the gateway's
//! (`crate::gateway`); deciding what happened is the server's, since only it saw the call.
//!
//! A call's line names the namespace and tool its arguments named, whatever the answer, and
//! the hash of the arguments of a `call_dynamic_tool` (a listing has none: its line is the
//! one whose `args_sha256` is null). Its outcome is `denied` whenever the policy does not let
//! the caller use what it named, even though the caller reads the error an unknown tool gets:
//! the trail says what happened, the caller learns nothing.

use std::time::Duration;

use runvil_plugin::ToolError;
use serde_json::{Map, Value};

use crate::gateway::{AuditLine, Identity, Outcome, Policy, args_sha256};

/// The offered tool that calls a server's tool (the other lists them).
const CALL_TOOL: &str = "call_dynamic_tool";

/// What a call's line says of it before it ends.
pub(crate) struct Facts {
    identity: String,
    namespace: Option<String>,
    tool: Option<String>,
    args_sha256: Option<String>,
    /// Whether the policy denies what the arguments name.
    pub(crate) denied: bool,
}

impl Facts {
    /// The facts of a call of the offered tool `offered` with `arguments`, by `identity`.
    pub(crate) fn of(
        identity: &Identity,
        policy: &Policy,
        offered: &str,
        arguments: &Map<String, Value>,
    ) -> Self {
        let text = |key| arguments.get(key).and_then(Value::as_str);
        let (namespace, tool) = (text("namespace"), text("toolName"));
        let denied = match (namespace, tool) {
            // A refusal is logged by the policy, with its reason.
            (Some(namespace), Some(tool)) => !policy.allows_call(identity, namespace, tool),
            (Some(namespace), None) => !policy.allows_listing(identity, namespace),
            (None, _) => false,
        };
        Self {
            identity: identity.label(),
            namespace: namespace.map(str::to_owned),
            tool: tool.map(str::to_owned),
            args_sha256: (offered == CALL_TOOL).then(|| args_sha256(arguments.get("arguments"))),
            denied,
        }
    }

    /// A call to a tool the server does not offer.
    pub(crate) fn unknown(identity: &Identity) -> Self {
        Self {
            identity: identity.label(),
            namespace: None,
            tool: None,
            args_sha256: None,
            denied: false,
        }
    }

    /// The line of the call, ended as `ended` after `took`.
    pub(crate) fn line(self, ended: &Ended, took: Duration) -> AuditLine {
        let (outcome, result_bytes) = match ended {
            _ if self.denied && !matches!(ended, Ended::Cancelled | Ended::TimedOut) => {
                (Outcome::Denied, None)
            }
            Ended::Answered(Ok(text)) => (Outcome::Ok, Some(text.len() as u64)),
            Ended::Answered(Err(ToolError::Backend(text))) => {
                (Outcome::ToolError, Some(text.len() as u64))
            }
            Ended::Answered(Err(ToolError::Transport(_))) => (Outcome::Transport, None),
            Ended::Answered(Err(_)) => (Outcome::Invalid, None),
            Ended::TimedOut => (Outcome::Timeout, None),
            Ended::Cancelled => (Outcome::Cancelled, None),
        };
        AuditLine {
            identity: Some(self.identity),
            namespace: self.namespace,
            tool: self.tool,
            args_sha256: self.args_sha256,
            outcome,
            duration_ms: Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX)),
            result_bytes,
        }
    }
}

/// How a call ended.
pub(crate) enum Ended {
    /// The Pack answered.
    Answered(Result<String, ToolError>),
    /// The gateway's bound on a call passed first.
    TimedOut,
    /// The client cancelled it, or went away, or the drain ended it.
    Cancelled,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(offered: &str, arguments: Value) -> Facts {
        let Value::Object(arguments) = arguments else {
            panic!("an object")
        };
        Facts::of(
            &Identity::Anonymous,
            &Policy::allow_all(),
            offered,
            &arguments,
        )
    }

    #[test]
    fn each_ending_has_its_outcome_and_only_answers_have_a_size() {
        let took = Duration::from_millis(12);
        let call = || {
            facts(
                CALL_TOOL,
                json!({"namespace": "docs", "toolName": "search", "arguments": {"q": 1}}),
            )
        };
        let cases = [
            (Ended::Answered(Ok("four".into())), Outcome::Ok, Some(4)),
            (
                Ended::Answered(Err(ToolError::Backend("no".into()))),
                Outcome::ToolError,
                Some(2),
            ),
            (
                Ended::Answered(Err(ToolError::Invalid("x".into()))),
                Outcome::Invalid,
                None,
            ),
            (
                Ended::Answered(Err(ToolError::Transport("x".into()))),
                Outcome::Transport,
                None,
            ),
            (Ended::TimedOut, Outcome::Timeout, None),
            (Ended::Cancelled, Outcome::Cancelled, None),
        ];
        for (ended, outcome, size) in cases {
            let line = call().line(&ended, took);
            assert_eq!((line.outcome, line.result_bytes), (outcome, size));
            assert_eq!(line.identity.as_deref(), Some("anonymous"));
            assert_eq!(line.namespace.as_deref(), Some("docs"));
            assert_eq!(line.tool.as_deref(), Some("search"));
            assert_eq!(line.args_sha256, Some(args_sha256(Some(&json!({"q": 1})))));
            assert_eq!(line.duration_ms, Some(12));
        }
        // A denied call is `denied` whatever the Pack answered (an unknown tool's error).
        let mut denied = call();
        denied.denied = true;
        let line = denied.line(&Ended::Answered(Err(ToolError::Invalid("x".into()))), took);
        assert_eq!(line.outcome, Outcome::Denied);
        // A listing has no arguments hash.
        let listing = facts("get_dynamic_tools", json!({"namespace": "docs"}));
        let line = listing.line(&Ended::Answered(Ok("{}".into())), took);
        assert_eq!(
            (line.namespace.as_deref(), line.tool, line.args_sha256),
            (Some("docs"), None, None)
        );
    }
}
