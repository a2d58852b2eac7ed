//! `cargo run -p build-xtask -- interop`: drives the `mcp` Pack, in process, against the
//! reference server `@modelcontextprotocol/server-everything` over Streamable HTTP.
//!
//! The server is installed with npm into the git-ignored `<workspace>/.tools/interop` on
//! first use and started on a free port; the Pack lists its tools and calls a few of them, and
//! each converted result is checked (text, an image placeholder, resource links, structured
//! content). The server is killed at the end, whatever happened. One line per check; exit
//! code 0 only if every check held.

// A command whose output (one line per check) is its result.
#![allow(clippy::print_stdout)]

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use runvil_plugin::{Pack, ToolError};
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

/// The subcommand's entry point.
pub fn command(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("`interop` takes no arguments");
        return ExitCode::from(2);
    }
    match run(&crate::workspace::root()) {
        Ok(checks) => {
            let failed = checks.iter().filter(|check| !check.held).count();
            for check in &checks {
                println!(
                    "interop: {} {:<44} {}",
                    if check.held { "ok  " } else { "FAIL" },
                    check.name,
                    check.detail
                );
            }
            if failed == 0 {
                println!("interop: all {} checks held", checks.len());
                ExitCode::SUCCESS
            } else {
                println!("interop: {failed} of {} checks failed", checks.len());
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("interop: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One check: its name, whether it held, and what was seen.
struct Check {
    name: String,
    held: bool,
    detail: String,
}

impl Check {
    fn new(name: impl Into<String>, held: bool, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            held,
            detail: detail.into(),
        }
    }
}

/// Installs and starts the server, runs the checks, and kills the server.
fn run(root: &Path) -> Result<Vec<Check>, String> {
    let root = root
        .canonicalize()
        .map_err(|error| format!("cannot resolve the workspace root: {error}"))?;
    let dir = root.join(INSTALL_DIR);
    let server_bin = install(&dir)?;
    let port = free_port()?;
    let server = Server::start(&server_bin, &dir, port)?.wait_listening(port)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    eprintln!("interop: server listening at {url}");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot build the tokio runtime: {error}"))?;
    let checks = runtime.block_on(async {
        let pack = crate::pack_driver::build_pack(NAMESPACE, &url)?;
        let checks = checks(&pack).await;
        // Completes once the session's DELETE is sent.
        pack.shutdown().await;
        Ok::<_, String>(checks)
    });
    drop(server);
    checks
}

/// Installs the server into `dir` with npm unless that version is already there; the path of
/// its executable.
fn install(dir: &Path) -> Result<PathBuf, String> {
    let bin = dir.join("node_modules/.bin/mcp-server-everything");
    let manifest = dir.join("node_modules/@modelcontextprotocol/server-everything/package.json");
    let installed = fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|package| package["version"] == SERVER_VERSION);
    if installed && bin.is_file() {
        return Ok(bin);
    }
    crate::workspace::npm_install(dir, &[format!("{SERVER_PACKAGE}@{SERVER_VERSION}")])?;
    if !bin.is_file() {
        return Err(format!(
            "npm install succeeded but {} is missing",
            bin.display()
        ));
    }
    Ok(bin)
}

/// A port nothing listens on now (the OS picks it; the listener is closed at once).
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .map_err(|error| format!("cannot find a free port: {error}"))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|error| format!("cannot find a free port: {error}"))
}

/// The running server; dropping it kills the process.
struct Server {
    child: Child,
}

impl Server {
    /// Starts `bin streamableHttp` with `PORT=port`, its output forwarded to our stderr.
    fn start(bin: &Path, dir: &Path, port: u16) -> Result<Self, String> {
        let mut child = Command::new(bin)
            .arg("streamableHttp")
            .current_dir(dir)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", bin.display()))?;
        if let Some(out) = child.stdout.take() {
            forward(out);
        }
        if let Some(err) = child.stderr.take() {
            forward(err);
        }
        Ok(Self { child })
    }

    /// Waits until `port` accepts connections, failing if the server exits first or
    /// [`LISTEN_WITHIN`] passes.
    fn wait_listening(mut self, port: u16) -> Result<Self, String> {
        let deadline = Instant::now() + LISTEN_WITHIN;
        let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into();
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return Ok(self);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the server exited before listening ({status})"));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the server did not listen on port {port} within {LISTEN_WITHIN:?}"
                ));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Forwards a server stream to our stderr, each line marked as the server's.
fn forward(stream: impl Read + Send + 'static) {
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            match line {
                Ok(line) => eprintln!("  [server] {line}"),
                Err(_) => break,
            }
        }
    });
}

/// What a converted result must satisfy.
type Expectation = fn(&str) -> Result<(), String>;

/// One tool call to check: a name for the line, the tool names the server may use for it,
/// the arguments, and the expectation.
struct ToolCase {
    check: &'static str,
    candidates: &'static [&'static str],
    arguments: fn() -> Value,
    expect: Expectation,
}

const ECHO_MESSAGE: &str = "interop says hello";

