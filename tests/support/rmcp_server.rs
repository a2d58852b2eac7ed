//! An in-process MCP server built with rmcp, the reference Rust SDK, served over Streamable
//! HTTP on 127.0.0.1. Its tools return every kind of content a result can carry, and it
//! records what the client did (handshakes, cancellations) for tests to check.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// How the server answers POSTs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sessions (`Mcp-Session-Id`), answers as SSE streams: a server of the session-based
    /// revisions only (2025-11-25 and before), so the client shakes hands.
    Sse,
    /// Stateless, answers as `application/json` bodies, every revision rmcp speaks: the
    /// client speaks 2026-07-28 to it.
    Json,
}

/// Which handler the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// [`Tools`]: every content type, errors, a slow tool.
    Tools,
    /// [`Paged`]: five tools over three `tools/list` pages.
    Paged,
}

/// What the handlers record, shared by every session of one server.
struct Shared {
    /// Speaks only the revisions with a handshake ([`Mode::Sse`]).
    legacy_only: bool,
    /// `initialize` requests that reached the handler.
    initializes: AtomicUsize,
    /// `true` lets `initialize` through; `false` holds it until [`TestServer::release`].
    gate: watch::Sender<bool>,
    /// Request ids of `slow` calls, as the server saw them, when they started.
    slow_started: Mutex<Vec<Value>>,
    /// Request ids of `slow` calls whose cancellation token fired.
    slow_cancelled: Mutex<Vec<Value>>,
    /// Request ids named by `notifications/cancelled`.
    cancel_notifications: Mutex<Vec<Value>>,
    /// Woken whenever one of the lists above grows.
    changed: Notify,
}

impl Shared {
    fn new(open: bool, legacy_only: bool) -> Self {
        Self {
            legacy_only,
            initializes: AtomicUsize::new(0),
            gate: watch::Sender::new(open),
            slow_started: Mutex::new(Vec::new()),
            slow_cancelled: Mutex::new(Vec::new()),
            cancel_notifications: Mutex::new(Vec::new()),
            changed: Notify::new(),
        }
    }

    fn record(&self, list: &Mutex<Vec<Value>>, id: Value) {
        list.lock().unwrap_or_else(PoisonError::into_inner).push(id);
        self.changed.notify_waiters();
    }

    fn snapshot(list: &Mutex<Vec<Value>>) -> Vec<Value> {
        list.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Waits up to `within` for `list` to hold an entry and returns its first one.
    async fn first(&self, list: &Mutex<Vec<Value>>, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let changed = self.changed.notified();
            if let Some(first) = Self::snapshot(list).into_iter().next() {
                return Some(first);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Self::snapshot(list).into_iter().next();
            }
        }
    }

    /// The handshake, held while the gate is closed, and counted.
    async fn initialize(
        &self,
        handler: &impl ServerHandler,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let mut gate = self.gate.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _ = gate.wait_for(|open| *open).await;
        self.initializes.fetch_add(1, Ordering::SeqCst);
        context.peer.set_peer_info(request.clone());
        handler.negotiate_initialize(&request)
    }

    fn versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    fn on_cancelled(&self, notification: &CancelledNotificationParam) {
        let id = notification.request_id.as_ref().map_or(Value::Null, |id| {
            serde_json::to_value(id).unwrap_or(Value::Null)
        });
        self.record(&self.cancel_notifications, id);
    }
}

fn capabilities() -> ServerConfig {
    ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        other => panic!("a schema must be an object, not {other}"),
    }
}

fn no_arguments() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

/// A tiny PNG (1x1, transparent), base64.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/// A few bytes standing for a WAV file, base64.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The input schema of `echo`, as the server lists it.
pub fn echo_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo."}},
        "required": ["text"],
    })
}

/// The description of `echo`, as the server lists it.
pub const ECHO_DESCRIPTION: &str = "Echoes the text back.";

/// The names of [`Tools`]' tools in name order, as a listing should show them.
pub const TOOL_NAMES: [&str; 11] = [
    "add",
    "audio",
    "echo",
    "embedded",
    "fails",
    "image",
    "link",
    "mixed",
    "rpc_error",
    "slow",
    "structured",
];

/// The names of [`Paged`]'s tools in name order.
pub const PAGED_TOOL_NAMES: [&str; 5] = ["p1a", "p1b", "p2a", "p2b", "p3a"];

