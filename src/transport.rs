//! Streamable HTTP: how one message reaches a server and how its answer is read.
//!
//! Every message is a POST with the configured headers; the answer is one JSON body or an SSE
//! stream, chosen by the server's content type, and is read with a byte cap. A stream that
//! ends early is resumed with GET and `Last-Event-ID`. The HTTP client follows no redirect,
//! uses no proxy from the environment and asks for no compressed encoding, so a configured
//! header reaches only the configured server and a response's size is its size on the wire.
//! Nothing here prints the URL: reqwest's errors are stripped of it before they are shown.
//!
//! Bodies and events are handed on as the server sent them, each read once: what of them
//! leaves the Pack is scrubbed where it becomes text to show (`text::Shown`, a
//! listing as a whole, a tool's name checked as it is accepted), after parsing has decoded
//! every escape that could hide a secret's form. What a server or another crate says in an
//! error (a content type, a connection's causes) stays [`Untrusted`] in the
//! [`TransportError`]: only the Pack's edge (`crate::edge`) shows it.
//!
//! Requests reuse pooled keep-alive connections, unless a server stalls on them: `route`
//! learns that per server, and says why. A connection returns to the pool only once its
//! answer's body has ended, so the rest of a stream whose answer was read is read in the
//! background ([`Transport::finish`]); closing it instead would cost the next request a new
//! connection (and at 2026-07-28 the request is answered, so closing its stream now cancels
//! nothing).
//!
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{RequestBuilder, Response, StatusCode};
use tokio::runtime::Handle;

use crate::auth::{AuthError, Authorization, Challenge, dpop_nonce};
use crate::config::{Header, ServerSpec};
use crate::http::{self, DPOP_NONCE, Failure, Unanswered, describe};
use crate::policy::{
    MAX_AUTHORIZATIONS_PER_REQUEST, MAX_ERROR_BODY_BYTES, MAX_RESPONSE_BYTES, MAX_SESSION_ID_BYTES,
    MAX_SSE_EVENT_BYTES, MAX_STREAM_DRAIN_BYTES, REDACTION_MARKER, STREAM_DRAIN_TIMEOUT,
    STREAM_END_WAIT,
};
use crate::secret::SecretUrl;
use crate::sse::{Event, SseError, SseParser};
use crate::text::Untrusted;

mod route;

pub(crate) use self::route::Clients;
use self::route::{Route, Via};

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const DPOP: HeaderName = HeaderName::from_static("dpop");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const JSON_TYPE: &str = "application/json";
const EVENT_STREAM_TYPE: &str = "text/event-stream";

/// What a request carries besides the configured headers, once a session exists.
#[derive(Clone, Default)]
pub(crate) struct SessionHeaders {
    pub(crate) session_id: Option<HeaderValue>,
    pub(crate) protocol_version: Option<&'static str>,
}

impl fmt::Debug for SessionHeaders {
    // A session id is a bearer credential for the session.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHeaders")
            .field(
                "session_id",
                &self.session_id.as_ref().map(|_| REDACTION_MARKER),
            )
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}

/// The way to one server: its URL and configured headers.
#[derive(Clone)]
pub(crate) struct Transport {
    clients: Clients,
    endpoint: Arc<Endpoint>,
}

struct Endpoint {
    url: SecretUrl,
    /// The configured headers, kept as secrets (wiped when the Pack ends); each request gets
    /// its own copy of their values.
    headers: Vec<Header>,
    route: Route,
    /// Its OAuth tokens, when it asks for them and nothing configured authorizes instead.
    auth: Option<Arc<Authorization>>,
}

/// When a POST went out and its headers came back, to time its first event.
struct Timing {
    endpoint: Arc<Endpoint>,
    via: Via,
    sent: Instant,
    headers: Instant,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Transport({REDACTION_MARKER})")
    }
}

/// What a POST carries besides its body and the configured headers.
#[derive(Default)]
pub(crate) struct Outgoing<'a> {
    pub(crate) session: SessionHeaders,
    /// Headers of this one message: at 2026-07-28 `Mcp-Method`, `Mcp-Name` and a tool's
    /// `Mcp-Param-*`, each already encoded by the revision's rules.
    pub(crate) extra: &'a [(HeaderName, HeaderValue)],
    /// A 4xx answer with a JSON body is handed back as [`Posted`] instead of failing, so a
    /// 2026-07-28 client can read the JSON-RPC error a modern server puts there.
    pub(crate) read_error_answers: bool,
}

