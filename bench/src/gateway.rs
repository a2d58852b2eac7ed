//! The gateway client: `runvil serve --http` (the release build of the workspace's `runvil`,
//! built when missing) in front of the benchmark's server, with token validation on (an
//! identity provider of the fixture's, one access token presented on every request), called
//! by the raw client at 2026-07-28. Its figures against the Pack's direct call are what a
//! team pays for the gateway: one more HTTP hop, the token's check (cached once seen, until
//! it expires), the policy, the audit line and the gateway's own Pack.

// Starting cargo and the gateway is what this module is for.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use shared_mcp_fixture::idp::{IdentityProvider, now};

use crate::clients::NAMESPACE;

/// The gateway's public URL: the audience of its tokens.
const RESOURCE: &str = "https://gateway.bench.example/mcp";
/// How long the access token is valid: longer than any run, so the gateway checks its
/// signature once and then finds it in its cache.
const TOKEN_LIFETIME: Duration = Duration::from_secs(3600);
/// A bound on one identity's requests that the benchmark never meets: its rate is the
/// figure, not the limit's.
const UNBOUNDED: &str = "1000000";

/// The identity provider whose token every gateway of a run checks, and that token: one for
/// all, so instances behind a balancer accept the same client.
pub(crate) struct Issuer {
    idp: Arc<IdentityProvider>,
    /// The access token a client presents.
    pub(crate) token: String,
}

impl Issuer {
    pub(crate) async fn start() -> Issuer {
        let idp = IdentityProvider::start().await;
        let mut claims = idp.claims(RESOURCE, "bench@example.com");
        claims["exp"] = json!(now() + TOKEN_LIFETIME.as_secs());
        let token = idp.token(&claims);
        Issuer {
            idp: Arc::new(idp),
            token,
        }
    }
}

/// A running gateway and what it needs; dropping it ends the gateway and removes its files.
pub(crate) struct Gateway {
    child: Child,
    /// Its MCP endpoint.
    pub(crate) url: String,
    /// The access token a client presents.
    pub(crate) token: String,
    /// Its config, pins and audit files (and the session key, unless given one).
    dir: PathBuf,
    /// The issuer of the token, serving its keys for as long as the gateway runs.
    _idp: Arc<IdentityProvider>,
}

impl Gateway {
    /// Starts an identity provider and `runvil serve --http` in front of `url` (as the
    /// namespace the Pack knows it by), and waits until the gateway listens.
    pub(crate) async fn start(url: &str) -> Result<Gateway, String> {
        Gateway::start_with(url, &Issuer::start().await, &[]).await
    }

    /// The same gateway checking `issuer`'s token, with `extra` flags (`--store ...`, a
    /// shared `--session-key-file`): one of several instances.
    pub(crate) async fn start_with(
        url: &str,
        issuer: &Issuer,
        extra: &[String],
    ) -> Result<Gateway, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let runvil = runvil()?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("bench-gateway-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        let config = dir.join("mcp.json");
        let servers = json!({"mcpServers": {NAMESPACE: {"url": url}}});
        std::fs::write(&config, servers.to_string())
            .map_err(|error| format!("{}: {error}", config.display()))?;
        let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let mut command = Command::new(&runvil);
        command
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(&config)
            .args(["--auth-issuer", issuer.idp.issuer(), "--resource", RESOURCE])
            .args(["--rate", UNBOUNDED, "--burst", UNBOUNDED])
            .args(["--max-requests", UNBOUNDED, "--max-streams", UNBOUNDED]);
        // With --store the audit lines are rows of the store, and runvil refuses --audit.
        if !extra.iter().any(|flag| flag == "--store") {
            command.args(["--audit", &path("audit.jsonl")]);
        }
        if !extra.iter().any(|flag| flag == "--session-key-file") {
            command.args(["--session-key-file", &path("session.key")]);
        }
        let mut child = command
            .args(extra)
            .env("RUNVIL_PINS", path("pins.json"))
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", runvil.display()))?;
        let stderr = child.stderr.take().ok_or("the gateway's stderr")?;
        // Its first lines say where it listens; the rest is drained so it never blocks.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut sender = Some(sender);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("runvil: serving MCP at ")
                    && let Some(sender) = sender.take()
                {
                    let _ = sender.send(rest.split(' ').next().unwrap_or_default().to_owned());
                }
            }
        });
        let url = match receiver.await {
            Ok(url) => url,
            Err(_) => {
                let status = child.wait().ok();
                return Err(format!(
                    "the gateway did not start (exit status {status:?})"
                ));
            }
        };
        Ok(Gateway {
            child,
            url,
            token: issuer.token.clone(),
            dir,
            _idp: Arc::clone(&issuer.idp),
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `runvil` beside this benchmark's binary, built by cargo (at once when it is up to
/// date) in the benchmark's own profile.
pub(crate) fn runvil() -> Result<PathBuf, String> {
    let bench = std::env::current_exe().map_err(|error| format!("cannot find bench: {error}"))?;
    let folder = bench.parent().ok_or("bench has no folder")?;
    let profile = folder
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("bench's folder has no name")?;
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build.args(["build", "--quiet", "-p", "runvil-host", "--bin", "runvil"]);
    match profile {
        "debug" => {}
        "release" => {
            build.arg("--release");
        }
        other => {
            build.args(["--profile", other]);
        }
    }
    let status = build
        .status()
        .map_err(|error| format!("cannot run cargo to build runvil: {error}"))?;
    let runvil = folder.join("runvil");
    if !status.success() || !Path::new(&runvil).exists() {
        return Err(format!(
            "cannot build runvil for the gateway figures ({status}); run `cargo build \
             --release -p runvil-host` first"
        ));
    }
    Ok(runvil)
}
