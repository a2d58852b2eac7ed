//! `runvil serve`: the Pack's two tools as one MCP server, so any MCP client gets every remote
//! server of an `mcp.json` through them: on stdio (`stdio`, the default: one client, the
//! process that started runvil) or over Streamable HTTP (`http`, `--http ADDR`: a gateway a
//! team shares).
//!
//! What both share lives here: the tools as offered (the Pack's own, with its descriptions and
//! schemas; only the `mcp/` prefix goes, since MCP tool names cannot hold `/`), a call's text
//! as a tool result (a failed call is a result with `isError: true` and the error's text, so
//! the model reads it and can correct itself; only a call to a tool that does not exist is a
//! protocol error), the wait for a server, and a call's progress.
//!
//! A request about one server (a call, or the listing of its tools) waits for that server to
//! leave `loading`, up to `--wait`: a client that starts the gateway and calls at once gets
//! an answer, not "still connecting". The first listing of every server waits likewise for
//! each server's first attempt to end (up to `--wait`, else [`FIRST_LISTING_WAIT`]), so a
//! one-shot client (an inspector's command line) sees the servers that are up as ready. A
//! call's progress reaches the client when its request asked for it (a `progressToken`).

pub(crate) mod http;
mod stdio;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use runvil_plugin::{
    BackendStatus, CallOptions, Pack, Progress, ProgressSink, StatusReceiver, ToolError,
};
use serde_json::Value;

use crate::cli::{DEFAULT_WAIT_SECS, Source, StoreArgs};
use crate::discovery::{self, Config};
use crate::host::{self, EXIT_OTHER, Lent};
use crate::policy::FIRST_LISTING_WAIT;
use crate::store::Store;

pub(crate) use stdio::run as run_stdio;

/// One of the Pack's tools as the gateway offers it.
#[derive(Clone)]
pub(crate) struct Offered {
    /// What an MCP client sees: the Pack's name without its `mcp/` prefix.
    pub(crate) name: String,
    description: String,
    input_schema: Arc<JsonObject>,
    /// The name the Pack knows it by.
    qualified: String,
}

/// The Pack as a server offers it, to any number of clients at once.
#[derive(Clone)]
pub(crate) struct Served {
    pack: Arc<dyn Pack>,
    offered: Arc<[Offered]>,
    waits: Waits,
    /// Set once a listing of every server was answered: only the first waits.
    listed: Arc<AtomicBool>,
}

/// How long requests wait for servers to leave `loading`.
#[derive(Clone, Copy)]
pub(crate) struct Waits {
    /// A request about one server, for that server.
    one: Duration,
    /// The first listing of every server, for each one's first attempt to end.
    first_listing: Duration,
}

impl Waits {
    /// `--wait` for both, else each its default ([`DEFAULT_WAIT_SECS`],
    /// [`FIRST_LISTING_WAIT`]).
    pub(crate) fn from_flag(wait: Option<u64>) -> Self {
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

impl Served {
    pub(crate) fn new(pack: Arc<dyn Pack>, waits: Waits) -> Self {
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
                    name: name.to_owned(),
                    description: spec.description,
                    input_schema: Arc::new(schema),
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

    /// The tools as MCP lists them, in the Pack's order.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let tools = self.offered.iter().map(|o| {
            let schema = Arc::clone(&o.input_schema);
            Tool::new(o.name.clone(), o.description.clone(), schema)
        });
        tools.collect()
    }

    /// The offered tool called `name`, or the protocol error's text for a tool that does not
    /// exist.
    pub(crate) fn find(&self, name: &str) -> Result<&Offered, String> {
        self.offered.iter().find(|o| o.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.offered.iter().map(|o| &*o.name).collect();
            format!("unknown tool {name:?}; the tools are {}", names.join(", "))
        })
    }

    /// The Pack, for what a server tells of its backends (`/readyz`).
    pub(crate) fn pack(&self) -> &Arc<dyn Pack> {
        &self.pack
    }

    /// Calls `offered` with `args`, as `options` say, once [`Served::settle`] let it.
    pub(crate) async fn call(
        &self,
        offered: &Offered,
        args: Value,
        options: CallOptions,
    ) -> Result<String, ToolError> {
        self.settle(&offered.name, &args, &options).await;
        self.pack.call_with(&offered.qualified, args, options).await
    }

    /// Waits until the server a request names is no longer `loading`, up to the gateway's
    /// bound for one server (past it the Pack answers as it stands: that the server is still
    /// loading). The first listing of every server waits for none of them to be loading, up
    /// to its own bound: a client that lists right after its handshake sees each server that
    /// is up as ready. Later listings answer at once. A server the caller's view hides is not
    /// waited for: it answers as one that does not exist, at once, so the time taken tells
    /// nothing either.
    async fn settle(&self, tool: &str, args: &Value, options: &CallOptions) {
        let visible = |name: &str| options.view.as_ref().is_none_or(|v| v.backend(name));
        let namespace = args.get("namespace").and_then(Value::as_str);
        if namespace.is_some_and(|name| !visible(name)) {
            return;
        }
        let bound = match namespace {
            Some(_) => self.waits.one,
            None if tool == LISTING && !self.listed.load(Ordering::Acquire) => {
                self.waits.first_listing
            }
            None => return,
        };
        let mut status = self.pack.status();
        let settled = |all: &Vec<BackendStatus>| {
            let waited = |name: &str| namespace.map_or(visible(name), |n| n == name);
            !all.iter().any(|s| waited(&s.name) && s.state.is_loading())
        };
        let _ = tokio::time::timeout(bound, status.wait_for(settled)).await;
        if namespace.is_none() {
            self.listed.store(true, Ordering::Release);
        }
    }
}