/// A server's answer to a POST.
pub(crate) struct Posted {
    /// The HTTP status: a 2xx, or a 4xx when [`Outgoing::read_error_answers`] asked for it.
    pub(crate) status: u16,
    /// `MCP-Session-Id` of the answer, checked to be visible ASCII of a sane length.
    pub(crate) session_id: Option<HeaderValue>,
    pub(crate) reply: Reply,
}

/// The body of an answer.
pub(crate) enum Reply {
    /// One JSON body, read whole.
    Json(Vec<u8>),
    /// An SSE stream, read event by event.
    Stream(Box<EventStream>),
    /// No body (202 Accepted, or an empty 2xx).
    Empty,
}

impl Transport {
    /// The way to the server `spec` configures, authorizing with `auth`, kept by the caller
    /// across start attempts. OAuth is left out when the
    /// entry authorizes by itself: a configured `Authorization` header, or userinfo in the
    /// URL (which reqwest sends as one).
    pub(crate) fn new(clients: Clients, spec: &ServerSpec, auth: Arc<Authorization>) -> Self {
        let url = spec.url.clone();
        let headers = spec.headers.clone();
        let configured = headers.iter().any(|h| h.name == header::AUTHORIZATION)
            || !url.expose().username().is_empty()
            || url.expose().password().is_some();
        Self {
            clients,
            endpoint: Arc::new(Endpoint {
                url,
                headers,
                route: Route::default(),
                auth: (!configured).then_some(auth),
            }),
        }
    }

    /// [`Transport::headers`] with the current token, for requests that are not sent again
    /// after a `401` (a resumption, the farewell).
    fn headers_with_token(
        &self,
        session: &SessionHeaders,
        accept: HeaderValue,
        method: &str,
    ) -> HeaderMap {
        let mut headers = self.headers(session, accept);
        let auth = self.endpoint.auth.as_ref();
        if let Some(presented) =
            auth.and_then(|a| a.present_now(method, self.endpoint.url.expose()))
        {
            headers.insert(header::AUTHORIZATION, presented.authorization);
            if let Some(proof) = presented.proof {
                headers.insert(DPOP, proof);
            }
        }
        headers
    }

