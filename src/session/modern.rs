//! The 2026-07-28 revision: no handshake and no session. Each request stands on its own, its
//! `_meta` carrying the protocol version, the client's (empty) capabilities and its identity,
//! its headers mirroring the version, the method and the name the body holds. A server that
//! does not speak the version answers -32022 with the versions it does, and the request is
//! sent once more with one both speak. Closing a response stream cancels its request, so an
//! abandoned request needs nothing sent: dropping it closes its connection.

use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::header::{HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::era::Revision;
use super::exchange::Link;
use super::{Broken, Outbound, SessionError};
use crate::jsonrpc::{Meta, Params, RevisionMeta, UNSUPPORTED_PROTOCOL_VERSION};
use crate::param_headers;
use crate::policy::MODERN_PROTOCOL_VERSIONS;
use crate::text::Untrusted;
use crate::transport::{Outgoing, SessionHeaders};
use crate::wire::{Loose, Object};

pub(super) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// A server spoken to at a handshake-free revision.
pub(super) struct Modern {
    /// Index into [`MODERN_PROTOCOL_VERSIONS`] of the version requests declare.
    version: AtomicUsize,
    /// Its `server/discover` said it tells of changes to its tools (`tools.listChanged`).
    tools_change: bool,
}

impl Modern {
    /// Speaks the preferred version until the server says it does not.
    pub(super) fn new() -> Self {
        Self {
            version: AtomicUsize::new(0),
            tools_change: false,
        }
    }

    /// Speaks `version`, one of [`MODERN_PROTOCOL_VERSIONS`], to a server that tells of
    /// changes to its tools when `tools_change`.
    pub(super) fn speaking(version: &str, tools_change: bool) -> Option<Self> {
        let index = MODERN_PROTOCOL_VERSIONS
            .iter()
            .position(|v| *v == version)?;
        Some(Self {
            version: AtomicUsize::new(index),
            tools_change,
        })
    }

    /// Whether the server said it tells of changes to its tools.
    pub(super) fn tells_of_changes(&self) -> bool {
        self.tools_change
    }

    pub(super) fn protocol_version(&self) -> &'static str {
        let index = self.version.load(Ordering::Relaxed);
        MODERN_PROTOCOL_VERSIONS
            .get(index)
            .copied()
            .unwrap_or(MODERN_PROTOCOL_VERSIONS[0])
    }

    /// Sends one request and reads its complete result as `T`, with `Mcp-Method`, `Mcp-Name`
    /// (when the request names something) and the request's own headers.
    pub(super) async fn request<T: Completion, P: Serialize>(
        &self,
        link: &Link,
        request: Outbound<'_, P>,
    ) -> Result<Untrusted<T>, SessionError> {
        let mut extra = Vec::with_capacity(2 + request.headers.len());
        extra.push((MCP_METHOD, HeaderValue::from_static(request.method)));
        if let Some(name) = request.name {
            let value = param_headers::encode_name(name)
                .map_err(|e| SessionError::Protocol(Broken::Name(e)))?;
            extra.push((MCP_NAME, value));
        }
        extra.extend_from_slice(request.headers);
        let mut retried = false;
        loop {
            let version = self.protocol_version();
            let id = link.next_id();
            let meta = Meta {
                revision: Some(RevisionMeta::new(version)),
                progress_token: request.progress.map(|_| id),
            };
            let sent = request.carrying(Params {
                params: &request.params,
                meta,
            });
            let outgoing = outgoing(version, &extra);
            let answer = link
                .exchange::<T, _>(id, &sent, &outgoing, Revision::Modern)
                .await;
            match answer {
                Err(SessionError::Rpc {
                    code: UNSUPPORTED_PROTOCOL_VERSION,
                    ref supported,
                    ..
                }) if !retried => {
                    let Some(index) = mutual(supported) else {
                        return answer.map(|(result, _)| result);
                    };
                    // Once: a server that refuses the version it listed is not asked again.
                    retried = true;
                    self.version.store(index, Ordering::Relaxed);
                }
                answer => return answer.and_then(|(result, _)| complete(result)),
            }
        }
    }
}

/// What a request at `version` carries besides its body: the version, no session, `extra`
/// (the method and name headers, a tool's `Mcp-Param-*`), and a 4xx's JSON-RPC error read.
pub(super) fn outgoing<'a>(
    version: &'static str,
    extra: &'a [(HeaderName, HeaderValue)],
) -> Outgoing<'a> {
    Outgoing {
        session: SessionHeaders {
            session_id: None,
            protocol_version: Some(version),
        },
        extra,
        read_error_answers: true,
    }
}

