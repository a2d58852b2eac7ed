//! One background task per server: start it, keep trying until it lists its tools, then
//! follow the changes of its tools for as long as the Pack runs.
//!
//! A server is `loading` during its first attempt, `error` with a reason after a failed one
//! (while the task waits and tries again: 1 s, doubling up to a minute), and `ready` once an
//! attempt connects, shakes hands and lists every page of tools within the deadline. A ready
//! server stays ready; later failures belong to the calls that meet them.
//!
//! Once ready, the same task listens for the server's notices that its tools changed (the
//! session's own ways, see `session::listen`) and re-lists them: each re-list is bounded as
//! the first one is, and replaces its tools only when complete; until then, and when it
//! fails (retried after the same backoff), the server keeps the tools it had. Notices are
//! coalesced (one re-list at a time, one more waiting) and re-lists are at least
//! [`RELIST_MIN_INTERVAL`] apart. Where the Host lends a pin store, every complete listing is
//! judged by the server's [`Pins`] before it is shown, the first one included.

use std::future::Future;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use runvil_plugin::{BackendState, BackendStatus, HeldTool, StoreError};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use crate::auth::{Authorization, HostAuth};
use crate::config::ServerSpec;
use crate::edge;
use crate::envelope::{ToolPages, ToolSet};
use crate::pins::Pins;
use crate::policy::{
    MAX_ERROR_CHARS, RELIST_MIN_INTERVAL, Refusal, START_ATTEMPT_DEADLINE, retry_delay,
};
use crate::session::{CacheHints, Changes, Listed, Session, SessionError, SharedSession, Tell};
use crate::text;
use crate::text::Render;
use crate::text::{Scrubber, Shown, log_safe};
use crate::transport::{Clients, Transport, TransportError};

/// Where a server stands.
#[derive(Debug, Clone)]
pub(crate) enum Status {
    Loading,
    Ready(Ready),
    /// An attempt failed (unreachable, a bad answer, authorization needed); the task tries
    /// again.
    Failed(Shown),
    /// The entry was refused; nothing will be tried.
    Refused(Refusal),
    /// The user turned the server off (its pin record says so): it is not contacted.
    Disabled,
}

impl Status {
    /// What the contract shows a Host of this status.
    fn public(&self) -> BackendState {
        match self {
            Self::Loading => BackendState::Loading,
            Self::Ready(ready) => BackendState::Ready {
                tools: ready.tools.names(),
            },
            Self::Failed(reason) => reason.clone().leave(BackendState::Failed),
            Self::Refused(refusal) => BackendState::Refused(refusal.to_string()),
            Self::Disabled => BackendState::Disabled,
        }
    }
}

/// A started server: its session and checked tools.
#[derive(Debug, Clone)]
pub(crate) struct Ready {
    pub(crate) session: SharedSession,
    /// Its checked tools, held and rejected ones included.
    pub(crate) tools: Arc<ToolSet>,
    /// How long the server said its list stays fresh (2026-07-28).
    pub(crate) cache: CacheHints,
    /// When the tools were listed.
    listed_at: Instant,
}

impl Ready {
    fn new(session: SharedSession, tools: ToolSet, cache: CacheHints) -> Self {
        Self {
            session,
            tools: Arc::new(tools),
            cache,
            listed_at: Instant::now(),
        }
    }
}

/// Every server's status as the contract shows it, which Hosts subscribe to
/// ([`runvil_plugin::Pack::status`]).
pub(crate) type Board = Arc<watch::Sender<Vec<BackendStatus>>>;

/// One configured server, shared by its task and the Pack.
#[derive(Debug)]
pub(crate) struct Server {
    pub(crate) name: String,
    status: RwLock<Status>,
    board: Board,
    /// Its place on the board.
    index: usize,
    /// The user's trust in its tools, when the Host keeps pins.
    pins: Option<Pins>,
    /// Held while its tools are replaced (a re-list, an approval), so one never undoes the
    /// other and the board sees the changes in order.
    replacing: tokio::sync::Mutex<()>,
}