    /// The headers of every request: the configured ones and the protocol's, without the
    /// token (a request that may be sent again gets it per attempt).
    fn headers(&self, session: &SessionHeaders, accept: HeaderValue) -> HeaderMap {
        let configured = &self.endpoint.headers;
        let mut headers = HeaderMap::with_capacity(configured.len() + 3);
        for each in configured {
            headers.append(each.name.clone(), each.value());
        }
        headers.insert(header::ACCEPT, accept);
        if let Some(id) = &session.session_id {
            let mut id = id.clone();
            id.set_sensitive(true);
            headers.insert(MCP_SESSION_ID, id);
        }
        if let Some(version) = session.protocol_version {
            headers.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static(version));
        }
        headers
    }

    /// POSTs one JSON-RPC message.
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        outgoing: &Outgoing<'_>,
    ) -> Result<Posted, TransportError> {
        let mut headers = self.headers(&outgoing.session, ACCEPT_BOTH);
        headers.insert(header::CONTENT_TYPE, JSON);
        for (name, value) in outgoing.extra {
            headers.insert(name.clone(), value.clone());
        }
        let via = self.endpoint.route.choose();
        let client = self.clients.of(via);
        let request = client
            .post(self.endpoint.url.expose().clone())
            .headers(headers)
            .body(body);
        let in_session = outgoing.session.session_id.is_some();
        let (response, sent) = self.authorized(request, in_session).await?;
        let status = response.status().as_u16();
        if outgoing.read_error_answers
            && response.status().is_client_error()
            && content_type(&response).is_some_and(|k| k.eq_ignore_ascii_case(JSON_TYPE))
        {
            let body = read_capped(response).await?;
            return Ok(Posted {
                status,
                session_id: None,
                reply: Reply::Json(body),
            });
        }
        let response = checked(response).await?;
        let session_id = session_id_of(&response)?;
        let reply = match content_type(&response) {
            Some(kind) if kind.eq_ignore_ascii_case(JSON_TYPE) => {
                let body = read_capped(response).await?;
                Reply::Json(body)
            }
            Some(kind) if kind.eq_ignore_ascii_case(EVENT_STREAM_TYPE) => {
                let timing = Timing {
                    endpoint: Arc::clone(&self.endpoint),
                    via,
                    sent,
                    headers: Instant::now(),
                };
                Reply::Stream(Box::new(EventStream::new(response, Some(timing))))
            }
            _ if response.status() == StatusCode::ACCEPTED => Reply::Empty,
            other => {
                let kind = other.unwrap_or_else(|| "none".to_owned());
                if read_capped(response).await?.is_empty() {
                    Reply::Empty
                } else {
                    return Err(TransportError::ContentType(Untrusted::new(kind)));
                }
            }
        };
        Ok(Posted {
            status,
            session_id,
            reply,
        })
    }

    /// Sends `request` with the server's current token, and answers each `401` (and
    /// `403 insufficient_scope`) by authorizing and sending it again, up to
    /// [`MAX_AUTHORIZATIONS_PER_REQUEST`] times. The answer, and when it was sent.
    async fn authorized(
        &self,
        request: RequestBuilder,
        in_session: bool,
    ) -> Result<(Response, Instant), TransportError> {
        let Some(auth) = &self.endpoint.auth else {
            let at = Instant::now();
            return Ok((answered(request).await?, at));
        };
        let mut authorizations = 0;
        loop {
            let (presented, generation) = auth
                .present(self.clients.pooled(), "POST", self.endpoint.url.expose())
                .await;
            // The body is bytes, so the clone shares them.
            let mut attempt = request
                .try_clone()
                .ok_or(TransportError::Protocol("the request cannot be sent again"))?;
            if let Some(presented) = presented {
                attempt = attempt.header(header::AUTHORIZATION, presented.authorization);
                if let Some(proof) = presented.proof {
                    attempt = attempt.header(DPOP, proof);
                }
            }
            let at = Instant::now();
            let response = answered(attempt).await?;
            let Some(challenge) = challenge_of(&response, in_session) else {
                return Ok((response, at));
            };
            if authorizations == MAX_AUTHORIZATIONS_PER_REQUEST {
                return Err(TransportError::Auth(AuthError::refused(format!(
                    "the server still refuses the token after {MAX_AUTHORIZATIONS_PER_REQUEST} \
                     authorizations"
                ))));
            }
            authorizations += 1;
            let status = response.status().as_u16();
            drop(response);
            // Boxed: an authorization is a large future, which every request's future would
            // otherwise carry inline, to be moved at each await above it.
            let responding = auth.respond(self.clients.pooled(), status, &challenge, generation);
            Box::pin(responding).await.map_err(TransportError::Auth)?;
        }
    }

    /// POSTs a notification or a response: any 2xx is success and the body is discarded.
    pub(crate) async fn send(
        &self,
        body: Vec<u8>,
        session: &SessionHeaders,
    ) -> Result<(), TransportError> {
        let outgoing = Outgoing {
            session: session.clone(),
            ..Outgoing::default()
        };
        let posted = self.post(body, &outgoing).await?;
        if let Reply::Stream(mut stream) = posted.reply {
            while stream.next().await?.is_some() {}
        }
        Ok(())
    }

    /// Reads the rest of a stream whose answer was read, so its connection goes back to the
    /// pool: dropped before its end, the connection would be closed and the next request would
    /// open a new one. What is already received is read at once; a stream that has not ended
    /// yet is read on by a task of `runtime` (the caller does not wait), within
    /// [`STREAM_DRAIN_TIMEOUT`] and [`MAX_STREAM_DRAIN_BYTES`], while fewer than
    /// [`crate::policy::MAX_DRAINING_STREAMS`] are; past any bound the connection is closed.
    /// Nothing after the answer is used.
    pub(crate) fn finish(&self, stream: EventStream, runtime: &Handle) {
        let mut response = stream.response;
        let mut budget = MAX_STREAM_DRAIN_BYTES;
        if read_received(&mut response, &mut budget) != Drained::Pending {
            return;
        }
        self.drain(response, budget, runtime);
    }

    /// [`Transport::finish`] for an answer that the caller's next request follows at once (a
    /// start-up request): waits up to [`STREAM_END_WAIT`] for the stream's end, so that request
    /// finds the connection back in the pool instead of opening another; a stream that has not
    /// ended by then is read on in the background, as `finish` reads it.
    pub(crate) async fn finish_before_next(&self, stream: EventStream, runtime: &Handle) {
        let mut response = stream.response;
        let mut budget = MAX_STREAM_DRAIN_BYTES;
        let rest = read_rest(&mut response, &mut budget);
        if tokio::time::timeout(STREAM_END_WAIT, rest).await.is_err() {
            self.drain(response, budget, runtime);
            return;
        }
        drop(response);
        // hyper puts the connection back in the pool from a task of its own, woken by the
        // stream's end: it runs before the next request looks for an idle connection.
        tokio::task::yield_now().await;
    }

    /// Reads the rest of `response` on a task of `runtime`, within [`STREAM_DRAIN_TIMEOUT`] and
    /// `budget`, while fewer than [`crate::policy::MAX_DRAINING_STREAMS`] are; else drops it,
    /// which closes its connection.
    fn drain(&self, mut response: Response, mut budget: usize, runtime: &Handle) {
        let Some(permit) = self.clients.draining() else {
            return;
        };
        runtime.spawn(async move {
            let rest = read_rest(&mut response, &mut budget);
            let _ = tokio::time::timeout(STREAM_DRAIN_TIMEOUT, rest).await;
            drop(permit);
        });
    }

    /// Resumes a stream with GET and `Last-Event-ID`.
    pub(crate) async fn resume(
        &self,
        last_event_id: &str,
        session: &SessionHeaders,
    ) -> Result<EventStream, TransportError> {
        self.get_stream(Some(last_event_id), session).await
    }

    /// Opens the session's standalone stream with GET (2025-11-25), where a server sends
    /// what no request asked for, such as a change of its tools; resumed from
    /// `last_event_id` when given. A server that offers none answers `405`.
    pub(crate) async fn listen(
        &self,
        last_event_id: Option<&str>,
        session: &SessionHeaders,
    ) -> Result<EventStream, TransportError> {
        self.get_stream(last_event_id, session).await
    }

    async fn get_stream(
        &self,
        last_event_id: Option<&str>,
        session: &SessionHeaders,
    ) -> Result<EventStream, TransportError> {
        let mut headers = self.headers_with_token(session, EVENT_STREAM, "GET");
        if let Some(last_event_id) = last_event_id {
            let id = HeaderValue::from_str(last_event_id)
                .map_err(|_| TransportError::Protocol("the server sent an unusable event id"))?;
            headers.insert(LAST_EVENT_ID, id);
        }
        let request = self
            .clients
            .pooled()
            .get(self.endpoint.url.expose().clone())
            .headers(headers);
        let response = checked(answered(request).await?).await?;
        match content_type(&response) {
            Some(kind) if kind.eq_ignore_ascii_case(EVENT_STREAM_TYPE) => {
                Ok(EventStream::new(response, None))
            }
            other => Err(TransportError::ContentType(Untrusted::new(
                other.unwrap_or_else(|| "none".to_owned()),
            ))),
        }
    }

    /// Ends a session with DELETE. The answer does not matter: 405, 404 and 400 mean the
    /// server keeps no session or already dropped it.
    pub(crate) async fn delete(&self, session: &SessionHeaders) {
        let headers = self.headers_with_token(session, ACCEPT_BOTH, "DELETE");
        let request = self
            .clients
            .pooled()
            .delete(self.endpoint.url.expose().clone())
            .headers(headers);
        if let Ok(response) = http::send(request).await {
            let _ = read_capped(response).await;
        }
    }
}

