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
//! an answer, not "still connecting". The first listing of every server waits likewise for
//! each server's first attempt to end (up to `--wait`, else [`FIRST_LISTING_WAIT`]), so a
//! one-shot client (an inspector's command line) sees the servers that are up as ready. A call's progress reaches the client when its request
//! asked for it (a `progressToken`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

use crate::cli::{DEFAULT_WAIT_SECS, Source};
use crate::discovery;
use crate::host::{self, EXIT_OK, EXIT_OTHER};
use crate::policy::FIRST_LISTING_WAIT;
use crate::signals;

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
    waits: Waits,
    /// Set once a listing of every server was answered: only the first waits.
    listed: Arc<AtomicBool>,
}

/// How long requests wait for servers to leave `loading`.
#[derive(Clone, Copy)]
struct Waits {
    /// A request about one server, for that server.
    one: Duration,
    /// The first listing of every server, for each one's first attempt to end.
    first_listing: Duration,
}

impl Waits {
    /// `--wait` for both, else each its default ([`DEFAULT_WAIT_SECS`],
    /// [`FIRST_LISTING_WAIT`]).
    fn from_flag(wait: Option<u64>) -> Self {
        match wait {
            Some(secs) => Self {
                one: Duration::from_secs(secs),
                first_listing: Duration::from_secs(secs),
            },
            None => Self {
                one: Duration::from_secs(DEFAULT_WAIT_SECS),
                first_listing: FIRST_LISTING_WAIT,
            },
        }
    }
}

impl Gateway {
    fn new(pack: Arc<dyn Pack>, waits: Waits) -> Self {
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
            waits,
            listed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Waits until the server a request names is no longer `loading`, up to the gateway's
    /// bound for one server. The first listing of every server waits for none of them to be
    /// loading, up to its own bound: a client that lists right after its handshake sees each
    /// server that is up as ready. Later listings answer at once.
    async fn settle(&self, tool: &str, args: &Value) {
        let namespace = args.get("namespace").and_then(Value::as_str);
        let bound = match namespace {
            Some(_) => self.waits.one,
            None if tool == LISTING && !self.listed.load(Ordering::Acquire) => {
                self.waits.first_listing
            }
            None => return,
        };
        let mut status = self.pack.status();
        let settled = |all: &Vec<BackendStatus>| {
            !all.iter()
                .any(|s| namespace.is_none_or(|name| s.name == name) && s.state.is_loading())
        };
        // Past the bound the Pack answers as it stands: that the server is still loading.
        let _ = tokio::time::timeout(bound, status.wait_for(settled)).await;
        if namespace.is_none() {
            self.listed.store(true, Ordering::Release);
        }
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
            self.settle(&request.name, &args).await;
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

/// The tool whose first answer waits for every server ([`Gateway::settle`]).
const LISTING: &str = "get_dynamic_tools";

/// Serves until the client closes stdin (exit 0) or a signal (128 + the signal); either way
/// the Pack is shut down first, so every session it opened is ended. `wait` is `--wait`.
pub(crate) async fn run(source: &Source, wait: Option<u64>) -> u8 {
    let waits = Waits::from_flag(wait);
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let pack = match host::build_pinned_pack(config.servers) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    // On stderr, which clients keep in their logs: which file this gateway serves, and what
    // in it runvil does not honour as other clients do (as `runvil check` says it).
    eprintln!(
        "runvil: serving MCP on stdio for {} ({})",
        config.path.display(),
        config.origin
    );
    discovery::say_warnings(&config.warnings);
    let serving = async {
        match Gateway::new(Arc::clone(&pack), waits)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// FIRST_LISTING_WAIT: the first listing of every server waits for it exactly, a server
    /// that never leaves `loading` (its Pack's tasks never run) holding it to its end; the next
    /// listing answers at once, and a request about one server waits the other bound.
    #[test]
    fn only_the_first_listing_waits_and_up_to_its_bound() {
        let idle = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let servers = json!({"s": {"url": "http://127.0.0.1:9/mcp"}});
        let pack = host::build_pack(servers, idle.handle().clone()).expect("a pack");
        let paused = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        paused.block_on(async {
            let gateway = Gateway::new(pack, Waits::from_flag(None));
            let started = tokio::time::Instant::now();
            gateway.settle(LISTING, &json!({})).await;
            assert_eq!(started.elapsed(), FIRST_LISTING_WAIT);
            gateway.settle(LISTING, &json!({})).await;
            assert_eq!(
                started.elapsed(),
                FIRST_LISTING_WAIT,
                "the next one at once"
            );
            gateway.settle(LISTING, &json!({"namespace": "s"})).await;
            let one = Duration::from_secs(DEFAULT_WAIT_SECS);
            assert_eq!(started.elapsed(), FIRST_LISTING_WAIT + one);

            let gateway = Gateway::new(Arc::clone(&gateway.pack), Waits::from_flag(Some(2)));
            let started = tokio::time::Instant::now();
            gateway.settle("call_dynamic_tool", &json!({})).await;
            assert_eq!(started.elapsed(), Duration::ZERO, "a call names its server");
            gateway.settle(LISTING, &json!({})).await;
            assert_eq!(started.elapsed(), Duration::from_secs(2), "--wait");
        });
    }
}