impl Server {
    /// A server with `status`, added to the end of `board`.
    pub(crate) fn new(name: String, status: Status, board: &Board, pins: Option<Pins>) -> Self {
        let mut index = 0;
        board.send_modify(|all| {
            index = all.len();
            all.push(BackendStatus::new(name.clone(), status.public()));
        });
        Self {
            name,
            status: RwLock::new(status),
            board: Arc::clone(board),
            index,
            pins,
            replacing: tokio::sync::Mutex::new(()),
        }
    }

    pub(crate) fn status(&self) -> Status {
        self.status
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, status: Status) {
        let state = status.public();
        let held = match &status {
            Status::Ready(ready) => ready.tools.held.len(),
            _ => 0,
        };
        *self.status.write().unwrap_or_else(PoisonError::into_inner) = status;
        self.board
            .send_if_modified(|all| match all.get_mut(self.index) {
                Some(entry) if entry.state != state || entry.held != held => {
                    entry.state = state;
                    entry.held = held;
                    true
                }
                _ => false,
            });
    }

    /// Makes `tools` the tools of a ready server, its session and freshness unchanged.
    fn replace_tools(&self, tools: ToolSet) {
        if let Status::Ready(ready) = self.status() {
            self.set(Status::Ready(Ready {
                tools: Arc::new(tools),
                ..ready
            }));
        }
    }

    /// Makes `listed` the server's tools, judged by its pins first.
    async fn install(&self, session: SharedSession, listed: Listed) {
        let _replacing = self.replacing.lock().await;
        let tools = match &self.pins {
            Some(pins) => pins.judge(listed.tools, &listed.definitions).await,
            None => listed.tools,
        };
        self.set(Status::Ready(Ready::new(session, tools, listed.hints)));
    }

    /// Tells the server's task it was used: a list whose freshness (`ttlMs`) has passed is
    /// listed again in the background, unless a subscription will tell of changes.
    pub(crate) fn used(&self) {
        let Status::Ready(ready) = self.status() else {
            return;
        };
        let changes = ready.session.changes();
        let stale = ready
            .cache
            .ttl_ms
            .is_some_and(|ttl| ready.listed_at + Duration::from_millis(ttl) <= Instant::now());
        if stale && !changes.subscribed() {
            changes.notice();
        }
    }

    /// Whether the server is ready and holds the tool `name`.
    pub(crate) fn holds(&self, name: &str) -> bool {
        match &*self.status.read().unwrap_or_else(PoisonError::into_inner) {
            Status::Ready(ready) => ready.tools.held.contains_key(name),
            _ => false,
        }
    }

    /// Whether the server is ready and holds any tool.
    pub(crate) fn holds_any(&self) -> bool {
        match &*self.status.read().unwrap_or_else(PoisonError::into_inner) {
            Status::Ready(ready) => !ready.tools.held.is_empty(),
            _ => false,
        }
    }

    /// Before a use of the server's tools: when the use is of a held tool (`held`), or the
    /// Host said the record changed, waits for the record to be read again if that is due, so
    /// an approval or a rejection made elsewhere counts at once; else starts that read in the
    /// background, so a call of a trusted tool never waits for the store.
    pub(crate) async fn recheck_before_use(self: &Arc<Self>, held: bool) {
        let told = self.pins.as_ref().is_some_and(Pins::forgotten);
        if held || told {
            self.recheck().await;
        } else {
            self.recheck_soon();
        }
    }

    /// Reads the server's pin record again when it is due ([`Pins::stale`]), and shows what
    /// that changed.
    async fn recheck(&self) {
        let Some(pins) = &self.pins else {
            return;
        };
        if !pins.stale() {
            return;
        }
        let _replacing = self.replacing.lock().await;
        // Another use may have read it while this one waited.
        if !pins.stale() {
            return;
        }
        if let Some(tools) = pins.refresh().await {
            self.replace_tools(tools);
        }
    }

