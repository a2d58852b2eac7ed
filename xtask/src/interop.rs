//! `cargo run -p build-xtask -- interop`: drives the `mcp` Pack, in process, against the
//! reference server `@modelcontextprotocol/server-everything` over Streamable HTTP.
//!
//! The server is installed with npm into the git-ignored `<workspace>/.tools/interop` on
//! first use and started on a free port, its output on our stderr; the Pack lists its tools
//! and calls a few of them, and each converted result is checked (text, an image placeholder,
//! resource links, structured content, an embedded resource). The server is killed at the end,
//! whatever happened. One line per check; exit code 0 only if every check held.

// A command whose output (one line per check) is its result.
#![allow(clippy::print_stdout)]

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use runvil_plugin::{Pack, Services, ToolError};
use serde_json::{Value, json};

/// The reference server, pinned.
pub const SERVER_PACKAGE: &str = "@modelcontextprotocol/server-everything";
/// The pinned version of [`SERVER_PACKAGE`].
pub const SERVER_VERSION: &str = "2026.8.31";
/// Where the server is installed, relative to the workspace root.
pub const INSTALL_DIR: &str = ".tools/interop";

/// The namespace the server is configured under.
const NAMESPACE: &str = "everything";
/// How long the server may take to accept connections.
const LISTEN_WITHIN: Duration = Duration::from_secs(30);
/// How long the Pack may take to connect.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// The subcommand's entry point: installs and starts the server, runs the checks, kills the
/// server, and prints one line per check; `Ok(false)` if any failed.
pub fn command(_: &[String]) -> Result<bool, String> {
    let dir = crate::workspace::root().join(INSTALL_DIR);
    crate::workspace::npm_install(&dir, &[(SERVER_PACKAGE, SERVER_VERSION)])?;
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
    // A port nothing listens on now: the OS picks it, and the listener is closed at once.
    let port = listener
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("cannot find a free port: {error}"))?
        .port();
    let mut server = Server::start(&dir, port)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    eprintln!("interop: server listening at {url}");
    let runtime = tokio::runtime::Runtime::new();
    let runtime = runtime.map_err(|error| format!("cannot build the tokio runtime: {error}"))?;
    let _entered = runtime.enter();
    let servers = json!({ NAMESPACE: { "url": url } });
    let pack = shared_mcp_fixture::pack_with(servers, Services::new());
    let pack = pack.map_err(|error| error.to_string())?;
    let checks = runtime.block_on(async {
        let mut checks = checks(&pack).await;
        if checks.iter().all(|(_, outcome)| outcome.is_ok()) {
            checks.push(restart(&mut server, &dir, port, &pack).await);
        }
        // Completes once the session's DELETE is sent.
        pack.shutdown().await;
        checks
    });
    drop(server);
    let failed = checks
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .count();
    for (name, outcome) in &checks {
        let (word, detail) = match outcome {
            Ok(seen) => ("ok  ", seen),
            Err(why) => ("FAIL", why),
        };
        println!("interop: {word} {name:<44} {}", one_line(detail));
    }
    match failed {
        0 => println!("interop: all {} checks held", checks.len()),
        _ => println!("interop: {failed} of {} checks failed", checks.len()),
    }
    Ok(failed == 0)
}

/// A check's name, and what was seen (`Ok`) or why it failed.
type Check = (String, Result<String, String>);

/// The running server; dropping it kills the process.
struct Server(Child);

