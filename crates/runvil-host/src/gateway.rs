//! The team gateway's three questions, as `runvil serve --http` asks them: who is let in
//! (the [`Gatekeeper`], each request ending as an [`Identity`]), what each may use (the
//! [`Policy`]) and what is recorded (an [`AuditLine`] per call and per refusal, through an
//! [`AuditSink`]).
//!
//! The HTTP server asks; this module decides. Its behaviour here is the smallest that is
//! real: no authentication (so the server listens on loopback only), everything allowed, and
//! no audit trail kept. The gatekeeper of tokens and API keys, the policy file and the audit
//! file fill in these same signatures.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aws_lc_rs::digest::{SHA256, digest};
use serde_json::Value;

/// Who made a request. `Debug` is hand-written: the label only, never a claim's value
/// beyond it.
#[derive(Clone)]
pub(crate) enum Identity {
    /// No authentication: only ever on a loopback address.
    Anonymous,
    /// A verified access token of the team's issuer: its `sub` and its claims.
    #[allow(dead_code)] // made by the gatekeeper of tokens
    Subject {
        sub: String,
        claims: serde_json::Map<String, Value>,
    },
    /// An API key of `--api-keys`, by its NAME.
    #[allow(dead_code)] // made by the gatekeeper of API keys
    Key { name: String },
}

impl Identity {
    /// As the audit trail and the policy name it: `anonymous`, the `sub`, or `key:NAME`.
    pub(crate) fn label(&self) -> String {
        match self {
            Self::Anonymous => "anonymous".to_owned(),
            Self::Subject { sub, .. } => sub.clone(),
            Self::Key { name } => format!("key:{name}"),
        }
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Identity({})", self.label())
    }
}

/// Lets requests in: the gateway's authentication settings, built from the flags.
pub(crate) struct Gatekeeper {
    _private: (),
}

/// The gatekeeper's settings, from the flags.
#[allow(dead_code)] // read by the gatekeeper of tokens and API keys
pub(crate) struct GatekeeperSettings {
    pub(crate) issuer: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) api_keys: Option<PathBuf>,
}

impl Gatekeeper {
    /// No authentication (only allowed when serving on a loopback address).
    pub(crate) fn open() -> Self {
        Self { _private: () }
    }

    /// From the flags; here only the open gatekeeper can be built.
    #[allow(dead_code)] // called once the flags of authentication exist
    pub(crate) fn from_settings(settings: GatekeeperSettings) -> Result<Self, GatewayError> {
        match settings {
            GatekeeperSettings {
                issuer: None,
                resource: None,
                required_scopes,
                api_keys: None,
            } if required_scopes.is_empty() => Ok(Self::open()),
            _ => Err(GatewayError(
                "authentication is not available in this build".to_owned(),
            )),
        }
    }

    /// Whether any authentication is configured.
    pub(crate) fn is_open(&self) -> bool {
        true
    }

    /// Admits a request by its `Authorization` header value (None when absent).
    pub(crate) async fn admit(&self, authorization: Option<&[u8]>) -> Result<Identity, Refusal> {
        let _ = authorization;
        Ok(Identity::Anonymous)
    }

    /// The RFC 9728 protected-resource metadata the gateway serves at
    /// `/.well-known/oauth-protected-resource` (and the path-suffixed form); None without an
    /// issuer.
    pub(crate) fn resource_metadata(&self) -> Option<Value> {
        None
    }
}

/// Why a request was not let in, with what the response must carry.
pub(crate) struct Refusal {
    /// 401, or 403 for a valid token without the required scope.
    pub(crate) status: u16,
    /// The `WWW-Authenticate` header value.
    pub(crate) www_authenticate: String,
    /// Why, for the log and the audit line: never the token.
    pub(crate) reason: String,
}

/// What each identity may use (`--policy FILE`); without a file everything is allowed.
pub(crate) struct Policy {
    _private: (),
}

impl Policy {
    pub(crate) fn allow_all() -> Self {
        Self { _private: () }
    }

    /// Reads and checks the file; here no policy file can be read.
    #[allow(dead_code)] // called once the flag of the policy file exists
    pub(crate) fn load(path: &Path) -> Result<Self, GatewayError> {
        Err(GatewayError(format!(
            "{}: policy files are not available in this build",
            path.display()
        )))
    }

    /// Whether `identity` may see and call `tool` of `namespace`.
    pub(crate) fn allows(&self, identity: &Identity, namespace: &str, tool: &str) -> bool {
        let _ = (identity, namespace, tool);
        true
    }

    /// Whether `identity` may see any tool of `namespace` (for the every-server listing).
    pub(crate) fn allows_namespace(&self, identity: &Identity, namespace: &str) -> bool {
        let _ = (identity, namespace);
        true
    }
}

/// One line of the audit trail (format version 1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AuditLine {
    /// [`Identity::label`]; `None` for `unauthenticated`.
    pub(crate) identity: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) tool: Option<String>,
    /// Hex SHA-256 of the RFC 8785 form of the call's `arguments` ({} when absent).
    pub(crate) args_sha256: Option<String>,
    pub(crate) outcome: Outcome,
    pub(crate) duration_ms: Option<u64>,
    pub(crate) result_bytes: Option<u64>,
}

/// How a call or a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    ToolError,
    Invalid,
    Denied,
    Unauthenticated,
    Transport,
    Cancelled,
    Timeout,
}

/// Where audit lines go. `record` never blocks on I/O for long: it may queue, bounded; `Err`
/// when the line cannot be kept (the gateway then refuses the call rather than serve it
/// unrecorded).
pub(crate) trait AuditSink: Send + Sync {
    fn record(&self, line: AuditLine) -> Result<(), AuditError>;

    /// Whether a line could be kept now. The gateway asks before it makes a call, so a call
    /// whose line could not be kept is refused before it reaches its server; `record` may
    /// still fail afterwards, and the gateway then withholds the call's result.
    fn accepting(&self) -> Result<(), AuditError> {
        Ok(())
    }
}

/// An audit trail that keeps nothing.
pub(crate) struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&self, _line: AuditLine) -> Result<(), AuditError> {
        Ok(())
    }
}

/// Hex SHA-256 of the RFC 8785 form of `arguments`, `{}` when absent.
pub(crate) fn args_sha256(arguments: Option<&Value>) -> String {
    let canonical = match arguments {
        None => b"{}".to_vec(),
        Some(arguments) => serde_json_canonicalizer::to_vec(arguments)
            .unwrap_or_else(|_| arguments.to_string().into_bytes()),
    };
    digest(&SHA256, &canonical)
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// What the HTTP server holds for its whole run: the gatekeeper, the policy and the audit
/// trail.
pub(crate) struct Gateway {
    pub(crate) gatekeeper: Gatekeeper,
    pub(crate) policy: Policy,
    pub(crate) audit: Arc<dyn AuditSink>,
}

impl Gateway {
    /// No authentication, everything allowed, nothing recorded.
    pub(crate) fn open() -> Self {
        Self {
            gatekeeper: Gatekeeper::open(),
            policy: Policy::allow_all(),
            audit: Arc::new(NoAudit),
        }
    }
}

/// Errors of this boundary (bad flags, unreadable files): they name the file or key, never a
/// value from them.
#[derive(Debug)]
pub(crate) struct GatewayError(String);

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a line could not be kept.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AuditError {
    reason: String,
}

impl AuditError {
    #[allow(dead_code)] // made by a sink that can fail
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
