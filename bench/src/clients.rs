//! The clients a benchmark compares, each making the same `echo` call:
//!
//! - **raw**: a keep-alive reqwest client POSTing a hand-built `tools/call` and parsing the
//!   whole answer into a `serde_json::Value`; the physical limit of a client on this stack;
//! - **raw-nopool**: the same with `pool_max_idle_per_host(0)`, a new connection per call;
//! - **pack**: `mcp/call_dynamic_tool` through the `runvil-plugin` contract, as a Host calls
//!   it, the server configured with one secret header;
//! - **pack-100**: the same call on a Pack of 100 servers each configured with a secret
//!   header, the measured one among them: every result is scrubbed of all their forms;
//! - **rmcp**: rmcp's own client (`StreamableHttpClientTransport::from_uri`), default settings;
//! - **ts-sdk**: the TypeScript SDK's client in Node ([`crate::ts_sdk`]), default settings;
//! - **gateway**: the raw client calling `call_dynamic_tool` of `runvil serve --http` with an
//!   access token, the gateway's Pack making the `echo` call ([`crate::gateway`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use runvil_plugin::Pack;
use serde_json::{Value, json};

use crate::What;
use crate::gateway::Gateway;
use crate::server::Mode;
use crate::ts_sdk::TsSdk;

/// The namespace the Pack knows each benchmark server by.
pub(crate) const NAMESPACE: &str = "bench";
/// How long a freshly built Pack may take to reach `ready`.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// The protocol version the raw clients speak to a server of the session-based revisions.
const LEGACY_VERSION: &str = "2025-11-25";
/// The one they speak to a server that serves 2026-07-28.
const MODERN_VERSION: &str = "2026-07-28";

/// The secret header every configured server of the Pack holds.
const SECRET_HEADER: &str = "X-Bench-Token";
/// Servers of the many-secrets Pack.
const SECRETS_FLEET: usize = 100;

/// Which client, in the order a round measures them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Raw,
    RawNoPool,
    Pack,
    Pack100,
    Rmcp,
    TsSdk,
    Gateway,
}

impl Kind {
    /// Every client, in round order (A B C D ...).
    pub(crate) const ALL: [Kind; 7] = [
        Kind::Raw,
        Kind::RawNoPool,
        Kind::Pack,
        Kind::Pack100,
        Kind::Rmcp,
        Kind::TsSdk,
        Kind::Gateway,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Raw => "raw",
            Kind::RawNoPool => "raw-nopool",
            Kind::Pack => "pack",
            Kind::Pack100 => "pack-100",
            Kind::Rmcp => "rmcp",
            Kind::TsSdk => "ts-sdk",
            Kind::Gateway => "gateway",
        }
    }

    /// Whether this client is measured on `mode`'s server at all: the many-secrets Pack and
    /// the Node client only on the nodelay server, the gateway only at 2026-07-28 (its Pack
    /// speaks it to the server, the raw client to the gateway), where the goals that need
    /// them are.
    pub(crate) fn serves(self, mode: Mode) -> bool {
        match self {
            Kind::Pack100 | Kind::TsSdk => mode == Mode::NoDelay,
            Kind::Gateway => mode == Mode::Modern,
            _ => true,
        }
    }

    /// Whether this client takes part in `what`: the many-secrets Pack in latency only, the
    /// cost of scrubbing being per result.
    pub(crate) fn measures(self, what: What) -> bool {
        self != Kind::Pack100 || matches!(what, What::Latency(_))
    }
}

/// What one call asks the server to echo.
#[derive(Debug, Clone)]
pub(crate) struct Payload {
    /// A short name for the table.
    pub(crate) name: &'static str,
    /// Its place in the table (small first).
    pub(crate) rank: u8,
    /// The `echo` arguments.
    pub(crate) arguments: JsonObject,
    /// The length of the text the server answers with.
    pub(crate) answer_len: usize,
}

impl Payload {
    /// A 100-byte text, echoed once.
    pub(crate) fn small() -> Self {
        let text = "0123456789".repeat(10);
        Self::new("small 100 B", 0, text, None)
    }

    /// A 1 KiB text echoed 1024 times: a 1 MiB result for a ~1.1 KB request.
    pub(crate) fn large() -> Self {
        let text = "abcdefghijklmnop".repeat(64);
        Self::new("large 1 MiB", 1, text, Some(1024))
    }

