//! Which era a server speaks, found the way the 2026-07-28 revision's backward-compatibility
//! rules say: send a modern request first, and fall back to the `initialize` handshake when
//! the answer is not a modern one.
//!
//! The modern request is `server/discover`, which every modern server must implement. A
//! request such as `tools/list` could do, but a server of an older revision that keeps no
//! session answers it as if it were its own, and would pass for modern; `server/discover` it
//! does not know, so its answer (an error, whatever its status) tells it apart. The discover
//! result also lists the server's versions, so the first real request declares one it speaks.

use serde_json::Value;

use super::exchange::Link;
use super::legacy::Legacy;
use super::modern::Modern;
use super::{Outbound, SessionError};
use crate::jsonrpc::{NoParams, UNSUPPORTED_PROTOCOL_VERSION};
use crate::policy::{ACCEPTED_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS};
use crate::transport::TransportError;

/// The revisions a server may speak, as the client tells them apart: what differs is how a
/// request is sent and how its answer's stream behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Revision {
    /// 2025-11-25 and the session-based revisions before it: the `initialize` handshake and a
    /// session; a stream that ends early is resumed with GET and `Last-Event-ID`, and a server
    /// may ask the client something on it, which is answered.
    Legacy,
    /// 2026-07-28: no handshake and no session; streams cannot be resumed and carry no server
    /// requests, and a 4xx may carry a JSON-RPC error, which is read.
    Modern,
}

/// A server's conversation in the [`Revision`] it speaks, with what that revision keeps: the
/// version chosen, the session.
pub(super) enum Era {
    Modern(Modern),
    /// Before the handshake when [`detect`] finds it: the handshake comes next.
    Legacy(Legacy),
}

impl Era {
    pub(super) fn revision(&self) -> Revision {
        match self {
            Self::Modern(_) => Revision::Modern,
            Self::Legacy(_) => Revision::Legacy,
        }
    }
}

/// Probes the server with `server/discover`.
pub(super) async fn detect(link: &Link) -> Result<Era, SessionError> {
    let probe = Modern::new();
    let answer = probe
        .request::<Value, _>(
            link,
            Outbound::new("server/discover", NoParams {}).followed(),
        )
        .await;
    match answer {
        Ok(result) => {
            let listed = result
                .peek()
                .get("supportedVersions")
                .and_then(Value::as_array);
            // A result without the list is no discover result: a lenient older server.
            let Some(listed) = listed else {
                return Ok(legacy());
            };
            let supported: Vec<String> = listed
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            let tools_change = result
                .peek()
                .pointer("/capabilities/tools/listChanged")
                .and_then(Value::as_bool)
                == Some(true);
            choose(&supported, tools_change)
        }
        // The one retry with a listed version is done. A server that lists only older
        // versions gets the handshake; one that refused a version it lists is answered with
        // its refusal.
        Err(SessionError::Rpc {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            ref supported,
            ..
        }) if !shares_modern(supported) => choose(supported, false),
        // A modern server that refused the request: its reason is the answer.
        Err(e @ SessionError::Rpc { modern: true, .. }) => Err(e),
        // Any other 4xx (404 and 405 included), with no modern error in its body.
        Err(SessionError::Transport(TransportError::Status {
            status: 400..=499, ..
        })) => Ok(legacy()),
        // The server could not be reached, redirected, failed (5xx), or sent too much:
        // nothing was learned about its era, and the attempt fails as it would have.
        Err(e @ SessionError::Transport(_)) => Err(e),
        // A JSON-RPC error of an older revision (method not found), an empty or unreadable
        // answer: no modern server.
        Err(_) => Ok(legacy()),
    }
}

/// A server of a session-based revision, before its handshake.
fn legacy() -> Era {
    Era::Legacy(Legacy::default())
}

fn shares_modern(supported: &[String]) -> bool {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .any(|v| supported.iter().any(|s| s == v))
}

/// The era of a server that speaks `supported`: modern if it shares a modern version, else
/// legacy if it lists a session-based one the client accepts.
fn choose(supported: &[String], tools_change: bool) -> Result<Era, SessionError> {
    let first_shared = |versions: &[&'static str]| {
        versions
            .iter()
            .find(|v| supported.iter().any(|s| s == *v))
            .copied()
    };
    if let Some(version) = first_shared(&MODERN_PROTOCOL_VERSIONS) {
        return Modern::speaking(version, tools_change)
            .map(Era::Modern)
            .ok_or(SessionError::Version);
    }
    if first_shared(&ACCEPTED_PROTOCOL_VERSIONS).is_some() {
        return Ok(legacy());
    }
    Err(SessionError::Version)
}
