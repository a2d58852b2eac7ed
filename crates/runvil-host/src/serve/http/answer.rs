//! The gateway's responses: a whole body (JSON, or a short text) or an event stream (a call's
//! progress, then its answer), each holding what must last exactly as long as the response.
//!
//! What a response holds (its identity's place among requests and streams in flight, the
//! guard that ends its call) is dropped with it: when the last byte is sent, or when the
//! client goes away and the server drops the response unsent. That drop is how closing a
//! response stream cancels its call.

use std::any::Any;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

/// A response's body.
pub(crate) struct Answer {
    kind: Kind,
    /// Kept until the body is done or dropped.
    _held: Vec<Box<dyn Any + Send>>,
}

enum Kind {
    Whole(Option<Bytes>),
    Events(mpsc::Receiver<Bytes>),
}

impl Answer {
    fn whole(bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: Kind::Whole(Some(bytes.into())),
            _held: Vec::new(),
        }
    }

    /// No body.
    pub(crate) fn empty() -> Self {
        Self {
            kind: Kind::Whole(None),
            _held: Vec::new(),
        }
    }

    /// An event stream: each message sent on the returned sender goes out as one
    /// `event: message`, and the stream ends when every sender is dropped.
    pub(crate) fn events() -> (Self, Events) {
        let (sender, receiver) = mpsc::channel(EVENT_QUEUE);
        let answer = Self {
            kind: Kind::Events(receiver),
            _held: Vec::new(),
        };
        (answer, Events(sender))
    }
}

/// Events waiting for a slow client on one stream: a call's progress notices (themselves
/// capped) and its answer.
const EVENT_QUEUE: usize = 32;

/// The sending side of an event stream.
#[derive(Clone)]
pub(crate) struct Events(mpsc::Sender<Bytes>);

impl Events {
    /// Sends one JSON-RPC message as an event; false when the client is gone.
    pub(crate) async fn send(&self, message: &Value) -> bool {
        let event = format!("event: message\ndata: {message}\n\n");
        self.0.send(Bytes::from(event)).await.is_ok()
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Events(receiver) => receiver
                .poll_recv(cx)
                .map(|event| event.map(|e| Ok(Frame::data(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            Kind::Events(_) => SizeHint::default(),
        }
    }
}

/// A response of the gateway.
pub(crate) type Reply = Response<Answer>;

/// Keeps `held` for as long as `reply`'s body lasts.
pub(crate) fn holding(mut reply: Reply, held: impl Any + Send) -> Reply {
    reply.body_mut()._held.push(Box::new(held));
    reply
}

/// `status` with a JSON body.
pub(crate) fn json(status: StatusCode, body: &Value) -> Reply {
    let mut reply = Response::new(Answer::whole(body.to_string()));
    *reply.status_mut() = status;
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply
}

/// `status` with a line of text.
pub(crate) fn text(status: StatusCode, text: &str) -> Reply {
    let mut reply = Response::new(Answer::whole(format!("{text}\n")));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    reply
}

/// `status` with no body.
pub(crate) fn empty(status: StatusCode) -> Reply {
    let mut reply = Response::new(Answer::empty());
    *reply.status_mut() = status;
    reply
}

/// `429 Too Many Requests` (or, for `503`, the server's own bound) saying when to try again.
pub(crate) fn try_later(status: StatusCode, retry_after: u64, why: &str) -> Reply {
    let mut reply = text(status, why);
    reply
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(retry_after));
    reply
}

/// A `200` event stream of one message, for a client that accepts no JSON.
pub(crate) fn event(message: &Value) -> Reply {
    stream(Answer::whole(format!(
        "event: message\ndata: {message}\n\n"
    )))
}

/// A `200` event stream, as proxies must pass it on at once.
pub(crate) fn stream(body: Answer) -> Reply {
    let mut reply = Response::new(body);
    let headers = reply.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    reply
}