    fn new(name: &'static str, rank: u8, text: String, repeat: Option<usize>) -> Self {
        let answer_len = text.len() * repeat.unwrap_or(1);
        let mut arguments = JsonObject::new();
        arguments.insert("text".into(), Value::String(text));
        if let Some(repeat) = repeat {
            arguments.insert("repeat".into(), json!(repeat));
        }
        Self {
            name,
            rank,
            arguments,
            answer_len,
        }
    }
}

/// A connected client of one kind.
pub(crate) enum Client {
    Raw(Raw),
    Pack(Arc<dyn Pack>),
    Rmcp {
        peer: Peer<RoleClient>,
        // Kept so the service (and its worker) lives as long as the client.
        _service: RunningService<RoleClient, ()>,
    },
    /// Measures itself: [`crate::measure`] hands it whole runs, not calls.
    TsSdk(TsSdk),
    /// The raw client of a gateway in front of the server, which lives as long as it.
    Gateway {
        raw: Raw,
        _gateway: Gateway,
    },
    /// The raw client of gateways its caller runs (behind a balancer, or several of them).
    Through(Raw),
}

impl Client {
    /// Ends the client's session where it has one it can end and wait for: the Pack's
    /// shutdown completes once its DELETE is sent; the others end theirs as they drop.
    pub(crate) async fn close(&self) {
        if let Client::Pack(pack) = self {
            pack.shutdown().await;
        }
    }

    /// The raw client of the gateway endpoint `url` (2026-07-28), presenting `token`.
    pub(crate) async fn through(url: &str, token: &str) -> Result<Client, String> {
        Ok(Client::Through(Raw::of_gateway(url, token).await?))
    }

    /// Connects a client of `kind` to `url`, whose server serves 2026-07-28 if `modern`: the
    /// client's start (handshake or discovery) is done when this returns.
    pub(crate) async fn connect(kind: Kind, url: &str, modern: bool) -> Result<Client, String> {
        match kind {
            Kind::Raw => Ok(Client::Raw(Raw::connect(url, true, modern).await?)),
            Kind::RawNoPool => Ok(Client::Raw(Raw::connect(url, false, modern).await?)),
            Kind::Pack => Ok(Client::Pack(ready_pack(url, 1).await?)),
            Kind::Pack100 => Ok(Client::Pack(ready_pack(url, SECRETS_FLEET).await?)),
            Kind::TsSdk => Ok(Client::TsSdk(TsSdk::connect(url).await?)),
            Kind::Gateway => {
                let gateway = Gateway::start(url).await?;
                let raw = Raw::of_gateway(&gateway.url, &gateway.token).await?;
                Ok(Client::Gateway {
                    raw,
                    _gateway: gateway,
                })
            }
            Kind::Rmcp => {
                let transport = StreamableHttpClientTransport::from_uri(url);
                let service = ()
                    .serve(transport)
                    .await
                    .map_err(|error| format!("rmcp could not connect: {error}"))?;
                Ok(Client::Rmcp {
                    peer: service.peer().clone(),
                    _service: service,
                })
            }
        }
    }

    /// One `echo` call; the length of the text that came back, checked against the payload.
    pub(crate) async fn call(&self, payload: &Payload) -> Result<usize, String> {
        let len = match self {
            Client::Raw(raw) => raw.call(payload).await?,
            Client::Gateway { raw, .. } | Client::Through(raw) => raw.call_through(payload).await?,
            Client::Pack(pack) => {
                let arguments = Value::Object(payload.arguments.clone());
                shared_mcp_fixture::call(pack, NAMESPACE, "echo", arguments)
                    .await
                    .map_err(|error| format!("the Pack's call failed: {error}"))?
                    .len()
            }
            Client::Rmcp { peer, .. } => {
                let params =
                    CallToolRequestParams::new("echo").with_arguments(payload.arguments.clone());
                let result = peer
                    .call_tool(params)
                    .await
                    .map_err(|error| format!("rmcp's call failed: {error}"))?;
                result
                    .content
                    .first()
                    .and_then(|block| block.as_text())
                    .map(|text| text.text.len())
                    .ok_or("rmcp's answer has no text")?
            }
            Client::TsSdk(_) => return Err("the Node client is measured by runs".to_owned()),
        };
        // The Pack wraps the text in its envelope, so its answer is a little longer.
        if len < payload.answer_len {
            return Err(format!(
                "the answer has {len} bytes, expected at least {}",
                payload.answer_len
            ));
        }
        Ok(len)
    }
}

