//! `runvil serve --http ADDR`: the Pack's two tools at `/mcp` over Streamable HTTP, for a
//! team's MCP clients, at both revisions the Pack itself speaks: 2025-11-25 (with 2025-06-18
//! and 2025-03-26), whose clients open a session with `initialize`, and 2026-07-28, which has
//! none. Any instance answers any request: a session lives in its own id (`session`, sealed
//! under a key the instances share), and the only state of one process is its calls in
//! flight (`in_flight`) and the sessions it knows were ended (`revoked`, shared through the
//! store), so instances behind a load balancer need no stickiness.
//!
//! Written here on hyper rather than with rmcp's Streamable HTTP service: that service keeps
//! each session as a worker in the process that opened it, so a second instance cannot answer
//! it, and it has no place for what this server does before and around each message (the
//! gatekeeper, the identity's limits and view, an audit line per call). What is written here
//! is the transport alone; the JSON-RPC shapes of results are rmcp's, and the tools are the
//! Pack's. hyper directly rather than axum: the routes are a handful, so a router adds
//! nothing, and the connection's own bounds (header bytes, time to send them) and graceful
//! drain are hyper's settings, which `axum::serve` does not expose.
//!
//! The rooms:
//! - `listener`: connections (the bounds on headers and on slow senders, TLS, the drain);
//! - `endpoint`: each request's route, origin check, gatekeeper, limits and body, and which
//!   revision answers it: `legacy` (the session revisions) or `modern` (2026-07-28);
//! - `call`: one `tools/call`, as a task, with its progress, cancellation and audit line
//!   (`record` decides the line);
//! - `session` and `session_key`: the sealed session ids and the key they are sealed under;
//!   `revoked`: the sessions ended with `DELETE` (this instance's, and with `--store` every
//!   instance's);
//! - `limits`: each identity's rate, requests and streams; `in_flight`: the calls running;
//! - `rpc`: the JSON-RPC messages; `answer`: the responses; `health`: `/healthz`, `/readyz`;
//!   `tls`: rustls from PEM files.

mod answer;
mod call;
mod endpoint;
mod health;
mod in_flight;
mod legacy;
mod limits;
mod listener;
mod modern;
mod post;
mod record;
mod revoked;
mod rpc;
mod session;
mod session_key;
#[cfg(test)]
mod tests;
mod tls;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Served, Waits, say_held, start};
use crate::cli::{GatewayArgs, HttpArgs, Source, StoreArgs};
use crate::discovery;
use crate::gateway::{AuditError, AuditLine, Gateway};
use crate::host::EXIT_OTHER;
use crate::signals;

// The bounds policy/gateway.md lists, for the test that checks it against the code.
#[cfg(test)]
pub(crate) use {
    endpoint::{MAX_BODY_BYTES, SEND_TIMEOUT},
    limits::MAX_IDENTITIES,
    listener::{MAX_CONNECTIONS, MAX_HEADER_BYTES},
    revoked::MAX_REVOKED_SESSIONS,
    session::SESSION_LIFETIME,
};

/// The path of the MCP endpoint.
const MCP_PATH: &str = "/mcp";
/// The revision without sessions.
const MODERN: &str = "2026-07-28";

/// How `runvil serve --http` was asked to serve.
pub(crate) struct Settings {
    /// Where to listen: `127.0.0.1:8080`, `localhost:8080`, `[::]:443`.
    pub(crate) address: String,
    /// The shared key of session ids; `session.key` beside the pins file when absent.
    pub(crate) session_key_file: Option<PathBuf>,
    /// The certificate chain and private key, when the gateway speaks TLS itself.
    pub(crate) tls: Option<(PathBuf, PathBuf)>,
    pub(crate) drain: Duration,
    pub(crate) call_timeout: Duration,
    pub(crate) limits: limits::Settings,
}

impl Settings {
    /// The settings `args` give, or `None` when they do not ask for HTTP.
    pub(crate) fn of(args: HttpArgs) -> Option<Self> {
        Some(Self {
            address: args.http?,
            session_key_file: args.session_key_file,
            tls: args.tls_cert.zip(args.tls_key),
            drain: Duration::from_secs(args.drain),
            call_timeout: Duration::from_secs(args.call_timeout),
            limits: limits::Settings {
                rate: args.rate,
                burst: args.burst,
                max_requests: args.max_requests,
                max_streams: args.max_streams,
            },
        })
    }
}

/// What every request shares.
struct Server {
    served: Served,
    /// The offered tools as `tools/list` answers them.
    tools: Value,
    gateway: Arc<Gateway>,
    key: session::SessionKey,
    /// The sessions ended with `DELETE`.
    revoked: revoked::Revoked,
    limits: limits::Limits,
    in_flight: Arc<in_flight::InFlight>,
    /// The calls running, which the drain waits for.
    calls: TaskTracker,
    /// Cancelled when the drain runs out: the calls still running end.
    ended: CancellationToken,
    call_timeout: Duration,
}

