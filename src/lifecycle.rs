//! The Pack's calls in flight, and the one signal that ends them all at shutdown.
//!
//! Each call runs as a task on the Host's runtime and holds a [`Ticket`] while it runs.
//! Shutdown raises the signal, which every ticket's call sees and ends on; it then waits until
//! every ticket is gone, so the sessions are closed only after each abandoned request has
//! queued its `notifications/cancelled` (a DELETE that overtook one would leave the server
//! nothing to cancel). The shape is mini-redis's: a watch for "stop", and an mpsc channel
//! whose senders are the work still running, which closes when the last one drops.

use std::sync::{Mutex, PoisonError};

use tokio::sync::{mpsc, watch};

/// Whether the Pack is shutting down, and the calls that must end before it has.
pub(crate) struct Lifecycle {
    closing: watch::Sender<bool>,
    /// Cloned into each ticket; `None` once shutdown began, so no new call starts.
    running: Mutex<Option<mpsc::Sender<()>>>,
    /// Answers `None` once every ticket is dropped.
    finished: tokio::sync::Mutex<mpsc::Receiver<()>>,
}

/// Held by a call while it runs.
pub(crate) struct Ticket {
    closing: watch::Receiver<bool>,
    _running: mpsc::Sender<()>,
}

impl Ticket {
    /// Resolves when the Pack shuts down.
    pub(crate) async fn closing(&mut self) {
        // An error means the Pack itself is gone, which is a shutdown too.
        let _ = self.closing.wait_for(|closing| *closing).await;
    }
}

impl Lifecycle {
    pub(crate) fn new() -> Self {
        let (running, finished) = mpsc::channel(1);
        Self {
            closing: watch::Sender::new(false),
            running: Mutex::new(Some(running)),
            finished: tokio::sync::Mutex::new(finished),
        }
    }

    /// A ticket for a new call, or `None` once shutdown began.
    pub(crate) fn enter(&self) -> Option<Ticket> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        Some(Ticket {
            closing: self.closing.subscribe(),
            _running: running.as_ref()?.clone(),
        })
    }

    /// Tells every call to end, without waiting: for a Pack dropped without a shutdown.
    pub(crate) fn signal(&self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.closing.send_replace(true);
    }

    /// Tells every call to end and waits until each has.
    pub(crate) async fn close(&self) {
        self.signal();
        // Nothing is ever sent: `recv` answers `None` when the last ticket is dropped.
        while self.finished.lock().await.recv().await.is_some() {}
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