/// `response` if it is a 2xx; every other answer is an error (a redirect was refused by the
/// sender already), with what the server said of it (a JSON-RPC error's message, or the first
/// of its text), read within [`MAX_ERROR_BODY_BYTES`].
async fn checked(response: Response) -> Result<Response, TransportError> {
    let status = response.status();
    if !status.is_success() {
        let said = error_text(response).await.map(Untrusted::new);
        return Err(TransportError::Status {
            status: status.as_u16(),
            said,
        });
    }
    Ok(response)
}

/// What an error answer says of itself: the `message` of the JSON-RPC error (or of an
/// `error` object, as many servers write it) in its body, else its text; `None` when it is
/// empty. At most [`MAX_ERROR_BODY_BYTES`] of it are read.
async fn error_text(mut response: Response) -> Option<String> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        let Ok(Some(chunk)) = response.chunk().await else {
            break;
        };
        body.extend_from_slice(&chunk);
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    let text = String::from_utf8_lossy(&body);
    let json: Option<serde_json::Value> = serde_json::from_str(&text).ok();
    let message = json.as_ref().and_then(|json| {
        let error = json.get("error").unwrap_or(json);
        error
            .get("message")
            .or(Some(error).filter(|e| e.is_string()))
            .and_then(serde_json::Value::as_str)
    });
    let text = message.unwrap_or(&text).trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The challenge of an answer that asks for (other) authorization: a `401`, or a `403`
