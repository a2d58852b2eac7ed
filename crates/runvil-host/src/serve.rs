//! `runvil serve`: the Pack as one MCP server on stdio, so any MCP client (Claude Desktop,
//! Cursor, Codex, VS Code) gets every remote server of an `mcp.json` through two tools.
//!
//! The tools are the Pack's own, with its descriptions and schemas; only the `mcp/` prefix
//! goes, since MCP tool names cannot hold `/`. A failed call is a tool result with
//! `isError: true` and the error's text, so the model reads it and can correct itself; only a
//! call to a tool that does not exist is a protocol error. stdout carries nothing but the
//! protocol: logs and the start-up line go to stderr.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use runvil_plugin::Pack;
use serde_json::Value;
use tokio::runtime::Handle;

use crate::cli::Source;
use crate::discovery;
use crate::host::{self, EXIT_INTERRUPTED, EXIT_OK, EXIT_OTHER};

/// One of the Pack's tools as the gateway offers it.
struct Offered {
    /// What an MCP client sees: the Pack's name without its `mcp/` prefix.
    tool: Tool,
    /// The name the Pack knows it by.
    qualified: String,
}

#[derive(Clone)]
struct Gateway {
    pack: Arc<dyn Pack>,
    offered: Arc<[Offered]>,
}

impl Gateway {
    fn new(pack: Arc<dyn Pack>) -> Self {
        let offered = pack
            .tools()
            .into_iter()
            .map(|spec| {
                let name = spec.name.split_once('/').map_or(&*spec.name, |(_, t)| t);
                let schema = match spec.input_schema {
                    Value::Object(schema) => schema,
                    _ => JsonObject::new(),
                };
                Offered {
                    tool: Tool::new(name.to_owned(), spec.description, Arc::new(schema)),
                    qualified: spec.name,
                }
            })
            .collect();
        Self { pack, offered }
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("runvil", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.offered.iter().map(|o| o.tool.clone()).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(offered) = self.offered.iter().find(|o| o.tool.name == request.name) else {
            let names: Vec<&str> = self.offered.iter().map(|o| &*o.tool.name).collect();
            let message = format!(
                "unknown tool {:?}; the tools are {}",
                request.name,
                names.join(", ")
            );
            return Err(ErrorData::invalid_params(message, None));
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let outcome = tokio::select! {
            outcome = self.pack.call(&offered.qualified, args) => outcome,
            // The client cancelled: dropping the Pack's call cancels it on its server too.
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        let result = match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.message())]),
        };
        Ok(result.into())
    }
}

/// Serves until the client closes stdin (exit 0) or Ctrl-C (exit 130).
pub(crate) async fn run(source: &Source) -> u8 {
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let pack = match host::build_pack(config.servers, Handle::current()) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    // One line on stderr, which clients keep in their logs: which file this gateway serves.
    eprintln!(
        "runvil: serving MCP on stdio for {} ({})",
        config.path.display(),
        config.origin
    );
    let serving = async {
        match Gateway::new(pack)
            .serve(rmcp::transport::stdio_pipes())
            .await
        {
            Ok(service) => {
                let _ = service.waiting().await;
                EXIT_OK
            }
            Err(e) => {
                eprintln!("runvil: the MCP client's handshake failed: {e}");
                EXIT_OTHER
            }
        }
    };
    let code = tokio::select! {
        code = serving => code,
        _ = tokio::signal::ctrl_c() => EXIT_INTERRUPTED,
    };
    code
}
