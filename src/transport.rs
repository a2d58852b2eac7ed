//! Streamable HTTP: how one message reaches a server and how its answer is read.
//!
//! Every message is a POST with the configured headers; the answer is one JSON body or an SSE
//! stream, chosen by the server's content type, and is read with a byte cap. A stream that
//! ends early is resumed with GET and `Last-Event-ID`. The HTTP client follows no redirect,
//! uses no proxy from the environment and asks for no compressed encoding, so a configured
//! header reaches only the configured server and a response's size is its size on the wire.
//! Nothing here prints the URL: reqwest's errors are stripped of it before they are shown.
//!
//! Every text a server sends is scrubbed of the server's secrets here, as it is read (bodies,
//! SSE events, the content type, error causes), before anything lowercases, escapes, cuts or
//! logs it: a secret changed by any of those would no longer be found.
//!
//! Requests reuse pooled keep-alive connections, unless a server stalls on them: `route`
//! learns that per server, and says why.
//!
use std::error::Error as _;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, ClientBuilder, RequestBuilder, Response, StatusCode};

use crate::auth::{AuthError, Authorization, Challenge, dpop_nonce};
use crate::config::ServerSpec;
use crate::policy::{
    CONNECT_TIMEOUT, MAX_AUTHORIZATIONS_PER_REQUEST, MAX_RESPONSE_BYTES, MAX_SESSION_ID_BYTES,
    MAX_SSE_EVENT_BYTES, redirect_policy,
};
use crate::secret::{Scrubber, SecretUrl};
use crate::sse::{Event, SseError, SseParser};

mod route;

pub(crate) use self::route::Clients;
use self::route::{Route, Via};

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const DPOP: HeaderName = HeaderName::from_static("dpop");
const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const EVENT_STREAM: HeaderValue = HeaderValue::from_static("text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const JSON_TYPE: &str = "application/json";
const EVENT_STREAM_TYPE: &str = "text/event-stream";

/// The settings of every HTTP client of the Pack: no redirect, no proxy, no compression
/// (reqwest's decompression features are off), a connect timeout.
fn client_builder() -> ClientBuilder {
    Client::builder()
        .redirect(redirect_policy())
        .referer(false)
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .user_agent(concat!("plugin_mcp/", env!("CARGO_PKG_VERSION")))
}

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
                &self.session_id.as_ref().map(|_| "[redacted]"),
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
    headers: HeaderMap,
    route: Route,
    /// This server's secrets, scrubbed from everything it sends.
    scrubber: Arc<Scrubber>,
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
        f.write_str("Transport([redacted])")
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
    pub(crate) read_refusals: bool,
}

/// A server's answer to a POST.
pub(crate) struct Posted {
    /// The HTTP status: a 2xx, or a 4xx when [`Outgoing::read_refusals`] asked for it.
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
    /// The way to the server `spec` configures, scrubbing with `scrubber` and authorizing
    /// with `auth`, both kept by the caller across start attempts. OAuth is left out when the
    /// entry authorizes by itself: a configured `Authorization` header, or userinfo in the
    /// URL (which reqwest sends as one).
    pub(crate) fn new(
        clients: Clients,
        spec: &ServerSpec,
        scrubber: Arc<Scrubber>,
        auth: Arc<Authorization>,
    ) -> Self {
        let url = spec.url.clone();
        let headers: HeaderMap = spec.headers.iter().cloned().collect();
        let configured = headers.contains_key(header::AUTHORIZATION)
            || !url.expose().username().is_empty()
            || url.expose().password().is_some();
        Self {
            clients,
            endpoint: Arc::new(Endpoint {
                url,
                headers,
                route: Route::default(),
                scrubber,
                auth: (!configured).then_some(auth),
            }),
        }
    }

