//! One request and its answer, the same in both eras: POST it, then read the response from a
//! JSON body or an SSE stream. What differs by era is what a stream may do on the way, so the
//! caller says which [`Revision`] it speaks.

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::HeaderValue;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::runtime::Handle;

use super::changes::{Changes, TOOLS_CHANGED};
use super::era::Revision;
use super::{Broken, Noticed, Outbound, Report, SessionError, Tell, Trouble};
use crate::jsonrpc::{Incoming, Request, Response, to_bytes};
use crate::policy::{MAX_IDLE_RESUMPTIONS, SSE_DEFAULT_RETRY, SSE_MAX_RETRY, SSE_MIN_RETRY};
use crate::text::Untrusted;
use crate::transport::{EventStream, Outgoing, Reply, Transport, TransportError};
use crate::wire::Loose;

/// The way to one server, shared by both eras: the transport, the runtime background sends
/// run on, where troubles are told, and the request ids.
pub(super) struct Link {
    pub(super) transport: Transport,
    pub(super) runtime: Handle,
    /// Hears what goes wrong that no caller waits for.
    pub(super) tell: Tell,
    /// What the server said of its tools changing, on any stream.
    pub(super) changes: Changes,
    next_id: AtomicU64,
}

impl Link {
    pub(super) fn new(transport: Transport, runtime: Handle, tell: Tell) -> Self {
        Self {
            transport,
            runtime,
            tell,
            changes: Changes::default(),
            next_id: AtomicU64::new(0),
        }
    }

    pub(super) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// POSTs request `id` and reads its answer, from a JSON body or an SSE stream; with the
    /// session id the answer carried.
    pub(super) async fn exchange<T: DeserializeOwned, P: Serialize>(
        &self,
        id: u64,
        sent: &Outbound<'_, P>,
        outgoing: &Outgoing<'_>,
        revision: Revision,
    ) -> Result<(Untrusted<T>, Option<HeaderValue>), SessionError> {
        let (method, progress, followed) = (sent.method, sent.progress, sent.followed);
        let started = tokio::time::Instant::now();
        let answer = async {
            let request = Request::new(id, method, &sent.params);
            let posted = self.transport.post(to_bytes(&request), outgoing).await?;
            let refused = !(200..300).contains(&posted.status);
            let result = match posted.reply {
                Reply::Json(bytes) if refused => Err(error_answer(posted.status, &bytes)),
                Reply::Json(bytes) => answer_in_body(id, &bytes),
                Reply::Stream(stream) => {
                    let mut reporter = progress.map(|report| Reporter::new(id, report));
                    let reading = (revision, reporter.as_mut(), followed);
                    self.read_stream(id, *stream, outgoing, reading).await
                }
                Reply::Empty => Err(SessionError::Protocol(Broken::NoBody)),
            }?;
            Ok((result, posted.session_id))
        }
        .await;
        // One line per request at debug, in the server's span: its method, how long it took
        // and how it ended, never a value or a text the server sent.
        let outcome = match &answer {
            Ok(_) => "answered",
            Err(SessionError::Rpc { .. }) => "JSON-RPC error",
            Err(SessionError::InputRequired(_)) => "input required",
            Err(SessionError::Transport(_)) => "transport error",
            Err(SessionError::Version | SessionError::Protocol(_)) => "protocol error",
        };
        let ms = started.elapsed().as_millis();
        tracing::debug!(method, id, ms, outcome, "request");
        answer
    }

