//! The audit trail in the store (`runvil serve --http --store ...`): each line a row of
//! `runvil.audit`, with the instance that wrote it, so the lines of every instance sharing the
//! database are one trail (`runvil audit --store` reads it).
//!
//! [`DatabaseSink::record`] stamps the line's time, gives it an id of 128 random bits (chosen
//! once: a line sent again, after a lost answer or a database restart, is kept once, the
//! insert being `ON CONFLICT (id) DO NOTHING`) and puts it on a queue of at most
//! [`AUDIT_STORE_QUEUE_LINES`]; it never waits. A writer task sends what waits in batches of
//! up to [`AUDIT_STORE_BATCH_LINES`], and a line leaves the queue only once the database has
//! kept it, so the queue's bound counts every line not yet kept. While the database is away
//! the queue fills: the writer tries again after a wait that doubles up to the store's
//! reconnection cap, and at once when the store's listener reaches the database again. A full
//! queue refuses calls (`accepting`), which the gateway says in its log: an audited gateway
//! does not serve unaudited calls. Losing and reaching the database again are said once each.
//!
//! A row holds what a line of the file holds, field for field (the identity, namespace and
//! tool cut as the line cuts them), never an argument, a result or a token.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use runvil_plugin::BoxFuture;
use runvil_store::Backoff;
use runvil_store::{AuditRow, Change, Database, Instance};
use tokio::sync::Notify;
use tokio_util::task::AbortOnDropHandle;

use super::{AuditError, AuditLine, AuditSink, FORMAT_VERSION, capped};
use crate::policy::{AUDIT_STORE_BATCH_LINES, AUDIT_STORE_CLOSE_WAIT, AUDIT_STORE_QUEUE_LINES};

/// The audit table, written by a task of its own.
pub(crate) struct DatabaseSink {
    queue: Arc<Queue>,
    instance: Arc<Instance>,
    _writer: Option<AbortOnDropHandle<()>>,
}

/// The lines not kept yet, oldest first, and what wakes the writer.
struct Queue {
    lines: Mutex<VecDeque<AuditRow>>,
    bound: usize,
    /// Why the last attempt to keep lines failed, while they wait.
    failing: Mutex<Option<String>>,
    /// A line was queued, or the sink is closing.
    queued: Notify,
    /// The queue was emptied.
    emptied: Notify,
    closing: AtomicBool,
}

impl Queue {
    fn new(bound: usize) -> Self {
        Self {
            lines: Mutex::new(VecDeque::new()),
            bound,
            failing: Mutex::new(None),
            queued: Notify::new(),
            emptied: Notify::new(),
            closing: AtomicBool::new(false),
        }
    }

    fn lines(&self) -> std::sync::MutexGuard<'_, VecDeque<AuditRow>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn failing(&self) -> Option<String> {
        self.failing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The refusal of a line when `waiting` lines fill the queue.
    fn full(&self, waiting: usize) -> Option<AuditError> {
        (waiting >= self.bound).then(|| {
            let why = self
                .failing()
                .map_or_else(String::new, |why| format!(": {why}"));
            AuditError::new(format!(
                "{} lines already wait to be kept in the store{why}",
                self.bound
            ))
        })
    }
}

impl DatabaseSink {
    /// The sink of `instance`'s lines into `database`, its writer running on this runtime.
    pub(crate) fn start(database: Arc<Database>, instance: Arc<Instance>) -> Self {
        Self::start_within(database, instance, AUDIT_STORE_QUEUE_LINES)
    }

    /// [`DatabaseSink::start`] with a queue of `bound` lines (smaller in the tests).
    pub(crate) fn start_within(
        database: Arc<Database>,
        instance: Arc<Instance>,
        bound: usize,
    ) -> Self {
        let queue = Arc::new(Queue::new(bound));
        let writer = tokio::spawn(write(Arc::clone(&queue), database));
        Self {
            queue,
            instance,
            _writer: Some(AbortOnDropHandle::new(writer)),
        }
    }

    /// The row of `line`, kept now.
    fn row(&self, line: AuditLine) -> AuditRow {
        let number = |n: Option<u64>| n.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
        AuditRow {
            id: self.instance.line_id(),
            instance: self.instance.label().to_owned(),
            v: FORMAT_VERSION as i32,
            time: SystemTime::now(),
            identity: line.identity.as_deref().map(capped),
            namespace: line.namespace.as_deref().map(capped),
            tool: line.tool.as_deref().map(capped),
            args_sha256: line.args_sha256,
            outcome: line.outcome.word().to_owned(),
            duration_ms: number(line.duration_ms),
            result_bytes: number(line.result_bytes),
        }
    }
}

impl AuditSink for DatabaseSink {
    fn accepting(&self) -> Result<(), AuditError> {
        let waiting = self.queue.lines().len();
        self.queue.full(waiting).map_or(Ok(()), Err)
    }

    fn record(&self, line: AuditLine) -> Result<(), AuditError> {
        let row = self.row(line);
        {
            let mut lines = self.queue.lines();
            if let Some(full) = self.queue.full(lines.len()) {
                return Err(full);
            }
            lines.push_back(row);
        }
        self.queue.queued.notify_one();
        Ok(())
    }

