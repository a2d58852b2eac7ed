//! What a built Pack offers a run: its tools, readiness, calls, status, and shutdown.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::status::{ProgressSink, StatusReceiver};
use crate::store::StoreError;
use crate::trust::HeldTool;

/// A boxed, sendable future: the contract's only async shape.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A built Pack: a set of tools a run can list and call.
///
/// Dropping a future returned by [`Pack::call`] abandons the call; a Pack that talks to a
/// remote system should tell it so.
pub trait Pack: Send + Sync {
    /// Text the Host shows a model before any tool, when the Pack is declared. `None` means
    /// declaring the Pack only makes it required.
    fn prelude(&self) -> Option<&str>;

    /// The Pack's tools, with names already qualified by the Pack id (`<id>/<tool>`).
    fn tools(&self) -> Vec<ToolSpec>;

    /// Resolves when the Pack can take calls, or with the reason it never will.
    fn ready(&self) -> BoxFuture<'_, Result<(), Unavailable>>;

    /// Calls one of [`Pack::tools`] by its qualified name with JSON arguments and answers text
    /// for a model.
    ///
    /// The call runs on the runtime the Host lent the Pack (its work, timers and I/O),
    /// whatever executor polls the returned future.
    fn call(&self, tool: &str, args: Value) -> BoxFuture<'_, Result<String, ToolError>>;

    /// [`Pack::call`], with the call's [`Progress`](crate::Progress) reported to `progress`
    /// as its backend sends it. A Pack that has no progress to report makes the plain call.
    fn call_with_progress(
        &self,
        tool: &str,
        args: Value,
        progress: ProgressSink,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        let _ = progress;
        self.call(tool, args)
    }

    /// Where each of the Pack's backends stands, updated as it changes: a Host waits on it
    /// (`wait_for`) and shows it instead of polling. A Pack without backends has none.
    ///
    /// As with any `watch` channel, a borrow of the value (what `borrow` and `wait_for`
    /// answer) must not be held across an `.await`: the Pack's tasks wait for it to end to
    /// update the status.
    fn status(&self) -> StatusReceiver {
        tokio::sync::watch::channel(Vec::new()).1
    }

    /// The tools of `backend` the Pack holds until the user approves them, with what changed
    /// (see [`crate::PinStore`]). A Pack that holds nothing answers none.
    fn held(&self, backend: &str) -> BoxFuture<'_, Vec<HeldTool>> {
        let _ = backend;
        Box::pin(async { Vec::new() })
    }

    /// Records that the user was shown `tools` of `backend` (from [`Pack::held`]) as they are,
    /// so that a later [`Pack::held`], in this process or another, says which tools are still
    /// what the user read ([`HeldTool::reviewed`]): a Host that approves later than it shows
    /// (`runvil trust NS`, then `runvil trust NS --yes`) approves only those. Answers why the
    /// record could not be kept.
    fn reviewed(&self, backend: &str, tools: &[HeldTool]) -> BoxFuture<'_, Result<(), StoreError>> {
        let _ = (backend, tools);
        Box::pin(async { Ok(()) })
    }

    /// Tells the Pack that its record of `backend` in the Host's
    /// [`PinStore`](crate::PinStore) changed elsewhere (a Host whose store hears of changes,
    /// such as a database's notifications): the Pack reads it again at the backend's next use,
    /// so an approval or a rejection counts at once. Without it a Pack reads the record again
    /// at a use, but at most as often as its own bound allows.
    fn record_changed(&self, backend: &str) {
        let _ = backend;
    }

    /// Approves `tools` of `backend` as the user saw them (from [`Pack::held`]): from then on
    /// each is callable, and its definition is what later ones are compared with. A tool whose
    /// definition changed again since it was shown, or whose approved definition it was
    /// compared with changed meanwhile (another approval), is not approved. Answers the names
    /// approved, or why the approval could not be kept.
    fn approve(
        &self,
        backend: &str,
        tools: &[HeldTool],
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let _ = (backend, tools);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Ends the Pack's work: stops its background tasks, abandons calls in flight, tells each
    /// backend goodbye (for `plugin_mcp`, the end of each session), and completes when that is
    /// done or its own bound has passed, so a Host can exit without a grace sleep. Calls made
    /// afterwards fail.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// One tool as a model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The qualified name, `<pack id>/<tool>`.
    pub name: String,
    /// What the tool does and when to use it, for a model.
    pub description: String,
    /// The JSON Schema of the tool's arguments object.
    pub input_schema: Value,
}

/// Why a call did not produce a result. Each kind's text is meant for a model to read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolError {
    /// The call itself was wrong (an unknown name, a bad argument); the model can fix it.
    Invalid(String),
    /// The system behind the tool answered with an error.
    Backend(String),
    /// The system behind the tool could not be reached, or did not answer in time.
    Transport(String),
}

impl ToolError {
    /// The error's text without its kind.
    pub fn message(&self) -> &str {
        match self {
            Self::Invalid(m) | Self::Backend(m) | Self::Transport(m) => m,
        }
    }

    /// A short lowercase name of the kind: `invalid`, `backend` or `transport`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Invalid(_) => "invalid",
            Self::Backend(_) => "backend",
            Self::Transport(_) => "transport",
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.kind(), self.message())
    }
}

impl std::error::Error for ToolError {}

/// A Pack that cannot be built or cannot become ready, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    /// Why, for the person running the Host.
    pub reason: String,
}

impl Unavailable {
    /// An unavailable Pack with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pack unavailable: {}", self.reason)
    }
}

impl std::error::Error for Unavailable {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_error_names_its_kind() {
        let cases = [
            (ToolError::Invalid("x".into()), "invalid error: x"),
            (ToolError::Backend("y".into()), "backend error: y"),
            (ToolError::Transport("z".into()), "transport error: z"),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
        assert_eq!(ToolError::Backend("m".into()).message(), "m");
    }

    #[test]
    fn unavailable_shows_its_reason() {
        assert_eq!(
            Unavailable::new("no runtime").to_string(),
            "pack unavailable: no runtime"
        );
    }
}