    /// Reads a response stream until it carries the answer to `id`. At 2025-11-25 a stream
    /// the server closes early is resumed with GET and `Last-Event-ID`.
    async fn read_stream<T: DeserializeOwned>(
        &self,
        id: u64,
        mut stream: EventStream,
        outgoing: &Outgoing<'_>,
        (revision, mut reporter, followed): (Revision, Option<&mut Reporter<'_>>, bool),
    ) -> Result<Untrusted<T>, SessionError> {
        let mut idle_resumptions = 0;
        loop {
            let mut progressed = false;
            while let Some(data) = stream.next().await? {
                progressed = true;
                let Some(message) = Incoming::read(&data) else {
                    tracing::debug!("ignored an SSE event that is not a JSON-RPC message");
                    continue;
                };
                if let Incoming::Notification { method, params } = &message {
                    if method == TOOLS_CHANGED {
                        self.changes.notice();
                    }
                    if let Some(reporter) = reporter.as_deref_mut() {
                        reporter.notice(method, *params);
                    }
                    continue;
                }
                if let Incoming::Request { id, method } = &message {
                    if revision == Revision::Legacy {
                        // Boxed, as the resumption below: a rare path, whose future (a whole
                        // POST) every request's future would otherwise carry inline, to be
                        // moved at each await above it.
                        Box::pin(self.answer_server_request(id, method, outgoing)).await;
                    }
                    // At 2026-07-28 a server may not ask on a stream: nothing to answer.
                    continue;
                }
                if let Some(answer) = answer_to(id, message) {
                    if followed {
                        // Boxed: a start-up path, whose wait every request's future would
                        // otherwise carry inline.
                        let finished = self.transport.finish_before_next(stream, &self.runtime);
                        Box::pin(finished).await;
                    } else {
                        self.transport.finish(stream, &self.runtime);
                    }
                    return answer;
                }
            }
            if revision == Revision::Modern {
                // The revision has no resumption: the request is lost. It is not sent again
                // here, since the server may have acted on it.
                return Err(SessionError::Protocol(Broken::StreamEnded));
            }
            idle_resumptions = if progressed { 0 } else { idle_resumptions + 1 };
            let Some(last_event_id) = stream.last_event_id().map(str::to_owned) else {
                return Err(SessionError::Protocol(Broken::NoEventId));
            };
            if idle_resumptions >= MAX_IDLE_RESUMPTIONS {
                return Err(SessionError::Protocol(Broken::IdleResumptions));
            }
            let wait = stream
                .retry()
                .unwrap_or(SSE_DEFAULT_RETRY)
                .clamp(SSE_MIN_RETRY, SSE_MAX_RETRY);
            tokio::time::sleep(wait).await;
            let resumed = self.transport.resume(&last_event_id, &outgoing.session);
            stream = Box::pin(resumed).await?;
        }
    }

    /// Answers a server's request in line, so a flood of them is paced by the client.
    pub(super) async fn answer_server_request(
        &self,
        id: &RawValue,
        method: &str,
        outgoing: &Outgoing<'_>,
    ) {
        let answer = to_bytes(&Response::to_server_request(id, method));
        if let Err(e) = self.transport.send(answer, &outgoing.session).await {
            (self.tell)(Trouble::Unanswered(e));
        }
    }
}

/// Hands a request's progress notices to its [`Report`]: only those under its token, only
/// while they grow (the specification's rule, which a server may break).
struct Reporter<'a> {
    token: u64,
    report: Report<'a>,
    last: Option<f64>,
}

impl<'a> Reporter<'a> {
    fn new(token: u64, report: Report<'a>) -> Self {
        Self {
            token,
            report,
            last: None,
        }
    }

    fn notice(&mut self, method: &str, params: Option<&RawValue>) {
        #[derive(Deserialize)]
        struct Notice {
            #[serde(rename = "progressToken")]
            token: u64,
            progress: f64,
            #[serde(default)]
            total: Loose<f64>,
            #[serde(default)]
            message: Loose<String>,
        }
        if method != "notifications/progress" {
            return;
        }
        let Some(notice) = params.and_then(|p| serde_json::from_str::<Notice>(p.get()).ok()) else {
            return;
        };
        if notice.token != self.token || self.last.is_some_and(|last| notice.progress <= last) {
            return;
        }
        self.last = Some(notice.progress);
        (self.report)(Noticed {
            progress: notice.progress,
            total: notice.total.0,
            message: notice.message.0.map(Untrusted::new),
        });
    }
}

/// The answer to `id` in a JSON body: one message, or a batch (2025-03-26 allowed one).
fn answer_in_body<T: DeserializeOwned>(
    id: u64,
    bytes: &[u8],
) -> Result<Untrusted<T>, SessionError> {
    let not_json = || SessionError::Protocol(Broken::NotJson);
    let text = std::str::from_utf8(bytes).map_err(|_| not_json())?;
    let message: &RawValue = serde_json::from_str(text).map_err(|_| not_json())?;
    let messages = if message.get().starts_with('[') {
        serde_json::from_str::<Vec<&RawValue>>(message.get()).map_err(|_| not_json())?
    } else {
        vec![message]
    };
    messages
        .into_iter()
        .filter_map(|m| Incoming::read(m.get()))
        .find_map(|m| answer_to(id, m))
        .unwrap_or_else(|| Err(SessionError::Protocol(Broken::NotTheAnswer)))
}

/// A 4xx with a JSON body (2026-07-28): the JSON-RPC error in it, or the status alone when
/// the body holds none, so a server of an older revision is told apart by what it sent.
fn error_answer(status: u16, bytes: &[u8]) -> SessionError {
    let message = std::str::from_utf8(bytes).ok().and_then(Incoming::read);
    match message {
        // A server that could not read the request cannot name its id: any error here
        // refuses this POST's one request.
        Some(Incoming::Error { error, .. }) => SessionError::rpc(error),
        _ => SessionError::Transport(TransportError::status(status)),
    }
}

/// The outcome carried by `message` if it is the response to request `id`, its result read
/// as `T`.
fn answer_to<T: DeserializeOwned>(
    id: u64,
    message: Incoming<'_>,
) -> Option<Result<Untrusted<T>, SessionError>> {
    if !message.answers(id) {
        return None;
    }
    Some(match message {
        Incoming::Result { result, .. } => serde_json::from_str(result.get())
            .map(Untrusted::new)
            .map_err(|_| SessionError::Protocol(Broken::NotJson)),
        Incoming::Error { error, .. } => Err(SessionError::rpc(error)),
        _ => Err(SessionError::Protocol(Broken::NeitherResultNorError)),
    })
}
