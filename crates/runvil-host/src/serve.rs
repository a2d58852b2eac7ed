//! `runvil serve`: the Pack as one MCP server on stdio, so any MCP client (Claude Desktop,
//! Cursor, Codex, VS Code) gets every remote server of an `mcp.json` through two tools.
//!
//! The tools are the Pack's own, with its descriptions and schemas; only the `mcp/` prefix
//! goes, since MCP tool names cannot hold `/`. A failed call is a tool result with
//! `isError: true` and the error's text, so the model reads it and can correct itself; only a
//! call to a tool that does not exist is a protocol error. stdout carries nothing but the
//! protocol: logs and the start-up line go to stderr.
//!
//! A request about one server (a call, or the listing of its tools) waits for that server to
//! leave `loading`, up to `--wait`: a client that starts the gateway and calls at once gets
//! an answer, not "still connecting". A call's progress reaches the client when its request
//! asked for it (a `progressToken`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use runvil_plugin::{BackendStatus, Pack, Progress, ProgressSink, StatusReceiver};
use serde_json::Value;

use crate::cli::{Source, StoreArgs};
use crate::discovery;
use crate::host::{self, EXIT_OK, EXIT_OTHER, Lent};
use crate::signals;
use crate::store::Store;

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
    /// How long a request about one server waits for it to leave `loading`.
    wait: Duration,
}

impl Gateway {
    fn new(pack: Arc<dyn Pack>, wait: Duration) -> Self {
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
        Self {
            pack,
            offered,
            wait,
        }
    }

    /// Waits, up to the gateway's bound, until the server a request names is no longer
    /// `loading`; a request that names none (the listing of every server) answers at once.
    async fn settle(&self, args: &Value) {
        let Some(namespace) = args.get("namespace").and_then(Value::as_str) else {
            return;
        };
        let mut status = self.pack.status();
        let settled = |all: &Vec<BackendStatus>| {
            !all.iter()
                .any(|s| s.name == namespace && s.state.is_loading())
        };
        // Past the bound the Pack answers as it stands: that the server is still loading.
        let _ = tokio::time::timeout(self.wait, status.wait_for(settled)).await;
    }
}

/// Hands a call's progress to the client under the token its request carried. Notices wait
/// in a short queue; past it they are dropped, since a newer one supersedes them.
fn forward_progress(
    context: &RequestContext<RoleServer>,
) -> Option<(ProgressSink, impl Future<Output = ()> + use<>)> {
    let token = context.meta.get_progress_token()?;
    let (sender, mut notices) = tokio::sync::mpsc::channel::<Progress>(PROGRESS_QUEUE);
    let peer = context.peer.clone();
    let forward = async move {
        while let Some(notice) = notices.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), notice.progress);
            param.total = notice.total;
            param.message = notice.message;
            if peer.notify_progress(param).await.is_err() {
                return; // the client is gone
            }
        }
    };
    let sink: ProgressSink = Arc::new(move |notice| {
        let _ = sender.try_send(notice);
    });
    Some((sink, forward))
}

/// Progress notices waiting to reach a slow client, per call.
const PROGRESS_QUEUE: usize = 16;

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
        let answer = async {
            self.settle(&args).await;
            match forward_progress(&context) {
                None => self.pack.call(&offered.qualified, args).await,
                Some((sink, forward)) => {
                    let call = self.pack.call_with_progress(&offered.qualified, args, sink);
                    // The call drops its sink when it ends, which ends the forwarding once
                    // every notice has been sent ahead of the answer.
                    let (outcome, ()) = tokio::join!(call, forward);
                    outcome
                }
            }
        };
        let outcome = tokio::select! {
            outcome = answer => outcome,
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

/// Says on stderr (which clients keep in their logs) how many tools each server holds until
/// the user approves them, each time that number changes to one that is not 0. Never ends.
async fn say_held(mut status: StatusReceiver) {
    let mut said: HashMap<String, usize> = HashMap::new();
    loop {
        let now: Vec<(String, usize)> = (status.borrow_and_update().iter())
            .map(|server| (server.name.clone(), server.held))
            .collect();
        for (namespace, held) in now {
            if said.insert(namespace.clone(), held).unwrap_or(0) != held && held > 0 {
                eprintln!("runvil: {}", host::held_line(&namespace, held));
            }
        }
        if status.changed().await.is_err() {
            // The Pack is gone: nothing changes any more.
            std::future::pending::<()>().await;
        }
    }
}

/// Serves until the client closes stdin (exit 0) or a signal (128 + the signal); either way
/// the Pack is shut down first, so every session it opened is ended.
pub(crate) async fn run(source: &Source, wait: Duration, store: &StoreArgs) -> u8 {
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let store = match Store::choose(store).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let pack = match host::build_pack_with(config.servers, Lent::kept(&store)) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    // Another process's approval or rejection counts at the next call.
    let _following = store.follow(&pack);
    // On stderr, which clients keep in their logs: which file this gateway serves, and what
    // in it runvil does not honour as other clients do (as `runvil check` says it).
    eprintln!(
        "runvil: serving MCP on stdio for {} ({})",
        config.path.display(),
        config.origin
    );
    discovery::say_warnings(&config.warnings);
    let serving = async {
        match Gateway::new(Arc::clone(&pack), wait)
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
        stop = signals::stopped() => stop.exit_code(),
        () = say_held(pack.status()) => unreachable!("say_held never ends"),
    };
    pack.shutdown().await;
    code
}
