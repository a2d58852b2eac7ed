//! The Python SDK's dual-era server (`tests/peers/python_sdk_server.py`) in a child process.
//!
//! On first use its packages are installed with pip, at the versions
//! `tests/peers/requirements.txt` pins, into a virtual environment under the git-ignored
//! `.tools/python-sdk` ([`crate::peers`]), so `cargo test` needs nothing set up
//! beyond Python 3 and a reachable PyPI. The server picks its own port and is killed when
//! dropped.

// The crate's lint rules forbid starting a process because the library must never do it; a
// test starting the peer it talks to is outside that rule.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long the server may take to print its port (Python's imports included).
const LISTEN_WITHIN: Duration = Duration::from_secs(60);

/// A running server; dropping it kills the process.
pub struct PythonServer {
    child: Child,
    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
}

impl PythonServer {
    /// Installs the packages if needed and starts the server.
    pub async fn start() -> PythonServer {
        Self::start_with(&[]).await
    }

    /// [`PythonServer::start`] with the server's own arguments (`--legacy`).
    pub async fn start_with(args: &'static [&'static str]) -> PythonServer {
        // The Pack's interoperability rests on this peer: it is never skipped.
        let python = crate::peers::python().unwrap_or_else(|why| panic!("{why}"));
        tokio::task::spawn_blocking(move || start(&python, args))
            .await
            .expect("the start task")
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The workspace's folder of peer programs.
fn peers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers")
}

fn start(python: &Path, args: &[&str]) -> PythonServer {
    let mut child = Command::new(python)
        .arg(peers().join("python_sdk_server.py"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the Python SDK server");
    let stdout = child.stdout.take().expect("its stdout");
    // The first line names the port; read on a thread so a silent server cannot hang the test.
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver.recv_timeout(LISTEN_WITHIN).unwrap_or_default();
    let port = line
        .strip_prefix("listening ")
        .and_then(|port| port.trim().parse::<u16>().ok());
    let mut server = PythonServer {
        child,
        url: String::new(),
    };
    let port = port.unwrap_or_else(|| panic!("the Python SDK server did not start: {line:?}"));
    server.url = format!("http://127.0.0.1:{port}/mcp");
    server
}
