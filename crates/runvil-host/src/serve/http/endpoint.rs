//! Every request, from its route to the revision that answers it: `/healthz`, `/readyz` and
//! the protected-resource metadata without authentication; the MCP endpoint `/mcp` behind the
//! origin check, the gatekeeper and the identity's limits, its POST read within the body's
//! bounds and handed to the 2025-11-25 session (`legacy`) or to 2026-07-28 (`modern`).
//!
//! Which revision a POST speaks is read from the request alone, so any instance answers it:
//! `initialize` opens a session; the 2026-07-28 request metadata (`_meta`'s protocol version,
//! or an `MCP-Protocol-Version` that no session revision has) makes it a request of that
//! revision; an `Mcp-Session-Id` makes it a request of that session; anything else is refused.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{
    ACCEPT, ALLOW, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderMap, HeaderValue,
    ORIGIN, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, StatusCode};
use serde_json::Value;

use super::answer::{self, Reply};
use super::limits::{Admitted, Refused};
use super::post::{Accepts, Post, SESSION_HEADER, header};
use super::rpc::{self, INVALID_REQUEST};
use super::{MCP_PATH, Server, health, legacy, modern};
use crate::gateway::{AuditLine, Identity};

/// The most bytes of a request's body: far more than any tool's arguments need, and a bound
/// on what one request can make the gateway hold.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long a client may take to send a request's headers, and then again its body: a slow
/// client cannot hold a connection's worker longer.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the gateway's RFC 9728 metadata is without the resource's path (with it, where the
/// gatekeeper says).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Answers one request.
pub(crate) async fn handle(server: &Arc<Server>, request: Request<Incoming>) -> Reply {
    let path = request.uri().path();
    match (request.method(), path) {
        (&Method::GET, "/healthz") => health::alive(),
        (&Method::GET, "/readyz") => health::ready(server.served.pack()),
        (&Method::GET, _)
            if path == METADATA_PATH
                || Some(path) == server.gateway.gatekeeper.resource_metadata_path() =>
        {
            match server.gateway.gatekeeper.resource_metadata() {
                Some(metadata) => answer::json(StatusCode::OK, &metadata),
                None => answer::text(
                    StatusCode::NOT_FOUND,
                    "this gateway has no authorization server",
                ),
            }
        }
        (&Method::POST | &Method::DELETE, MCP_PATH) => mcp(server, request).await,
        (_, MCP_PATH) => not_allowed("POST, DELETE"),
        (_, "/healthz" | "/readyz") => not_allowed("GET"),
        _ => answer::text(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp"),
    }
}

fn not_allowed(allow: &'static str) -> Reply {
    let mut reply = answer::empty(StatusCode::METHOD_NOT_ALLOWED);
    reply
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    reply
}

/// A POST or DELETE of the MCP endpoint, from its origin to its answer.
async fn mcp(server: &Arc<Server>, request: Request<Incoming>) -> Reply {
    if server.gateway.gatekeeper.is_open() && !from_this_machine(request.headers()) {
        return answer::text(
            StatusCode::FORBIDDEN,
            "a gateway without authentication answers only requests made to a loopback name",
        );
    }
    let (identity, admitted) = match let_in(server, request.headers()).await {
        Ok(let_in) => let_in,
        Err(reply) => return reply,
    };
    if request.method() == Method::DELETE {
        return answer::holding(
            legacy::delete(server, &identity, request.headers()).await,
            admitted,
        );
    }
    let headers = request.headers().clone();
    if !is_json(&headers) {
        return answer::text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body of a POST to the MCP endpoint is JSON (Content-Type: application/json)",
        );
    }
    let accepts = accepts(&headers);
    if !accepts.json && !accepts.events {
        return answer::text(
            StatusCode::NOT_ACCEPTABLE,
            "the MCP endpoint answers application/json or text/event-stream; accept both",
        );
    }
    let body = match read_body(request.into_body(), &headers).await {
        Ok(body) => body,
        Err(reply) => return reply,
    };
    let message = match rpc::read(&body) {
        Ok(message) => message,
        Err(unreadable) => {
            let error = rpc::error(&Value::Null, unreadable.code, unreadable.message, None);
            return answer::json(StatusCode::BAD_REQUEST, &error);
        }
    };
    let post = Post {
        identity,
        admitted,
        message,
        accepts,
        headers,
    };
    if post.message.method() == Some("initialize") {
        legacy::initialize(server, post)
    } else if modern::speaks(&post) {
        modern::answer(server, post).await
    } else if post.headers.contains_key(SESSION_HEADER) {
        legacy::answer(server, post).await
    } else {
        let error = rpc::error(
            &Value::Null,
            INVALID_REQUEST,
            "no Mcp-Session-Id: start a session with initialize, or send the request metadata \
             of 2026-07-28",
            None,
        );
        answer::json(StatusCode::BAD_REQUEST, &error)
    }
}