/// whose challenge says `insufficient_scope`. A `401` without any challenge to a request
/// `in_session` is none: servers answer so for a session they no longer know, and a new
/// session, not a new login, is what it needs.
fn challenge_of(response: &Response, in_session: bool) -> Option<Challenge> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let values = response.headers().get_all(header::WWW_AUTHENTICATE);
    if in_session && values.iter().next().is_none() {
        return None;
    }
    let mut challenge = Challenge::parse(values.iter().map(HeaderValue::as_bytes));
    challenge.dpop_nonce = dpop_nonce(response.headers().get(DPOP_NONCE));
    let step_up = challenge.error.as_deref() == Some("insufficient_scope");
    (status == StatusCode::UNAUTHORIZED || step_up).then_some(challenge)
}

/// `request`'s answer, sent by the Pack's one sender, or why it did not come, without the URL.
async fn answered(request: RequestBuilder) -> Result<Response, TransportError> {
    http::send(request).await.map_err(unanswered)
}

/// The transport's error for an answer [`http`] could not have.
fn unanswered(unanswered: Unanswered) -> TransportError {
    match unanswered {
        Unanswered::Unsent(failure) => TransportError::Send(failure),
        Unanswered::Redirect(status) => TransportError::Redirect(status),
        Unanswered::TooLarge => TransportError::TooLarge {
            limit: MAX_RESPONSE_BYTES,
        },
        Unanswered::Broke(failure) => TransportError::Body(failure),
    }
}