/// Builds the Pack with `servers` servers at `url`, each with its own secret header, and
/// waits until they are ready; `bench` is the one the benchmark calls.
pub(crate) async fn ready_pack(url: &str, servers: usize) -> Result<Arc<dyn Pack>, String> {
    let entry = |token: String| json!({ "url": url, "headers": { SECRET_HEADER: token } });
    let mut config = serde_json::Map::new();
    config.insert(
        NAMESPACE.to_owned(),
        entry("bench-token-000-a1b2c3d4e5".to_owned()),
    );
    for index in 1..servers {
        let token = format!("bench-token-{index:03}-a1b2c3d4e5");
        config.insert(format!("s{index:03}"), entry(token));
    }
    let pack =
        shared_mcp_fixture::try_pack(Value::Object(config)).map_err(|error| error.to_string())?;
    for index in 1..servers {
        shared_mcp_fixture::ready(&pack, &format!("s{index:03}"), READY_WITHIN).await?;
    }
    shared_mcp_fixture::ready(&pack, NAMESPACE, READY_WITHIN).await?;
    Ok(pack)
}

/// The raw client: reqwest, a hand-built body, the whole answer parsed.
pub(crate) struct Raw {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    next_id: AtomicU64,
    /// 2026-07-28 (self-contained requests) rather than 2025-11-25 (a session).
    modern: bool,
}

impl Raw {
    /// Builds the reqwest client (pooled or not) and starts as [`Raw::start`] does.
    async fn connect(url: &str, pooled: bool, modern: bool) -> Result<Raw, String> {
        Raw::start(Raw::http_client(pooled)?, url, modern).await
    }

    /// The raw client's reqwest client, with no trust roots: every server here is plain HTTP
    /// on loopback, and the Pack's clients read theirs only at a first TLS handshake.
    pub(crate) fn http_client(pooled: bool) -> Result<reqwest::Client, String> {
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .tls_certs_only(std::iter::empty());
        if !pooled {
            builder = builder.pool_max_idle_per_host(0);
        }
        builder
            .build()
            .map_err(|error| format!("cannot build the raw client: {error}"))
    }

    /// What a client does before its first call, by hand, with `client`: `server/discover`
    /// at 2026-07-28 (the Pack's first request too); before it, `initialize` and
    /// `notifications/initialized`.
    pub(crate) async fn start(
        client: reqwest::Client,
        url: &str,
        modern: bool,
    ) -> Result<Raw, String> {
        Raw::start_with(client, url, modern, None).await
    }

