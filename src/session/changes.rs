//! What a server said about its tools changing, shared by every stream that may carry the
//! notice (a call's, the standalone one, a subscription) and the connector that re-lists.
//! It sits below them all so that each can hand a notice in without importing another.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// The notice that a server's tools changed.
pub(crate) const TOOLS_CHANGED: &str = "notifications/tools/list_changed";

/// What a server said about its tools changing: a notice taken while a re-list runs or
/// waits is kept as one ([`Notify`] holds one permit), so a flood costs one more re-list.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    notice: Notify,
    /// A 2026-07-28 subscription is open and acknowledged: the list's `ttlMs` need not be
    /// watched, notices will come.
    subscribed: AtomicBool,
}

impl Changes {
    /// Takes a notice: a re-list will follow.
    pub(crate) fn notice(&self) {
        self.notice.notify_one();
    }

    /// Waits for the next notice, or the one taken since the last wait.
    pub(crate) async fn next(&self) {
        self.notice.notified().await;
    }

    /// Marks a subscription open (acknowledged) or ended.
    pub(super) fn set_subscribed(&self, open: bool) {
        self.subscribed.store(open, Ordering::Relaxed);
    }

    /// Whether notices will come without asking (an open subscription).
    pub(crate) fn subscribed(&self) -> bool {
        self.subscribed.load(Ordering::Relaxed)
    }
}
