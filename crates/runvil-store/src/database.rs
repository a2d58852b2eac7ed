//! The connections to the database, on the Host's runtime, and what bounds them.
//!
//! - One shared connection carries the single statements (records, audit lines): the client
//!   pipelines concurrent statements on it, so no pool is needed for them. When it is lost,
//!   the next statement connects again, but not sooner than the backoff allows (from
//!   [`RECONNECT_FIRST`](crate::backoff::RECONNECT_FIRST), doubling, capped at
//!   [`RECONNECT_MAX`](crate::backoff::RECONNECT_MAX)): meanwhile statements fail at
//!   once with [`Error::Unreachable`] rather than wait, so a caller serving from its cache is
//!   not held up by a database that is away.
//! - A transaction gets a connection of its own ([`Database::connect`]), closed after it: the
//!   migrations and a hold of credentials across a refresh, which are rare.
//! - The listener keeps one more (`listen`).
//!
//! Each statement is bounded by [`STATEMENT_DEADLINE`], each attempt to connect by the
//! connection string's `connect_timeout` (else [`crate::dsn::CONNECT_DEADLINE`]). TLS is
//! rustls with the operating system's verification (certificate and host name, always), as
//! `sslmode` asks: `require` or `prefer` (the client's default) when the server offers it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{Mutex, broadcast};
use tokio::time::Instant;
use tokio_postgres::{Client, Connection, Socket};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::backoff::Backoff;
use crate::listen::{self, Change};
use crate::{Dsn, Error, migrations};

/// The longest one statement may take: a database that hangs fails the statement rather than
/// the call that needed it.
pub const STATEMENT_DEADLINE: Duration = Duration::from_secs(10);

/// How many change notices wait for a slow receiver before it is told it missed some.
const CHANGES_BUFFER: usize = 1024;

/// A connection's driver, as the TLS connector makes it.
pub(crate) type Driver =
    Connection<Socket, <MakeRustlsConnect as tokio_postgres::tls::MakeTlsConnect<Socket>>::Stream>;

/// One database: the connections to it, and the notices of its changes.
pub struct Database {
    dsn: Dsn,
    tls: MakeRustlsConnect,
    runtime: Handle,
    shared: Mutex<Shared>,
    changes: broadcast::Sender<Change>,
    listener: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
    /// Whether the schema is known to be this runvil's.
    migrated: AtomicBool,
}

/// The shared connection, and when the next attempt to make it may be.
struct Shared {
    client: Option<Arc<Client>>,
    retry_at: Option<Instant>,
    backoff: Backoff,
}

impl Database {
    /// Connects to the database `dsn` names on the current runtime, creates or migrates its
    /// schema (refusing one newer than this runvil), and starts listening for changes.
    pub async fn open(dsn: Dsn) -> Result<Arc<Self>, Error> {
        let database = Self::new(dsn)?;
        migrations::migrate(&database).await?;
        database.migrated.store(true, Ordering::Release);
        database.listen();
        Ok(database)
    }

    /// [`Database::open`] for a process that serves whether or not the database is there now
    /// (`runvil serve`): a database that cannot be reached is no error; the schema is then
    /// created or migrated before the first statement that reaches it, and every statement
    /// until then fails at once ([`Error::Unreachable`]). A newer schema, or a statement the
    /// database refuses, is still an error. Answers the database, and whether it was reached.
    pub async fn start(dsn: Dsn) -> Result<(Arc<Self>, Option<Error>), Error> {
        let database = Self::new(dsn)?;
        let away = match migrations::migrate(&database).await {
            Ok(()) => {
                database.migrated.store(true, Ordering::Release);
                None
            }
            Err(error @ Error::Unreachable { .. }) => {
                database.failed_attempt(&mut *database.shared.lock().await);
                Some(error)
            }
            Err(error) => return Err(error),
        };
        database.listen();
        Ok((database, away))
    }

