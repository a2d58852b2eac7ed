//! Starting a fixture: the builder's options (tools, answers, revisions, TCP_NODELAY, a held
//! handshake, a late start, a fixed port, how long `slow` waits), rmcp's Streamable HTTP
//! service under `axum::serve` on 127.0.0.1, and the handle a test keeps, which stops the
//! server when dropped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::handler::{Handler, Revisions, Settings, ToolSet};
use crate::recorder::{Ids, Recorder};
use crate::tools::SLOW_DEFAULT;

/// How the server answers POSTs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answers {
    /// Sessions (`Mcp-Session-Id`), answers as SSE streams: rmcp's default.
    Sse,
    /// Stateless, answers as `application/json` bodies.
    Json,
}

/// The two servers the Pack's tests speak to, each end of what a client must handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sessions and SSE answers, and only the session-based revisions: the client shakes
    /// hands ([`Answers::Sse`], [`Revisions::SessionBased`]).
    Sse,
    /// Stateless JSON answers and every revision: the client speaks 2026-07-28
    /// ([`Answers::Json`], [`Revisions::All`]).
    Json,
}

/// What to start; [`Fixture::builder`] begins with rmcp's defaults and every tool.
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    tools: ToolSet,
    answers: Answers,
    revisions: Revisions,
    nodelay: bool,
    open: bool,
    late: Duration,
    port: u16,
    slow_for: Duration,
}

impl Builder {
    /// The tools it lists.
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.tools = tools;
        self
    }

    /// Answers and revisions together, as one of the two servers of [`Mode`].
    pub fn mode(self, mode: Mode) -> Self {
        match mode {
            Mode::Sse => self
                .answers(Answers::Sse)
                .revisions(Revisions::SessionBased),
            Mode::Json => self.answers(Answers::Json).revisions(Revisions::All),
        }
    }

    /// How it answers POSTs.
    pub fn answers(mut self, answers: Answers) -> Self {
        self.answers = answers;
        self
    }

    /// Which protocol revisions it speaks.
    pub fn revisions(mut self, revisions: Revisions) -> Self {
        self.revisions = revisions;
        self
    }

    /// TCP_NODELAY on every accepted socket; off by default, as `axum::serve` leaves it.
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.nodelay = nodelay;
        self
    }

    /// Holds every `initialize` until [`Fixture::release`].
    pub fn held(mut self) -> Self {
        self.open = false;
        self
    }

    /// Accepts connections at once but answers nothing for `late`: a client sees the server
    /// loading that long.
    pub fn late(mut self, late: Duration) -> Self {
        self.late = late;
        self
    }

    /// Listens on `port` (0, the default, for any free one), retrying the bind for up to 5 s
    /// while the port is taken.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How long `slow` waits for a cancellation before it answers (a minute by default).
    pub fn slow_for(mut self, slow_for: Duration) -> Self {
        self.slow_for = slow_for;
        self
    }

    /// Starts the server on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// If 127.0.0.1 cannot be bound: a test cannot go on without its server.
    pub async fn start(self) -> Fixture {
        let port = self.port;
        match self.try_start().await {
            Ok(fixture) => fixture,
            Err(e) => panic!("could not bind 127.0.0.1:{port}: {e}"),
        }
    }

    /// Starts the server on the current tokio runtime, or says why 127.0.0.1 could not be
    /// bound.
    pub async fn try_start(self) -> std::io::Result<Fixture> {
        let listener = bind(self.port).await?;
        let addr = listener.local_addr()?;
        let recorder = Arc::new(Recorder::new(self.open));
        let settings = Arc::new(Settings {
            recorder: Arc::clone(&recorder),
            tools: self.tools,
            revisions: self.revisions,
            slow_for: self.slow_for,
        });
        let config = match self.answers {
            Answers::Sse => StreamableHttpServerConfig::default(),
            Answers::Json => StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true),
        };
        let token = config.cancellation_token.clone();
        let sessions = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(
            move || Ok(Handler::new(Arc::clone(&settings))),
            Arc::clone(&sessions),
            config,
        );
        let seen = Arc::clone(&recorder);
        let router =
            axum::Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn(
                    move |request: Request, next: Next| {
                        seen.record_method(request.method().as_str());
                        next.run(request)
                    },
                ));
        let (late, nodelay) = (self.late, self.nodelay);
        let shutdown = token.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(late).await;
            let stop = async move { shutdown.cancelled_owned().await };
            // Two calls, as `tap_io` gives the listener another type.
            if nodelay {
                let listener = listener.tap_io(|stream| {
                    // A socket that refuses the option is served as it is.
                    let _ = stream.set_nodelay(true);
                });
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(stop)
                    .await;
            } else {
                let _ = axum::serve(listener, router)
                    .with_graceful_shutdown(stop)
                    .await;
            }
        });
        Ok(Fixture {
            url: format!("http://{addr}/mcp"),
            addr,
            recorder,
            sessions,
            task,
            stop: Box::new(move || token.cancel()),
        })
    }
}