    /// [`Server::recheck`] in the background, when it is due and none is under way.
    pub(crate) fn recheck_soon(self: &Arc<Self>) {
        let Some(pins) = &self.pins else {
            return;
        };
        if !pins.stale() || !pins.begin_reading() {
            return;
        }
        let server = Arc::clone(self);
        tokio::spawn(async move {
            server.recheck().await;
            if let Some(pins) = &server.pins {
                pins.end_reading();
            }
        });
    }

    /// The server's pin record changed elsewhere (a Host's store that hears of changes says
    /// so): it is read again at the next use.
    pub(crate) fn record_changed(&self) {
        if let Some(pins) = &self.pins {
            pins.forget();
        }
    }

    /// The tools the server holds until the user approves them.
    pub(crate) async fn held(&self) -> Vec<HeldTool> {
        match &self.pins {
            Some(pins) => pins.held().await,
            None => Vec::new(),
        }
    }

    /// Records that the user was shown `tools` as they are.
    pub(crate) async fn reviewed(&self, tools: &[HeldTool]) -> Result<(), StoreError> {
        match &self.pins {
            Some(pins) => pins.reviewed(tools).await,
            None => Ok(()),
        }
    }

    /// Turns the server (`tool: None`) or one of its tools on or off, as the user decided;
    /// whether that changed anything. A ready server shows the change at once.
    pub(crate) async fn set_enabled(
        &self,
        tool: Option<&str>,
        enabled: bool,
    ) -> Result<bool, StoreError> {
        let Some(pins) = &self.pins else {
            return Err(StoreError::new(
                "the Host lends no store to keep it in, or the server's entry is refused",
            ));
        };
        let _replacing = self.replacing.lock().await;
        let (changed, tools) = pins.set_enabled(tool, enabled).await?;
        if let Some(tools) = tools {
            self.replace_tools(tools);
        }
        Ok(changed)
    }

    /// Approves `tools` as the user saw them, and makes them callable.
    pub(crate) async fn approve(&self, tools: &[HeldTool]) -> Result<Vec<String>, StoreError> {
        let Some(pins) = &self.pins else {
            return Ok(Vec::new());
        };
        let _replacing = self.replacing.lock().await;
        let (names, tools) = pins.approve(tools).await?;
        self.replace_tools(tools);
        Ok(names)
    }
}

/// The HTTP clients of a Pack, built by the first task that needs them: building one reads
/// the system's trust store, which construct may not do.
pub(crate) type SharedClients = Arc<OnceLock<Result<Clients, TransportError>>>;

/// Starts `server` on `runtime`; the task runs until its handle is aborted (the Pack's
/// shutdown or drop).
pub(crate) fn spawn(
    runtime: &Handle,
    server: Arc<Server>,
    spec: ServerSpec,
    clients: SharedClients,
    scrubber: Arc<Scrubber>,
    host: HostAuth,
) -> tokio::task::JoinHandle<()> {
    let task_runtime = runtime.clone();
    let span = server_span(&server.name);
    let task = async move {
        // Kept across attempts: the tokens, and the server's authorization state.
        let oauth = spec.oauth.clone();
        let auth = Arc::new(Authorization::new(
            server.name.clone(),
            spec.url.clone(),
            &spec.url_values,
            host,
            oauth,
            Arc::clone(&scrubber),
        ));
        // The user's decision, read before anything is sent: a server turned off is never
        // contacted.
        if let Some(pins) = &server.pins
            && pins.server_turned_off().await
        {
            tracing::info!(server = %log_safe(&server.name), "server turned off by the user; not contacted");
            server.set(Status::Disabled);
            return;
        }
        let pinned = server.pins.is_some();
        let attempt = || start(&task_runtime, &spec, &clients, &scrubber, &auth, pinned);
        let name = log_safe(&server.name).to_string();
        let on_failure = |error: Option<SessionError>| {
            let reason = match error {
                Some(error) => error.render(&scrubber),
                None => text::show(&scrubber, &deadline_passed(), MAX_ERROR_CHARS),
            };
            tracing::warn!(server = %name, reason = %reason.line(), "server did not start");
            server.set(Status::Failed(reason));
        };
        let (session, listed) = retry_until_ready(attempt, on_failure, || auth.user_time()).await;
        log_listing(&name, &listed);
        tracing::info!(
            server = %name,
            tools = listed.tools.tools.len(),
            protocol_version = session.protocol_version(),
            ttl_ms = ?listed.hints.ttl_ms,
            private = ?listed.hints.private,
            "server ready"
        );
        server.install(Arc::clone(&session), listed).await;
        follow(&server, &session, &scrubber).await;
    };
    runtime.spawn(task.instrument(span))
}

