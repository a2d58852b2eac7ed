//! JSON-RPC over the transport: the handshake, paged `tools/list`, `tools/call`, and the
//! protocol's duties on the way (answering a server's `ping`, telling a server when a request
//! is abandoned, starting over when the server forgets the session).
//!
//! Results come back as [`Untrusted`]: this module moves server data, it never reads it for
//! a model.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::envelope::{self, Catalog, Loose, Object, ToolSet, Untrusted};
use crate::policy::{
    ACCEPTED_PROTOCOL_VERSIONS, FAREWELL_TIMEOUT, MAX_IDLE_RESUMPTIONS, MAX_TOOL_PAGES,
    PROTOCOL_VERSION, SSE_DEFAULT_RETRY, SSE_MAX_RETRY, SSE_MIN_RETRY,
};
use crate::transport::{EventStream, Reply, SessionHeaders, Transport, TransportError};

/// JSON-RPC "method not found": the answer to any server request but `ping`, since the
/// client declares no capability that would invite one.
const METHOD_NOT_FOUND: i64 = -32601;

/// One server's MCP session. Requests may run concurrently: each is its own POST.
pub(crate) struct Session {
    transport: Transport,
    runtime: Handle,
    next_id: AtomicU64,
    state: Mutex<State>,
    /// Held while re-initializing, so concurrent requests that all got 404 start over once.
    restart: tokio::sync::Mutex<()>,
    farewells: Farewells,
}

#[derive(Clone, Default)]
struct State {
    headers: SessionHeaders,
    /// Counts handshakes, so a request knows whether the session changed since it was sent.
    generation: u64,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(transport: Transport, runtime: Handle) -> Self {
        Self {
            transport,
            runtime,
            next_id: AtomicU64::new(0),
            state: Mutex::new(State::default()),
            restart: tokio::sync::Mutex::new(()),
            farewells: Farewells::default(),
        }
    }

    fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs the handshake: `initialize`, then `notifications/initialized`.
    pub(crate) async fn initialize(&self) -> Result<(), SessionError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            // Nothing declared: an optional capability such as elicitation would make some
            // servers (GitHub's) answer with interactive forms this Pack cannot show.
            "capabilities": {},
            "clientInfo": {"name": "plugin_mcp", "version": env!("CARGO_PKG_VERSION")},
        });
        let fresh = SessionHeaders::default();
        let (result, session_id) = self
            .exchange::<Value>(id, "initialize", &params, &fresh)
            .await?;
        let answered = result.peek().get("protocolVersion").and_then(Value::as_str);
        let version = ACCEPTED_PROTOCOL_VERSIONS
            .into_iter()
            .find(|v| Some(*v) == answered)
            .ok_or(SessionError::Version)?;
        let headers = SessionHeaders {
            session_id,
            protocol_version: Some(version),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.transport
            .send(to_bytes(&initialized), &headers)
            .await?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.headers = headers;
        state.generation += 1;
        Ok(())
    }

    /// Every tool the server lists, page after page, each page checked before the next is
    /// asked for, so only checked tools are held.
    pub(crate) async fn list_tools(&self) -> Result<ToolSet, SessionError> {
        let mut catalog = Catalog::default();
        let mut cursors = HashSet::new();
        let mut params = json!({});
        for _ in 0..MAX_TOOL_PAGES {
            // Kept as text: the catalog reads only the fields it needs out of it.
            let page = self.request::<Box<RawValue>>("tools/list", params).await?;
            let next = catalog.add_page(&page).map_err(SessionError::Protocol)?;
            let Some(cursor) = next else {
                return Ok(catalog.finish());
            };
            if !cursors.insert(cursor.clone()) {
                return Err(SessionError::Protocol(
                    "tools/list repeated a cursor, which would never end".to_owned(),
                ));
            }
            params = json!({ "cursor": cursor });
        }
        Err(SessionError::Protocol(format!(
            "tools/list sent more than {MAX_TOOL_PAGES} pages"
        )))
    }

    /// Calls a tool by its exact name.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Untrusted<Value>, SessionError> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// Ends the session with DELETE, in the background, after any cancellation still being
    /// sent, each within the farewell timeout.
    pub(crate) fn close(&self) {
        let headers = self.state().headers;
        if headers.session_id.is_none() {
            return;
        }
        let transport = self.transport.clone();
        let farewells = std::mem::take(
            &mut *self
                .farewells
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.runtime.spawn(async move {
            for cancel in farewells {
                let _ = tokio::time::timeout(FAREWELL_TIMEOUT, cancel).await;
            }
            let _ = tokio::time::timeout(FAREWELL_TIMEOUT, transport.delete(&headers)).await;
        });
    }

    /// Sends a request in the current session and reads its result as `T`. A 404 to a
    /// request that carried a session id means the server forgot the session: it never saw
    /// the request, so the client starts over once and sends it once more.
    async fn request<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Untrusted<T>, SessionError> {
        let mut restarted = false;
        loop {
            let state = self.state();
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let mut pending = Pending::new(self, id, &state.headers);
            let answer = self.exchange(id, method, &params, &state.headers).await;
            pending.answered();
            match answer {
                Err(SessionError::Transport(TransportError::Status(404)))
                    if state.headers.session_id.is_some() && !restarted =>
                {
                    restarted = true;
                    self.restart(state.generation).await?;
                }
                answer => return answer.map(|(result, _)| result),
            }
        }
    }

    async fn restart(&self, seen_generation: u64) -> Result<(), SessionError> {
        let _only_one = self.restart.lock().await;
        if self.state().generation != seen_generation {
            return Ok(()); // another request already started a new session
        }
        tracing::debug!("the server forgot the session; initializing again");
        self.initialize().await
    }

    /// POSTs one request and reads its answer, from a JSON body or an SSE stream.
    async fn exchange<T: DeserializeOwned>(
        &self,
        id: u64,
        method: &str,
        params: &Value,
        headers: &SessionHeaders,
    ) -> Result<(Untrusted<T>, Option<reqwest::header::HeaderValue>), SessionError> {
        let request = Request {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        let posted = self.transport.post(to_bytes(&request), headers).await?;
        let result = match posted.reply {
            Reply::Json(bytes) => {
                let not_json = || SessionError::Protocol("the answer is not JSON".to_owned());
                let text = std::str::from_utf8(&bytes).map_err(|_| not_json())?;
                let message: &RawValue = serde_json::from_str(text).map_err(|_| not_json())?;
                // A JSON body answers exactly this request; 2025-03-26 allowed a batch.
                let messages = match serde_json::from_str::<Vec<&RawValue>>(message.get()) {
                    Ok(batch) => batch,
                    Err(_) => vec![message],
                };
                messages
                    .into_iter()
                    .find_map(|m| answer_to(id, Incoming::read(m.get())?))
                    .unwrap_or_else(|| {
                        Err(SessionError::Protocol(
                            "the answer does not respond to the request".to_owned(),
                        ))
                    })
            }
            Reply::Stream(stream) => self.read_stream(id, *stream, headers).await,
            Reply::Empty => Err(SessionError::Protocol(
                "the server answered a request with no body".to_owned(),
            )),
        }?;
        Ok((result, posted.session_id))
    }

    /// Reads a response stream until it carries the answer to `id`, resuming it with GET and
    /// `Last-Event-ID` when the server closes it early.
    async fn read_stream<T: DeserializeOwned>(
        &self,
        id: u64,
        mut stream: EventStream,
        headers: &SessionHeaders,
    ) -> Result<Untrusted<T>, SessionError> {
        let mut idle_resumptions = 0;
        loop {
            let mut progressed = false;
            while let Some(data) = stream.next().await? {
                progressed = true;
                let Some(message) = Incoming::read(&data) else {
                    tracing::debug!("ignored an SSE event that is not JSON");
                    continue;
                };
                if let Some(message) = self.handle_incoming(id, message, headers).await {
                    return message;
                }
            }
            idle_resumptions = if progressed { 0 } else { idle_resumptions + 1 };
            let Some(last_event_id) = stream.last_event_id().map(str::to_owned) else {
                return Err(SessionError::Protocol(
                    "the stream ended before the answer, with no event id to resume from"
                        .to_owned(),
                ));
            };
            if idle_resumptions >= MAX_IDLE_RESUMPTIONS {
                return Err(SessionError::Protocol(format!(
                    "the stream was resumed {MAX_IDLE_RESUMPTIONS} times without a new event"
                )));
            }
            let wait = stream
                .retry()
                .unwrap_or(SSE_DEFAULT_RETRY)
                .clamp(SSE_MIN_RETRY, SSE_MAX_RETRY);
            tokio::time::sleep(wait).await;
            stream = self.transport.resume(&last_event_id, headers).await?;
        }
    }

    /// Handles one message on a response stream; `Some` when it answers request `id`.
    async fn handle_incoming<T: DeserializeOwned>(
        &self,
        id: u64,
        message: Incoming<'_>,
        headers: &SessionHeaders,
    ) -> Option<Result<Untrusted<T>, SessionError>> {
        match (message.method.0.as_deref(), message.id) {
            (Some(method), Some(request_id)) => {
                // Nested past serde_json's depth limit, an id cannot be echoed: answered as null.
                let request_id: Value = serde_json::from_str(request_id.get()).unwrap_or_default();
                // Answered in line, so a flood of server requests is paced by the client.
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": request_id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": request_id,
                           "error": {"code": METHOD_NOT_FOUND, "message": "Method not found"}})
                };
                if let Err(e) = self.transport.send(to_bytes(&answer), headers).await {
                    // The error was scrubbed as it was read; scrubbed again here, so no change
                    // to how it was built can let a secret into the log, then escaped.
                    let error = self.transport.scrubber().clean(e.to_string());
                    tracing::debug!(error = %envelope::log_safe(&error), "could not answer a server request");
                }
                None
            }
            (Some(_), None) => None, // a notification: progress, logging, list changes
            (None, _) => answer_to(id, message),
        }
    }
}