    /// The database `dsn` names, not connected yet.
    fn new(dsn: Dsn) -> Result<Arc<Self>, Error> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls_error = |e: rustls::Error| Error::Dsn(format!("cannot set up TLS: {e}"));
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?;
        let config = rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(config)
            .map_err(tls_error)?
            .with_no_client_auth();
        let (changes, _) = broadcast::channel(CHANGES_BUFFER);
        let database = Arc::new(Self {
            dsn,
            tls: MakeRustlsConnect::new(config),
            runtime: Handle::current(),
            shared: Mutex::new(Shared {
                client: None,
                retry_at: None,
                backoff: Backoff::FIRST,
            }),
            changes,
            listener: std::sync::Mutex::new(None),
            migrated: AtomicBool::new(false),
        });
        Ok(database)
    }

    /// Starts listening for changes.
    fn listen(self: &Arc<Self>) {
        let task = self.runtime.spawn(listen::run(Arc::downgrade(self)));
        *self.listener_slot() = Some(task.abort_handle());
    }

    /// The listener reached the database again: the shared connection is made at the next
    /// statement, without waiting out its backoff, so what waited (audit lines, records to
    /// read again) goes at once.
    pub(crate) async fn reached(&self) {
        let mut shared = self.shared.lock().await;
        shared.retry_at = None;
        shared.backoff = Backoff::FIRST;
    }

    /// An attempt to connect failed: the next waits out the backoff, which doubles.
    fn failed_attempt(&self, shared: &mut Shared) {
        shared.retry_at = Some(Instant::now() + shared.backoff.wait());
    }

    /// The database, as runvil names it (never its password).
    pub fn describe(&self) -> String {
        self.dsn.describe()
    }

    /// Notices of the records changed from now on, by any process ([`Change`]).
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    pub(crate) fn notices(&self) -> &broadcast::Sender<Change> {
        &self.changes
    }

    fn listener_slot(&self) -> std::sync::MutexGuard<'_, Option<tokio::task::AbortHandle>> {
        self.listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new connection of its own, its driver running on the runtime until the client is
    /// dropped (which closes it, and rolls back a transaction left open).
    pub(crate) async fn connect(&self) -> Result<Client, Error> {
        let (client, driver) = self.connect_raw().await?;
        self.runtime.spawn(async move {
            let _ = driver.await;
        });
        Ok(client)
    }

    /// A new connection and its driver, for the caller to run.
    pub(crate) async fn connect_raw(&self) -> Result<(Client, Driver), Error> {
        // connect_timeout bounds each address; this bounds them all.
        let deadline = self.dsn.config().get_connect_timeout().copied();
        let deadline = deadline.unwrap_or(crate::dsn::CONNECT_DEADLINE) * 2;
        match tokio::time::timeout(deadline, self.dsn.config().connect(self.tls.clone())).await {
            Ok(Ok(connected)) => Ok(connected),
            Ok(Err(e)) => Err(self.unreachable(&reason(&e))),
            Err(_) => Err(self.unreachable("no answer in time")),
        }
    }

    /// The shared connection: the one in use, or a new one if it was lost and the backoff
    /// allows an attempt now.
    async fn client(&self) -> Result<Arc<Client>, Error> {
        let mut shared = self.shared.lock().await;
        if let Some(client) = shared.client.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        shared.client = None;
        if let Some(at) = shared.retry_at.filter(|at| Instant::now() < *at) {
            let left = at.saturating_duration_since(Instant::now());
            let reason = format!("connecting again in {} ms", left.as_millis());
            return Err(self.unreachable(&reason));
        }
        match self.connect_migrated().await {
            Ok(client) => {
                let client = Arc::new(client);
                shared.client = Some(Arc::clone(&client));
                shared.retry_at = None;
                shared.backoff = Backoff::FIRST;
                Ok(client)
            }
            Err(error) => {
                self.failed_attempt(&mut shared);
                Err(error)
            }
        }
    }

    /// A new connection, once the schema is made (when [`Database::start`] could not).
    async fn connect_migrated(&self) -> Result<Client, Error> {
        if !self.migrated.load(Ordering::Acquire) {
            migrations::migrate(self).await?;
            self.migrated.store(true, Ordering::Release);
        }
        self.connect().await
    }

    /// Runs `statement` on the shared connection within [`STATEMENT_DEADLINE`].
    pub(crate) async fn run<T>(
        &self,
        statement: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, Error> {
        let client = self.client().await?;
        match tokio::time::timeout(STATEMENT_DEADLINE, statement(&client)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(self.failed(&error)),
            Err(_) => Err(self.unreachable("the statement got no answer in time")),
        }
    }

    /// What a failed statement is: the server's refusal, or a connection that is gone.
    pub(crate) fn failed(&self, error: &tokio_postgres::Error) -> Error {
        match error.as_db_error() {
            Some(db) => Error::Query(
                self.dsn
                    .scrub(&format!("the store refused a statement: {}", db.message())),
            ),
            None => self.unreachable(&reason(error)),
        }
    }

    pub(crate) fn unreachable(&self, reason: &str) -> Error {
        Error::Unreachable {
            database: self.dsn.describe(),
            reason: self.dsn.scrub(reason),
        }
    }

    /// Runs `future` to its end from synchronous code (the contract's stores, which a Pack
    /// calls on a blocking thread), on the runtime the connections run on.
    pub(crate) fn block<F: Future>(&self, future: F) -> F::Output {
        tokio::task::block_in_place(|| self.runtime.block_on(future))
    }
}

/// What a client's error says: the server's own message when it sent one (a refused
/// password), else the client's words.
fn reason(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => error.to_string(),
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(listener) = self.listener_slot().take() {
            listener.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::{RECONNECT_FIRST, RECONNECT_MAX};

    /// RECONNECT_FIRST, RECONNECT_MAX: after each failed attempt the next waits twice as long,
    /// from the first wait up to the cap and never past it; meanwhile statements fail at once,
    /// saying when the next attempt is. On tokio's paused clock, against a socket that is not
    /// there (an attempt fails at once, with no I/O to wait for).
    #[tokio::test(start_paused = true)]
    async fn each_attempt_waits_twice_the_last_up_to_the_cap() {
        let dsn = Dsn::parse("host=/nonexistent-runvil-socket-dir user=u dbname=d").expect("ok");
        let database = Database::new(dsn).expect("a database");
        let statement = async || {
            let failed = database
                .run(async |client| client.execute("SELECT 1", &[]).await)
                .await
                .expect_err("nothing is there");
            match failed {
                Error::Unreachable { reason, .. } => reason,
                other => panic!("{other:?}"),
            }
        };
        let mut waits = Vec::new();
        for _ in 0..9 {
            let attempt = statement().await;
            assert!(!attempt.starts_with("connecting again"), "{attempt}");
            let waiting = statement().await;
            let ms: u64 = waiting
                .strip_prefix("connecting again in ")
                .and_then(|rest| rest.strip_suffix(" ms"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{waiting}"));
            waits.push(ms);
            tokio::time::advance(Duration::from_millis(ms - 1)).await;
            assert_eq!(statement().await, "connecting again in 1 ms", "not before");
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        let first = RECONNECT_FIRST.as_millis() as u64;
        let max = RECONNECT_MAX.as_millis() as u64;
        let want: Vec<u64> = (0..9).map(|n| (first << n).min(max)).collect();
        assert_eq!(waits, want);
        assert_eq!(
            &waits[5..],
            [8000, 10_000, 10_000, 10_000],
            "capped at 10 s"
        );
    }
}
