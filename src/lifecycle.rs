//! The Pack's calls in flight, and the one signal that ends them all at shutdown.
//!
//! Each call runs as a task on the Host's runtime and holds a [`Ticket`] while it runs.
//! Shutdown raises the signal, which every ticket's call sees and ends on; it then waits until
//! every ticket is gone, so the sessions are closed only after each abandoned request has
//! queued its `notifications/cancelled` (a DELETE that overtook one would leave the server
//! nothing to cancel). The shape is tokio-util's: a [`CancellationToken`] for "stop", and a
//! [`TaskTracker`] whose tokens are the work still running, which it waits for once closed.
//!
//! What they do not do is kept here: a tracker hands out tokens after it is closed (it can be
//! reopened), so [`Lifecycle::enter`] refuses a ticket once the signal was raised itself.

use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;
use tokio_util::task::task_tracker::TaskTrackerToken;

/// Whether the Pack is shutting down, and the calls that must end before it has.
pub(crate) struct Lifecycle {
    /// Raised at shutdown, and when the Pack itself is gone, which is a shutdown too.
    closing: DropGuard,
    /// Counts the tickets; `close` waits until it is closed and every ticket is dropped.
    running: TaskTracker,
}

/// Held by a call while it runs.
pub(crate) struct Ticket {
    closing: CancellationToken,
    _running: TaskTrackerToken,
}

impl Ticket {
    /// Resolves when the Pack shuts down.
    pub(crate) async fn closing(&mut self) {
        self.closing.cancelled().await;
    }
}

impl Lifecycle {
    pub(crate) fn new() -> Self {
        Self {
            closing: CancellationToken::new().drop_guard(),
            running: TaskTracker::new(),
        }
    }

    /// A ticket for a new call, or `None` once shutdown began.
    pub(crate) fn enter(&self) -> Option<Ticket> {
        // Counted before the signal is read: a ticket that sees no signal is one `close`
        // waits for, and one made after `close` stopped waiting sees the signal and is dropped.
        let running = self.running.token();
        let closing = self.closing.token();
        (!closing.is_cancelled()).then(|| Ticket {
            closing: closing.clone(),
            _running: running,
        })
    }

    /// Tells every call to end, without waiting: for a Pack dropped without a shutdown.
    pub(crate) fn signal(&self) {
        self.closing.token().cancel();
        self.running.close();
    }

    /// Tells every call to end and waits until each has.
    pub(crate) async fn close(&self) {
        self.signal();
        self.running.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn close_waits_for_every_call_and_refuses_new_ones() {
        let lifecycle = std::sync::Arc::new(Lifecycle::new());
        let mut ticket = lifecycle.enter().expect("open");
        let call = tokio::spawn(async move {
            ticket.closing().await;
            // The call takes a moment to leave, as one sending its cancellation does.
            tokio::time::sleep(Duration::from_secs(1)).await;
        });
        let started = tokio::time::Instant::now();
        lifecycle.close().await;
        call.await.expect("the call ended");
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        assert!(lifecycle.enter().is_none(), "no call starts after shutdown");
        lifecycle.close().await; // a second close has nothing to wait for
    }
}
