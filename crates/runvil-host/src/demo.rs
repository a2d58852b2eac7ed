//! `runvil demo`: the main job on an embedded default. It serves a small MCP server on a free
//! loopback port in this process (rmcp over Streamable HTTP, writing no files), installs the
//! Pack on a config naming it, and shows the listing, one tool with its schema, and calls.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use runvil_plugin::Pack;
use serde_json::{Value, json};

use crate::host::{self, EXIT_OK, EXIT_OTHER};
use crate::output::Format;
use crate::progress;

/// How long the `slow` tool takes: long enough to see, short enough for a demo.
const SLOW: Duration = Duration::from_millis(1500);

/// A 1x1 transparent PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

#[derive(Clone)]
struct DemoServer;

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn argument<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    request.arguments.as_ref()?.get(key)
}

impl ServerHandler for DemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let numbers = json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        });
        let none = json!({"type": "object", "properties": {}});
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("echo", "Echoes the text back.", schema(text)),
            Tool::new("add", "Adds two numbers.", schema(numbers)),
            Tool::new("image", "Returns a tiny PNG image.", schema(none.clone())),
            Tool::new("slow", "Answers after a moment.", schema(none)),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let content = match request.name.as_ref() {
            "echo" => {
                let text = argument(&request, "text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                ContentBlock::text(text)
            }
            "add" => {
                let number = |k| argument(&request, k).and_then(Value::as_f64).unwrap_or(0.0);
                ContentBlock::text((number("a") + number("b")).to_string())
            }
            "image" => ContentBlock::image(PNG, "image/png"),
            "slow" => {
                tokio::time::sleep(SLOW).await;
                ContentBlock::text("done, after a moment")
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![content]).into())
    }
}

/// Runs the demo and answers the process's exit code.
pub(crate) async fn run() -> u8 {
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("runvil: cannot open a loopback port for the demo server: {e}");
            return EXIT_OTHER;
        }
    };
    let url = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}/mcp"),
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let config = StreamableHttpServerConfig::default();
    let stop = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        || Ok(DemoServer),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    // Serves until the runtime shuts down, after the Pack's farewells have reached it.
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
    });

    let servers = json!({"demo": {"url": url}});
    match host::build_pack(servers.clone(), tokio::runtime::Handle::current()) {
        Ok(pack) => {
            let code = show(&pack, &servers).await;
            pack.shutdown().await;
            code
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            EXIT_OTHER
        }
    }
}

async fn show(pack: &Arc<dyn Pack>, servers: &Value) -> u8 {
    let steps: [(&str, &str, Value); 5] = [
        ("the listing", "mcp/get_dynamic_tools", json!({})),
        (
            "one tool with its schema",
            "mcp/get_dynamic_tools",
            json!({"namespace": "demo", "toolName": "add"}),
        ),
        (
            "a call",
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "add", "arguments": {"a": 2, "b": 3}}),
        ),
        (
            "an image result",
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "image"}),
        ),
        (
            "a mistake a model can fix",
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "add", "arguments": {"a": "two"}}),
        ),
    ];
    let config = json!({"mcpServers": servers}).to_string();
    host::say(&format!("# mcp.json\n{}\n", Format::Pretty.render(&config)));
    progress::wait(pack.status(), None, Duration::from_secs(10)).await;
    for (title, tool, args) in steps {
        host::say(&format!("# {title}: {tool} {args}"));
        match pack.call(tool, args).await {
            Ok(text) => host::say(&format!("{}\n", Format::Pretty.render(&text))),
            Err(e) if title.starts_with("a mistake") => host::say(&format!("{e}\n")),
            Err(e) => {
                eprintln!("runvil: {e}");
                return host::exit_code(&e);
            }
        }
    }
    EXIT_OK
}