/// The first of the client's modern versions that `supported` lists.
fn mutual(supported: &[String]) -> Option<usize> {
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .position(|v| supported.iter().any(|s| s == v))
}

/// A result whose `resultType` can be read without reading it for a model.
pub(super) trait Completion: serde::de::DeserializeOwned {
    fn completion(&self) -> ResultType;
}

/// What a 2026-07-28 result says it is.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ResultType {
    /// `complete`, or absent (a server of an earlier revision).
    Complete,
    /// `input_required`: the server wants the client to answer these kinds of input first.
    InputRequired(Vec<&'static str>),
    /// Any other value.
    Unknown,
}

/// The kinds of input a server may ask for, by method, and how the error names them.
const INPUT_KINDS: [(&str, &str); 3] = [
    ("elicitation/create", "a form for the user (elicitation)"),
    ("sampling/createMessage", "a model completion (sampling)"),
    ("roots/list", "the client's roots"),
];

fn result_type(kind: Option<&str>, methods: impl Iterator<Item = Option<String>>) -> ResultType {
    match kind {
        None | Some("complete") => ResultType::Complete,
        Some("input_required") => {
            let mut kinds: Vec<&'static str> = Vec::new();
            for method in methods.flatten() {
                let known = INPUT_KINDS.iter().find(|(m, _)| *m == method);
                if let Some((_, kind)) = known.filter(|(_, k)| !kinds.contains(k)) {
                    kinds.push(kind);
                }
            }
            ResultType::InputRequired(kinds)
        }
        Some(_) => ResultType::Unknown,
    }
}

/// A `resultType` as text; one that is not a string is no type the client knows.
fn type_text(value: &Value) -> &str {
    value.as_str().unwrap_or("")
}

impl Completion for Value {
    fn completion(&self) -> ResultType {
        let requests = self.get("inputRequests").and_then(Value::as_object);
        let methods = requests.into_iter().flat_map(|r| r.values()).map(|r| {
            let method = r.get("method").and_then(Value::as_str);
            method.map(str::to_owned)
        });
        result_type(self.get("resultType").map(type_text), methods)
    }
}

impl Completion for Box<RawValue> {
    fn completion(&self) -> ResultType {
        /// A result's type and what it asks for, the rest skipped unread.
        #[derive(serde::Deserialize, Default)]
        struct Head {
            #[serde(default, rename = "resultType")]
            result_type: Loose<Value>,
            #[serde(default, rename = "inputRequests")]
            input_requests: Loose<std::collections::BTreeMap<String, Value>>,
        }
        let head = serde_json::from_str::<Object<Head>>(self.get())
            .map_or_else(|_| Head::default(), |h| h.0);
        let requests = head.input_requests.0.unwrap_or_default();
        let methods = requests.values().map(|r| {
            let method = r.get("method").and_then(Value::as_str);
            method.map(str::to_owned)
        });
        result_type(head.result_type.0.as_ref().map(type_text), methods)
    }
}

/// The result if it is complete; an error a model can read if it asks for input.
fn complete<T: Completion>(result: Untrusted<T>) -> Result<Untrusted<T>, SessionError> {
    match result.peek().completion() {
        ResultType::Complete => Ok(result),
        ResultType::InputRequired(kinds) => Err(SessionError::InputRequired(kinds)),
        ResultType::Unknown => Err(SessionError::Protocol(Broken::ResultType)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_result_type() {
        assert_eq!(json!({}).completion(), ResultType::Complete);
        assert_eq!(
            json!({"resultType": "complete"}).completion(),
            ResultType::Complete
        );
        assert_eq!(
            json!({"resultType": "partial"}).completion(),
            ResultType::Unknown
        );
        assert_eq!(json!({"resultType": 1}).completion(), ResultType::Unknown);
        let asks = json!({"resultType": "input_required", "inputRequests": {
            "a": {"method": "elicitation/create"}, "b": {"method": "elicitation/create"},
            "c": {"method": "sampling/createMessage"}, "d": {"method": "x\u{7}"}}});
        let kinds = vec![
            "a form for the user (elicitation)",
            "a model completion (sampling)",
        ];
        assert_eq!(asks.completion(), ResultType::InputRequired(kinds.clone()));
        let raw = RawValue::from_string(asks.to_string()).expect("raw");
        assert_eq!(raw.completion(), ResultType::InputRequired(kinds));
    }

    #[test]
    fn chooses_a_version_both_sides_speak() {
        assert_eq!(mutual(&["2026-07-28".to_owned()]), Some(0));
        assert_eq!(mutual(&["2025-11-25".to_owned()]), None);
        assert_eq!(mutual(&[]), None);
    }
}
