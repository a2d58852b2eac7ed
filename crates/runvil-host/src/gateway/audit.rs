//! The audit trail: one JSON line per call and per refusal, saying who called what, how it
//! ended, how long it took and how much came back, and never the arguments (a hash of them)
//! nor the result (its size), nor a token, a key or a session id.
//!
//! A line of format version 1 has exactly these fields, in this order, an absent one `null`:
//!
//! ```json
//! {"v":1,"time":"2026-12-01T09:30:00.123Z","identity":"alice@example.com","namespace":"docs",
//!  "tool":"search","args_sha256":"44136fa3…","outcome":"ok","duration_ms":41,"result_bytes":1830}
//! ```
//!
//! `time` is RFC 3339 in UTC, to the millisecond; `identity` is `anonymous`, a token's `sub`
//! or `key:NAME` (`null` for a request no one was admitted for); `args_sha256` is the hex
//! SHA-256 of the RFC 8785 form of the call's `arguments` (`{}` when absent), so equal
//! arguments hash equal whatever their key order; `outcome` is one of [`Outcome`]'s words.
//! A reader meeting another `v` skips the line: a later version may add fields, never change
//! these.
//!
//! Where lines go is an [`AuditSink`]: the file (`file`), or with `--store` the database's
//! table (`database`), which every instance sharing the database writes, each row naming its
//! instance. `read` is `runvil audit`, of the file or (`read_database`) of the table.

pub(crate) mod database;
pub(crate) mod file;
pub(crate) mod read;
pub(crate) mod read_database;

use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

use aws_lc_rs::digest::{SHA256, digest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use database::DatabaseSink;
pub(crate) use file::FileSink;

use super::api_keys::hex;
use crate::pins::PinFile;

/// The version of the line format this module writes.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The most characters of an identity, namespace or tool a line keeps: a client names the
/// tool it calls, at any length, and a line must stay short (the rest is cut with `…`).
pub(crate) const MAX_AUDIT_FIELD_CHARS: usize = 256;

/// The audit file's name beside the pins file, when `--audit` is not given.
const DEFAULT_FILE_NAME: &str = "audit.jsonl";

/// One line of the audit trail (format version 1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AuditLine {
    /// [`Identity::label`](super::Identity::label); `None` for `unauthenticated`.
    pub(crate) identity: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) tool: Option<String>,
    /// Hex SHA-256 of the RFC 8785 form of the call's `arguments` ({} when absent):
    /// `args_sha256`.
    pub(crate) args_sha256: Option<String>,
    pub(crate) outcome: Outcome,
    pub(crate) duration_ms: Option<u64>,
    pub(crate) result_bytes: Option<u64>,
}

/// How a call or a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The tool answered.
    Ok,
    /// The tool answered with an error (`isError`, or a JSON-RPC error).
    ToolError,
    /// The call was wrong: unknown namespace or tool, bad arguments.
    Invalid,
    /// The policy refused it.
    Denied,
    /// No identity was admitted: no token, a bad token or key, a missing scope.
    Unauthenticated,
    /// The server could not be reached, or broke off.
    Transport,
    /// The client cancelled it.
    Cancelled,
    /// The deadline passed.
    Timeout,
}

impl Outcome {
    /// The word a line says.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ToolError => "tool_error",
            Self::Invalid => "invalid",
            Self::Denied => "denied",
            Self::Unauthenticated => "unauthenticated",
            Self::Transport => "transport",
            Self::Cancelled => "cancelled",
            Self::Timeout => "timeout",
        }
    }
}

/// A line as it is written and read: the fields of the format, in its order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Written {
    pub(crate) v: u32,
    pub(crate) time: String,
    pub(crate) identity: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) args_sha256: Option<String>,
    pub(crate) outcome: Outcome,
    pub(crate) duration_ms: Option<u64>,
    pub(crate) result_bytes: Option<u64>,
}

impl AuditLine {
    /// The line of a request no identity was admitted for.
    pub(crate) fn unauthenticated() -> Self {
        Self {
            identity: None,
            namespace: None,
            tool: None,
            args_sha256: None,
            outcome: Outcome::Unauthenticated,
            duration_ms: None,
            result_bytes: None,
        }
    }

    /// The line's text at `time`, without its newline.
    pub(crate) fn text(&self, time: SystemTime) -> String {
        let written = Written {
            v: FORMAT_VERSION,
            time: rfc3339(time),
            identity: self.identity.as_deref().map(capped),
            namespace: self.namespace.as_deref().map(capped),
            tool: self.tool.as_deref().map(capped),
            args_sha256: self.args_sha256.clone(),
            outcome: self.outcome,
            duration_ms: self.duration_ms,
            result_bytes: self.result_bytes,
        };
        // A struct of strings and numbers always serialises.
        serde_json::to_string(&written).unwrap_or_default()
    }
}

/// `text` within [`MAX_AUDIT_FIELD_CHARS`]: cut, with `…` as its last character, when longer.
fn capped(text: &str) -> String {
    match text.char_indices().nth(MAX_AUDIT_FIELD_CHARS) {
        None => text.to_owned(),
        Some(_) => {
            let keep = text
                .char_indices()
                .nth(MAX_AUDIT_FIELD_CHARS - 1)
                .map_or(0, |(i, _)| i);
            format!("{}…", &text[..keep])
        }
    }
}

/// `time` in RFC 3339, UTC, to the millisecond: `2026-12-01T09:30:00.123Z`.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Where audit lines go: the file (`--audit FILE`, O_APPEND, size-capped rotation), or the
/// store's table (`--store`). `record` never blocks on I/O for long: it may queue, bounded;
/// `Err` when the line cannot be kept (the gateway then refuses the call rather than serve it
/// unrecorded).
pub(crate) trait AuditSink: Send + Sync {
    fn record(&self, line: AuditLine) -> Result<(), AuditError>;

