//! plugin_mcp: an MCP client Pack. One Pack over every remote MCP server an `mcp.json` names,
//! each reached over Streamable HTTP, whose tools a model lists and calls through two static
//! tools, `<id>/get_dynamic_tools` and `<id>/call_dynamic_tool`.
//!
//! [`install`] is the only public item: a Host reaches everything else through the
//! `runvil-plugin` contract.
//!
//! # Layout
//!
//! Each module in the order data flows through it: the configuration in, a server's requests
//! out and its answers back, and what a model reads last.
//!
//! - `policy`: every refusal, limit and timeout (auditors start here and in `policy/`).
//! - `wire`: the lenient shapes every server message is read into (`Loose`, `Object`).
//! - `param_headers`: a tool's `x-mcp-header` parameters, declared when the envelope checks
//!   the tool and encoded into `Mcp-Param-*` when the session sends a call.
//! - `config`: parses each `mcpServers` entry on its own, with `${env:NAME}` substitution; the
//!   URL is parsed here, once, and carried parsed.
//! - `secret`: values that may hold a credential (a string, the URL).
//! - `text`: the bottom layer every other one stands on: the taint type (`Untrusted`), the
//!   scrubber, the character rules, and `Shown`, the one type of text that may leave the
//!   Pack (scrubbed, then cleaned, then cut).
//! - `connector`: one background task per server, from `loading` to `ready` or `error`, then
//!   following the changes of its tools.
//! - `session`: one server's conversation in the era it speaks (`era` decides: 2026-07-28
//!   without a handshake in `modern`, else the `initialize` handshake of 2025-11-25 in
//!   `legacy`); `exchange` is one request and its answer; `listen` hears that its tools
//!   changed; paging, cancellation, restarts.
//! - `jsonrpc`: the JSON-RPC messages of both eras as typed values, and every server message
//!   read into one typed enum.
//! - `http`: the layer under the transport and authorization: the one client (its TLS in
//!   `http::tls`, the trust roots read at a first handshake), the one sender (no redirect
//!   followed), capped reads, failures without their URL.
//! - `transport`: Streamable HTTP over reqwest and rustls, with byte caps; `transport::route`
//!   picks pooled or new connections per server, against the delayed-ACK stall.
//! - `auth`: OAuth 2.1 for servers that ask, on the transport's `401` and `403`: `machine`
//!   decides each step without I/O, `Authorization` does the I/O it asks for (`discovery`,
//!   `registration`, `flow`, `fetch`, the Host's store and authorizer); beside them
//!   `challenge`, `assertion`, `dpop`, `stored`, `current`, `error`.
//! - `sse`: the event stream of an answer, parsed without I/O, each event capped.
//! - `envelope`: checks server data with `text`'s rules: `tool_pages` (reads `tools/list`
//!   pages), `tool_check` (accepts tools and checks against their schemas; `expansion` bounds
//!   schema work), `result` (converts results), `off_runtime` (runs checks on the blocking
//!   pool).
//! - `pins`: which tool definitions the user trusts, when the Host lends a pin store; a
//!   changed or new tool is held until the user approves it.
//! - `listing`: the JSON `get_dynamic_tools` answers, within its cap.
//! - `edge`: where the lower layers' typed errors, troubles and progress become text, with the
//!   Pack's scrubber, once; the session and the transport under it hold no scrubber.
//! - `tools`: the Pack and its two tools; `tools::arguments` checks their arguments against
//!   the schemas they publish. `view`: what one caller may see of them (the contract's
//!   `View`), a hidden tool answered as one that does not exist.
//! - `lifecycle`: the Pack's calls in flight, and shutdown.
//! - `fuzzing`: the fuzz targets' bodies, only under `cfg(fuzzing)` (`fuzz/`).
//!
//! The modules form layers with no circle among them, `text` at the bottom (it stands on
//! `policy` and `secret` alone): `cargo run -p build-xtask -- layers` prints them, the lowest
//! first, and build-xtask's policy test refuses a circle.

