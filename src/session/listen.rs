//! Hearing that a server's tools changed, in either era, for as long as the server offers a
//! way: each notice is handed to the server's [`Changes`](super::Changes), which coalesces them.
//!
//! - 2025-11-25, when `initialize` declared `tools.listChanged`: the session's standalone `GET`
//!   stream, resumed with `Last-Event-ID` when it ends (a `405` means the server offers none).
//!   A notice on any other stream of the session (a call's) counts too (`exchange`).
//! - 2026-07-28, when `server/discover` declared `tools.listChanged`: a `subscriptions/listen`
//!   request held open, whose stream must begin with `notifications/subscriptions/
//!   acknowledged` naming the request's id and at most the notices asked for; anything else
//!   ends the subscription with a logged reason. A graceful end (the request's result) is an
//!   end; an abrupt one is followed by a new subscription, after the connector's backoff.
//!
//! Reconnections wait [`retry_delay`] after each failure in a row (1 s doubling to a minute),
//! and a stream that was new, not resumed, counts as a change: what the server said while no
//! stream was open was not heard. Why a stream could not be opened and how a subscription
//! ended are told to the link's [`Tell`](super::Tell), typed.

use reqwest::header::HeaderValue;
use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::Trouble;
use super::changes::TOOLS_CHANGED;
use super::exchange::Link;
use super::legacy::Legacy;
use super::modern::{MCP_METHOD, Modern, outgoing};
use crate::jsonrpc::{Incoming, Meta, Params, Request, RevisionMeta, to_bytes};
use crate::policy::{
    RETRY_MAX_DELAY, SSE_DEFAULT_RETRY, SSE_MAX_RETRY, SSE_MIN_RETRY, retry_delay,
};
use crate::transport::{EventStream, Outgoing, Reply, SessionHeaders, TransportError};

/// The `_meta` key of a subscription's id (2026-07-28).
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Listens to the standalone stream of a session-based server, until it says it has none.
pub(super) async fn legacy(link: &Link, legacy: &Legacy) {
    if !legacy.tells_of_changes() {
        return;
    }
    let mut failures = 0u32;
    // Where to resume from, in which session.
    let mut resume: Option<(String, u64)> = None;
    // The first stream opens right after the first listing: nothing was missed yet.
    let mut first = true;
    loop {
        let (session, generation) = legacy.session();
        let from = resume
            .as_ref()
            .filter(|(_, of)| *of == generation)
            .map(|(id, _)| id.as_str());
        let resumed = from.is_some();
        match link.transport.listen(from, &session).await {
            // The server offers no standalone stream: nothing to listen to, ever.
            Err(TransportError::Status { status: 405, .. }) => return,
            Err(e) => {
                failures = failures.saturating_add(1);
                (link.tell)(Trouble::Unheard(e));
                tokio::time::sleep(retry_delay(failures)).await;
            }
            Ok(mut stream) => {
                if !resumed && !first {
                    link.changes.notice();
                }
                first = false;
                let heard = read_notices(link, &mut stream, &session).await;
                if let Some(id) = stream.last_event_id() {
                    resume = Some((id.to_owned(), generation));
                }
                failures = if heard { 0 } else { failures.saturating_add(1) };
                let wait = stream
                    .retry()
                    .unwrap_or(SSE_DEFAULT_RETRY)
                    .clamp(SSE_MIN_RETRY, SSE_MAX_RETRY);
                tokio::time::sleep(wait.max(retry_delay(failures))).await;
            }
        }
    }
}

/// Reads the standalone stream until it ends, answering the server's requests and taking its
/// notices; whether it carried any event.
async fn read_notices(link: &Link, stream: &mut EventStream, session: &SessionHeaders) -> bool {
    let mut heard = false;
    while let Ok(Some(data)) = stream.next().await {
        heard = true;
        match Incoming::read(&data) {
            Some(Incoming::Notification { method, .. }) if method == TOOLS_CHANGED => {
                link.changes.notice();
            }
            Some(Incoming::Request { id, method }) => {
                let outgoing = Outgoing {
                    session: session.clone(),
                    ..Outgoing::default()
                };
                link.answer_server_request(id, &method, &outgoing).await;
            }
            _ => {}
        }
    }
    heard
}

