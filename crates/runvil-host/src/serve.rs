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
//! an answer, not "still connecting". A call's progress reaches the client when its request
//! asked for it (a `progressToken`).

pub(crate) mod http;
mod stdio;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use runvil_plugin::{
    BackendStatus, CallOptions, Pack, Progress, ProgressSink, StatusReceiver, ToolError,
};
use serde_json::Value;

use crate::cli::Source;
use crate::discovery::{self, Config};
use crate::host::{self, EXIT_OTHER};

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
    /// How long a request about one server waits for it to leave `loading`.
    wait: Duration,
}

impl Served {
    pub(crate) fn new(pack: Arc<dyn Pack>, wait: Duration) -> Self {
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
            wait,
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

    /// Calls `offered` with `args`, as `options` say, once the server the arguments name has
    /// left `loading` (or the wait ran out: the Pack then says it is still loading). A server
    /// the caller's view hides is not waited for: it answers as one that does not exist, at
    /// once, so the time taken tells nothing either.
    pub(crate) async fn call(
        &self,
        offered: &Offered,
        args: Value,
        options: CallOptions,
    ) -> Result<String, ToolError> {
        let namespace = args.get("namespace").and_then(Value::as_str);
        let visible = |namespace| options.view.as_ref().is_none_or(|v| v.backend(namespace));
        if let Some(namespace) = namespace.filter(|&n| visible(n)) {
            let mut status = self.pack.status();
            let settled = |all: &Vec<BackendStatus>| {
                !all.iter()
                    .any(|s| s.name == namespace && s.state.is_loading())
            };
            // Past the bound the Pack answers as it stands: that the server is still loading.
            let _ = tokio::time::timeout(self.wait, status.wait_for(settled)).await;
        }
        self.pack.call_with(&offered.qualified, args, options).await
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

/// Reads the config and builds the Pack with the user's pins, saying on stderr what fails.
fn start(source: &Source) -> Result<(Config, Arc<dyn Pack>), u8> {
    let config = discovery::load(source).map_err(|e| {
        eprintln!("runvil: {e}");
        EXIT_OTHER
    })?;
    let pack = host::build_pinned_pack(config.servers.clone()).map_err(|e| {
        eprintln!("runvil: {e}");
        EXIT_OTHER
    })?;
    Ok((config, pack))
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