/// One JSON-RPC message from a server, read for its routing fields. Its result stays raw
/// text until the request's own type reads it, and anything else it carries is skipped.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default)]
    method: Loose<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A field's raw text, `null` included: a field that is there is not absent.
fn present<'de, D: Deserializer<'de>>(field: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(field).map(Some)
}

impl<'a> Incoming<'a> {
    /// `None` for text that is not a JSON object.
    fn read(text: &'a str) -> Option<Self> {
        serde_json::from_str::<Object<Self>>(text).ok().map(|m| m.0)
    }
}

/// A JSON-RPC error object, each field read when it has its type.
#[derive(Default, Deserialize)]
struct RpcError {
    #[serde(default)]
    code: Loose<i64>,
    #[serde(default)]
    message: Loose<String>,
}

/// The outcome carried by `message` if it is the response to request `id`, its result read
/// as `T`.
fn answer_to<T: DeserializeOwned>(
    id: u64,
    message: Incoming<'_>,
) -> Option<Result<Untrusted<T>, SessionError>> {
    let answered = message
        .id
        .and_then(|v| serde_json::from_str::<u64>(v.get()).ok());
    if answered != Some(id) {
        return None;
    }
    if let Some(error) = message.error {
        let error = serde_json::from_str::<Object<RpcError>>(error.get());
        let error = error.map_or_else(|_| RpcError::default(), |e| e.0);
        return Some(Err(SessionError::Rpc {
            code: error.code.0.unwrap_or(0),
            message: Untrusted::new(error.message.0.unwrap_or_default()),
        }));
    }
    let Some(result) = message.result else {
        return Some(Err(SessionError::Protocol(
            "the response has neither result nor error".to_owned(),
        )));
    };
    Some(
        serde_json::from_str(result.get())
            .map(Untrusted::new)
            .map_err(|_| SessionError::Protocol("the answer is not JSON".to_owned())),
    )
}

/// A JSON-RPC request as it is written, borrowing its parameters: a request sent again
/// after a lost session, or with megabytes of arguments, is not copied to be sent.
#[derive(Serialize)]
struct Request<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: &'a Value,
}

fn to_bytes(message: &impl Serialize) -> Vec<u8> {
    // Serializing JSON values and strings cannot fail; an empty body would be refused by the
    // server, not sent silently.
    serde_json::to_vec(message).unwrap_or_default()
}

/// The `notifications/cancelled` still being sent, so ending the session can wait for them:
/// a DELETE that overtook one would leave the server nothing to cancel against.
type Farewells = Arc<Mutex<Vec<JoinHandle<()>>>>;

/// A request on the wire. Dropped before its answer (the caller gave up, or its deadline
/// passed), it tells the server with `notifications/cancelled`.
struct Pending {
    farewell: Option<(Transport, SessionHeaders, Handle, Farewells, u64)>,
}

impl Pending {
    fn new(session: &Session, id: u64, headers: &SessionHeaders) -> Self {
        let farewell = (
            session.transport.clone(),
            headers.clone(),
            session.runtime.clone(),
            Arc::clone(&session.farewells),
            id,
        );
        Self {
            farewell: Some(farewell),
        }
    }

    fn answered(&mut self) {
        self.farewell = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some((transport, headers, runtime, farewells, id)) = self.farewell.take() else {
            return;
        };
        let cancelled = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the client abandoned the request"},
        });
        let task = runtime.spawn(async move {
            let sent = transport.send(to_bytes(&cancelled), &headers);
            let _ = tokio::time::timeout(FAREWELL_TIMEOUT, sent).await;
        });
        let mut farewells = farewells.lock().unwrap_or_else(PoisonError::into_inner);
        // Only those still under way are kept, so the list is as long as the cancels in flight.
        farewells.retain(|task| !task.is_finished());
        farewells.push(task);
    }
}

/// Why a request got no usable answer.
#[derive(Debug)]
pub(crate) enum SessionError {
    /// The message did not get through, or its answer could not be read.
    Transport(TransportError),
    /// The server answered with a JSON-RPC error.
    Rpc {
        code: i64,
        message: Untrusted<String>,
    },
    /// The server answered with a protocol version the client does not speak.
    Version,
    /// The answer broke the protocol.
    Protocol(String),
}

impl SessionError {
    /// The error as text a model may read: a server's own message passes the envelope.
    pub(crate) fn into_text(self) -> String {
        match self {
            Self::Rpc { code, message } => envelope::rpc_error_text(code, message),
            other => other.to_string(),
        }
    }
}

impl From<TransportError> for SessionError {
    fn from(e: TransportError) -> Self {
        Self::Transport(e)
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Transport(e) => e.fmt(f),
            Self::Rpc { code, .. } => write!(f, "the server answered with error {code}"),
            Self::Version => write!(
                f,
                "the server speaks none of the protocol versions {}",
                ACCEPTED_PROTOCOL_VERSIONS.join(", ")
            ),
            Self::Protocol(e) => f.write_str(e),
        }
    }
}

/// Cheap to clone and share between the connector and calls.
pub(crate) type SharedSession = Arc<Session>;
