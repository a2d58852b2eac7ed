//! What the `runvil` tests share: a real MCP server (rmcp over Streamable HTTP on 127.0.0.1,
//! in the test's own process) for `runvil` to reach, temporary config files, and running the
//! binary.

// Each test file uses part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Runs `runvil` with `args` and quiet logs, as a person would from a shell.
pub(crate) fn runvil(args: &[&str]) -> Output {
    runvil_command(args).output().expect("runvil runs")
}

/// `runvil` with `args`, quiet logs, and no config from the environment.
pub(crate) fn runvil_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_runvil"));
    command
        .args(args)
        .env("RUST_LOG", "off")
        .env_remove("RUNVIL_MCP_CONFIG");
    command
}

/// Bytes as text, for assertions.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path under the system's temp dir that no other test (or test run) uses.
pub(crate) fn unique_temp_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    std::env::temp_dir().join(format!("runvil-test-{}-{n}-{name}", std::process::id()))
}

/// A file or directory under the temp dir, removed when dropped.
pub(crate) struct Temp(pub(crate) PathBuf);

impl Temp {
    /// A config file whose `mcpServers` object is `servers`.
    pub(crate) fn config(servers: Value) -> Self {
        let path = unique_temp_path("mcp.json");
        let text = json!({ "mcpServers": servers }).to_string();
        std::fs::write(&path, text).expect("config written");
        Self(path)
    }

    /// An empty directory.
    pub(crate) fn dir() -> Self {
        let path = unique_temp_path("dir");
        std::fs::create_dir_all(&path).expect("dir made");
        Self(path)
    }

    /// Writes `text` to `relative` inside this directory, making its parents.
    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.0.join(relative);
        let parent = path.parent().expect("a parent");
        std::fs::create_dir_all(parent).expect("parents made");
        std::fs::write(&path, text).expect("file written");
        path
    }

    /// The path as a `&str`, for command lines.
    pub(crate) fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the server saw of its `slow` tool.
#[derive(Default)]
struct Seen {
    slow_started: AtomicBool,
    /// The call's cancellation token fired.
    slow_cancelled: AtomicBool,
    /// A notifications/cancelled arrived.
    cancel_notified: AtomicBool,
}

#[derive(Clone)]
struct Handler {
    seen: Arc<Seen>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        other => panic!("a schema must be an object, not {other}"),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let none = json!({"type": "object", "properties": {}});
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Echoes the text back.", schema(text)),
            Tool::new("fails", "Reports a tool error.", schema(none.clone())),
            Tool::new("slow", "Waits until cancelled.", schema(none.clone())),
            Tool::new("progress", "Reports two steps of progress.", schema(none)),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "fails" => CallToolResult::error(vec![ContentBlock::text("the disk is full")]),
            "progress" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for step in [1.0, 2.0] {
                        let mut notice = ProgressNotificationParam::new(token.clone(), step);
                        notice.total = Some(2.0);
                        notice.message = Some(format!("step {step}\u{1b}[2J"));
                        let _ = context.peer.notify_progress(notice).await;
                    }
                }
                CallToolResult::success(vec![ContentBlock::text("done")])
            }
            "slow" => {
                self.seen.slow_started.store(true, Ordering::SeqCst);
                tokio::select! {
                    () = context.ct.cancelled() => {
                        self.seen.slow_cancelled.store(true, Ordering::SeqCst);
                    }
                    () = tokio::time::sleep(Duration::from_secs(60)) => {}
                }
                CallToolResult::success(vec![ContentBlock::text("done")])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }

    async fn on_cancelled(
        &self,
        _notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.seen.cancel_notified.store(true, Ordering::SeqCst);
    }
}

/// The server, on a free loopback port until dropped.
pub(crate) struct Backend {
    url: String,
    seen: Arc<Seen>,
    task: JoinHandle<()>,
}

impl Backend {
    /// Starts the server on the current tokio runtime.
    pub(crate) async fn start() -> Self {
        Self::start_late(Duration::ZERO).await
    }

    /// Starts the server, which accepts connections at once but answers nothing for `late`:
    /// a client sees it `loading` that long.
    pub(crate) async fn start_late(late: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
        let seen = Arc::new(Seen::default());
        let handler = Handler {
            seen: Arc::clone(&seen),
        };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        let task = tokio::spawn(async move {
            tokio::time::sleep(late).await;
            let _ = axum::serve(listener, router).await;
        });
        Self { url, seen, task }
    }

    /// The server's Streamable HTTP endpoint.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// A config naming this server as `backend`.
    pub(crate) fn config(&self) -> Temp {
        Temp::config(json!({ "backend": { "url": self.url } }))
    }

    /// Waits up to `within` for a `slow` call to start.
    pub(crate) async fn slow_started(&self, within: Duration) -> bool {
        until(&self.seen.slow_started, within).await
    }

    /// Waits up to `within` for a `slow` call to be cancelled by a notifications/cancelled
    /// from its client (the call's cancellation token firing alone could be the session
    /// ending).
    pub(crate) async fn slow_cancelled(&self, within: Duration) -> bool {
        until(&self.seen.slow_cancelled, within).await
    }

    /// Whether a notifications/cancelled arrived: the session-based revisions' way to cancel.
    /// The server speaks 2026-07-28 too, where closing the response stream cancels instead.
    pub(crate) fn cancel_notified(&self) -> bool {
        self.seen.cancel_notified.load(Ordering::SeqCst)
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn until(flag: &AtomicBool, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while !flag.load(Ordering::SeqCst) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}