/// Logs what a listing dropped.
fn log_listing(name: &str, listed: &Listed) {
    for dropped in &listed.tools.rejected {
        let (tool, reason) = (&dropped.name, dropped.reason.line());
        tracing::warn!(server = %name, %tool, %reason, "tool dropped");
    }
    if listed.tools.more_rejected > 0 {
        let more = listed.tools.more_rejected;
        tracing::warn!(server = %name, more, "more tools dropped, not logged one by one");
    }
}

/// Follows a ready server's tools: listens for its notices and re-lists on each, for ever.
async fn follow(server: &Server, session: &SharedSession, scrubber: &Arc<Scrubber>) {
    let name = log_safe(&server.name).to_string();
    let relist = || async {
        let pages = tool_pages(scrubber, server.pins.is_some());
        let listed = tokio::time::timeout(START_ATTEMPT_DEADLINE, session.list_tools(pages)).await;
        match listed {
            Ok(Ok(listed)) => {
                log_listing(&name, &listed);
                let tools = listed.tools.tools.len();
                server.install(Arc::clone(session), listed).await;
                tracing::info!(server = %name, tools, "tools listed again");
                Ok(())
            }
            Ok(Err(e)) => Err(e.render(scrubber)),
            Err(_) => Err(text::show(scrubber, &deadline_passed(), MAX_ERROR_CHARS)),
        }
    };
    // The listing the server became ready with counts as the last: a notice right after it
    // (a call past a freshness of zero, a change at start) waits out the interval, as after any
    // re-list, instead of listing again at once.
    let listed = Instant::now();
    let relisting = relist_on_notices(session.changes(), listed, relist, |reason: Shown| {
        // The server keeps the tools it had; the re-list is tried again after a while.
        tracing::warn!(server = %name, reason = %reason.line(), "the tools could not be listed again");
    });
    tokio::join!(session.listen(), relisting);
}

/// Runs `relist` on each notice `changes` takes, for ever: one at a time, at least
/// [`RELIST_MIN_INTERVAL`] apart and after the last listing (`listed`), the notices taken
/// meanwhile making one more; a failure is reported and tried again after [`retry_delay`] of
/// the failures in a row.
async fn relist_on_notices<R, F, Fut>(
    changes: &Changes,
    listed: Instant,
    mut relist: F,
    mut on_failure: impl FnMut(R),
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), R>>,
{
    let mut last = listed;
    let mut failures = 0u32;
    loop {
        changes.next().await;
        tokio::time::sleep_until(last + RELIST_MIN_INTERVAL).await;
        last = Instant::now();
        match relist().await {
            Ok(()) => failures = 0,
            Err(reason) => {
                on_failure(reason);
                failures = failures.saturating_add(1);
                tokio::time::sleep(retry_delay(failures)).await;
                changes.notice();
            }
        }
    }
}

/// The span every log line about one server is in (its start, each request), which names it.
pub(crate) fn server_span(name: &str) -> tracing::Span {
    tracing::debug_span!("server", name = %log_safe(name))
}

/// One attempt: connect, handshake, list every page, check the tools (keeping their
/// definitions when they are `pinned`). The Pack's scrubber, which knows every server's
/// secrets, scrubs what of the server's answers the catalog shows and what the session's
/// troubles log; the caller shows the error.
async fn start(
    runtime: &Handle,
    spec: &ServerSpec,
    clients: &SharedClients,
    pack: &Arc<Scrubber>,
    auth: &Arc<Authorization>,
    pinned: bool,
) -> Result<(SharedSession, Listed), SessionError> {
    let clients = clients.get_or_init(Clients::build).clone()?;
    let transport = Transport::new(clients, spec, Arc::clone(auth));
    let session = Session::connect(transport, runtime.clone(), telling(pack)).await?;
    let listed = session.list_tools(tool_pages(pack, pinned)).await?;
    Ok((Arc::new(session), listed))
}