    /// Waits, up to [`AUDIT_STORE_CLOSE_WAIT`], for the lines still waiting to be kept; those
    /// left then are counted in the log as lost.
    fn closing(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.queue.closing.store(true, Ordering::Release);
            self.queue.queued.notify_one();
            let emptied = async {
                loop {
                    let emptied = self.queue.emptied.notified();
                    if self.queue.lines().is_empty() {
                        return;
                    }
                    emptied.await;
                }
            };
            if tokio::time::timeout(AUDIT_STORE_CLOSE_WAIT, emptied)
                .await
                .is_err()
            {
                let lost = self.queue.lines().len();
                tracing::error!(
                    target: "runvil::audit",
                    lost_lines = lost,
                    "runvil stops with audit lines the store did not keep"
                );
            }
        })
    }
}

/// Keeps what waits on `queue` in `database`, batch by batch, until the sink is dropped.
async fn write(queue: Arc<Queue>, database: Arc<Database>) {
    let mut changes = database.changes();
    let mut backoff = Backoff::FIRST;
    loop {
        let batch: Vec<AuditRow> = (queue.lines().iter())
            .take(AUDIT_STORE_BATCH_LINES)
            .cloned()
            .collect();
        if batch.is_empty() {
            queue.emptied.notify_waiters();
            queue.queued.notified().await;
            continue;
        }
        match database.append_audit(&batch).await {
            Ok(_) => {
                queue.lines().drain(..batch.len());
                backoff = Backoff::FIRST;
                let was = queue
                    .failing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if was.is_some() {
                    tracing::info!(
                        target: "runvil::audit",
                        "the store keeps audit lines again"
                    );
                }
            }
            Err(error) => {
                let why = error.to_string();
                let said = queue.failing().is_some();
                if !said {
                    tracing::warn!(
                        target: "runvil::audit",
                        waiting = queue.lines().len(),
                        "audit lines wait: {why}; once {} wait, calls are refused",
                        queue.bound
                    );
                }
                *queue.failing.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
                // Again after the wait, or as soon as the listener reaches the database.
                retry_after(backoff.wait(), &mut changes).await;
            }
        }
    }
}

/// Waits `wait`, or less: until the store's listener is heard reaching the database again.
async fn retry_after(wait: Duration, changes: &mut tokio::sync::broadcast::Receiver<Change>) {
    let reached = async {
        loop {
            match changes.recv().await {
                Ok(Change::Everything) => return,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    std::future::pending::<()>().await;
                }
            }
        }
    };
    let _ = tokio::time::timeout(wait, reached).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::{Outcome, args_sha256};

    fn line(tool: &str) -> AuditLine {
        AuditLine {
            identity: Some("key:ci".into()),
            namespace: Some("docs".into()),
            tool: Some(tool.into()),
            args_sha256: Some(args_sha256(None)),
            outcome: Outcome::Ok,
            duration_ms: Some(3),
            result_bytes: Some(10),
        }
    }

    /// A sink with no writer: what is queued stays.
    fn unwritten(bound: usize) -> DatabaseSink {
        DatabaseSink {
            queue: Arc::new(Queue::new(bound)),
            instance: Arc::new(Instance::current()),
            _writer: None,
        }
    }

    /// AUDIT_STORE_QUEUE_LINES: a queue holds exactly its bound; the line one past it is
    /// refused, and so is the next call (`accepting`), saying why the lines wait.
    #[test]
    fn the_queue_holds_its_bound_and_refuses_one_past_it() {
        let sink = unwritten(AUDIT_STORE_QUEUE_LINES);
        for n in 0..AUDIT_STORE_QUEUE_LINES {
            assert_eq!(sink.accepting(), Ok(()));
            sink.record(line(&format!("t{n}"))).expect("queued");
        }
        let refused = format!(
            "the audit line cannot be kept: {AUDIT_STORE_QUEUE_LINES} lines already wait to be \
             kept in the store"
        );
        let error = sink.record(line("past")).expect_err("full");
        assert_eq!(error.to_string(), refused);
        assert_eq!(sink.accepting().map_err(|e| e.to_string()), Err(refused));
        assert_eq!(sink.queue.lines().len(), AUDIT_STORE_QUEUE_LINES);

        *sink.queue.failing.lock().expect("lock") =
            Some("cannot reach the store, database \"d\" at h:5432 as u: refused".into());
        assert_eq!(
            sink.accepting().map_err(|e| e.to_string()),
            Err(format!(
                "the audit line cannot be kept: {AUDIT_STORE_QUEUE_LINES} lines already wait \
                 to be kept in the store: cannot reach the store, database \"d\" at h:5432 as \
                 u: refused"
            ))
        );
    }

    /// A row is the line's fields, cut as the file's line cuts them, with an id of 128 random
    /// bits per line and the instance's label.
    #[test]
    fn a_row_is_the_line_with_its_own_id() {
        let sink = unwritten(4);
        let long = "x".repeat(super::super::MAX_AUDIT_FIELD_CHARS + 1);
        let mut first = line(&long);
        first.result_bytes = None;
        let row = sink.row(first);
        let other = sink.row(line("t"));
        assert_eq!(row.id.len(), 32);
        assert!(row.id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(row.id, other.id);
        assert_eq!(row.instance, sink.instance.label());
        assert_eq!(row.v, 1);
        assert_eq!(row.identity.as_deref(), Some("key:ci"));
        assert_eq!(
            row.tool.as_deref().map(|t| t.chars().count()),
            Some(super::super::MAX_AUDIT_FIELD_CHARS)
        );
        assert_eq!(row.outcome, "ok");
        assert_eq!((row.duration_ms, row.result_bytes), (Some(3), None));
    }
}
