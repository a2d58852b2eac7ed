//! The team gateway's three questions, answered for `runvil serve --http`: who is let in
//! (`gatekeeper`, with the issuer's keys in `issuer`, access tokens in `token` and API keys in
//! `api_keys`, each request ending as an `identity`), what each may use (`policy`), and what is
//! recorded (`audit`: the line, the file it is appended to, and `runvil audit`, which reads it).
//!
//! The HTTP server asks; this module decides. It never sees a request's arguments or results
//! beyond the hash and the size the audit line keeps, and nothing it says (a refusal's
//! reason, an error, a log line, a `Debug`) holds a token, a key or a key's hash.

mod api_keys;
mod audit;
mod gatekeeper;
mod identity;
mod issuer;
mod policy;
mod token;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) use api_keys::new_key;
pub(crate) use audit::{
    AuditError, AuditLine, AuditSink, DatabaseSink, FileSink, Outcome, args_sha256,
    default_audit_path,
    read::{Filter, read as read_audit},
    read_database::read as read_audit_store,
};
pub(crate) use gatekeeper::{Gatekeeper, GatekeeperSettings};
pub(crate) use identity::Identity;
pub(crate) use policy::Policy;

use runvil_store::{Database, Instance};

use crate::cli::GatewayArgs;
use crate::file_owner;

/// The most bytes a file of the gateway's settings (`--api-keys`, `--policy`) may hold: far
/// more than thousands of keys or rules, and a bound on a file that never ends.
pub(crate) const MAX_SETTINGS_FILE_BYTES: u64 = 1024 * 1024;

/// Errors of this boundary: bad flags and files that cannot be used. Each names the flag or
/// the file (and the line or rule), never a value read from them.
#[derive(Debug, PartialEq)]
pub(crate) enum GatewayError {
    /// A flag's value, or flags that do not go together.
    Flag {
        /// The flag, as written on the command line: `--auth-issuer`.
        flag: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A file of the gateway's that cannot be used.
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line or rule where there is one.
        problem: String,
    },
}

impl GatewayError {
    fn flag(flag: &'static str, problem: impl Into<String>) -> Self {
        Self::Flag {
            flag,
            problem: problem.into(),
        }
    }