    /// A pooled client of the gateway endpoint `url` at 2026-07-28, presenting `token`.
    async fn of_gateway(url: &str, token: &str) -> Result<Raw, String> {
        let bearer = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|error| format!("the token is no header value: {error}"))?;
        Raw::start_with(Raw::http_client(true)?, url, true, Some(bearer)).await
    }

    /// [`Raw::start`], presenting `authorization` on every request, the first included.
    async fn start_with(
        client: reqwest::Client,
        url: &str,
        modern: bool,
        authorization: Option<HeaderValue>,
    ) -> Result<Raw, String> {
        let mut headers = HeaderMap::new();
        if let Some(authorization) = authorization {
            headers.insert(AUTHORIZATION, authorization);
        }
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut raw = Raw {
            client,
            url: url.to_owned(),
            headers,
            next_id: AtomicU64::new(1),
            modern,
        };
        if modern {
            raw.headers.insert(
                "mcp-protocol-version",
                HeaderValue::from_static(MODERN_VERSION),
            );
            let answer = raw.request("server/discover", None, json!({})).await?;
            return match answer.pointer("/result/supportedVersions") {
                Some(_) => Ok(raw),
                None => Err(format!("server/discover failed: {answer}")),
            };
        }
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-raw", "version": "0"},
            },
        });
        let response = raw.post(raw.headers.clone(), &initialize).await?;
        let session = response.headers().get("mcp-session-id").cloned();
        let answer = read_answer(response, 0).await?;
        if answer.get("result").is_none() {
            return Err(format!("initialize failed: {answer}"));
        }
        if let Some(session) = session {
            raw.headers.insert("mcp-session-id", session);
        }
        raw.headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static(LEGACY_VERSION),
        );
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = raw.post(raw.headers.clone(), &initialized).await?;
        response
            .bytes()
            .await
            .map_err(|error| format!("notifications/initialized failed: {error}"))?;
        Ok(raw)
    }

    /// `tools/list` (one page), the last step of a client's start; the number of tools.
    pub(crate) async fn list_tools(&self) -> Result<usize, String> {
        let answer = self.request("tools/list", None, json!({})).await?;
        answer
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .map(Vec::len)
            .ok_or_else(|| format!("tools/list failed: {answer}"))
    }

    /// Ends the session with DELETE, as the Pack does when it is dropped, so the server does
    /// not pile up the sessions of the rounds (2026-07-28 has none to end).
    pub(crate) async fn close(&self) {
        if self.modern {
            return;
        }
        let _ = self
            .client
            .delete(&self.url)
            .headers(self.headers.clone())
            .send()
            .await;
    }

    /// One request and its answer. At 2026-07-28 the request carries what the revision
    /// requires of every request: `_meta` in its params, `Mcp-Method` and `Mcp-Name`.
    async fn request(
        &self,
        method: &'static str,
        name: Option<&'static str>,
        mut params: Value,
    ) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut headers = self.headers.clone();
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench-raw", "version": "0"},
            });
            headers.insert("mcp-method", HeaderValue::from_static(method));
            if let Some(name) = name {
                headers.insert("mcp-name", HeaderValue::from_static(name));
            }
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        read_answer(self.post(headers, &request).await?, id).await
    }

    async fn post(&self, headers: HeaderMap, message: &Value) -> Result<reqwest::Response, String> {
        let body = serde_json::to_vec(message).map_err(|error| error.to_string())?;
        let response = self
            .client
            .post(&self.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|error| format!("POST failed: {error}"))?;
        if !response.status().is_success() {
            return Err(format!("the server answered {}", response.status()));
        }
        Ok(response)
    }

    async fn call(&self, payload: &Payload) -> Result<usize, String> {
        Ok(self.echo(payload).await?.len())
    }

    /// The `echo` call; the text that came back (moved out of the parsed answer).
    pub(crate) async fn echo(&self, payload: &Payload) -> Result<String, String> {
        let params = json!({"name": "echo", "arguments": Value::Object(payload.arguments.clone())});
        let mut answer = self.request("tools/call", Some("echo"), params).await?;
        match answer
            .pointer_mut("/result/content/0/text")
            .map(Value::take)
        {
            Some(Value::String(text)) => Ok(text),
            _ => Err(format!("the answer has no text: {answer}")),
        }
    }

    /// The same `echo` through a gateway: its `call_dynamic_tool`, naming the server.
    async fn call_through(&self, payload: &Payload) -> Result<usize, String> {
        let arguments = json!({
            "namespace": NAMESPACE,
            "toolName": "echo",
            "arguments": Value::Object(payload.arguments.clone()),
        });
        let params = json!({"name": "call_dynamic_tool", "arguments": arguments});
        let answer = self
            .request("tools/call", Some("call_dynamic_tool"), params)
            .await?;
        if answer.pointer("/result/isError") == Some(&Value::Bool(true)) {
            return Err(format!("the gateway's call failed: {answer}"));
        }
        text_len(&answer)
    }
}

/// The length of the first text of a `tools/call` answer.
fn text_len(answer: &Value) -> Result<usize, String> {
    answer
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .map(str::len)
        .ok_or_else(|| format!("the answer has no text: {answer}"))
}

/// Reads the whole body and finds the response to `id`, in a JSON body or an SSE stream.
async fn read_answer(response: reqwest::Response, id: u64) -> Result<Value, String> {
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/event-stream"));
    let body = response
        .bytes()
        .await
        .map_err(|error| format!("reading the body failed: {error}"))?;
    if !sse {
        return serde_json::from_slice(&body).map_err(|error| format!("not JSON: {error}"));
    }
    let text = std::str::from_utf8(&body).map_err(|_| "the stream is not UTF-8".to_owned())?;
    sse_events(text)
        .into_iter()
        .filter_map(|data| serde_json::from_str::<Value>(&data).ok())
        .find(|message| message.get("id") == Some(&json!(id)))
        .ok_or_else(|| "the stream has no answer".to_owned())
}

/// A minimal SSE parser: the data of every event.
fn sse_events(text: &str) -> Vec<String> {
    let mut events = Vec::new();
    let mut data: Option<String> = None;
    for line in text.lines() {
        if line.is_empty() {
            events.extend(data.take());
        } else if let Some(value) = line.strip_prefix("data:") {
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }
    events.extend(data);
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_s_data_lines_are_joined() {
        let text = "event: message\ndata: {\"id\":1}\n\n: comment\ndata:a\ndata: b\n\ndata: last";
        assert_eq!(sse_events(text), ["{\"id\":1}", "a\nb", "last"]);
    }
}
