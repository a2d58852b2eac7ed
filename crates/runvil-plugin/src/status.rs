//! What a Host can observe of a built Pack while it runs: where each of its backends stands,
//! and how far a call has come.
//!
//! A Pack reaches its tools through backends that start on their own (for `plugin_mcp`, one
//! remote MCP server each). A Host shows their progress and waits for them by subscribing to
//! [`Pack::status`](crate::Pack::status), a `tokio::sync::watch` channel, instead of polling.

use std::sync::Arc;

/// Every backend of a Pack, in the Pack's order, as one value a Host subscribes to.
pub type StatusReceiver = tokio::sync::watch::Receiver<Vec<BackendStatus>>;

/// Where one backend stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStatus {
    /// The backend's name, as the Pack's tools take it (for `plugin_mcp`, the namespace).
    pub name: String,
    /// Its state.
    pub state: BackendState,
    /// How many of its tools the Pack holds until the user approves them (see
    /// [`PinStore`](crate::PinStore)): listed, but not among a ready backend's tools.
    pub held: usize,
}

impl BackendStatus {
    /// A backend named `name` in `state`, holding no tool.
    pub fn new(name: impl Into<String>, state: BackendState) -> Self {
        Self {
            name: name.into(),
            state,
            held: 0,
        }
    }
}

/// The states of a backend. Texts are the Pack's, cleaned for a person or a model to read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackendState {
    /// Still starting.
    Loading,
    /// Taking calls, with these tools; a backend whose tools change is shown again, with the
    /// new ones.
    Ready {
        /// The names of the tools it offers now, in the Pack's order (for `plugin_mcp`, name
        /// order; held tools are not among them).
        tools: Arc<[String]>,
    },
    /// It could not be started (unreachable, a bad answer, authorization needed), for this
    /// reason; the Pack may keep trying.
    Failed(String),
    /// The Pack refused its configuration, for this reason; it will never start.
    Refused(String),
}

impl BackendState {
    /// `loading`, `ready` or `error`: the status a model reads in a Pack's listing.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Loading => "loading",
            Self::Ready { .. } => "ready",
            Self::Failed(_) | Self::Refused(_) => "error",
        }
    }

    /// Whether the backend is still starting.
    pub fn is_loading(&self) -> bool {
        matches!(self, Self::Loading)
    }
}

/// A notice that a call is under way, as its backend reports it (for `plugin_mcp`, an MCP
/// `notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the call has come; it only grows.
    pub progress: f64,
    /// Where it ends, when the backend knows.
    pub total: Option<f64>,
    /// What it is doing, cleaned and capped by the Pack.
    pub message: Option<String>,
}

/// Where a Host wants a call's [`Progress`]: called on the Pack's runtime, so it must not
/// block.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_listing_s_statuses() {
        assert_eq!(BackendState::Loading.label(), "loading");
        let tools: Arc<[String]> = Arc::from(vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(BackendState::Ready { tools }.label(), "ready");
        assert_eq!(BackendState::Failed("x".into()).label(), "error");
        assert_eq!(BackendState::Refused("y".into()).label(), "error");
        assert!(BackendState::Loading.is_loading());
        let none: Arc<[String]> = Arc::from(Vec::new());
        assert!(!BackendState::Ready { tools: none }.is_loading());
    }
}
