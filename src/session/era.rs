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
use super::modern::Modern;
use super::{Outbound, SessionError};
use crate::jsonrpc::{NoParams, UNSUPPORTED_PROTOCOL_VERSION};
use crate::policy::{ACCEPTED_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS};
use crate::transport::TransportError;

/// What the probe found.
pub(super) enum Probed {
    Modern(Modern),
    /// A server of a session-based revision: the handshake comes next.
    Legacy,
}

/// Probes the server with `server/discover`.
pub(super) async fn detect(link: &Link) -> Result<Probed, SessionError> {
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
                return Ok(Probed::Legacy);
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
        })) => Ok(Probed::Legacy),
        // The server could not be reached, redirected, failed (5xx), or sent too much:
        // nothing was learned about its era, and the attempt fails as it would have.
        Err(e @ SessionError::Transport(_)) => Err(e),
        // A JSON-RPC error of an older revision (method not found), an empty or unreadable
        // answer: no modern server.
        Err(_) => Ok(Probed::Legacy),
    }
}

fn shares_modern(supported: &[String]) -> bool {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .any(|v| supported.iter().any(|s| s == v))
}

/// The era of a server that speaks `supported`: modern if it shares a modern version, else
/// legacy if it lists a session-based one the client accepts.
fn choose(supported: &[String], tools_change: bool) -> Result<Probed, SessionError> {
    let first_shared = |versions: &[&'static str]| {
        versions
            .iter()
            .find(|v| supported.iter().any(|s| s == *v))
            .copied()
    };
    if let Some(version) = first_shared(&MODERN_PROTOCOL_VERSIONS) {
        return Modern::speaking(version, tools_change)
            .map(Probed::Modern)
            .ok_or(SessionError::Version);
    }
    if first_shared(&ACCEPTED_PROTOCOL_VERSIONS).is_some() {
        return Ok(Probed::Legacy);
    }
    Err(SessionError::Version)
}
