//! The server process (this binary as `bench serve`): started with its mode, read for its
//! ports, killed when dropped.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// How a server answers, as the table names it (in the order the table shows them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// rmcp's defaults under `axum::serve`: Nagle on, sessions, SSE answers.
    Default,
    /// The same with TCP_NODELAY on accepted sockets.
    NoDelay,
    /// Stateless, `application/json` answers (Nagle on, as `axum::serve` leaves it).
    Json,
    /// TCP_NODELAY, and 2026-07-28 served: every client speaks it, stateless.
    Modern,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Default => "default (Nagle, SSE)",
            Mode::NoDelay => "nodelay (SSE)",
            Mode::Json => "stateless JSON",
            Mode::Modern => "2026-07-28 (nodelay, SSE)",
        }
    }

    /// Its name for `bench --only`.
    pub(crate) fn section(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::NoDelay => "nodelay",
            Mode::Json => "json",
            Mode::Modern => "modern",
        }
    }

    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Default => &[],
            Mode::NoDelay => &["--nodelay"],
            Mode::Json => &["--json"],
            Mode::Modern => &["--nodelay", "--modern"],
        }
    }

    /// Whether the server speaks 2026-07-28, which the raw clients then speak too.
    pub(crate) fn modern(self) -> bool {
        self == Mode::Modern
    }
}

/// A running `bench serve`; dropping it kills the process.
pub(crate) struct Server {
    child: Child,
    /// The MCP endpoint of each listener, `http://127.0.0.1:<port>/mcp`.
    pub(crate) urls: Vec<String>,
}

impl Server {
    /// Starts `bin` (this program) as the server in `mode` with `tools` tools on each of `listeners` ports.
    pub(crate) fn start(
        bin: &Path,
        mode: Mode,
        tools: usize,
        listeners: usize,
    ) -> Result<Server, String> {
        let mut args: Vec<String> = mode.args().iter().map(|a| (*a).to_owned()).collect();
        args.extend(["--tools".to_owned(), tools.to_string()]);
        args.extend(["--listeners".to_owned(), listeners.to_string()]);
        Self::spawn(bin, &args, listeners)
    }

    /// Starts the server whose catalog of `tools` tools changes,
    /// one tool fewer or all of them again, each time it is told to
    /// ([`Server::change`]), and which then tells the Pack.
    pub(crate) fn start_changing(bin: &Path, tools: usize) -> Result<Server, String> {
        let args = [
            "--changing".to_owned(),
            "--tools".to_owned(),
            tools.to_string(),
        ];
        Self::spawn(bin, &args, 1)
    }

    /// Has the changing server change its tools and tell of it.
    pub(crate) fn change(&mut self) -> Result<(), String> {
        let stdin = self.child.stdin.as_mut().ok_or("the server has no stdin")?;
        stdin
            .write_all(crate::serve::CHANGE)
            .and_then(|()| stdin.flush())
            .map_err(|error| format!("cannot tell the server to change: {error}"))
    }

    fn spawn(bin: &Path, args: &[String], listeners: usize) -> Result<Server, String> {
        let mut child = Command::new(bin)
            .arg(crate::serve::SUBCOMMAND)
            .args(args)
            // Our end of stdin stays open for as long as the child lives: closing it (or
            // this process dying) ends the server.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", bin.display()))?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        let server_ports: Vec<u16> = line
            .split_whitespace()
            .filter_map(|port| port.parse().ok())
            .collect();
        let mut server = Server {
            child,
            urls: server_ports
                .iter()
                .map(|port| format!("http://127.0.0.1:{port}/mcp"))
                .collect(),
        };
        if !matches!(read, Some(Ok(_))) || server.urls.len() != listeners {
            let status = server.child.try_wait().ok().flatten();
            return Err(format!(
                "`{} {}` did not print {listeners} port(s) (it printed {line:?}; exit \
                 status {status:?})",
                bin.display(),
                crate::serve::SUBCOMMAND
            ));
        }
        Ok(server)
    }

    /// The first (usually only) endpoint.
    pub(crate) fn url(&self) -> &str {
        self.urls.first().map_or("", String::as_str)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