impl Server {
    /// Starts `mcp-server-everything streamableHttp` with `PORT=port`, its output on our
    /// stderr, and waits until the port accepts connections, failing if the server exits
    /// first or [`LISTEN_WITHIN`] passes.
    fn start(dir: &Path, port: u16) -> Result<Self, String> {
        let bin = dir.join("node_modules/.bin/mcp-server-everything");
        let child = Command::new(&bin)
            .arg("streamableHttp")
            .current_dir(dir)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(io::stderr())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", bin.display()))?;
        let mut server = Self(child);
        let deadline = Instant::now() + LISTEN_WITHIN;
        let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into();
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = server.0.try_wait() {
                return Err(format!("the server exited before listening ({status})"));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the server did not listen within {LISTEN_WITHIN:?}"
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const ECHO_MESSAGE: &str = "interop says hello";

/// The tools to call, as the pinned server names them, their arguments, and what each
/// converted result must contain.
fn tool_cases() -> [(&'static str, Value, &'static [&'static str]); 7] {
    const IMAGE: &str = "[image omitted: image/png]";
    let annotated = json!({"messageType": "success", "includeImage": true});
    [
        ("echo", json!({"message": ECHO_MESSAGE}), &[ECHO_MESSAGE]),
        ("get-sum", json!({"a": 2, "b": 3}), &["5"]),
        ("get-tiny-image", json!({}), &[IMAGE]),
        ("get-resource-links", json!({"count": 2}), &["[resource: "]),
        (
            "get-structured-content",
            json!({"location": "Chicago"}),
            &["temperature"],
        ),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
            &["This is a plaintext resource"],
        ),
        (
            "get-annotated-message",
            annotated,
            &["Operation completed successfully", IMAGE],
        ),
    ]
}

/// Every check, in order; a server that does not become ready ends the run early.
async fn checks(pack: &Arc<dyn Pack>) -> Vec<Check> {
    let entry = shared_mcp_fixture::ready(pack, NAMESPACE, READY_WITHIN).await;
    let tools = entry
        .as_ref()
        .ok()
        .and_then(|entry| entry["tools"].as_array());
    let names: Vec<&str> = tools
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let listing = match entry {
        Ok(_) if names.is_empty() => Err("ready with no tools".to_owned()),
        Ok(_) => Ok(format!(
            "ready with {} tools: {}",
            names.len(),
            names.join(", ")
        )),
        Err(why) => Err(why),
    };
    let ready = listing.is_ok();
    let mut checks = vec![("listing".to_owned(), listing)];
    if !ready {
        return checks;
    }
    for (tool, arguments, needles) in tool_cases() {
        let answer = shared_mcp_fixture::call(pack, NAMESPACE, tool, arguments).await;
        let outcome = answer.map_err(|error| error.to_string()).and_then(|text| {
            match needles.iter().find(|needle| !text.contains(**needle)) {
                Some(needle) => Err(format!("does not contain {needle:?}: {text}")),
                None => Ok(text),
            }
        });
        checks.push((tool.to_owned(), outcome));
    }
    // Arguments that break the tool's input schema, and a tool that does not exist: refused,
    // never a result.
    let refusals = [
        ("bad arguments are refused", "echo", json!({"message": 42})),
        ("unknown tool is invalid", "no-such-tool", json!({})),
    ];
    for (check, tool, arguments) in refusals {
        let outcome = match shared_mcp_fixture::call(pack, NAMESPACE, tool, arguments).await {
            Ok(text) => Err(format!("answered: {text}")),
            Err(error @ ToolError::Invalid(_)) => Ok(error.to_string()),
            Err(error @ ToolError::Backend(_)) if tool == "echo" => Ok(error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        checks.push((check.to_owned(), outcome));
    }
    checks
}

/// The server restarts on its port, forgetting its sessions (it answers the Pack's with `400
/// No valid session ID provided`): the next call is answered all the same, in a new session.
async fn restart(server: &mut Server, dir: &Path, port: u16, pack: &Arc<dyn Pack>) -> Check {
    let name = "a restarted server is spoken to again".to_owned();
    let _ = server.0.kill();
    let _ = server.0.wait();
    match Server::start(dir, port) {
        Ok(again) => *server = again,
        Err(why) => return (name, Err(why)),
    }
    let arguments = json!({"message": ECHO_MESSAGE});
    let answer = shared_mcp_fixture::call(pack, NAMESPACE, "echo", arguments).await;
    (name, answer.map_err(|error| error.to_string()))
}

/// The text on one line, shortened for a report.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_to_one_line_at_a_character_boundary() {
        assert_eq!(one_line("a\n\n b"), "a b");
        assert_eq!(one_line(&"x".repeat(200)).chars().count(), 121);
        assert_eq!(one_line(&"é".repeat(121)), format!("{}…", "é".repeat(120)));
    }
}
