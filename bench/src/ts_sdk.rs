//! The TypeScript SDK's client (`@modelcontextprotocol/sdk`, the client most MCP users call
//! servers through), as a fourth client: `bench/ts/client.mjs` in a Node process, which
//! measures itself and answers one JSON line per command (see that file).
//!
//! The SDK's version is pinned in `bench/ts/package.json` and `package-lock.json`; the first
//! run installs it with `npm ci` into `bench/ts/node_modules`, which git ignores. Its
//! latency and CPU are measured inside Node, as the Rust clients' are inside this process,
//! so no hop between the two processes is counted.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::clients::Payload;
use crate::measure::{Latency, Throughput};

/// The folder of the Node client and its pinned dependency.
fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ts")
}

/// Installs the pinned SDK unless it is there already.
pub(crate) async fn install() -> Result<(), String> {
    let folder = folder();
    let installed = folder.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if installed.is_file() {
        return Ok(());
    }
    eprintln!(
        "bench: installing the TypeScript SDK (npm ci in {})",
        folder.display()
    );
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&folder)
        .stdin(Stdio::null())
        .status()
        .await
        .map_err(|error| format!("cannot run npm (Node.js is needed): {error}"))?;
    if !status.success() {
        return Err(format!("npm ci in {} failed: {status}", folder.display()));
    }
    Ok(())
}

/// A connected Node client, one command at a time.
pub(crate) struct TsSdk {
    io: Mutex<(ChildStdin, Lines<BufReader<ChildStdout>>)>,
    /// Killed when the client is dropped.
    _child: Child,
}

impl TsSdk {
    /// Starts the Node client against `url` and waits until it has connected.
    pub(crate) async fn connect(url: &str) -> Result<TsSdk, String> {
        // `--no-warnings`: the SDK adds an abort listener per request to one signal, and Node
        // warns of it on every call past 1,500; the warning changes nothing measured.
        let mut child = Command::new("node")
            .arg("--no-warnings")
            .arg(folder().join("client.mjs"))
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start node: {error}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("node's stdin or stdout is missing".to_owned());
        };
        let mut lines = BufReader::new(stdout).lines();
        answer(&mut lines).await?;
        Ok(TsSdk {
            io: Mutex::new((stdin, lines)),
            _child: child,
        })
    }

    /// `calls` timed calls one after the other, after `calls / 10` untimed ones.
    pub(crate) async fn latency(&self, payload: &Payload, calls: usize) -> Result<Latency, String> {
        let answer = self.ask(json!({"latency": calls}), payload).await?;
        Ok(Latency {
            p50: micros(&answer, "p50_us")?,
            p99: micros(&answer, "p99_us")?,
        })
    }

    /// `tasks` concurrent loops of calls for `window`.
    pub(crate) async fn throughput(
        &self,
        payload: &Payload,
        tasks: usize,
        window: Duration,
    ) -> Result<Throughput, String> {
        let command = json!({"throughput": tasks, "window_ms": window.as_millis() as u64});
        let answer = self.ask(command, payload).await?;
        Ok(Throughput {
            calls_per_s: number(&answer, "calls_per_s")?,
            errors: number(&answer, "errors")? as u64,
            cpu_per_call: micros(&answer, "cpu_us_per_call")?,
        })
    }

    /// Sends `command` for `payload` and reads its answer, holding the pipe for both, so no
    /// other command's answer can be taken for this one's.
    async fn ask(&self, mut command: Value, payload: &Payload) -> Result<Value, String> {
        command["arguments"] = Value::Object(payload.arguments.clone());
        command["expected"] = json!(payload.answer_len);
        let mut line = command.to_string();
        line.push('\n');
        let mut io = self.io.lock().await;
        io.0.write_all(line.as_bytes())
            .await
            .map_err(|error| format!("cannot write to node: {error}"))?;
        answer(&mut io.1).await
    }
}

/// The next answer line, or the error it reports.
async fn answer(lines: &mut Lines<BufReader<ChildStdout>>) -> Result<Value, String> {
    let line = lines
        .next_line()
        .await
        .map_err(|error| format!("cannot read from node: {error}"))?
        .ok_or("the Node client ended")?;
    let answer: Value =
        serde_json::from_str(&line).map_err(|_| format!("node answered {line:?}"))?;
    match answer.get("error").and_then(Value::as_str) {
        Some(error) => Err(format!("the TypeScript SDK's client failed: {error}")),
        None => Ok(answer),
    }
}

fn number(answer: &Value, key: &str) -> Result<f64, String> {
    answer
        .get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("node's answer has no {key}: {answer}"))
}

fn micros(answer: &Value, key: &str) -> Result<Duration, String> {
    Ok(Duration::from_secs_f64(number(answer, key)? / 1e6))
}
