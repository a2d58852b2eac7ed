//! JSON-RPC 2.0 as both MCP eras write it: the messages the client sends, as typed values
//! that borrow what they carry, and every message a server sends, read into one [`Incoming`].
//!
//! A server's message is read for its routing fields only; its `result` stays raw text until
//! the request that asked for it reads it as its own type, so a result of megabytes is parsed
//! once and never copied. Nothing here shows server data to anyone: results and error texts
//! leave as [`Untrusted`](crate::text::Untrusted) through `session`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::wire::{Loose, Object};

/// "Method not found": the answer to any server request but `ping` at 2025-11-25, since the
/// client declares no capability that would invite one.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// 2026-07-28: the HTTP headers do not match the body, or a required one is missing.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability the client did not declare.
pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the server does not speak the request's protocol version; `data.supported`
/// lists those it does.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The protocol's own name and version, written in every message.
const JSONRPC: &str = "2.0";

/// A request as it is written, borrowing its parameters: a request sent again after a lost
/// session or a version retry, or with megabytes of arguments, is not copied to be sent.
#[derive(Serialize)]
pub(crate) struct Request<'a, P> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: &'a P,
}

impl<'a, P: Serialize> Request<'a, P> {
    pub(crate) fn new(id: u64, method: &'a str, params: &'a P) -> Self {
        Self {
            jsonrpc: JSONRPC,
            id,
            method,
            params,
        }
    }
}

/// A notification without parameters (`notifications/initialized`).
#[derive(Serialize)]
pub(crate) struct Notification<'a> {
    jsonrpc: &'static str,
    method: &'a str,
}

impl<'a> Notification<'a> {
    pub(crate) fn new(method: &'a str) -> Self {
        Self {
            jsonrpc: JSONRPC,
            method,
        }
    }
}

/// `notifications/cancelled` (2025-11-25 only: at 2026-07-28 closing the stream cancels).
#[derive(Serialize)]
pub(crate) struct Cancelled {
    jsonrpc: &'static str,
    method: &'static str,
    params: CancelledParams,
}

#[derive(Serialize)]
struct CancelledParams {
    #[serde(rename = "requestId")]
    request_id: u64,
    reason: &'static str,
}

impl Cancelled {
    pub(crate) fn new(request_id: u64, reason: &'static str) -> Self {
        Self {
            jsonrpc: JSONRPC,
            method: "notifications/cancelled",
            params: CancelledParams { request_id, reason },
        }
    }
}

/// The client's answer to a server request (2025-11-25 only): `{}` to a `ping`, "method not
/// found" to anything else.
#[derive(Serialize)]
pub(crate) struct Response<'a> {
    jsonrpc: &'static str,
    /// The server's id, echoed as it was written.
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorOut>,
}

#[derive(Serialize)]
struct ErrorOut {
    code: i64,
    message: &'static str,
}

/// `{}`.
#[derive(Serialize, Clone, Copy, Debug, Default)]
pub(crate) struct Empty {}

impl<'a> Response<'a> {
    pub(crate) fn to_server_request(id: &'a RawValue, method: &str) -> Self {
        let (result, error) = if method == "ping" {
            (Some(Empty {}), None)
        } else {
            let error = ErrorOut {
                code: METHOD_NOT_FOUND,
                message: "Method not found",
            };
            (None, Some(error))
        };
        Self {
            jsonrpc: JSONRPC,
            id,
            result,
            error,
        }
    }
}

/// Who the client is, in `initialize` and in every 2026-07-28 request's `_meta`.
#[derive(Serialize, Clone, Copy)]
pub(crate) struct ClientInfo {
    name: &'static str,
    version: &'static str,
}

pub(crate) const CLIENT_INFO: ClientInfo = ClientInfo {
    name: "plugin_mcp",
    version: env!("CARGO_PKG_VERSION"),
};

/// `_meta` of a request: what the revision asks of each request, and the token under which
/// the server may report the request's progress.
#[derive(Serialize, Default)]
pub(crate) struct Meta {
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) revision: Option<RevisionMeta>,
    /// The request's own id: unique among the requests in flight to one server.
    #[serde(rename = "progressToken", skip_serializing_if = "Option::is_none")]
    pub(crate) progress_token: Option<u64>,
}