/// Subscribes to a 2026-07-28 server's notices, again after each abrupt end, until the server
/// ends the subscription gracefully or breaks its rules.
pub(super) async fn modern(link: &Link, modern: &Modern) {
    if !modern.tells_of_changes() {
        return;
    }
    let mut failures = 0u32;
    let mut first = true;
    loop {
        let mut acknowledged_at = None;
        let end = subscribe(link, modern, &mut || {
            link.changes.set_subscribed(true);
            if !first {
                // A new subscription: what was said between the two was not heard.
                link.changes.notice();
            }
            first = false;
            acknowledged_at = Some(Instant::now());
        })
        .await;
        link.changes.set_subscribed(false);
        // Only a subscription that held as long as the longest wait resets the backoff: one
        // that a server acknowledges and drops at once is asked for less and less often.
        if acknowledged_at.is_some_and(|at| at.elapsed() >= RETRY_MAX_DELAY) {
            failures = 0;
        }
        let again = matches!(end, End::Abrupt(_));
        (link.tell)(Trouble::Subscription(end));
        if !again {
            return;
        }
        failures = failures.saturating_add(1);
        tokio::time::sleep(retry_delay(failures)).await;
    }
}

/// How a subscription ended.
pub(crate) enum End {
    /// The server answered the request: the subscription is over.
    Graceful,
    /// The server broke the subscription's rules, or refused it: no new one is asked for.
    Refused(Declined),
    /// The stream broke off without an answer: a new subscription may follow.
    Abrupt(Broke),
}

