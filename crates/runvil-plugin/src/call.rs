//! How one call is made: where its progress goes, and what its caller may see.
//!
//! A Host with one user (a command line, a stdio server) makes every call alike. A Host that
//! serves many callers at once (a team gateway) answers each one under its own policy: what
//! a caller may not use must be absent from what it is shown, and a call to it must read
//! exactly as a call to something that does not exist, or the difference tells the caller
//! what is there. Only the Pack can promise that, because only the Pack writes the listings
//! and the errors that name its backends and their tools: so the caller's [`View`] travels
//! with the call, in [`CallOptions`].

use std::fmt;
use std::sync::Arc;

use crate::status::ProgressSink;

/// What one caller may see of a Pack's backends and their tools. A Pack given a view treats
/// whatever it hides exactly as what does not exist: absent from every listing, unnamed in
/// every error (an error that lists names lists only the visible ones), and refused on a call
/// with the error an unknown name gets, byte for byte.
///
/// Two questions rather than one, because a backend that is still starting has no tools to
/// ask about, and whether the caller may know that backend at all must still be answered.
pub trait View: Send + Sync {
    /// Whether the caller may see `backend` (for `plugin_mcp`, a namespace) at all.
    fn backend(&self, backend: &str) -> bool;

    /// Whether the caller may see and call `tool` of `backend`.
    fn tool(&self, backend: &str, tool: &str) -> bool;
}

/// The options of one call (see [`Pack::call_with`](crate::Pack::call_with)); the default is
/// a plain call: no progress, everything visible.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Where the call's [`Progress`](crate::Progress) goes, as its backend reports it.
    pub progress: Option<ProgressSink>,
    /// What the caller may see; `None` is everything.
    pub view: Option<Arc<dyn View>>,
}

impl CallOptions {
    /// These options, with the call's progress reported to `progress`.
    pub fn with_progress(mut self, progress: ProgressSink) -> Self {
        self.progress = Some(progress);
        self
    }

    /// These options, for a caller that sees only what `view` shows.
    pub fn with_view(mut self, view: Arc<dyn View>) -> Self {
        self.view = Some(view);
        self
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("view", &self.view.is_some())
            .finish()
    }
}