/// Who sent a request, from its `Authorization`, and its place within the gateway's bounds;
/// else the answer that refuses it (an unauthenticated request has its audit line).
async fn let_in(server: &Server, headers: &HeaderMap) -> Result<(Identity, Admitted), Reply> {
    let authorization = headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
    let identity = match server.gateway.gatekeeper.admit(authorization).await {
        Ok(identity) => identity,
        Err(refusal) => {
            // The reason is the gatekeeper's, written never to hold the token.
            tracing::info!(target: "runvil", reason = %refusal.reason, "a request was not let in");
            let _ = server.record(AuditLine::unauthenticated());
            let status = StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::UNAUTHORIZED);
            let mut reply = answer::text(status, "authentication required");
            if let Ok(value) = HeaderValue::from_str(&refusal.www_authenticate) {
                reply.headers_mut().insert(WWW_AUTHENTICATE, value);
            }
            return Err(reply);
        }
    };
    match server.limits.admit(&identity.label()) {
        Ok(admitted) => Ok((identity, admitted)),
        Err(refused) => {
            let status = match refused {
                Refused::Identities => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::TOO_MANY_REQUESTS,
            };
            Err(answer::try_later(
                status,
                refused.retry_after(),
                refused.text(),
            ))
        }
    }
}

/// Whether a request names this machine: its `Host` (and `Origin`, when a browser sent one)
/// is a loopback name. A page elsewhere that rebinds its own name to 127.0.0.1 still sends
/// its own name, so it is refused.
fn from_this_machine(headers: &HeaderMap) -> bool {
    let loopback = |authority: &str| {
        let host = match authority.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or_default(),
            None => authority
                .rsplit_once(':')
                .map_or(authority, |(host, _)| host),
        };
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let host_ok = header(headers, HOST.as_str()).is_some_and(loopback);
    let origin_ok = match header(headers, ORIGIN.as_str()) {
        None => true,
        Some(origin) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| loopback(authority.trim_end_matches('/'))),
    };
    host_ok && origin_ok
}

fn is_json(headers: &HeaderMap) -> bool {
    header(headers, CONTENT_TYPE.as_str()).is_some_and(|value| {
        let media = value.split(';').next().unwrap_or_default().trim();
        media.eq_ignore_ascii_case("application/json")
    })
}

/// What `Accept` allows; no `Accept` allows anything.
fn accepts(headers: &HeaderMap) -> Accepts {
    let Some(accept) = header(headers, ACCEPT.as_str()) else {
        return Accepts {
            json: true,
            events: true,
        };
    };
    let mut accepts = Accepts {
        json: false,
        events: false,
    };
    for media in accept.split(',') {
        let media = media
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "*/*" => (accepts.json, accepts.events) = (true, true),
            "application/json" | "application/*" => accepts.json = true,
            "text/event-stream" | "text/*" => accepts.events = true,
            _ => {}
        }
    }
    accepts
}

/// The body, within [`MAX_BODY_BYTES`] and [`SEND_TIMEOUT`].
async fn read_body(body: Incoming, headers: &HeaderMap) -> Result<Bytes, Reply> {
    let too_large = || {
        answer::text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("a request's body is at most {MAX_BODY_BYTES} bytes"),
        )
    };
    let declared = header(headers, CONTENT_LENGTH.as_str()).and_then(|n| n.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(SEND_TIMEOUT, Limited::new(body, MAX_BODY_BYTES).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(_)) => Err(answer::text(
            StatusCode::BAD_REQUEST,
            "the body could not be read",
        )),
        Err(_) => Err(answer::text(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the body did not arrive within {} s",
                SEND_TIMEOUT.as_secs()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        headers
    }

    #[test]
    fn only_loopback_names_reach_a_gateway_without_authentication() {
        for host in [
            "127.0.0.1:8080",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "127.0.0.2",
        ] {
            assert!(from_this_machine(&headers(&[("host", host)])), "{host}");
        }
        for host in ["evil.example:8080", "10.0.0.1", "[2001:db8::1]:80"] {
            assert!(!from_this_machine(&headers(&[("host", host)])), "{host}");
        }
        assert!(!from_this_machine(&headers(&[])), "no Host");
        let rebound = headers(&[
            ("host", "127.0.0.1:80"),
            ("origin", "http://evil.example:80"),
        ]);
        assert!(!from_this_machine(&rebound));
        let local = headers(&[
            ("host", "127.0.0.1:80"),
            ("origin", "http://localhost:6274"),
        ]);
        assert!(from_this_machine(&local));
    }

    #[test]
    fn accept_is_read_as_clients_write_it() {
        let of = |value: &str| {
            let a = accepts(&headers(&[("accept", value)]));
            (a.json, a.events)
        };
        assert_eq!(of("application/json, text/event-stream"), (true, true));
        assert_eq!(of("text/event-stream;q=0.9"), (false, true));
        assert_eq!(of("Application/JSON"), (true, false));
        assert_eq!(of("*/*"), (true, true));
        assert_eq!(of("text/html"), (false, false));
    }
}