impl Meta {
    fn is_empty(&self) -> bool {
        self.revision.is_none() && self.progress_token.is_none()
    }
}

/// What a 2026-07-28 request says in `_meta`: what the handshake said once at 2025-11-25,
/// said again by every request, so each stands on its own.
#[derive(Serialize, Clone, Copy)]
pub(crate) struct RevisionMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: &'static str,
    /// Nothing declared: an optional capability such as elicitation would make some servers
    /// answer with interactive forms this Pack cannot show.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Empty,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    client_info: ClientInfo,
}

impl RevisionMeta {
    pub(crate) fn new(protocol_version: &'static str) -> Self {
        Self {
            protocol_version,
            client_capabilities: Empty {},
            client_info: CLIENT_INFO,
        }
    }
}

/// `initialize` (2025-11-25 and before).
#[derive(Serialize)]
pub(crate) struct InitializeParams {
    #[serde(rename = "protocolVersion")]
    pub(crate) protocol_version: &'static str,
    /// Nothing declared, as in [`RevisionMeta`].
    pub(crate) capabilities: Empty,
    #[serde(rename = "clientInfo")]
    pub(crate) client_info: ClientInfo,
}

/// The parameters of a request, with `_meta` when it has anything to say.
#[derive(Serialize, Default)]
pub(crate) struct Params<P> {
    #[serde(flatten)]
    pub(crate) params: P,
    #[serde(rename = "_meta", skip_serializing_if = "Meta::is_empty")]
    pub(crate) meta: Meta,
}

/// `server/discover` and other requests with nothing but `_meta`.
#[derive(Serialize, Default)]
pub(crate) struct NoParams {}

/// `tools/list`.
#[derive(Serialize, Default)]
pub(crate) struct ListParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<&'a str>,
}

/// `tools/call`.
#[derive(Serialize)]
pub(crate) struct CallParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a Value,
}

/// A message as bytes to send.
pub(crate) fn to_bytes(message: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(message).expect(
        "the client's messages are structs of strings, numbers and JSON values, with string keys",
    )
}

/// One message from a server.
pub(crate) enum Incoming<'a> {
    /// A successful response; its result still raw text.
    Result {
        id: &'a RawValue,
        result: &'a RawValue,
    },
    /// An error response, with the id it answers (absent or null when the server could not
    /// tell which request it refused).
    Error {
        id: Option<&'a RawValue>,
        error: RpcError,
    },
    /// A request from the server.
    Request { id: &'a RawValue, method: String },
    /// A notification from the server: progress, logging, list changes.
    Notification {
        method: String,
        params: Option<&'a RawValue>,
    },
    /// A response with neither result nor error.
    Empty { id: &'a RawValue },
}

impl<'a> Incoming<'a> {
    /// `None` for text that is not a JSON object, or an object that is no JSON-RPC message.
    pub(crate) fn read(text: &'a str) -> Option<Self> {
        let fields = serde_json::from_str::<Object<Fields<'a>>>(text).ok()?.0;
        Some(match (fields.method.0, fields.id) {
            (Some(method), Some(id)) => Self::Request { id, method },
            (Some(method), None) => Self::Notification {
                method,
                params: fields.params,
            },
            (None, id) => match (fields.error, fields.result, id) {
                (Some(error), _, id) => Self::Error {
                    id,
                    error: RpcError::read(error),
                },
                (None, Some(result), Some(id)) => Self::Result { id, result },
                (None, None, Some(id)) => Self::Empty { id },
                (None, _, None) => return None,
            },
        })
    }

    /// Whether this message responds to request `id` (a result, an error or an empty
    /// response carrying that id).
    pub(crate) fn answers(&self, id: u64) -> bool {
        let answered = match self {
            Self::Result { id, .. } | Self::Empty { id } => Some(*id),
            Self::Error { id, .. } => *id,
            Self::Request { .. } | Self::Notification { .. } => None,
        };
        answered.and_then(|raw| serde_json::from_str::<u64>(raw.get()).ok()) == Some(id)
    }
}

/// The routing fields of a message; anything else it carries is skipped unread.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(default)]
    method: Loose<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// A field's raw text, `null` included: a field that is there is not absent.
fn present<'de, D: Deserializer<'de>>(field: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(field).map(Some)
}

/// A JSON-RPC error object, each field read when it has its type (a missing code reads as 0).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RpcError {
    #[serde(default)]
    code: Loose<i64>,
    #[serde(default)]
    message: Loose<String>,
    #[serde(default)]
    data: Loose<Value>,
}

