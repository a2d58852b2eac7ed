//! The server `cargo run --release -p bench` measures against: rmcp's own Streamable HTTP
//! server (`StreamableHttpService` under `axum::serve`) with one tool, `echo(text, repeat?)`,
//! run as a separate process so client and server do not share a runtime.
//!
//! ```text
//! bench serve [--nodelay] [--json] [--modern] [--tools N] [--listeners N]
//! ```
//!
//! - no flag: rmcp's defaults, as `axum::serve` leaves them: Nagle on, sessions, SSE answers,
//!   and only the session-based revisions (up to 2025-11-25), so every client speaks those;
//! - `--nodelay`: TCP_NODELAY on every accepted socket (`ListenerExt::tap_io`);
//! - `--json`: stateless, `application/json` answers (`legacy_session_mode(false)` +
//!   `json_response(true)`);
//! - `--modern`: 2026-07-28 served as well, which rmcp serves without a session;
//! - `--tools N`: `echo` and N - 1 more tools (`tool_001`, ...), for listing benchmarks;
//! - `--listeners N`: N independent servers (one port and one session manager each) in this
//!   one process, standing for N remote servers.
//!
//! It prints its ports on one line of stdout, separated by spaces, and exits when its stdin
//! closes (so it never outlives the benchmark) or when it is killed.

// The ports on stdout are the process's answer to the benchmark that started it.
#![allow(clippy::print_stdout)]

use std::borrow::Cow;
use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// What the command line asked for.
#[derive(Debug, Clone, Copy)]
struct Options {
    nodelay: bool,
    json: bool,
    modern: bool,
    tools: usize,
    listeners: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        nodelay: false,
        json: false,
        modern: false,
        tools: 1,
        listeners: 1,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut count = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|value| value.parse().ok())
                .filter(|value| *value >= 1)
                .ok_or_else(|| format!("{name} takes a number of at least 1"))
        };
        match arg.as_str() {
            "--nodelay" => options.nodelay = true,
            "--json" => options.json = true,
            "--modern" => options.modern = true,
            "--tools" => options.tools = count("--tools")?,
            "--listeners" => options.listeners = count("--listeners")?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// The first argument that makes the `bench` binary this server.
pub(crate) const SUBCOMMAND: &str = "serve";

/// The server's entry point, with the arguments after [`SUBCOMMAND`].
pub(crate) fn main(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("bench serve: {error}");
            eprintln!(
                "usage: bench serve [--nodelay] [--json] [--modern] [--tools N] [--listeners N]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench serve: cannot build the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench serve: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), String> {
    let tools = Arc::new(tool_list(options.tools));
    let mut ports = Vec::with_capacity(options.listeners);
    for _ in 0..options.listeners {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|error| format!("cannot bind 127.0.0.1: {error}"))?;
        let port = listener
            .local_addr()
            .map_err(|error| format!("a bound listener has no address: {error}"))?
            .port();
        ports.push(port.to_string());
        let config = if options.json {
            StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
        } else {
            StreamableHttpServerConfig::default()
        };
        let handler = Echo {
            tools: Arc::clone(&tools),
            modern: options.modern,
        };
        let service = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        if options.nodelay {
            let listener = listener.tap_io(|stream| {
                if let Err(error) = stream.set_nodelay(true) {
                    eprintln!("bench serve: cannot set TCP_NODELAY: {error}");
                }
            });
            tokio::spawn(async move { axum::serve(listener, router).await });
        } else {
            tokio::spawn(async move { axum::serve(listener, router).await });
        }
    }
    println!("{}", ports.join(" "));
    // Ends the process when the benchmark closes our stdin (or dies).
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
        let _ = closed_tx.send(());
    });
    let _ = closed_rx.await;
    Ok(())
}

/// `echo` first, then `tool_001` ... so that the server lists `count` tools.
fn tool_list(count: usize) -> Vec<Tool> {
    let echo_schema = object(json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The text to echo."},
            "repeat": {"type": "integer", "minimum": 1, "description": "How many times."},
        },
        "required": ["text"],
    }));
    let mut tools = vec![Tool::new(
        "echo",
        "Echoes the text back, repeated `repeat` times.",
        echo_schema,
    )];
    for index in 1..count {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["query"],
        }));
        tools.push(Tool::new(
            format!("tool_{index:03}"),
            format!("Tool number {index}: a stand-in for a real server's catalog entry."),
            schema,
        ));
    }
    tools
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The handler: `echo`, and tools that answer with their own name.
#[derive(Clone)]
struct Echo {
    tools: Arc<Vec<Tool>>,
    /// Whether 2026-07-28 is served beside the session-based revisions.
    modern: bool,
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.modern {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        } else {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            let text = format!("called {}", request.name);
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        let arguments = request.arguments.as_ref();
        let text = arguments
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("text must be a string", None))?;
        let repeat = match arguments.and_then(|a| a.get("repeat")) {
            None | Some(Value::Null) => 1,
            Some(value) => value
                .as_u64()
                .filter(|n| (1..=1 << 20).contains(n))
                .ok_or_else(|| {
                    ErrorData::invalid_params("repeat must be an integer 1 to 2^20", None)
                })?,
        };
        let repeat = usize::try_from(repeat).unwrap_or(1);
        Ok(CallToolResult::success(vec![ContentBlock::text(text.repeat(repeat))]).into())
    }
}