/// Empty tool pages, scrubbing with the Pack's scrubber, keeping the tools' definitions when
/// they are `pinned`.
fn tool_pages(pack: &Arc<Scrubber>, pinned: bool) -> ToolPages {
    let catalog = ToolPages::new(Arc::clone(pack));
    if pinned {
        catalog.keeping_definitions()
    } else {
        catalog
    }
}

/// Where a session tells its troubles: the log, scrubbed by the Pack's scrubber.
fn telling(pack: &Arc<Scrubber>) -> Tell {
    let pack = Arc::clone(pack);
    Arc::new(move |trouble| edge::log(&trouble, &pack))
}

/// Why an attempt failed that ran out of time.
fn deadline_passed() -> String {
    format!(
        "did not connect and list its tools within {} s",
        START_ATTEMPT_DEADLINE.as_secs()
    )
}

/// Runs `attempt` under the start deadline until it succeeds, reporting each failure (`None`
/// when the deadline passed) and waiting [`retry_delay`] between attempts. The time `excused`
/// reports (the user's, in a browser, which has its own bound) is added to the deadline: the
/// deadline is for the server, not for a person logging in.
async fn retry_until_ready<T, R, F, Fut>(
    mut attempt: F,
    mut on_failure: impl FnMut(Option<R>),
    excused: impl Fn() -> Duration,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, R>>,
{
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        let excused_before = excused();
        let running = attempt();
        tokio::pin!(running);
        let reason = loop {
            let deadline = started + START_ATTEMPT_DEADLINE + (excused() - excused_before);
            match tokio::time::timeout_at(deadline, &mut running).await {
                Ok(Ok(ready)) => return ready,
                Ok(Err(reason)) => break Some(reason),
                // The user took some of the time: the deadline moved; wait on.
                Err(_)
                    if started + START_ATTEMPT_DEADLINE + (excused() - excused_before)
                        > deadline => {}
                Err(_) => break None,
            }
        };
        failures = failures.saturating_add(1);
        on_failure(reason);
        tokio::time::sleep(retry_delay(failures)).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_after_1_2_4_up_to_60_seconds() {
        let started = Instant::now();
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&attempts);
        let attempt = move || {
            let log = Arc::clone(&log);
            async move {
                let mut log = log.lock().expect("log");
                log.push(started.elapsed());
                if log.len() < 10 {
                    Err("down".to_owned())
                } else {
                    Ok(log.len())
                }
            }
        };
        let mut reasons = Vec::new();
        let ready = retry_until_ready(attempt, |r| reasons.push(r), || Duration::ZERO).await;
        let reasons: Vec<String> = reasons.into_iter().flatten().collect();
        assert_eq!(ready, 10);
        assert_eq!(reasons.len(), 9);
        let at: Vec<u64> = attempts
            .lock()
            .expect("log")
            .iter()
            .map(Duration::as_secs)
            .collect();
        let gaps: Vec<u64> = at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[tokio::test(start_paused = true)]
    async fn time_the_user_takes_moves_the_deadline() {
        // The attempt needs 10 s past the deadline; the user took the first 60 s of it.
        let started = Instant::now();
        let attempt = || async {
            tokio::time::sleep(START_ATTEMPT_DEADLINE + Duration::from_secs(10)).await;
            Ok::<_, String>(())
        };
        let user = || started.elapsed().min(Duration::from_secs(60));
        let mut reasons = Vec::new();
        let ready = tokio::time::timeout(
            START_ATTEMPT_DEADLINE * 2,
            retry_until_ready(attempt, |r: Option<String>| reasons.push(r), user),
        )
        .await;
        assert!(ready.is_ok() && reasons.is_empty(), "{reasons:?}");
        assert_eq!(
            started.elapsed(),
            START_ATTEMPT_DEADLINE + Duration::from_secs(10)
        );
    }

    /// When each re-list started, since the test did, in milliseconds.
    type Starts = Arc<Mutex<Vec<u128>>>;

    /// Re-lists on `changes`' notices in the background, the last listing at `listed`, each
    /// taking `takes` and failing while `fails` says so of the how-manieth it is; when each
    /// started after `started`.
    fn relisting(
        changes: &Arc<Changes>,
        started: Instant,
        listed: Instant,
        takes: Duration,
        fails: impl Fn(usize) -> bool + Send + Sync + 'static,
    ) -> Starts {
        let starts: Starts = Arc::default();
        let (changes, log) = (Arc::clone(changes), Arc::clone(&starts));
        tokio::spawn(async move {
            let relist = || {
                let log = Arc::clone(&log);
                let fail = {
                    let mut log = log.lock().expect("log");
                    log.push(started.elapsed().as_millis());
                    fails(log.len())
                };
                async move {
                    tokio::time::sleep(takes).await;
                    if fail { Err(()) } else { Ok(()) }
                }
            };
            relist_on_notices(&changes, listed, relist, |()| {}).await;
        });
        starts
    }

    /// A listing the interval before `started`: a re-list may start at once.
    fn long_ago(started: Instant) -> Instant {
        started.checked_sub(RELIST_MIN_INTERVAL).unwrap_or(started)
    }

    #[tokio::test(start_paused = true)]
    async fn a_notice_right_after_the_start_s_listing_waits_out_the_interval() {
        let (changes, started) = (Arc::new(Changes::default()), Instant::now());
        let starts = relisting(&changes, started, started, Duration::ZERO, |_| false);
        changes.notice();
        at(started, 10_000).await;
        let interval = RELIST_MIN_INTERVAL.as_millis();
        assert_eq!(*starts.lock().expect("log"), [interval]);
    }

    async fn at(started: Instant, ms: u64) {
        tokio::time::sleep_until(started + Duration::from_millis(ms)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn notices_are_coalesced_and_relists_kept_the_interval_apart() {
        let (changes, started) = (Arc::new(Changes::default()), Instant::now());
        let starts = relisting(
            &changes,
            started,
            long_ago(started),
            Duration::from_millis(100),
            |_| false,
        );
        // A flood at once: one re-list now, one more (all that came meanwhile) after the
        // interval.
        for _ in 0..1000 {
            changes.notice();
        }
        at(started, 50).await;
        changes.notice();
        at(started, 5_000).await;
        // One notice exactly at the interval after the last start, one just before it.
        changes.notice();
        at(started, 6_999).await;
        changes.notice();
        at(started, 20_000).await;
        let interval = RELIST_MIN_INTERVAL.as_millis();
        assert_eq!(
            *starts.lock().expect("log"),
            [0, interval, 5_000, 5_000 + interval]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_relist_is_tried_again_after_the_backoff() {
        let (changes, started) = (Arc::new(Changes::default()), Instant::now());
        let starts = relisting(&changes, started, long_ago(started), Duration::ZERO, |n| {
            n <= 3
        });
        changes.notice();
        at(started, 60_000).await;
        // Failures at 0, 2 s, 4 s (the interval, longer than the 1 s and 2 s backoffs), then
        // after the third the 4 s backoff: 8 s, which succeeds.
        assert_eq!(*starts.lock().expect("log"), [0, 2_000, 4_000, 8_000]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_past_the_deadline_fails_with_a_reason() {
        let attempt = || async {
            tokio::time::sleep(START_ATTEMPT_DEADLINE + Duration::from_secs(1)).await;
            Ok::<_, String>(())
        };
        let mut reasons = Vec::new();
        let deadline = tokio::time::timeout(
            START_ATTEMPT_DEADLINE + Duration::from_millis(1500),
            retry_until_ready(
                attempt,
                |r: Option<String>| reasons.push(r.unwrap_or_else(deadline_passed)),
                || Duration::ZERO,
            ),
        )
        .await;
        assert!(deadline.is_err(), "the attempt should never finish");
        assert_eq!(reasons, ["did not connect and list its tools within 120 s"]);
    }
}