/// Why a server declined a subscription: it refused it, or broke its rules.
pub(crate) enum Declined {
    /// A 4xx to the request.
    Status(u16),
    /// A JSON-RPC error in a body instead of a stream.
    Error(i64),
    /// A body that is neither the request's result nor an error.
    NoStream,
    /// An answer with no body.
    NoBody,
    /// The stream ended with a JSON-RPC error.
    EndedWith(i64),
    /// The stream's answer has neither result nor error.
    NeitherResultNorError,
    /// Its acknowledgement broke a rule (see [`acknowledgement`]).
    Acknowledgement(&'static str),
}

/// How a subscription's stream broke off.
pub(crate) enum Broke {
    /// The request could not be sent, or its stream not read.
    Transport(TransportError),
    /// The stream ended without an answer.
    Ended,
}

#[derive(Serialize)]
struct ListenParams {
    notifications: Filter,
}

#[derive(Serialize)]
struct Filter {
    #[serde(rename = "toolsListChanged")]
    tools_list_changed: bool,
}

const LISTEN: &str = "subscriptions/listen";

/// One subscription, from its request to its end; `acknowledged` is called when the server
/// acknowledges it.
async fn subscribe(link: &Link, modern: &Modern, acknowledged: &mut impl FnMut()) -> End {
    let id = link.next_id();
    match open(link, modern, id).await {
        Ok(stream) => follow(link, stream, id, acknowledged).await,
        Err(end) => end,
    }
}

/// Sends the subscription's request `id` and answers its stream, or how it ended at once.
async fn open(link: &Link, modern: &Modern, id: u64) -> Result<Box<EventStream>, End> {
    let version = modern.protocol_version();
    let params = Params {
        params: ListenParams {
            notifications: Filter {
                tools_list_changed: true,
            },
        },
        meta: Meta {
            revision: Some(RevisionMeta::new(version)),
            progress_token: None,
        },
    };
    let extra = [(MCP_METHOD, HeaderValue::from_static(LISTEN))];
    let outgoing = outgoing(version, &extra);
    let body = to_bytes(&Request::new(id, LISTEN, &params));
    let posted = match link.transport.post(body, &outgoing).await {
        Ok(posted) => posted,
        Err(TransportError::Status {
            status: status @ 400..=499,
            ..
        }) => {
            return Err(End::Refused(Declined::Status(status)));
        }
        Err(e) => return Err(End::Abrupt(Broke::Transport(e))),
    };
    match posted.reply {
        Reply::Stream(stream) => Ok(stream),
        // An answer in a body is the request's end, or its refusal.
        Reply::Json(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            Err(match Incoming::read(&text) {
                Some(message @ Incoming::Result { .. }) if message.answers(id) => End::Graceful,
                Some(Incoming::Error { error, .. }) => End::Refused(Declined::Error(error.code())),
                _ => End::Refused(Declined::NoStream),
            })
        }
        Reply::Empty => Err(End::Refused(Declined::NoBody)),
    }
}

/// Reads subscription `id`'s stream to its end: its acknowledgement first, then each notice
/// that the tools changed, told to the link.
async fn follow(
    link: &Link,
    mut stream: Box<EventStream>,
    id: u64,
    acknowledged: &mut impl FnMut(),
) -> End {
    let mut acked = false;
    loop {
        let data = match stream.next().await {
            Ok(Some(data)) => data,
            Ok(None) => return End::Abrupt(Broke::Ended),
            Err(e) => return End::Abrupt(Broke::Transport(e)),
        };
        let Some(message) = Incoming::read(&data) else {
            continue;
        };
        if message.answers(id) {
            return match message {
                Incoming::Result { .. } => End::Graceful,
                Incoming::Error { error, .. } => End::Refused(Declined::EndedWith(error.code())),
                _ => End::Refused(Declined::NeitherResultNorError),
            };
        }
        let Incoming::Notification { method, params } = message else {
            continue;
        };
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        if !acked {
            if let Err(why) = acknowledgement(id, &method, &params) {
                return End::Refused(Declined::Acknowledgement(why));
            }
            acked = true;
            acknowledged();
            continue;
        }
        let ours = params
            .pointer(&format!("/_meta/{}", SUBSCRIPTION_ID.replace('/', "~1")))
            .is_none_or(|sid| sid.as_u64() == Some(id));
        if method == TOOLS_CHANGED && ours {
            link.changes.notice();
        }
    }
}

/// Checks the first message of a subscription's stream: `notifications/subscriptions/
/// acknowledged`, naming the request's id, acknowledging the tools' notices and nothing that
/// was not asked for.
fn acknowledgement(id: u64, method: &str, params: &Value) -> Result<(), &'static str> {
    if method != "notifications/subscriptions/acknowledged" {
        return Err("its first message was not the acknowledgement");
    }
    let named = params
        .pointer(&format!("/_meta/{}", SUBSCRIPTION_ID.replace('/', "~1")))
        .and_then(Value::as_u64);
    if named != Some(id) {
        return Err("the acknowledgement names another subscription");
    }
    let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
        return Err("the acknowledgement says nothing of what it accepted");
    };
    if filter.keys().any(|key| key != "toolsListChanged") {
        return Err("the acknowledgement accepts notices that were not asked for");
    }
    match filter.get("toolsListChanged") {
        Some(Value::Bool(true)) => Ok(()),
        None | Some(Value::Bool(false)) => Err("the server does not tell of its tools' changes"),
        Some(_) => Err("the acknowledgement's toolsListChanged is not a boolean"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_acknowledgement_must_name_the_request_and_accept_no_more_than_was_asked() {
        let ack = |id: Value, notifications: Value| json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": notifications});
        let ok = ack(json!(7), json!({"toolsListChanged": true}));
        let acknowledged = "notifications/subscriptions/acknowledged";
        assert_eq!(acknowledgement(7, acknowledged, &ok), Ok(()));
        for (method, params, why) in [
            (
                TOOLS_CHANGED,
                ok,
                "its first message was not the acknowledgement",
            ),
            (
                acknowledged,
                ack(json!(8), json!({"toolsListChanged": true})),
                "names another",
            ),
            (
                acknowledged,
                ack(json!("7"), json!({"toolsListChanged": true})),
                "names another",
            ),
            (
                acknowledged,
                json!({"notifications": {"toolsListChanged": true}}),
                "names another",
            ),
            (
                acknowledged,
                ack(
                    json!(7),
                    json!({"toolsListChanged": true, "promptsListChanged": true}),
                ),
                "not asked for",
            ),
            (acknowledged, ack(json!(7), json!({})), "does not tell"),
            (
                acknowledged,
                ack(json!(7), json!({"toolsListChanged": "yes"})),
                "not a boolean",
            ),
            (
                acknowledged,
                json!({"_meta": {SUBSCRIPTION_ID: 7}}),
                "says nothing",
            ),
        ] {
            let refused = acknowledgement(7, method, &params).expect_err("refused");
            assert!(refused.contains(why), "{params}: {refused}");
        }
    }
}
