//! What a fixture saw, shared by every session of one server: the handshakes it answered, the
//! HTTP requests that reached it, the `slow` calls and their cancellations. Tests assert on
//! these rather than on timing, and wait on them without polling.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, watch};

/// The record of one server, and the gate that holds its handshakes.
pub(crate) struct Recorder {
    /// `true` lets `initialize` through; `false` holds it until the gate opens.
    pub(crate) gate: watch::Sender<bool>,
    /// `initialize` requests that got past the gate.
    initializes: AtomicUsize,
    /// `initialize` requests that reached the gate, held or not.
    handshakes: AtomicUsize,
    /// Requests by HTTP method: GET, POST, DELETE, any other. Counters, not a log, so that
    /// a benchmark's millions of requests cost an atomic add each and no memory.
    methods: [AtomicUsize; 4],
    /// Request ids of `slow` calls, as the server saw them, when they started.
    slow_started: Mutex<Vec<Value>>,
    /// Request ids of `slow` calls whose cancellation token fired.
    slow_cancelled: Mutex<Vec<Value>>,
    /// Request ids named by `notifications/cancelled`.
    cancel_notifications: Mutex<Vec<Value>>,
    /// Woken whenever a list above grows, or a handshake reaches the gate.
    changed: Notify,
}

/// Which list of ids to read or wait on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ids {
    SlowStarted,
    SlowCancelled,
    CancelNotifications,
}

impl Recorder {
    pub(crate) fn new(open: bool) -> Self {
        Self {
            gate: watch::Sender::new(open),
            initializes: AtomicUsize::new(0),
            handshakes: AtomicUsize::new(0),
            methods: Default::default(),
            slow_started: Mutex::new(Vec::new()),
            slow_cancelled: Mutex::new(Vec::new()),
            cancel_notifications: Mutex::new(Vec::new()),
            changed: Notify::new(),
        }
    }

    fn list(&self, ids: Ids) -> &Mutex<Vec<Value>> {
        match ids {
            Ids::SlowStarted => &self.slow_started,
            Ids::SlowCancelled => &self.slow_cancelled,
            Ids::CancelNotifications => &self.cancel_notifications,
        }
    }

    pub(crate) fn record(&self, ids: Ids, id: Value) {
        lock(self.list(ids)).push(id);
        self.changed.notify_waiters();
    }

    pub(crate) fn ids(&self, ids: Ids) -> Vec<Value> {
        lock(self.list(ids)).clone()
    }

    /// Waits up to `within` for `ids` to hold an entry and answers its first one.
    pub(crate) async fn first(&self, ids: Ids, within: Duration) -> Option<Value> {
        self.until(within, || self.ids(ids).into_iter().next())
            .await
    }

    /// Waits up to `within` for a handshake to reach the gate; whether one did.
    pub(crate) async fn handshake_reached(&self, within: Duration) -> bool {
        let reached = || (self.handshakes.load(Ordering::SeqCst) > 0).then_some(());
        self.until(within, reached).await.is_some()
    }

    /// Waits up to `within` for `look` to answer something, looking again at each record.
    async fn until<T>(&self, within: Duration, look: impl Fn() -> Option<T>) -> Option<T> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            // Registered before the look, so a record between the two is not missed.
            let changed = self.changed.notified();
            if let Some(found) = look() {
                return Some(found);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return look();
            }
        }
    }

    /// Holds the caller while the gate is closed, then counts a handshake.
    pub(crate) async fn pass_gate(&self) {
        self.handshakes.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
        let mut gate = self.gate.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = gate.wait_for(|open| *open).await;
        self.initializes.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn initializes(&self) -> usize {
        self.initializes.load(Ordering::SeqCst)
    }

    pub(crate) fn record_method(&self, method: &str) {
        self.methods[method_slot(method)].fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn requests(&self, method: &str) -> usize {
        self.methods[method_slot(method)].load(Ordering::SeqCst)
    }
}

fn method_slot(method: &str) -> usize {
    match method {
        "GET" => 0,
        "POST" => 1,
        "DELETE" => 2,
        _ => 3,
    }
}

/// A panicking test thread must not hide what the server recorded from the others.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