#![forbid(unsafe_code)]
// Every dependency is used; test builds also see the dev-dependencies, which need not be.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod auth;
mod config;
mod connector;
mod edge;
mod envelope;
mod http;
mod jsonrpc;
mod lifecycle;
mod listing;
mod param_headers;
mod pins;
mod policy;
mod search;
mod secret;
mod session;
mod sse;
mod text;
mod tools;
mod transport;
mod view;
mod wire;

/// The fuzz targets' bodies: public only in a build for fuzzing, never in a normal one.
#[cfg(fuzzing)]
pub mod fuzzing;

use std::sync::Arc;

use runvil_plugin::{
    Construct, PIN_STORE, Pack, PackFactory, Packs, TOKIO_RUNTIME, TRUST_HINT, Unavailable,
};
use serde_json::Value;

use crate::auth::HostAuth;
use crate::config::{Entry, ProcessEnvironment};
use crate::connector::{Board, Server, SharedClients, Status};
use crate::pins::Pins;
use crate::text::Scrubber;

/// The Pack's name in a Host's registry.
const PACK_NAME: &str = "runvil/mcp";
/// The id its tools are qualified with, and the key of its configuration.
const PACK_ID: &str = "mcp";

/// The Plugin: inserts the Pack `runvil/mcp`, id `mcp`, with `config["mcp"]` (the
/// `mcpServers` object of an `mcp.json`), which is null, meaning no servers, when `config`
/// has no `mcp` key.
pub fn install(packs: &mut Packs, config: &Value) {
    let own = config.get(PACK_ID).cloned().unwrap_or(Value::Null);
    packs.insert(PACK_NAME, PACK_ID, own, Factory);
}

struct Factory;

impl PackFactory for Factory {
    /// Parses the configuration and starts one task per remote entry on the Host's runtime.
    /// No I/O happens here: the tasks do it once the runtime runs them.
    fn construct(&self, cx: Construct<'_>) -> Result<Arc<dyn Pack>, Unavailable> {
        let runtime = cx
            .services
            .get(TOKIO_RUNTIME)
            .ok_or_else(|| Unavailable::new(policy::UNAVAILABLE_RUNTIME))?;
        // The configuration is read once, here; what the Pack keeps of it are secrets, wiped
        // when dropped, and the contract wipes the configuration itself when `cx` goes.
        let entries = config::parse(cx.config.value(), &ProcessEnvironment)
            .map_err(|not_an_object| Unavailable::new(not_an_object.to_string()))?;
        let scrubber = Arc::new(Scrubber::new(entries.iter().flat_map(
            |(_, entry)| match entry {
                Entry::Remote(spec) => spec.secrets.clone(),
                Entry::Refused(_) => Vec::new(),
            },
        )));
        let clients = SharedClients::default();
        let host = HostAuth::from_services(cx.services);
        let pin_store = cx.services.get(PIN_STORE).cloned();
        let trust_hint = cx.services.get(TRUST_HINT).cloned();
        let board: Board = Arc::new(tokio::sync::watch::Sender::new(Vec::new()));
        let mut servers = Vec::with_capacity(entries.len());
        let mut tasks = Vec::new();
        for (name, entry) in entries {
            match entry {
                Entry::Refused(refusal) => {
                    tracing::warn!(server = %text::log_safe(&name), reason = %refusal, "server entry refused");
                    let status = Status::Refused(refusal);
                    servers.push(Arc::new(Server::new(name, status, &board, None)));
                }
                Entry::Remote(spec) => {
                    let pins = pin_store.as_ref().map(|store| {
                        let (url, scrubber) = (spec.url.expose(), Arc::clone(&scrubber));
                        let hint = trust_hint.as_deref();
                        Pins::new(name.clone(), url, Arc::clone(store), hint, scrubber)
                    });
                    let server = Arc::new(Server::new(name, Status::Loading, &board, pins));
                    let task = connector::spawn(
                        runtime,
                        Arc::clone(&server),
                        spec,
                        Arc::clone(&clients),
                        Arc::clone(&scrubber),
                        host.clone(),
                    );
                    tasks.push(task);
                    servers.push(server);
                }
            }
        }
        let id = cx.id.to_owned();
        let runtime = runtime.clone();
        let pack = tools::McpPack::new(id, runtime, (servers, board), tasks, scrubber);
        Ok(Arc::new(pack))
    }
}
