//! Revision 2026-07-28: no session. Each request carries its revision, its client's
//! capabilities and (on HTTP) headers that mirror its body (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`), which the server checks against the body before anything else:
//! a proxy may have routed or limited the request by them. Closing a call's response cancels
//! it; there are no notifications to take.
//!
//! Refusals, as the revision words them: a missing or disagreeing header is `400` with
//! `-32020` (HeaderMismatch); a revision the gateway does not speak is `400` with `-32022`
//! and the revisions it does; a request without its required `_meta` fields is `400` with
//! `-32602`; an unknown method is `404` with `-32601`.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::StatusCode;
use serde_json::{Map, Value, json};

use super::answer::{self, Reply};
use super::call::{self, ToolCall};
use super::post::{Post, VERSION_HEADER, header, is_session_revision};
use super::rpc::{
    self, HEADER_MISMATCH, INVALID_PARAMS, METHOD_NOT_FOUND, Message, UNSUPPORTED_PROTOCOL_VERSION,
};
use super::session::SESSION_REVISIONS;
use super::{MODERN, Revision, Server};

/// The `_meta` key of a request's revision.
const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a request's client capabilities.
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The header that mirrors a request's method, and the one that mirrors the tool it calls.
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
/// How long a client may keep what `tools/list` and `server/discover` answered: the
/// gateway's two tools do not change while it runs.
const TTL_MS: u64 = 60 * 60 * 1000;

/// Whether `post` is a request of this revision: its `_meta` names a revision, or its
/// `MCP-Protocol-Version` names one no session speaks.
pub(crate) fn speaks(post: &Post) -> bool {
    let in_meta = post
        .message
        .params()
        .and_then(|params| params.get("_meta"))
        .is_some_and(|meta| meta.get(VERSION_KEY).is_some());
    in_meta || header(&post.headers, VERSION_HEADER).is_some_and(|v| !is_session_revision(v))
}

/// Answers a request of this revision.
pub(crate) async fn answer(server: &Arc<Server>, post: Post) -> Reply {
    let (id, method, params) = match post.message {
        Message::Request { id, method, params } => (id, method, params),
        // The revision defines no notification over HTTP; one is taken and ignored.
        Message::Notification { .. } | Message::Response => {
            return answer::empty(StatusCode::ACCEPTED);
        }
    };
    if let Err((status, code, message, data)) = check(&post.headers, &method, &params) {
        return answer::json(status, &rpc::error(&id, code, &message, data));
    }
    let revision = Revision::Modern;
    let result = match method.as_str() {
        "tools/call" => {
            let call = ToolCall {
                id,
                params,
                accepts: post.accepts,
                revision,
                session: None,
            };
            return call::call(server, post.identity, post.admitted, call).await;
        }
        "server/discover" => {
            let mut supported = vec![MODERN];
            supported.extend(SESSION_REVISIONS);
            json!({
                "supportedVersions": supported,
                "capabilities": {"tools": {}},
                "ttlMs": TTL_MS,
                "cacheScope": "public",
            })
        }
        "tools/list" => json!({"tools": server.tools, "ttlMs": TTL_MS, "cacheScope": "public"}),
        _ => {
            let error = rpc::error(&id, METHOD_NOT_FOUND, "method not found", None);
            return answer::json(StatusCode::NOT_FOUND, &error);
        }
    };
    let reply = answer::json(StatusCode::OK, &rpc::result(&id, revision.complete(result)));
    answer::holding(reply, post.admitted)
}

/// A refusal: status, code, message and data.
type Refusal = (StatusCode, i64, String, Option<Value>);