/// Binds 127.0.0.1:`port` (0 for any), retrying for up to 5 s while the port is taken.
async fn bind(port: u16) -> std::io::Result<TcpListener> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => return Ok(listener),
            Err(_) if port != 0 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A running fixture; it stops when dropped.
pub struct Fixture {
    url: String,
    addr: SocketAddr,
    recorder: Arc<Recorder>,
    sessions: Arc<LocalSessionManager>,
    task: JoinHandle<()>,
    /// Cancels rmcp's own token, which ends every session.
    stop: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// rmcp's defaults (sessions, SSE answers, every revision), every tool, a free port.
    pub fn builder() -> Builder {
        Builder {
            tools: ToolSet::All,
            answers: Answers::Sse,
            revisions: Revisions::All,
            nodelay: false,
            open: true,
            late: Duration::ZERO,
            port: 0,
            slow_for: SLOW_DEFAULT,
        }
    }

    /// Every tool, as one of the two servers of [`Mode`], on a free port.
    pub async fn start(mode: Mode) -> Fixture {
        Self::builder().mode(mode).start().await
    }

    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Lets every held and future `initialize` through.
    pub fn release(&self) {
        self.recorder.gate.send_replace(true);
    }

    /// Waits up to `within` for an `initialize` to reach the server (held, if the gate is
    /// closed); whether one did.
    pub async fn wait_held(&self, within: Duration) -> bool {
        self.recorder.handshake_reached(within).await
    }

    /// How many `initialize` requests got past the gate.
    pub fn initializes(&self) -> usize {
        self.recorder.initializes()
    }

    /// How many HTTP requests with `method` (`GET`, `POST`, `DELETE`; anything else counts
    /// together) reached it: a `DELETE` is a client ending its session.
    pub fn requests(&self, method: &str) -> usize {
        self.recorder.requests(method)
    }

    /// Ends every session, as a restarted server would have forgotten them.
    pub async fn forget_sessions(&self) {
        let ids: Vec<_> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .cloned()
            .collect();
        for id in ids {
            let _ = self.sessions.close_session(&id).await;
        }
    }

    /// How many sessions it holds.
    pub async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }

    /// Waits up to `within` for a `slow` call to start; its request id as the server saw it.
    pub async fn wait_slow_started(&self, within: Duration) -> Option<Value> {
        self.recorder.first(Ids::SlowStarted, within).await
    }

    /// Waits up to `within` for a `slow` call to observe its cancellation; its request id.
    pub async fn wait_cancelled(&self, within: Duration) -> Option<Value> {
        self.recorder.first(Ids::SlowCancelled, within).await
    }

    /// Waits up to `within` for a `notifications/cancelled` to arrive; its request id.
    pub async fn wait_cancel_notification(&self, within: Duration) -> Option<Value> {
        self.recorder.first(Ids::CancelNotifications, within).await
    }

    /// Request ids of every `slow` call that started.
    pub fn slow_started(&self) -> Vec<Value> {
        self.recorder.ids(Ids::SlowStarted)
    }

    /// Request ids of every `slow` call that observed its cancellation.
    pub fn slow_cancelled(&self) -> Vec<Value> {
        self.recorder.ids(Ids::SlowCancelled)
    }

    /// Request ids named by every `notifications/cancelled` it received: the session-based
    /// revisions' way to cancel (at 2026-07-28 closing the response stream cancels instead).
    pub fn cancel_notifications(&self) -> Vec<Value> {
        self.recorder.ids(Ids::CancelNotifications)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        (self.stop)();
        self.task.abort();
    }
}
