//! The server `cargo run --release -p bench` measures against: the workspace's one MCP fixture
//! (rmcp's own Streamable HTTP server) with `echo(text, repeat?)` and generated tools, run as
//! a separate process so client and server do not share a runtime.
//!
//! ```text
//! bench serve [--nodelay] [--json] [--modern] [--tools N] [--listeners N]
//! bench serve --changing [--tools N]
//! ```
//!
//! - no flag: rmcp's defaults, as `axum::serve` leaves them: Nagle on, sessions, SSE answers,
//!   and only the session-based revisions (up to 2025-11-25), so every client speaks those;
//! - `--nodelay`: TCP_NODELAY on every accepted socket (`ListenerExt::tap_io`);
//! - `--json`: stateless, `application/json` answers (`legacy_session_mode(false)` +
//!   `json_response(true)`);
//! - `--modern`: 2026-07-28 served as well, which rmcp serves without a session;
//! - `--tools N`: `echo` and N - 1 more tools (`tool_001`, ...), for listing benchmarks;
//! - `--listeners N`: N independent servers (one port and one session manager each) in this
//!   one process, standing for N remote servers;
//! - `--changing`: instead, the fixture's changing server (2025-11-25, `tools.listChanged`)
//!   with N tools, which lists one tool fewer, or all N again, each time a [`CHANGE`] line
//!   arrives on stdin, and tells of it on the session's standalone stream.
//!
//! It prints its ports on one line of stdout, separated by spaces, and exits when its stdin
//! closes (so it never outlives the benchmark) or when it is killed.

// The ports on stdout are the process's answer to the benchmark that started it.
#![allow(clippy::print_stdout)]

use std::io::Read;
use std::process::ExitCode;

use serde_json::Value;
use shared_mcp_fixture::changing::{Changing, Era, tool};
use shared_mcp_fixture::hostile::Hostile;
use shared_mcp_fixture::{Answers, Fixture, Revisions, ToolSet};

/// The line on stdin that makes the changing server change.
pub(crate) const CHANGE: &[u8] = b"change\n";

/// What the command line asked for.
#[derive(Debug, Clone, Copy)]
struct Options {
    nodelay: bool,
    json: bool,
    modern: bool,
    tools: usize,
    listeners: usize,
    changing: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        nodelay: false,
        json: false,
        modern: false,
        tools: 1,
        listeners: 1,
        changing: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut count = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|value| value.parse().ok())
                .filter(|value| *value >= 1)
                .ok_or_else(|| format!("{name} takes a number of at least 1"))
        };
        match arg.as_str() {
            "--nodelay" => options.nodelay = true,
            "--json" => options.json = true,
            "--modern" => options.modern = true,
            "--changing" => options.changing = true,
            "--tools" => options.tools = count("--tools")?,
            "--listeners" => options.listeners = count("--listeners")?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// The first argument that makes the `bench` binary this server.
pub(crate) const SUBCOMMAND: &str = "serve";

/// The server's entry point, with the arguments after [`SUBCOMMAND`].
pub(crate) fn main(args: &[String]) -> ExitCode {
    let options = match parse(args) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("bench serve: {error}");
            eprintln!(
                "usage: bench serve [--nodelay] [--json] [--modern] [--tools N] [--listeners N] \
                 | bench serve --changing [--tools N]"
            );
            return ExitCode::from(2);
        }
    };
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench serve: cannot build the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let served = match options.changing {
        true => runtime.block_on(serve_changing(options.tools)),
        false => runtime.block_on(serve(options)),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench serve: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), String> {
    let mut servers = Vec::with_capacity(options.listeners);
    for _ in 0..options.listeners {
        let server = Fixture::builder()
            .tools(ToolSet::Generated(options.tools - 1))
            .answers(if options.json {
                Answers::Json
            } else {
                Answers::Sse
            })
            .revisions(if options.modern {
                Revisions::All
            } else {
                Revisions::SessionBased
            })
            .nodelay(options.nodelay)
            .try_start()
            .await
            .map_err(|error| format!("cannot bind 127.0.0.1: {error}"))?;
        servers.push(server);
    }
    let ports: Vec<String> = servers
        .iter()
        .map(|server| server.addr().port().to_string())
        .collect();
    println!("{}", ports.join(" "));
    // Ends the process when the benchmark closes our stdin (or dies).
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
        let _ = closed_tx.send(());
    });
    let _ = closed_rx.await;
    drop(servers);
    Ok(())
}

/// The changing server: `tools` tools, then one fewer, then `tools` again, at each [`CHANGE`].
async fn serve_changing(tools: usize) -> Result<(), String> {
    let catalog = |count: usize| -> Value {
        let tools = (0..count).map(|i| tool(&format!("tool_{i:05}"), "A generated tool."));
        Value::Array(tools.collect())
    };
    let changing = Changing::new(catalog(tools));
    let server = Hostile::start(changing.handler(Era::Legacy)).await;
    println!("{}", server.port);
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            if line.is_err() || lines_tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut fewer = false;
    while lines_rx.recv().await.is_some() {
        fewer = !fewer;
        changing.set(catalog(tools - usize::from(fewer)));
        changing.tell();
    }
    drop(server);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_read_and_a_bad_count_or_flag_is_refused() {
        let args = |line: &str| {
            line.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        let options = parse(&args("--nodelay --json --tools 100 --listeners 4")).expect("valid");
        assert!(options.nodelay && options.json && !options.modern);
        assert_eq!((options.tools, options.listeners), (100, 4));
        for (line, error) in [
            ("--tools 0", "--tools takes a number of at least 1"),
            ("--listeners", "--listeners takes a number of at least 1"),
            ("--fast", "unknown argument --fast"),
        ] {
            assert_eq!(
                parse(&args(line)).map(|_| ()),
                Err(error.to_owned()),
                "{line}"
            );
        }
    }
}
