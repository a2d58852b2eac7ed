//! The JSON-RPC messages of the MCP endpoint: one message read from a request's body, and the
//! answers written back, with the error codes both revisions use.

use serde_json::{Map, Value, json};

/// Not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON, but not one JSON-RPC message.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// The parameters are wrong (an unknown tool, a missing `_meta` field at 2026-07-28).
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// The request was right but could not be answered (it was cancelled).
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: a request's headers disagree with its body, or a required one is missing.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the protocol version asked for is not one the server speaks.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// One JSON-RPC message a client sent.
#[derive(Debug)]
pub(crate) enum Message {
    /// A request: it gets an answer.
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    /// A notification: no answer.
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// A response to a request of the server's; the gateway sends none, so it is ignored.
    Response,
}

impl Message {
    /// The method, for a request or a notification.
    pub(crate) fn method(&self) -> Option<&str> {
        match self {
            Self::Request { method, .. } | Self::Notification { method, .. } => Some(method),
            Self::Response => None,
        }
    }

    /// The parameters, for a request or a notification.
    pub(crate) fn params(&self) -> Option<&Map<String, Value>> {
        match self {
            Self::Request { params, .. } | Self::Notification { params, .. } => Some(params),
            Self::Response => None,
        }
    }
}

/// Why a body is not one message: the error's code and text (its `id` is unknown, so null).
#[derive(Debug, PartialEq)]
pub(crate) struct Unreadable {
    pub(crate) code: i64,
    pub(crate) message: &'static str,
}

/// Reads one JSON-RPC message from `body`. A batch (an array) is refused: no revision the
/// gateway speaks has them.
pub(crate) fn read(body: &[u8]) -> Result<Message, Unreadable> {
    let invalid = |message| Unreadable {
        code: INVALID_REQUEST,
        message,
    };
    let value: Value = serde_json::from_slice(body).map_err(|_| Unreadable {
        code: PARSE_ERROR,
        message: "the body is not JSON",
    })?;
    let Value::Object(mut message) = value else {
        return Err(invalid(
            "the body is not one JSON-RPC message (a batch is not supported)",
        ));
    };
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid("the message is not JSON-RPC 2.0"));
    }
    let params = match message.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(invalid("params is not an object")),
    };
    let id = message.remove("id");
    match (message.remove("method"), id) {
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(Value::String(method)), Some(id @ (Value::String(_) | Value::Number(_)))) => {
            Ok(Message::Request { id, method, params })
        }
        (Some(Value::String(_)), Some(_)) => Err(invalid("id is neither a string nor a number")),
        (Some(_), _) => Err(invalid("method is not a string")),
        (None, Some(_)) if message.contains_key("result") || message.contains_key("error") => {
            Ok(Message::Response)
        }
        (None, _) => Err(invalid("the message has no method")),
    }
}

/// A successful answer to request `id`.
pub(crate) fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error answer to request `id` (`Value::Null` when it could not be read).
pub(crate) fn error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A notification the server sends.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_message_is_read_and_anything_else_refused_with_its_code() {
        let read_text = |text: &str| read(text.as_bytes());
        assert!(matches!(
            read_text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#),
            Ok(Message::Request { id, method, params }) if id == 7 && method == "ping" && params.is_empty()
        ));
        assert!(matches!(
            read_text(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification { .. })
        ));
        assert!(matches!(
            read_text(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response)
        ));
        for (text, code, message) in [
            ("{", PARSE_ERROR, "the body is not JSON"),
            (
                "[]",
                INVALID_REQUEST,
                "the body is not one JSON-RPC message (a batch is not supported)",
            ),
            (
                r#"{"id":1,"method":"ping"}"#,
                INVALID_REQUEST,
                "the message is not JSON-RPC 2.0",
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                INVALID_REQUEST,
                "id is neither a string nor a number",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[]}"#,
                INVALID_REQUEST,
                "params is not an object",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                INVALID_REQUEST,
                "the message has no method",
            ),
        ] {
            assert_eq!(
                read_text(text).err(),
                Some(Unreadable { code, message }),
                "{text}"
            );
        }
    }
}