    fn file(path: &std::path::Path, problem: impl Into<String>) -> Self {
        Self::File {
            path: path.to_owned(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag { flag, problem } => write!(f, "{flag}: {problem}"),
            Self::File { path, problem } => write!(f, "{}: {problem}", path.display()),
        }
    }
}

/// Reads a file of the gateway's settings whole, within [`MAX_SETTINGS_FILE_BYTES`].
///
/// These files say who gets in and what each may use, so one that another user may change
/// (its owner, its permissions, or its folder's) is refused, as the audit and key files are.
/// Others may read them: the keys file holds only hashes of keys, and a policy is often kept
/// in a shared checkout.
fn read_settings_file(path: &std::path::Path) -> Result<String, GatewayError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    file_owner::check_folder(path, "gateway's settings")
        .map_err(|e| GatewayError::file(path, e))?;
    let file = std::fs::File::open(path).map_err(|e| GatewayError::file(path, e.to_string()))?;
    // Checked on what was opened, not on the name, so nothing can be swapped in between.
    let metadata = file
        .metadata()
        .map_err(|e| GatewayError::file(path, e.to_string()))?;
    if !metadata.is_file() {
        return Err(GatewayError::file(path, "not a file"));
    }
    if let Some(owner) = file_owner::foreign_owner(&metadata) {
        let chown = format!(
            "run `chown {} {}`",
            file_owner::running_user(),
            path.display()
        );
        return Err(GatewayError::file(
            path,
            format!("another user may change it ({owner}); {chown}"),
        ));
    }
    let mode = metadata.permissions().mode();
    if mode & file_owner::OTHERS_WRITE != 0 {
        return Err(GatewayError::file(
            path,
            format!(
                "other users may change it (its permissions are {:o}); run `chmod go-w {}`",
                mode & 0o777,
                path.display()
            ),
        ));
    }
    let mut text = String::new();
    // One byte past the cap tells a file at the cap from a longer one.
    file.take(MAX_SETTINGS_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => GatewayError::file(path, "not UTF-8 text"),
            _ => GatewayError::file(path, e.to_string()),
        })?;
    if text.len() as u64 > MAX_SETTINGS_FILE_BYTES {
        return Err(GatewayError::file(
            path,
            format!("larger than {MAX_SETTINGS_FILE_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// What the HTTP server holds for its whole run: the gatekeeper, the policy and the audit
/// trail, built from the flags before it listens.
pub(crate) struct Gateway {
    pub(crate) gatekeeper: Gatekeeper,
    pub(crate) policy: Policy,
    pub(crate) audit: Arc<dyn AuditSink>,
}

impl Gateway {
    /// From the flags of `runvil serve --http`: reads the key file and the policy, opens the
    /// audit trail (with `--store`, the database's table, whose writer starts on this
    /// runtime; else the file, `--audit` or `audit.jsonl` beside the pins file), and refuses to
    /// serve a non-loopback address without authentication. No network I/O.
    pub(crate) fn from_args(
        args: &GatewayArgs,
        loopback: bool,
        store: Option<(Arc<Database>, Arc<Instance>)>,
    ) -> Result<Self, GatewayError> {
        let gatekeeper = Gatekeeper::from_settings(GatekeeperSettings {
            issuer: args.auth_issuer.clone(),
            resource: args.resource.clone(),
            required_scopes: args.required_scope.clone(),
            api_keys: args.api_keys.clone(),
        })?;
        if gatekeeper.is_open() && !loopback {
            return Err(GatewayError::flag(
                "--http",
                "a gateway on an address other than loopback needs authentication: \
                 --auth-issuer with --resource, or --api-keys",
            ));
        }
        let policy = match &args.policy {
            Some(path) => Policy::load(path)?,
            None => Policy::allow_all(),
        };
        let audit: Arc<dyn AuditSink> = match (store, &args.audit) {
            (Some(_), Some(_)) => {
                return Err(GatewayError::flag(
                    "--audit",
                    "with --store the audit trail is the store's table (`runvil audit --store` \
                     reads it), not a file",
                ));
            }
            (Some((database, instance)), None) => Arc::new(DatabaseSink::start(database, instance)),
            (None, path) => {
                let path = match path {
                    Some(path) => path.clone(),
                    None => default_audit_path().ok_or_else(|| {
                        GatewayError::flag(
                            "--audit",
                            "no place for the audit file: set HOME or --audit",
                        )
                    })?,
                };
                Arc::new(FileSink::open(&path)?)
            }
        };
        Ok(Self {
            gatekeeper,
            policy,
            audit,
        })
    }
}

/// Log lines of this thread, at every level, for the tests that prove what is and is not
/// logged.
#[cfg(test)]
pub(crate) struct CapturedLogs {
    lines: Arc<std::sync::Mutex<Vec<u8>>>,
    _installed: tracing::subscriber::DefaultGuard,
}

#[cfg(test)]
impl CapturedLogs {
    /// Captures from now until dropped.
    pub(crate) fn start() -> Self {
        #[derive(Clone)]
        struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("lines").extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = Lines(Arc::clone(&lines));
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        Self {
            lines,
            _installed: tracing::subscriber::set_default(subscriber),
        }
    }

    /// What was logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.lines.lock().expect("lines")).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every limit of the gateway, as `policy/gateway.md` writes it.
    fn limits() -> Vec<(&'static str, String)> {
        use crate::cli;
        use crate::serve::http;
        let secs = |d: std::time::Duration| format!("{} s", d.as_secs());
        let algorithms: Vec<String> = issuer::ACCEPTED_ALGORITHMS
            .iter()
            .map(|alg| format!("{alg:?}"))
            .collect();
        vec![
            ("ISSUER_FETCH_DEADLINE", secs(issuer::ISSUER_FETCH_DEADLINE)),
            (
                "MAX_ISSUER_ANSWER_BYTES",
                issuer::MAX_ISSUER_ANSWER_BYTES.to_string(),
            ),
            ("JWKS_REFETCH_INTERVAL", secs(issuer::JWKS_REFETCH_INTERVAL)),
            ("JWKS_RETRY_INTERVAL", secs(issuer::JWKS_RETRY_INTERVAL)),
            ("JWKS_MAX_AGE", secs(issuer::JWKS_MAX_AGE)),
            ("ACCEPTED_ALGORITHMS", algorithms.join(", ")),
            ("MAX_CLOCK_SKEW", secs(token::MAX_CLOCK_SKEW)),
            ("MAX_TOKEN_BYTES", token::MAX_TOKEN_BYTES.to_string()),
            ("MAX_CACHED_TOKENS", token::MAX_CACHED_TOKENS.to_string()),
            (
                "MAX_SETTINGS_FILE_BYTES",
                MAX_SETTINGS_FILE_BYTES.to_string(),
            ),
            (
                "MAX_KEY_NAME_CHARS",
                api_keys::MAX_KEY_NAME_CHARS.to_string(),
            ),
            (
                "MAX_LOGGED_NAME_CHARS",
                policy::MAX_LOGGED_NAME_CHARS.to_string(),
            ),
            (
                "MAX_AUDIT_FIELD_CHARS",
                audit::MAX_AUDIT_FIELD_CHARS.to_string(),
            ),
            (
                "MAX_AUDIT_FILE_BYTES",
                audit::file::MAX_AUDIT_FILE_BYTES.to_string(),
            ),
            (
                "AUDIT_FILES_KEPT",
                audit::file::AUDIT_FILES_KEPT.to_string(),
            ),
            (
                "AUDIT_QUEUE_LINES",
                audit::file::AUDIT_QUEUE_LINES.to_string(),
            ),
            (
                "MAX_AUDIT_LINE_BYTES",
                audit::read::MAX_AUDIT_LINE_BYTES.to_string(),
            ),
            ("MAX_BODY_BYTES", http::MAX_BODY_BYTES.to_string()),
            ("MAX_HEADER_BYTES", http::MAX_HEADER_BYTES.to_string()),
            ("SEND_TIMEOUT", secs(http::SEND_TIMEOUT)),
            ("MAX_CONNECTIONS", http::MAX_CONNECTIONS.to_string()),
            ("MAX_IDENTITIES", http::MAX_IDENTITIES.to_string()),
            ("DEFAULT_RATE", cli::DEFAULT_RATE.to_string()),
            ("DEFAULT_BURST", cli::DEFAULT_BURST.to_string()),
            (
                "DEFAULT_MAX_REQUESTS",
                cli::DEFAULT_MAX_REQUESTS.to_string(),
            ),
            ("DEFAULT_MAX_STREAMS", cli::DEFAULT_MAX_STREAMS.to_string()),
            ("DEFAULT_DRAIN_SECS", cli::DEFAULT_DRAIN_SECS.to_string()),
            (
                "DEFAULT_CALL_TIMEOUT_SECS",
                cli::DEFAULT_CALL_TIMEOUT_SECS.to_string(),
            ),
            ("SESSION_LIFETIME", secs(http::SESSION_LIFETIME)),
            (
                "MAX_REVOKED_SESSIONS",
                http::MAX_REVOKED_SESSIONS.to_string(),
            ),
        ]
    }

    #[test]
    fn the_limits_match_policy_gateway_md() {
        let rows = crate::policy::tests::page_rows(include_str!("../../../policy/gateway.md"));
        let code: Vec<(String, String)> = limits()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        for row in &code {
            assert!(
                rows.contains(row),
                "policy/gateway.md lacks or differs: {row:?}"
            );
        }
        for row in &rows {
            assert!(
                code.contains(row),
                "policy/gateway.md has a row the code lacks: {row:?}"
            );
        }
    }

    #[test]
    fn a_gateway_off_loopback_needs_authentication_and_its_files_are_read_at_start() {
        let dir = std::env::temp_dir().join(format!("runvil-gateway-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let audit = dir.join("audit.jsonl");
        let args = GatewayArgs {
            audit: Some(audit.clone()),
            ..GatewayArgs::default()
        };
        let error = Gateway::from_args(&args, false, None)
            .err()
            .expect("refused");
        assert_eq!(
            error.to_string(),
            "--http: a gateway on an address other than loopback needs authentication: \
             --auth-issuer with --resource, or --api-keys"
        );
        let gateway = Gateway::from_args(&args, true, None).expect("loopback, open");
        assert!(gateway.gatekeeper.is_open());
        drop(gateway);
        assert!(audit.exists(), "the audit file is opened at start");

        let policy = dir.join("policy.json");
        std::fs::write(
            &policy,
            r#"{"rules": [{"match": {"sub": "a"}, "allow": ["ns"]}]}"#,
        )
        .expect("written");
        let args = GatewayArgs {
            policy: Some(policy.clone()),
            ..args
        };
        let error = Gateway::from_args(&args, true, None)
            .err()
            .expect("refused");
        assert_eq!(
            error.to_string(),
            format!(
                "{}: rules[0].allow[0] is not `*`, `NAMESPACE/*` or `NAMESPACE/TOOL`",
                policy.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