    /// The scrubber of this server's secrets, for text about it that did not come through
    /// here.
    pub(crate) fn scrubber(&self) -> &Scrubber {
        &self.endpoint.scrubber
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
        let mut headers = self.endpoint.headers.clone();
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
        let scrubber = &self.endpoint.scrubber;
        let (response, sent) = self.authorized(request).await?;
        let status = response.status().as_u16();
        if outgoing.read_refusals
            && response.status().is_client_error()
            && content_type(&response, scrubber).is_some_and(|k| k.eq_ignore_ascii_case(JSON_TYPE))
        {
            let body = read_capped(response, scrubber).await?;
            return Ok(Posted {
                status,
                session_id: None,
                reply: Reply::Json(scrubbed_body(body, scrubber)),
            });
        }
        let response = checked(response)?;
        let session_id = session_id_of(&response)?;
        let reply = match content_type(&response, scrubber) {
            Some(kind) if kind.eq_ignore_ascii_case(JSON_TYPE) => {
                let body = read_capped(response, scrubber).await?;
                Reply::Json(scrubbed_body(body, scrubber))
            }
            Some(kind) if kind.eq_ignore_ascii_case(EVENT_STREAM_TYPE) => {
                let timing = Timing {
                    endpoint: Arc::clone(&self.endpoint),
                    via,
                    sent,
                    headers: Instant::now(),
                };
                let scrubber = Arc::clone(scrubber);
                Reply::Stream(Box::new(EventStream::new(response, scrubber, Some(timing))))
            }
            _ if response.status() == StatusCode::ACCEPTED => Reply::Empty,
            other => {
                let kind = other.unwrap_or_else(|| "none".to_owned());
                if read_capped(response, scrubber).await?.is_empty() {
                    Reply::Empty
                } else {
                    return Err(TransportError::ContentType(kind));
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
    ) -> Result<(Response, Instant), TransportError> {
        let scrubber = &self.endpoint.scrubber;
        let Some(auth) = &self.endpoint.auth else {
            let at = Instant::now();
            return Ok((sent(request.send().await, scrubber)?, at));
        };
        let mut authorizations = 0;
        loop {
            let (presented, sent_as) = auth
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
            let response = sent(attempt.send().await, scrubber)?;
            let Some(challenge) = challenge_of(&response) else {
                return Ok((response, at));
            };
            if authorizations == MAX_AUTHORIZATIONS_PER_REQUEST {
                return Err(TransportError::Auth(AuthError::Refused(format!(
                    "the server still refuses the token after {MAX_AUTHORIZATIONS_PER_REQUEST} \
                     authorizations"
                ))));
            }
            authorizations += 1;
            let status = response.status().as_u16();
            drop(response);
            auth.respond(self.clients.pooled(), status, &challenge, sent_as)
                .await
                .map_err(|e| TransportError::Auth(scrubbed_auth_error(e, scrubber)))?;
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

    /// Resumes a stream with GET and `Last-Event-ID`.
    pub(crate) async fn resume(
        &self,
        last_event_id: &str,
        session: &SessionHeaders,
    ) -> Result<EventStream, TransportError> {
        let mut headers = self.headers_with_token(session, EVENT_STREAM, "GET");
        let id = HeaderValue::from_str(last_event_id)
            .map_err(|_| TransportError::Protocol("the server sent an unusable event id"))?;
        headers.insert(LAST_EVENT_ID, id);
        let request = self
            .clients
            .pooled()
            .get(self.endpoint.url.expose().clone())
            .headers(headers);
        let scrubber = &self.endpoint.scrubber;
        let response = checked(sent(request.send().await, scrubber)?)?;
        match content_type(&response, scrubber) {
            Some(kind) if kind.eq_ignore_ascii_case(EVENT_STREAM_TYPE) => {
                Ok(EventStream::new(response, Arc::clone(scrubber), None))
            }
            other => Err(TransportError::ContentType(
                other.unwrap_or_else(|| "none".to_owned()),
            )),
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
        if let Ok(response) = request.send().await {
            let _ = read_capped(response, &self.endpoint.scrubber).await;
        }
    }
}

/// `response` if it is a 2xx; every other answer is an error.
fn checked(response: Response) -> Result<Response, TransportError> {
    let status = response.status();
    if status.is_redirection() {
        return Err(TransportError::Redirect(status.as_u16()));
    }
    if !status.is_success() {
        return Err(TransportError::Status(status.as_u16()));
    }
    Ok(response)
}

/// The challenge of an answer that asks for (other) authorization: a `401`, or a `403`
/// whose challenge says `insufficient_scope`.
fn challenge_of(response: &Response) -> Option<Challenge> {
    let status = response.status();
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let values = response.headers().get_all(header::WWW_AUTHENTICATE);
    let mut challenge = Challenge::parse(values.iter().map(HeaderValue::as_bytes));
    challenge.dpop_nonce = dpop_nonce(response.headers().get(DPOP_NONCE));
    let step_up = challenge.error.as_deref() == Some("insufficient_scope");
    (status == StatusCode::UNAUTHORIZED || step_up).then_some(challenge)
}

/// An authorization error with this server's secrets scrubbed from its text (a party may
/// have quoted one back).
fn scrubbed_auth_error(error: AuthError, scrubber: &Scrubber) -> AuthError {
    match error {
        AuthError::Required(e) => AuthError::Required(scrubber.scrub_owned(e)),
        AuthError::Unreachable(e) => AuthError::Unreachable(scrubber.scrub_owned(e)),
        AuthError::Refused(e) => AuthError::Refused(scrubber.scrub_owned(e)),
    }
}

/// A sent request's answer, or why it did not come, as text without the URL.
fn sent(
    sent: Result<Response, reqwest::Error>,
    scrubber: &Scrubber,
) -> Result<Response, TransportError> {
    // A cause may quote the server (a certificate's names) or name the host.
    sent.map_err(|e| TransportError::Send(scrubber.scrub_owned(describe(e))))
}

/// The media type of the answer, without parameters, scrubbed: it is shown when it is not
/// one the client reads, and a server may echo anything there. Compared ignoring case.
fn content_type(response: &Response, scrubber: &Scrubber) -> Option<String> {
    let value = response
        .headers()
        .get(header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    let essence = value.split(';').next().unwrap_or_default().trim();
    Some(scrubber.scrub(essence).into_owned())
}

/// A JSON body with the server's secrets scrubbed. One that is not UTF-8 is not JSON either:
/// it goes on unchanged to the parser, which refuses it without quoting it.
fn scrubbed_body(body: Vec<u8>, scrubber: &Scrubber) -> Vec<u8> {
    match String::from_utf8(body) {
        Ok(text) => scrubber.scrub_owned(text).into_bytes(),
        Err(not_text) => not_text.into_bytes(),
    }
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

/// Reads a whole body, failing as soon as it passes the cap: `Content-Length` is not trusted.
async fn read_capped(
    mut response: Response,
    scrubber: &Scrubber,
) -> Result<Vec<u8>, TransportError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| body_error(e, scrubber))?
    {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(TransportError::TooLarge {
                limit: MAX_RESPONSE_BYTES,
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn body_error(e: reqwest::Error, scrubber: &Scrubber) -> TransportError {
    TransportError::Body(scrubber.scrub_owned(describe(e)))
}

/// An SSE answer, read event by event, each event capped.
pub(crate) struct EventStream {
    response: Response,
    scrubber: Arc<Scrubber>,
    parser: SseParser,
    ready: std::collections::VecDeque<Event>,
    scratch: Vec<Event>,
    /// Until the first event: when the POST went out, for its server's [`Route`].
    timing: Option<Timing>,
}

impl EventStream {
    fn new(response: Response, scrubber: Arc<Scrubber>, timing: Option<Timing>) -> Self {
        Self {
            response,
            scrubber,
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
                return Ok(Some(self.scrubber.scrub_owned(event.data)));
            }
            let chunk = self.response.chunk().await;
            let Some(chunk) = chunk.map_err(|e| body_error(e, &self.scrubber))? else {
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
/// URL or a header value, and the server's text in one was scrubbed as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TransportError {
    /// The request could not be sent or its answer not received (connect, TLS, reset).
    Send(String),
    /// The body broke off while it was read.
    Body(String),
    /// A 3xx: refused, so no header of ours goes anywhere else.
    Redirect(u16),
    /// Any other non-2xx status.
    Status(u16),
    /// A body or stream larger than the policy allows.
    TooLarge { limit: usize },
    /// A content type that is neither JSON nor SSE.
    ContentType(String),
    /// An SSE stream that cannot be parsed.
    Sse(SseError),
    /// An answer that breaks the transport's rules.
    Protocol(&'static str),
    /// The server asks for authorization and none could be had.
    Auth(AuthError),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Send(e) => write!(f, "could not reach the server: {e}"),
            Self::Body(e) => write!(f, "the answer broke off: {e}"),
            Self::Redirect(status) => write!(
                f,
                "the server answered HTTP {status} (a redirect); redirects are refused so \
                 configured headers reach only the configured server: configure the final URL"
            ),
            Self::Status(status) => {
                let reason = StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                write!(f, "the server answered HTTP {status} {reason}")?;
                Ok(())
            }
            Self::TooLarge { limit } => write!(f, "the answer is larger than {limit} bytes"),
            Self::ContentType(kind) => write!(
                f,
                "the answer's content type is {}, not application/json or text/event-stream",
                kind.escape_default()
            ),
            Self::Sse(e) => e.fmt(f),
            Self::Protocol(e) => f.write_str(e),
            Self::Auth(e) => e.fmt(f),
        }
    }
}

/// No source: each wrapping variant prints its inner error already (a report walking the chain
/// would print it twice), and `Send` and `Body` keep reqwest's error only as text, stripped of
/// the URL ([`describe`]), since the error itself would carry the URL and it may hold a
/// credential.
impl std::error::Error for TransportError {}

/// A reqwest error as text, without its URL: the error and each of its causes.
pub(crate) fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