    /// Whether a line could be kept now. The gateway asks before it makes a call, so a call
    /// whose line could not be kept is refused before it reaches its server; `record` may
    /// still fail afterwards, and the gateway then withholds the call's result.
    fn accepting(&self) -> Result<(), AuditError> {
        Ok(())
    }

    /// The gateway stops: what is queued is kept, within a bound, before it ends.
    fn closing(&self) -> runvil_plugin::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Why a line could not be kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AuditError {
    reason: String,
}

impl AuditError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the audit line cannot be kept: {}", self.reason)
    }
}

/// Hex SHA-256 of the RFC 8785 (JCS) form of `arguments`, `{}` when absent: equal arguments
/// hash equal whatever their key order or number spelling, and the hash tells nothing of them
/// to someone who cannot guess them.
pub(crate) fn args_sha256(arguments: Option<&Value>) -> String {
    let canonical = match arguments {
        None => b"{}".to_vec(),
        // JCS fails only on a number JSON cannot hold, which a parsed Value never is; its
        // plain serialisation is then the next best stable form.
        Some(arguments) => serde_json_canonicalizer::to_vec(arguments)
            .unwrap_or_else(|_| arguments.to_string().into_bytes()),
    };
    hex(digest(&SHA256, &canonical).as_ref())
}

/// `audit.jsonl` beside the pins file, or `None` when no place for it is known (no `HOME`).
pub(crate) fn default_audit_path() -> Option<PathBuf> {
    Some(
        PinFile::default_place()?
            .path()
            .with_file_name(DEFAULT_FILE_NAME),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn a_line_has_exactly_the_format_s_fields_in_order_absent_ones_null() {
        let time = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_117_400_123);
        let line = AuditLine {
            identity: Some("alice@example.com".into()),
            namespace: Some("docs".into()),
            tool: Some("search".into()),
            args_sha256: Some(args_sha256(Some(&json!({"q": "tokio"})))),
            outcome: Outcome::Ok,
            duration_ms: Some(41),
            result_bytes: Some(1830),
        };
        assert_eq!(
            line.text(time),
            format!(
                r#"{{"v":1,"time":"2026-12-01T09:30:00.123Z","identity":"alice@example.com","namespace":"docs","tool":"search","args_sha256":"{}","outcome":"ok","duration_ms":41,"result_bytes":1830}}"#,
                args_sha256(Some(&json!({"q": "tokio"})))
            )
        );
        let refused = AuditLine::unauthenticated();
        assert_eq!(
            refused.text(SystemTime::UNIX_EPOCH),
            r#"{"v":1,"time":"1970-01-01T00:00:00.000Z","identity":null,"namespace":null,"tool":null,"args_sha256":null,"outcome":"unauthenticated","duration_ms":null,"result_bytes":null}"#
        );
        for (outcome, word) in [
            (Outcome::Ok, "ok"),
            (Outcome::ToolError, "tool_error"),
            (Outcome::Invalid, "invalid"),
            (Outcome::Denied, "denied"),
            (Outcome::Unauthenticated, "unauthenticated"),
            (Outcome::Transport, "transport"),
            (Outcome::Cancelled, "cancelled"),
            (Outcome::Timeout, "timeout"),
        ] {
            assert_eq!(outcome.word(), word);
            assert_eq!(serde_json::to_value(outcome).expect("a word"), json!(word));
        }
    }

    #[test]
    fn a_long_field_is_cut_at_its_limit() {
        let at_limit = "é".repeat(MAX_AUDIT_FIELD_CHARS);
        assert_eq!(capped(&at_limit), at_limit);
        let past = format!("{at_limit}x");
        let cut = capped(&past);
        assert_eq!(cut.chars().count(), MAX_AUDIT_FIELD_CHARS);
        assert_eq!(cut, format!("{}…", "é".repeat(MAX_AUDIT_FIELD_CHARS - 1)));
        let line = AuditLine {
            identity: Some(past.clone()),
            namespace: Some(past.clone()),
            tool: Some(past),
            args_sha256: None,
            outcome: Outcome::Invalid,
            duration_ms: None,
            result_bytes: None,
        };
        let written: Written =
            serde_json::from_str(&line.text(SystemTime::UNIX_EPOCH)).expect("json");
        for field in [written.identity, written.namespace, written.tool] {
            assert_eq!(field.as_deref(), Some(cut.as_str()));
        }
    }

    /// The RFC 8785 form: keys sorted by UTF-16 code units, numbers as ECMAScript writes
    /// them, no whitespace. The hashes are `printf '%s' FORM | sha256sum`.
    #[test]
    fn arguments_hash_as_their_canonical_form() {
        assert_eq!(
            args_sha256(None),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            "{{}}"
        );
        assert_eq!(args_sha256(Some(&json!({}))), args_sha256(None));
        let one: Value =
            serde_json::from_str(r#"{ "b": 1.0, "a": [true, null, "x"] }"#).expect("json");
        let other: Value = serde_json::from_str(r#"{"a":[true,null,"x"],"b":1}"#).expect("json");
        // {"a":[true,null,"x"],"b":1}
        assert_eq!(
            args_sha256(Some(&one)),
            "54a65415ad370228851a1da4b31b6fd42dc58b19a50d35cae759325f7388ce64"
        );
        assert_eq!(args_sha256(Some(&one)), args_sha256(Some(&other)));
        assert_ne!(
            args_sha256(Some(&json!({"a": 2}))),
            args_sha256(Some(&json!({"a": 1})))
        );
    }
}