/// A call's answer as the tool result an MCP client reads.
pub(crate) fn tool_result(outcome: &Result<String, ToolError>) -> CallToolResult {
    match outcome {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text.clone())]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.message().to_owned())]),
    }
}

/// Progress notices waiting to reach a slow client, per call.
const PROGRESS_QUEUE: usize = 16;

/// A call's progress as a sink for the Pack and the queue its notices wait in for the client.
/// Past [`PROGRESS_QUEUE`] a notice is dropped, since a newer one supersedes it; the queue
/// ends once the call drops its sink, after its last notice.
pub(crate) fn progress_queue() -> (ProgressSink, tokio::sync::mpsc::Receiver<Progress>) {
    let (sender, notices) = tokio::sync::mpsc::channel::<Progress>(PROGRESS_QUEUE);
    let sink: ProgressSink = Arc::new(move |notice| {
        let _ = sender.try_send(notice);
    });
    (sink, notices)
}

/// Reads the config, opens where state is kept and builds the Pack with the user's logins and
/// pins from there, saying on stderr what fails.
async fn start(source: &Source, store: &StoreArgs) -> Result<(Config, Store, Arc<dyn Pack>), u8> {
    let said = |e: String| {
        eprintln!("runvil: {e}");
        EXIT_OTHER
    };
    let config = discovery::load(source).map_err(said)?;
    let store = Store::choose_serving(store).await.map_err(said)?;
    let pack = host::build_pack_with(config.servers.clone(), Lent::kept(&store)).map_err(said)?;
    Ok((config, store, pack))
}

/// Says on stderr (which clients keep in their logs, and a gateway's operator reads) how many
/// tools each server holds until the user approves them, each time that number changes to one
/// that is not 0. Never ends.
pub(super) async fn say_held(mut status: StatusReceiver) {
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

/// The tool whose first answer waits for every server ([`Served::settle`]).
const LISTING: &str = "get_dynamic_tools";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// FIRST_LISTING_WAIT: the first listing of every server waits for it exactly, a server
    /// that never leaves `loading` (its Pack's tasks never run) holding it to its end; the next
    /// listing answers at once, and a request about one server waits the other bound.
    /// Requests about servers the caller's view hides wait for nothing.
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
        let none = CallOptions::default();
        paused.block_on(async {
            let served = Served::new(pack, Waits::from_flag(None));
            let started = tokio::time::Instant::now();
            served.settle(LISTING, &json!({}), &none).await;
            assert_eq!(started.elapsed(), FIRST_LISTING_WAIT);
            served.settle(LISTING, &json!({}), &none).await;
            assert_eq!(
                started.elapsed(),
                FIRST_LISTING_WAIT,
                "the next one at once"
            );
            served
                .settle(LISTING, &json!({"namespace": "s"}), &none)
                .await;
            let one = Duration::from_secs(DEFAULT_WAIT_SECS);
            assert_eq!(started.elapsed(), FIRST_LISTING_WAIT + one);

            let served = Served::new(Arc::clone(&served.pack), Waits::from_flag(Some(2)));
            let started = tokio::time::Instant::now();
            served.settle("call_dynamic_tool", &json!({}), &none).await;
            assert_eq!(started.elapsed(), Duration::ZERO, "a call names its server");
            served.settle(LISTING, &json!({}), &none).await;
            assert_eq!(started.elapsed(), Duration::from_secs(2), "--wait");

            // A server the caller's view hides is waited for by none of its requests.
            let served = Served::new(Arc::clone(&served.pack), Waits::from_flag(None));
            let blind = CallOptions::default().with_view(Arc::new(Blind));
            let started = tokio::time::Instant::now();
            served.settle(LISTING, &json!({}), &blind).await;
            served
                .settle(LISTING, &json!({"namespace": "s"}), &blind)
                .await;
            assert_eq!(started.elapsed(), Duration::ZERO, "nothing to wait for");
        });
    }

    /// A caller who may see no server.
    struct Blind;

    impl runvil_plugin::View for Blind {
        fn backend(&self, _: &str) -> bool {
            false
        }

        fn tool(&self, _: &str, _: &str) -> bool {
            false
        }
    }
}