/// The media type of the answer, without parameters, compared ignoring case. It is the
/// server's text, shown (by the edge) when it is not one the client reads.
fn content_type(response: &Response) -> Option<String> {
    let value = response
        .headers()
        .get(header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    Some(
        value
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned(),
    )
}

fn session_id_of(response: &Response) -> Result<Option<HeaderValue>, TransportError> {
    let Some(id) = response.headers().get(MCP_SESSION_ID) else {
        return Ok(None);
    };
    let bytes = id.as_bytes();
    let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
    if bytes.is_empty() || bytes.len() > MAX_SESSION_ID_BYTES || !visible {
        return Err(TransportError::Protocol(
            "the server sent a session id that is not 1 to 1024 visible ASCII characters",
        ));
    }
    Ok(Some(id.clone()))
}

/// Reads a whole body within [`MAX_RESPONSE_BYTES`].
async fn read_capped(response: Response) -> Result<Vec<u8>, TransportError> {
    http::read_capped(response, MAX_RESPONSE_BYTES)
        .await
        .map_err(unanswered)
}

/// How far [`read_received`] got.
#[derive(PartialEq, Eq)]
enum Drained {
    /// The body ended, broke, or passed its budget: nothing more is read.
    Done,
    /// More is to come.
    Pending,
}

/// Reads what of `response`'s body has arrived, without waiting (a poll with a waker that
/// wakes nothing: the body is polled again, with a real one, if more is to come), each chunk
/// counted against `budget`.
fn read_received(response: &mut Response, budget: &mut usize) -> Drained {
    let mut context = Context::from_waker(Waker::noop());
    loop {
        match pin!(response.chunk()).poll(&mut context) {
            Poll::Pending => return Drained::Pending,
            Poll::Ready(Ok(Some(chunk))) => match budget.checked_sub(chunk.len()) {
                Some(left) => *budget = left,
                None => return Drained::Done,
            },
            Poll::Ready(Ok(None) | Err(_)) => return Drained::Done,
        }
    }
}

/// Reads `response`'s body to its end, a break, or past `budget` (where it stops: dropping the
/// response then closes its connection). Cancelled, it loses nothing: a chunk is taken only when
/// it has arrived.
async fn read_rest(response: &mut Response, budget: &mut usize) {
    while let Ok(Some(chunk)) = response.chunk().await {
        match budget.checked_sub(chunk.len()) {
            Some(left) => *budget = left,
            None => return,
        }
    }
}

fn body_error(e: reqwest::Error) -> TransportError {
    TransportError::Body(describe(e))
}

/// An SSE answer, read event by event, each event capped.
pub(crate) struct EventStream {
    response: Response,
    parser: SseParser,
    ready: std::collections::VecDeque<Event>,
    scratch: Vec<Event>,
    /// Until the first event: when the POST went out, for its server's [`Route`].
    timing: Option<Timing>,
}

impl EventStream {
    fn new(response: Response, timing: Option<Timing>) -> Self {
        Self {
            response,
            parser: SseParser::new(MAX_SSE_EVENT_BYTES),
            ready: Default::default(),
            scratch: Vec::new(),
            timing,
        }
    }

    /// The next event's data, or `None` when the server closed the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<String>, TransportError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                if let Some(timing) = self.timing.take() {
                    let now = Instant::now();
                    timing.endpoint.route.observe(
                        timing.via,
                        now - timing.headers,
                        now - timing.sent,
                    );
                }
                return Ok(Some(event.data));
            }
            let chunk = self.response.chunk().await;
            let Some(chunk) = chunk.map_err(body_error)? else {
                return Ok(None);
            };
            // Events are consumed as they come, so the event cap bounds memory; an endless
            // stream is bounded by the deadline of the operation reading it.
            self.parser
                .feed(&chunk, &mut self.scratch)
                .map_err(TransportError::Sse)?;
            self.ready.extend(self.scratch.drain(..));
        }
    }

    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.parser.last_event_id()
    }

    pub(crate) fn retry(&self) -> Option<Duration> {
        self.parser.retry()
    }
}

/// Why a message did not get through or its answer could not be read. No variant holds the
/// URL or a header value; what the server or another crate said is kept as [`Untrusted`] and
/// only the Pack's edge (`crate::edge`) shows it.
#[derive(Debug, Clone)]
pub(crate) enum TransportError {
    /// The request could not be sent or its answer not received (connect, TLS, reset).
    Send(Failure),
    /// The body broke off while it was read.
    Body(Failure),
    /// A 3xx: refused, so no header of ours goes anywhere else.
    Redirect(u16),
    /// Any other non-2xx status, with what the server said of it.
    Status {
        status: u16,
        said: Option<Untrusted<String>>,
    },
    /// A body or stream larger than the policy allows.
    TooLarge { limit: usize },
    /// A content type that is neither JSON nor SSE: the server's words.
    ContentType(Untrusted<String>),
    /// An SSE stream that cannot be parsed.
    Sse(SseError),
    /// An answer that breaks the transport's rules.
    Protocol(&'static str),
    /// The server asks for authorization and none could be had.
    Auth(AuthError),
}

impl TransportError {
    /// A status with nothing said of it.
    pub(crate) fn status(status: u16) -> Self {
        Self::Status { status, said: None }
    }

    /// Whether this answer says the session it was sent in is gone: `404`, as the
    /// specification asks, or `400` or `401` whose message says the session is unknown,
    /// invalid or expired (what several servers answer instead).
    pub(crate) fn says_session_gone(&self) -> bool {
        let Self::Status { status, said } = self else {
            return false;
        };
        match status {
            404 => true,
            400 | 401 => said.as_ref().is_some_and(|said| {
                let said = said.peek().to_ascii_lowercase();
                said.contains("session") && SESSION_GONE.iter().any(|marker| said.contains(marker))
            }),
            _ => false,
        }
    }
}

/// Words with which servers say a session is gone, beside "session".
const SESSION_GONE: [&str; 6] = [
    "not found",
    "unknown",
    "invalid",
    "no valid",
    "expired",
    "terminated",
];
