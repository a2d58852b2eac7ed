//! The session revisions (2025-11-25, and 2025-06-18 and 2025-03-26 for older clients):
//! `initialize` seals a new session into its `Mcp-Session-Id`; each later request opens it
//! (an id that does not open is `404`, so the client starts again), answers `ping`,
//! `tools/list` and `tools/call`, and takes `notifications/cancelled`; `DELETE` ends the
//! session's calls running on this instance. The standalone `GET` stream is not offered
//! (`405`, as the revision allows): the gateway sends nothing unasked.

use std::sync::Arc;
use std::time::SystemTime;

use hyper::StatusCode;
use hyper::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::answer::{self, Reply};
use super::call::{self, ToolCall};
use super::post::{Accepts, Post, SESSION_HEADER, VERSION_HEADER, header};
use super::rpc::{self, INVALID_REQUEST, METHOD_NOT_FOUND, Message};
use super::session::{self, SESSION_REVISIONS, Session};
use super::{Revision, Server, server_info};
use crate::gateway::Identity;

/// Opens a session at the revision the client asked for, or the latest one when it asked for
/// one the gateway does not speak.
pub(crate) fn initialize(server: &Arc<Server>, post: Post) -> Reply {
    let Message::Request { id, params, .. } = post.message else {
        let error = rpc::error(
            &Value::Null,
            INVALID_REQUEST,
            "initialize is a request",
            None,
        );
        return answer::json(StatusCode::BAD_REQUEST, &error);
    };
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let revision = SESSION_REVISIONS
        .into_iter()
        .find(|r| Some(*r) == asked)
        .unwrap_or(SESSION_REVISIONS[0]);
    let result = json!({
        "protocolVersion": revision,
        "capabilities": {"tools": {}},
        "serverInfo": server_info(),
    });
    let session = session::seal(
        &server.key,
        revision,
        &post.identity.label(),
        SystemTime::now(),
    );
    let mut reply = single(post.accepts, &rpc::result(&id, result));
    let value = HeaderValue::from_str(&session).expect("a session id is visible ASCII");
    reply.headers_mut().insert(SESSION_HEADER, value);
    answer::holding(reply, post.admitted)
}

/// A request of an open session.
pub(crate) async fn answer(server: &Arc<Server>, post: Post) -> Reply {
    let Some(session) = open(server, &post.identity, &post.headers) else {
        return no_session();
    };
    if let Some(version) = header(&post.headers, VERSION_HEADER).filter(|v| *v != session.revision)
    {
        let message = format!(
            "MCP-Protocol-Version {version:?} is not this session's revision ({})",
            session.revision
        );
        let error = rpc::error(&Value::Null, INVALID_REQUEST, &message, None);
        return answer::json(StatusCode::BAD_REQUEST, &error);
    }
    let (id, method, params) = match post.message {
        Message::Notification { method, params } => {
            if method == "notifications/cancelled"
                && let Some(request) = params.get("requestId")
            {
                server.in_flight.cancel(session.number, request);
            }
            return answer::empty(StatusCode::ACCEPTED);
        }
        Message::Response => return answer::empty(StatusCode::ACCEPTED),
        Message::Request { id, method, params } => (id, method, params),
    };
    let revision = Revision::Session;
    let message = match method.as_str() {
        "tools/call" => {
            let call = ToolCall {
                id,
                params,
                accepts: post.accepts,
                revision,
                session: Some(session),
            };
            return call::call(server, post.identity, post.admitted, call).await;
        }
        "ping" => rpc::result(&id, json!({})),
        "tools/list" => rpc::result(&id, json!({"tools": server.tools})),
        _ => rpc::error(&id, METHOD_NOT_FOUND, "method not found", None),
    };
    answer::holding(single(post.accepts, &message), post.admitted)
}

/// `DELETE` of a session: its calls running here end, the session is refused from now on
/// (here, and with `--store` on every instance: `revoked`), and the client is told `204`.
pub(crate) async fn delete(
    server: &Arc<Server>,
    identity: &Identity,
    headers: &HeaderMap,
) -> Reply {
    if !headers.contains_key(SESSION_HEADER) {
        return answer::text(
            StatusCode::BAD_REQUEST,
            "DELETE ends a session: send its Mcp-Session-Id",
        );
    }
    match open(server, identity, headers) {
        Some(session) => {
            server.in_flight.cancel_session(session.number);
            server.revoked.end(&session).await;
            answer::empty(StatusCode::NO_CONTENT)
        }
        None => no_session(),
    }
}

/// The session the request's `Mcp-Session-Id` names, if it opens for `identity` and was not
/// ended.
fn open(server: &Server, identity: &Identity, headers: &HeaderMap) -> Option<Session> {
    let id = header(headers, SESSION_HEADER).unwrap_or_default();
    session::open(&server.key, id, &identity.label(), SystemTime::now())
        .filter(|session| !server.revoked.ended(session))
}

/// The `404` of a session id that does not open: the client starts a new session.
fn no_session() -> Reply {
    let error = rpc::error(
        &Value::Null,
        INVALID_REQUEST,
        "no such session: start a new one with initialize",
        None,
    );
    answer::json(StatusCode::NOT_FOUND, &error)
}

/// One message as the client accepts it: a JSON body, or a stream of that one event.
fn single(accepts: Accepts, message: &Value) -> Reply {
    if accepts.json {
        answer::json(StatusCode::OK, message)
    } else {
        answer::event(message)
    }
}