/// The main handler: one tool per kind of result.
#[derive(Clone)]
struct Tools {
    shared: Arc<Shared>,
}

impl Tools {
    fn tools() -> Vec<Tool> {
        // Not in name order, so a listing in name order is the client's doing.
        vec![
            Tool::new("echo", ECHO_DESCRIPTION, schema(echo_schema())),
            Tool::new(
                "add",
                "Adds two numbers.",
                schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                })),
            ),
            Tool::new("image", "Returns an image.", no_arguments()),
            Tool::new("audio", "Returns audio.", no_arguments()),
            Tool::new("embedded", "Returns embedded resources.", no_arguments()),
            Tool::new("link", "Returns a resource link.", no_arguments()),
            Tool::new("mixed", "Returns text, an image and text.", no_arguments()),
            Tool::new(
                "structured",
                "Returns structured content only.",
                no_arguments(),
            ),
            Tool::new("fails", "Reports a tool error.", no_arguments()),
            Tool::new(
                "rpc_error",
                "Answers with a JSON-RPC error.",
                no_arguments(),
            ),
            Tool::new("slow", "Waits until cancelled.", no_arguments()),
        ]
    }

    async fn slow(&self, context: &RequestContext<RoleServer>) -> CallToolResult {
        let id = serde_json::to_value(&context.id).unwrap_or(Value::Null);
        self.shared.record(&self.shared.slow_started, id.clone());
        tokio::select! {
            () = context.ct.cancelled() => {
                self.shared.record(&self.shared.slow_cancelled, id);
                CallToolResult::success(vec![ContentBlock::text("cancelled")])
            }
            () = tokio::time::sleep(Duration::from_secs(60)) => {
                CallToolResult::success(vec![ContentBlock::text("slept a minute")])
            }
        }
    }
}

fn text_argument(request: &CallToolRequestParams, key: &str) -> Result<String, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ErrorData::invalid_params(format!("{key} must be a string"), None))
}

fn number_argument(request: &CallToolRequestParams, key: &str) -> Result<f64, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_f64)
        .ok_or_else(|| ErrorData::invalid_params(format!("{key} must be a number"), None))
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        capabilities()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.shared.versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.shared.initialize(self, request, context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Self::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                CallToolResult::success(vec![ContentBlock::text(text_argument(&request, "text")?)])
            }
            "add" => {
                let sum = number_argument(&request, "a")? + number_argument(&request, "b")?;
                CallToolResult::success(vec![ContentBlock::text(sum.to_string())])
            }
            "image" => CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")]),
            "audio" => CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")]),
            "embedded" => CallToolResult::success(vec![
                ContentBlock::resource(ResourceContents::text(
                    "embedded text",
                    "file:///tmp/embedded.txt",
                )),
                ContentBlock::resource(ResourceContents::blob("AAECAw==", "file:///tmp/blob.bin")),
            ]),
            "link" => CallToolResult::success(vec![ContentBlock::resource_link(Resource::new(
                "file:///tmp/report.txt",
                "report",
            ))]),
            "mixed" => CallToolResult::success(vec![
                ContentBlock::text("first"),
                ContentBlock::image(PNG, "image/png"),
                ContentBlock::text("last"),
            ]),
            "structured" => {
                let mut result = CallToolResult::success(Vec::new());
                result.structured_content = Some(json!({"answer": 42}));
                result
            }
            "fails" => CallToolResult::error(vec![ContentBlock::text("it broke")]),
            "rpc_error" => return Err(ErrorData::invalid_params("bad thing", None)),
            "slow" => self.slow(&context).await,
            other => {
                return Err(ErrorData::invalid_params(format!("no tool {other}"), None));
            }
        };
        Ok(result.into())
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.shared.on_cancelled(&notification);
    }
}

/// A handler whose `tools/list` answers in three pages of at most two tools.
#[derive(Clone)]
struct Paged {
    shared: Arc<Shared>,
}