/// Checks the request's revision, its `_meta` and the headers that mirror its body.
fn check(
    headers: &hyper::HeaderMap,
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), Refusal> {
    let mismatch = |message: String| (StatusCode::BAD_REQUEST, HEADER_MISMATCH, message, None);
    let meta = params.get("_meta");
    let in_meta = meta
        .and_then(|m| m.get(VERSION_KEY))
        .and_then(Value::as_str);
    let Some(version) = header(headers, VERSION_HEADER) else {
        return Err(mismatch(
            "the MCP-Protocol-Version header is missing".into(),
        ));
    };
    let Some(in_meta) = in_meta else {
        let message = format!("_meta has no {VERSION_KEY}");
        return Err((StatusCode::BAD_REQUEST, INVALID_PARAMS, message, None));
    };
    if version != in_meta {
        return Err(mismatch(format!(
            "MCP-Protocol-Version {version:?} does not match the request's {VERSION_KEY} ({in_meta:?})"
        )));
    }
    if version != MODERN {
        let mut supported = vec![MODERN];
        supported.extend(SESSION_REVISIONS);
        let data = json!({"supported": supported, "requested": version});
        let message = "Unsupported protocol version".to_owned();
        return Err((
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_PROTOCOL_VERSION,
            message,
            Some(data),
        ));
    }
    if !meta
        .and_then(|m| m.get(CAPABILITIES_KEY))
        .is_some_and(Value::is_object)
    {
        let message = format!("_meta has no {CAPABILITIES_KEY}");
        return Err((StatusCode::BAD_REQUEST, INVALID_PARAMS, message, None));
    }
    match header(headers, METHOD_HEADER) {
        None => return Err(mismatch("the Mcp-Method header is missing".into())),
        Some(mirrored) if mirrored != method => {
            return Err(mismatch(format!(
                "the Mcp-Method header {mirrored:?} does not match the request's method"
            )));
        }
        Some(_) => {}
    }
    if method == "tools/call" {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match header(headers, NAME_HEADER).map(decoded) {
            None => return Err(mismatch("the Mcp-Name header is missing".into())),
            Some(mirrored) if mirrored.as_deref() != Some(name) => {
                return Err(mismatch(
                    "the Mcp-Name header does not match the tool the request calls".into(),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A header value as the revision encodes it: plain, or `=?base64?...?=` around the Base64
/// of UTF-8 text; `None` when it is neither.
fn decoded(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> hyper::HeaderMap {
        let mut headers = hyper::HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).expect("a header value"));
        }
        headers
    }

    fn params(version: &str, name: &str) -> Map<String, Value> {
        let params = json!({"name": name, "_meta": {VERSION_KEY: version, CAPABILITIES_KEY: {}}});
        params.as_object().expect("an object").clone()
    }

    #[test]
    fn headers_must_mirror_the_body_each_mismatch_refused_with_its_code() {
        let good = [
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "get_dynamic_tools"),
        ];
        let code = |pairs: &[(&'static str, &str)], params: &Map<String, Value>| {
            check(&headers(pairs), "tools/call", params)
                .err()
                .map(|(s, c, ..)| (s.as_u16(), c))
        };
        let p = params(MODERN, "get_dynamic_tools");
        assert_eq!(code(&good, &p), None);
        let encoded = [
            good[0],
            good[1],
            ("mcp-name", "=?base64?Z2V0X2R5bmFtaWNfdG9vbHM=?="),
        ];
        assert_eq!(code(&encoded, &p), None);
        assert_eq!(code(&good[1..], &p), Some((400, HEADER_MISMATCH)));
        assert_eq!(code(&good[..2], &p), Some((400, HEADER_MISMATCH)));
        assert_eq!(
            code(&[good[0], ("mcp-method", "tools/list"), good[2]], &p),
            Some((400, HEADER_MISMATCH))
        );
        assert_eq!(
            code(&[good[0], good[1], ("mcp-name", "other")], &p),
            Some((400, HEADER_MISMATCH))
        );
        assert_eq!(
            code(&good, &params("2025-11-25", "get_dynamic_tools")),
            Some((400, HEADER_MISMATCH))
        );
        let future = [("mcp-protocol-version", "2099-01-01"), good[1], good[2]];
        assert_eq!(
            code(&future, &params("2099-01-01", "get_dynamic_tools")),
            Some((400, UNSUPPORTED_PROTOCOL_VERSION))
        );
        let mut bare = p;
        bare.insert("_meta".into(), json!({VERSION_KEY: MODERN}));
        assert_eq!(code(&good, &bare), Some((400, INVALID_PARAMS)));
    }
}