impl RpcError {
    fn read(raw: &RawValue) -> Self {
        serde_json::from_str::<Object<Self>>(raw.get()).map_or_else(|_| Self::default(), |e| e.0)
    }

    pub(crate) fn code(&self) -> i64 {
        self.code.0.unwrap_or(0)
    }

    pub(crate) fn into_message(self) -> String {
        self.message.0.unwrap_or_default()
    }

    /// The versions an [`UNSUPPORTED_PROTOCOL_VERSION`] error lists in `data.supported`.
    pub(crate) fn supported_versions(&self) -> Vec<String> {
        let supported = self.data.0.as_ref().and_then(|d| d.get("supported"));
        let supported = supported.and_then(Value::as_array).map(Vec::as_slice);
        let versions = supported
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str);
        versions.map(str::to_owned).collect()
    }

    /// Whether the code is one only a server of the 2026-07-28 revision or later sends: it
    /// tells a modern server from an old one that refused a request it did not understand.
    pub(crate) fn is_modern(&self) -> bool {
        matches!(
            self.code(),
            HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_of_message() {
        let result = r#"{"jsonrpc":"2.0","id":7,"result":{"big":[1,2,3]}}"#;
        let Some(Incoming::Result { result, .. }) = Incoming::read(result) else {
            panic!("a result");
        };
        assert_eq!(result.get(), r#"{"big":[1,2,3]}"#);
        assert!(Incoming::read(r#"{"id":7,"result":{}}"#).is_some_and(|m| m.answers(7)));
        assert!(!Incoming::read(r#"{"id":"7","result":{}}"#).is_some_and(|m| m.answers(7)));
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no",
            "data":{"supported":["2026-07-28","2025-11-25",3]}}}"#;
        let Some(Incoming::Error { error, .. }) = Incoming::read(error) else {
            panic!("an error");
        };
        assert_eq!(error.code(), UNSUPPORTED_PROTOCOL_VERSION);
        assert!(error.is_modern());
        assert_eq!(error.supported_versions(), ["2026-07-28", "2025-11-25"]);
        assert!(matches!(
            Incoming::read(r#"{"id":"a","method":"ping"}"#),
            Some(Incoming::Request { method, .. }) if method == "ping"
        ));
        assert!(matches!(
            Incoming::read(r#"{"method":"notifications/progress","params":{}}"#),
            Some(Incoming::Notification { method, params: Some(_) })
                if method == "notifications/progress"
        ));
        assert!(matches!(
            Incoming::read(r#"{"id":2}"#),
            Some(Incoming::Empty { .. })
        ));
        assert!(Incoming::read(r#"{"result":{}}"#).is_none());
        assert!(Incoming::read("[1]").is_none());
        let odd = r#"{"id":1,"error":{"code":"x","message":5}}"#;
        let Some(Incoming::Error { error, .. }) = Incoming::read(odd) else {
            panic!("an error");
        };
        assert_eq!((error.code(), error.is_modern()), (0, false));
    }

    #[test]
    fn writes_answers_to_server_requests() {
        let id = RawValue::from_string("\"s-1\"".to_owned()).expect("raw");
        let ping = to_bytes(&Response::to_server_request(&id, "ping"));
        assert_eq!(ping, br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#);
        let other = to_bytes(&Response::to_server_request(&id, "roots/list"));
        assert_eq!(
            other,
            br#"{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"Method not found"}}"#
        );
    }
}