impl ServerHandler for Paged {
    fn get_info(&self) -> ServerConfig {
        capabilities()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.shared.versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.shared.initialize(self, request, context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let (names, next): (&[&str], Option<&str>) = match cursor.as_deref() {
            None => (&["p1b", "p1a"], Some("page-2")),
            Some("page-2") => (&["p2b", "p2a"], Some("page-3")),
            Some("page-3") => (&["p3a"], None),
            Some(other) => {
                return Err(ErrorData::invalid_params(
                    format!("unknown cursor {other}"),
                    None,
                ));
            }
        };
        let tools = names
            .iter()
            .map(|name| Tool::new(*name, format!("Tool {name}."), no_arguments()))
            .collect();
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = next.map(str::to_owned);
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = format!("called {}", request.name);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// A running server; it stops when dropped.
pub struct TestServer {
    /// The MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// The address it listens on.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    sessions: Arc<LocalSessionManager>,
    task: JoinHandle<()>,
    /// Cancels rmcp's own token, which ends every session.
    stop: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// The tools server, on a free port.
    pub async fn start(mode: Mode) -> TestServer {
        serve(Kind::Tools, mode, true, bind(0).await).await
    }

    /// The tools server, with `initialize` held until [`TestServer::release`].
    pub async fn start_held(mode: Mode) -> TestServer {
        serve(Kind::Tools, mode, false, bind(0).await).await
    }

    /// The tools server on `port`, retrying the bind for a few seconds.
    pub async fn start_at(mode: Mode, port: u16) -> TestServer {
        serve(Kind::Tools, mode, true, bind(port).await).await
    }

    /// The paged server, on a free port.
    pub async fn start_paged(mode: Mode) -> TestServer {
        serve(Kind::Paged, mode, true, bind(0).await).await
    }

    /// Lets every held and future `initialize` through.
    pub fn release(&self) {
        self.shared.gate.send_replace(true);
    }

    /// How many `initialize` requests the handlers answered.
    pub fn initializes(&self) -> usize {
        self.shared.initializes.load(Ordering::SeqCst)
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

    /// How many sessions the server holds.
    pub async fn session_count(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }

    /// Waits up to `within` for a `slow` call to start; its request id as the server saw it.
    pub async fn wait_slow_started(&self, within: Duration) -> Option<Value> {
        self.shared.first(&self.shared.slow_started, within).await
    }

    /// Waits up to `within` for a `slow` call to observe its cancellation; its request id.
    pub async fn wait_cancelled(&self, within: Duration) -> Option<Value> {
        self.shared.first(&self.shared.slow_cancelled, within).await
    }

    /// Request ids of every `slow` call that started.
    pub fn slow_started(&self) -> Vec<Value> {
        Shared::snapshot(&self.shared.slow_started)
    }

    /// Request ids named by every `notifications/cancelled` the server received.
    pub fn cancel_notifications(&self) -> Vec<Value> {
        Shared::snapshot(&self.shared.cancel_notifications)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        (self.stop)();
        self.task.abort();
    }
}

/// Binds 127.0.0.1:`port` (0 for any), retrying for up to 5 s while the port is taken.
async fn bind(port: u16) -> tokio::net::TcpListener {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => return listener,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("could not bind 127.0.0.1:{port}: {e}"),
        }
    }
}

async fn serve(
    kind: Kind,
    mode: Mode,
    open: bool,
    listener: tokio::net::TcpListener,
) -> TestServer {
    let addr = listener
        .local_addr()
        .expect("a bound listener has an address");
    let shared = Arc::new(Shared::new(open, mode == Mode::Sse));
    let sessions = Arc::new(LocalSessionManager::default());
    let config = match mode {
        Mode::Sse => StreamableHttpServerConfig::default(),
        Mode::Json => StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    };
    let token = config.cancellation_token.clone();
    let router = match kind {
        Kind::Tools => {
            let shared = Arc::clone(&shared);
            let factory = move || {
                Ok(Tools {
                    shared: Arc::clone(&shared),
                })
            };
            let service = StreamableHttpService::new(factory, Arc::clone(&sessions), config);
            axum::Router::new().nest_service("/mcp", service)
        }
        Kind::Paged => {
            let shared = Arc::clone(&shared);
            let factory = move || {
                Ok(Paged {
                    shared: Arc::clone(&shared),
                })
            };
            let service = StreamableHttpService::new(factory, Arc::clone(&sessions), config);
            axum::Router::new().nest_service("/mcp", service)
        }
    };
    let shutdown = token.clone();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await;
    });
    TestServer {
        url: format!("http://{addr}/mcp"),
        addr,
        shared,
        sessions,
        task,
        stop: Box::new(move || token.cancel()),
    }
}