impl Server {
    fn new(
        served: Served,
        gateway: Gateway,
        key: session::SessionKey,
        revoked: revoked::Revoked,
        settings: &Settings,
    ) -> Self {
        // rmcp's tools are names, texts and JSON objects: they always serialize.
        let tools = serde_json::to_value(served.tools()).unwrap_or_default();
        Self {
            tools,
            served,
            gateway: Arc::new(gateway),
            key,
            revoked,
            limits: limits::Limits::new(settings.limits),
            in_flight: Arc::default(),
            calls: TaskTracker::new(),
            ended: CancellationToken::new(),
            call_timeout: settings.call_timeout,
        }
    }

    /// Writes an audit line; a line that cannot be kept is said in the log, and the error
    /// answered for the caller to act on.
    fn record(&self, line: AuditLine) -> Result<(), AuditError> {
        self.gateway.audit.record(line).inspect_err(|e| {
            tracing::warn!(target: "runvil", error = %e, "an audit line was not kept");
        })
    }
}

/// The revision a request is answered in.
#[derive(Debug, Clone, Copy)]
enum Revision {
    /// A session's revision.
    Session,
    /// 2026-07-28.
    Modern,
}

impl Revision {
    /// `result` as the revision completes it: at 2026-07-28 every result says it is complete
    /// and names the server.
    fn complete(self, mut result: Value) -> Value {
        if let (Self::Modern, Some(fields)) = (self, result.as_object_mut()) {
            fields.insert("resultType".into(), json!("complete"));
            fields.insert(
                "_meta".into(),
                json!({"io.modelcontextprotocol/serverInfo": server_info()}),
            );
        }
        result
    }
}

/// The server's name and version, as both revisions show them.
fn server_info() -> Value {
    json!({"name": "runvil", "version": env!("CARGO_PKG_VERSION")})
}

/// Serves until a stop signal, then drains; the exit code is 128 + the signal, or 1 when the
/// gateway could not start. `gateway` says who is let in, what each may use and where each
/// call is recorded.
pub(crate) async fn run(
    source: &Source,
    store: &StoreArgs,
    waits: Waits,
    settings: Settings,
    gateway: &GatewayArgs,
) -> u8 {
    let (config, store, pack) = match start(source, store).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    // Another instance's (or process's) approval or rejection counts at the next call.
    let _following = store.follow(&pack);
    let database = store.database();
    let revoked = revoked::Revoked::new(database.as_ref().map(|(db, _)| Arc::clone(db)));
    let started = listen(&settings, gateway, database).await;
    let (listener, tls, key, gateway) = match started {
        Ok(started) => started,
        Err(e) => {
            eprintln!("runvil: {e}");
            pack.shutdown().await;
            return EXIT_OTHER;
        }
    };
    let local = listener
        .local_addr()
        .map_or(settings.address.clone(), |a| a.to_string());
    let scheme = if tls.is_some() { "https" } else { "http" };
    eprintln!(
        "runvil: serving MCP at {scheme}://{local}{MCP_PATH} for {} ({})",
        config.path.display(),
        config.origin
    );
    if gateway.gatekeeper.is_open() {
        eprintln!(
            "runvil: no authentication: only clients on this machine can connect, through a \
             loopback address"
        );
    }
    discovery::say_warnings(&config.warnings);
    let served = Served::new(Arc::clone(&pack), waits);
    let audit = Arc::clone(&gateway.audit);
    let server = Arc::new(Server::new(served, gateway, key, revoked, &settings));
    let serving = listener::serve(listener, tls, server, settings.drain, signals::stopped());
    let stop = tokio::select! {
        stop = serving => stop,
        () = say_held(pack.status()) => unreachable!("say_held never ends"),
    };
    // The calls have ended: their lines are kept before runvil does.
    audit.closing().await;
    pack.shutdown().await;
    stop.exit_code()
}

/// What serving needs before the first connection: the listening socket, TLS, the session
/// key and the gateway's who, what and record. An error says which flag or file is wrong.
async fn listen(
    settings: &Settings,
    gateway: &GatewayArgs,
    store: Option<(Arc<runvil_store::Database>, Arc<runvil_store::Instance>)>,
) -> Result<
    (
        TcpListener,
        Option<tokio_rustls::TlsAcceptor>,
        session::SessionKey,
        Gateway,
    ),
    String,
> {
    let address = resolve(&settings.address)?;
    let gateway = Gateway::from_args(gateway, address.ip().is_loopback(), store)
        .map_err(|e| e.to_string())?;
    let key_path = match &settings.session_key_file {
        Some(path) => path.clone(),
        None => session_key::default_path()
            .ok_or("no place for the session key: set HOME or --session-key-file")?,
    };
    let key = session::SessionKey::new(&session_key::read_or_create(&key_path)?);
    let tls = match &settings.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("--http {}: cannot listen: {e}", settings.address))?;
    Ok((listener, tls, key, gateway))
}

/// The first address `address` names.
fn resolve(address: &str) -> Result<SocketAddr, String> {
    address
        .to_socket_addrs()
        .map_err(|e| format!("--http {address}: not an address and port ({e})"))?
        .next()
        .ok_or_else(|| format!("--http {address}: names no address"))
}