const TOOL_CASES: &[ToolCase] = &[
    ToolCase {
        check: "echo",
        candidates: &["echo"],
        arguments: || json!({"message": ECHO_MESSAGE}),
        expect: |text| contains(text, ECHO_MESSAGE),
    },
    ToolCase {
        check: "sum",
        candidates: &["get-sum", "add"],
        arguments: || json!({"a": 2, "b": 3}),
        expect: |text| contains(text, "5"),
    },
    ToolCase {
        check: "image",
        candidates: &["get-tiny-image", "getTinyImage"],
        arguments: || json!({}),
        expect: |text| contains(text, "[image omitted: image/png]"),
    },
    ToolCase {
        check: "resource links",
        candidates: &["get-resource-links", "getResourceLinks"],
        arguments: || json!({"count": 2}),
        expect: |text| contains(text, "[resource: "),
    },
    ToolCase {
        check: "structured content",
        candidates: &["get-structured-content", "structuredContent"],
        arguments: || json!({"location": "Chicago"}),
        expect: |text| {
            let parsed = serde_json::from_str::<Value>(text)
                .ok()
                .filter(|value| value["temperature"].is_number());
            if parsed.is_some() || text.contains("temperature") {
                Ok(())
            } else {
                Err("neither JSON with a temperature nor text that mentions it".to_owned())
            }
        },
    },
    ToolCase {
        check: "embedded resource",
        candidates: &["get-resource-reference", "getResourceReference"],
        arguments: || json!({"resourceType": "Text", "resourceId": 1}),
        expect: |text| contains(text, "This is a plaintext resource"),
    },
    ToolCase {
        check: "annotated content",
        candidates: &["get-annotated-message", "annotatedMessage"],
        arguments: || json!({"messageType": "success", "includeImage": true}),
        expect: |text| {
            contains(text, "Operation completed successfully")?;
            contains(text, "[image omitted: image/png]")
        },
    },
];

fn contains(text: &str, needle: &str) -> Result<(), String> {
    if text.contains(needle) {
        Ok(())
    } else {
        Err(format!("does not contain {needle:?}"))
    }
}

/// Every check, in order; a failed listing ends the run early.
async fn checks(pack: &Arc<dyn Pack>) -> Vec<Check> {
    let mut checks = Vec::new();
    let entry = match crate::pack_driver::settled(pack, NAMESPACE, READY_WITHIN).await {
        Ok(entry) => entry,
        Err(error) => {
            checks.push(Check::new("listing", false, error));
            return checks;
        }
    };
    let names = tool_names(&entry);
    let ready = entry["status"] == "ready" && !names.is_empty();
    checks.push(Check::new(
        "listing",
        ready,
        if ready {
            format!("ready with {} tools: {}", names.len(), names.join(", "))
        } else {
            format!("not ready: {entry}")
        },
    ));
    if !ready {
        return checks;
    }
    for case in TOOL_CASES {
        let Some(tool) = case
            .candidates
            .iter()
            .find(|candidate| names.iter().any(|name| name == *candidate))
        else {
            checks.push(Check::new(
                case.check,
                false,
                format!("the server offers none of {:?}", case.candidates),
            ));
            continue;
        };
        let label = format!("{} ({tool})", case.check);
        match call(pack, tool, (case.arguments)()).await {
            Ok(text) => {
                let shown = one_line(&text);
                match (case.expect)(&text) {
                    Ok(()) => checks.push(Check::new(label, true, shown)),
                    Err(why) => checks.push(Check::new(label, false, format!("{why}: {shown}"))),
                }
            }
            Err(error) => checks.push(Check::new(label, false, error.to_string())),
        }
    }
    if names.iter().any(|name| name == "echo") {
        // Arguments that break the tool's input schema: refused, never a result.
        let bad = call(pack, "echo", json!({"message": 42})).await;
        checks.push(Check::new(
            "bad arguments are refused",
            matches!(bad, Err(ToolError::Invalid(_) | ToolError::Backend(_))),
            match bad {
                Ok(text) => format!("answered: {}", one_line(&text)),
                Err(error) => one_line(&error.to_string()),
            },
        ));
    }
    let unknown = call(pack, "no-such-tool", json!({})).await;
    checks.push(Check::new(
        "unknown tool is invalid",
        matches!(unknown, Err(ToolError::Invalid(_))),
        match unknown {
            Ok(text) => format!("answered: {}", one_line(&text)),
            Err(error) => one_line(&error.to_string()),
        },
    ));
    checks
}

/// The tool names in a listing entry (each a string, or an object with a name).
fn tool_names(entry: &Value) -> Vec<String> {
    entry["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.as_str().or_else(|| tool["name"].as_str()))
        .map(str::to_owned)
        .collect()
}

/// The text on one line, shortened for a report.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

async fn call(pack: &Arc<dyn Pack>, tool: &str, arguments: Value) -> Result<String, ToolError> {
    crate::pack_driver::call(pack, NAMESPACE, tool, arguments).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tool_names_in_either_shape() {
        let entry = json!({"tools": ["echo", {"name": "get-sum"}, 3]});
        assert_eq!(tool_names(&entry), ["echo", "get-sum"]);
        assert!(tool_names(&json!({})).is_empty());
    }

    #[test]
    fn shortens_to_one_line() {
        assert_eq!(one_line("a\n\n b"), "a b");
        let long = "x".repeat(200);
        assert_eq!(one_line(&long).chars().count(), 121);
    }

    #[test]
    fn expectations_judge_converted_text() {
        let by_check = |name: &str| {
            TOOL_CASES
                .iter()
                .find(|case| case.check == name)
                .map(|case| case.expect)
                .expect("a case")
        };
        assert!(by_check("image")("a\n\n[image omitted: image/png]").is_ok());
        assert!(by_check("image")("[image omitted: image/jpeg]").is_err());
        assert!(by_check("structured content")(r#"{"temperature":36}"#).is_ok());
        assert!(by_check("structured content")("cloudy").is_err());
        assert!(by_check("echo")(&format!("Echo: {ECHO_MESSAGE}")).is_ok());
    }
}
