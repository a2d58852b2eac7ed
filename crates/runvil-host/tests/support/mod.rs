//! What the `runvil` tests share: a real MCP server for `runvil` to reach (the workspace's
//! fixture, rmcp over Streamable HTTP on 127.0.0.1 in the test's own process), temporary config
//! files, and running the binary.

// Each test file uses part of this module.
#![allow(dead_code)]

pub(crate) mod gateway;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet};

/// Runs `runvil` with `args` and quiet logs, as a person would from a shell.
pub(crate) fn runvil(args: &[&str]) -> Output {
    runvil_command(args).output().expect("runvil runs")
}

/// `runvil` with `args`, quiet logs, no config from the environment, and a pins file of its
/// own ([`scratch_pins`]); a test of pins sets `RUNVIL_PINS` again.
pub(crate) fn runvil_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_runvil"));
    command
        .args(args)
        .env("RUST_LOG", "off")
        .env_remove("RUNVIL_MCP_CONFIG")
        .env("RUNVIL_PINS", scratch_pins());
    command
}

/// A pins file no other command uses, in the scratch folder cargo gives integration tests
/// (under the target folder): every command trusts its servers' tools as it first lists them,
/// as a new user's would, whatever another test (or an earlier run, on a port used again)
/// listed, and no test writes the pins of the user running it. Each in a folder of its own,
/// since what a command keeps beside the pins file (the gateway's `audit.jsonl`) is its own
/// too.
pub(crate) fn scratch_pins() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("runvil-pins-{}", std::process::id()))
        .join(n.to_string())
        .join("pins.json")
}

/// Runs `runvil` with `args` in `dir`, with `home` as HOME (and its `.config` as the user's
/// config folder), as a person would in a project.
pub(crate) fn runvil_in(dir: &Temp, home: &Temp, args: &[&str]) -> Output {
    runvil_command(args)
        .current_dir(dir.path())
        .env("HOME", home.path())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("runvil runs")
}

/// A URL on this machine where nothing listens: a port the OS just gave and took back.
pub(crate) fn unreachable_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    drop(listener);
    url
}

/// Runs `runvil` with `args`, waits (up to 20 s) until `reached` says its call is at the
/// server, sends it `signal` (`INT`, `TERM`, `HUP`), and answers its output once it exited
/// (within 15 s).
pub(crate) async fn signal_during_call(
    args: &[&str],
    signal: &str,
    mut reached: impl AsyncFnMut() -> bool,
) -> Output {
    let child = tokio::process::Command::from(runvil_command(args))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runvil runs");
    wait_until(
        "the call never reached the server",
        Duration::from_secs(20),
        async || reached().await,
    )
    .await;
    let pid = child.id().expect("a pid").to_string();
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .expect("runvil exits after the signal")
        .expect("runvil's output")
}

/// A user who is not the one running the tests (`nobody` on most systems).
pub(crate) const ANOTHER_USER: u32 = 65_534;

/// Whether this process may give a file to [`ANOTHER_USER`], which only root may; otherwise
/// says in one line why `test` is skipped. CI runs as root: there a skip is a failure.
pub(crate) fn may_give_away(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} must run as root under CI=true"
    );
    // Straight to stderr: the harness hides `eprintln!` of a passing test, and a skip
    // nobody sees would read as a pass.
    let _ = writeln!(
        std::io::stderr(),
        "skipped {test}: giving a file to another user needs root"
    );
    false
}

/// Bytes as text, for assertions.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A path under the system's temp dir that no other test (or test run) uses.
pub(crate) fn unique_temp_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    std::env::temp_dir().join(format!("runvil-test-{}-{n}-{name}", std::process::id()))
}

/// A file or directory under the temp dir, removed when dropped.
pub(crate) struct Temp(pub(crate) PathBuf);

impl Temp {
    /// A config file whose `mcpServers` object is `servers`.
    pub(crate) fn config(servers: Value) -> Self {
        let path = unique_temp_path("mcp.json");
        let text = json!({ "mcpServers": servers }).to_string();
        std::fs::write(&path, text).expect("config written");
        Self(path)
    }

    /// An empty directory, the user's alone (`0700`, whatever the umask), so runvil keeps its
    /// record files in it.
    pub(crate) fn dir() -> Self {
        use std::os::unix::fs::DirBuilderExt;
        let path = unique_temp_path("dir");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&path)
            .expect("dir made");
        Self(path)
    }

    /// Writes `text` to `relative` inside this directory, making its parents.
    pub(crate) fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.0.join(relative);
        let parent = path.parent().expect("a parent");
        std::fs::create_dir_all(parent).expect("parents made");
        std::fs::write(&path, text).expect("file written");
        path
    }

    /// The path as a `&str`, for command lines.
    pub(crate) fn arg(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tools of the server `runvil`'s tests reach: one answer of each kind a command shows.
const TOOLS: &[&str] = &["echo", "fails", "progress", "slow"];

/// The workspace's MCP fixture with [`TOOLS`], rmcp's defaults (sessions for the session-based
/// revisions, 2026-07-28 without one), on a free loopback port until dropped.
pub(crate) async fn backend() -> Fixture {
    backend_late(Duration::ZERO).await
}

/// [`backend`], accepting connections at once but answering nothing for `late`: a client sees
/// it `loading` that long.
pub(crate) async fn backend_late(late: Duration) -> Fixture {
    Fixture::builder()
        .tools(ToolSet::Only(TOOLS))
        .late(late)
        .start()
        .await
}

/// A config naming `server` as `backend`.
pub(crate) fn config_for(server: &Fixture) -> Temp {
    Temp::config(json!({ "backend": { "url": server.url() } }))
}

/// Waits until a condition holds: the workspace's one polling wait, for what nothing announces
/// (another process's state, a file).
pub(crate) use shared_mcp_fixture::wait_until;

/// `GET path` of `base` (`https://127.0.0.1:PORT`) over TLS, trusting only `cert`: the raw
/// answer, headers and body.
pub(crate) async fn tls_get(base: &str, cert: &Path, path: &str) -> String {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
    use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::aws_lc_rs};

    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(cert).expect("the test certificate") {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let config = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let address = base.strip_prefix("https://").expect("an https base");
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tls = connector
        .connect(name, tcp)
        .await
        .expect("the TLS handshake");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    text(&answer)
}
