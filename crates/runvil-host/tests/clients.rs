//! `runvil serve --http` under MCP clients nobody here wrote, through the binary: the Python
//! SDK's client and the TypeScript SDK's client, each at 2025-11-25 (a session) and at
//! 2026-07-28, the MCP Inspector's CLI (2025-11-25), and `runvil` itself with the gateway as a
//! server of its `mcp.json` (a gateway in front of a gateway, at 2026-07-28). Each lists and
//! calls; the SDKs' clients also follow a call's progress and cancel a call, and the server
//! behind the gateway is seen to be told.
//!
//! One gateway serves the whole binary, with one fixture server behind it per client (its
//! namespace), so each test reads only its own server's record. The clients are installed on
//! first use at pinned versions (`tests/peers/requirements.txt` at the workspace's root,
//! `tests/peers/ts/package-lock.json` here), into folders git ignores; where one cannot be had
//! its test says so in one line, and fails under `CI=true`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet, peers};
use support::gateway::{Gateway, config_of, key_path};
use support::{runvil, signal_during_call, text};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long a test waits for something that happens at once; it bounds a failure, nothing is
/// timed.
const SOON: Duration = Duration::from_secs(30);

/// The namespaces of the shared gateway, one per client and revision.
const NAMESPACES: [&str; 6] = [
    "python_legacy",
    "python_modern",
    "ts_legacy",
    "ts_modern",
    "inspector",
    "runvil",
];

/// The shared gateway and the server behind each of its namespaces.
struct World {
    gateway: Gateway,
    servers: Vec<Fixture>,
}

impl World {
    fn server(&self, namespace: &str) -> &Fixture {
        let at = NAMESPACES
            .iter()
            .position(|n| *n == namespace)
            .expect("a namespace");
        &self.servers[at]
    }
}

/// The world, started by the first test that asks. Its servers run on a runtime of their own,
/// on a thread that outlives every test.
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().expect("a runtime");
            runtime.block_on(async move {
                let mut servers = Vec::new();
                for _ in NAMESPACES {
                    let tools = ToolSet::Only(&["echo", "progress", "slow"]);
                    servers.push(Fixture::builder().tools(tools).start().await);
                }
                sender.send(servers).expect("the servers handed over");
                std::future::pending::<()>().await;
            });
        });
        let servers = receiver.recv().expect("the servers");
        let named: Vec<(&str, &str)> = NAMESPACES
            .iter()
            .zip(&servers)
            .map(|(name, server)| (*name, server.url()))
            .collect();
        let config = config_of(&named);
        // Every test is the one anonymous identity: its rate is raised so they never wait.
        let args = ["--rate", "10000", "--burst", "10000"];
        let gateway = Gateway::shared(config.path(), &key_path(), &args);
        // The config is read at start; the file may go.
        drop(config);
        World { gateway, servers }
    })
}

fn peers_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// Runs a client of `tests/peers` to its end: when it says its slow call started, waits for
/// the server behind `namespace` to see it, then tells the client to cancel. Its lines.
async fn drive(mut command: tokio::process::Command, namespace: &str) -> Vec<Value> {
    let server = world().server(namespace);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the client starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(SOON, lines.next_line()).await {
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if message == json!({"slow": "started"}) {
            server
                .wait_slow_started(SOON)
                .await
                .expect("the slow call reached the server");
            stdin.write_all(b"cancel\n").await.expect("told to cancel");
        }
        seen.push(message);
    }
    let output = tokio::time::timeout(SOON, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("the client did not end; it said {seen:?}"))
        .expect("its output");
    assert!(
        output.status.success(),
        "the client failed ({}): {seen:?}\n{}",
        output.status,
        text(&output.stderr)
    );
    seen
}

/// What a client of `tests/peers` must have seen at `revision`, as `who` echoing, and that
/// the server behind `namespace` was told of the cancelled call.
async fn assert_a_full_exchange(seen: &[Value], namespace: &str, revision: &str, who: &str) {
    assert_eq!(seen.len(), 7, "{seen:?}");
    assert_eq!(seen[0], json!({"protocolVersion": revision}));
    assert_eq!(
        seen[1],
        json!({"tools": ["get_dynamic_tools", "call_dynamic_tool"]})
    );
    let listing = &seen[2]["listing"];
    assert_eq!(listing["namespace"], namespace, "{listing}");
    assert_eq!(listing["status"], "ready", "{listing}");
    let names: Vec<&Value> = listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(names, [&json!("echo"), &json!("progress"), &json!("slow")]);
    assert_eq!(
        seen[3],
        json!({"echo": format!("from {who}"), "isError": false})
    );
    // Numbers as each language writes them: 1 or 1.0.
    let notices: Vec<(f64, f64, &str)> = seen[4]["progress"]
        .as_array()
        .expect("the progress notices")
        .iter()
        .map(|n| {
            (
                n[0].as_f64().unwrap_or(-1.0),
                n[1].as_f64().unwrap_or(-1.0),
                n[2].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(notices, [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]);
    assert_eq!(seen[4]["answer"], "done");
    assert_eq!(seen[5], json!({"slow": "started"}));
    assert_eq!(seen[6]["slow"], "cancelled");
    let server = world().server(namespace);
    server
        .wait_cancelled(SOON)
        .await
        .expect("the server behind was told");
}

/// The Python SDK's client at `mode`, or `None` (said in one line) where it cannot be had.
fn python(test: &str, namespace: &str, mode: &str) -> Option<tokio::process::Command> {
    let python = peers::python()
        .inspect_err(|why| peers::unavailable(test, why))
        .ok()?;
    let mut command = tokio::process::Command::new(python);
    command.arg(peers_folder().join("python_client.py")).args([
        &world().gateway.url(),
        mode,
        namespace,
    ]);
    Some(command)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_s_client_at_2025_11_25() {
    let test = "the_python_sdk_s_client_at_2025_11_25";
    let Some(client) = python(test, "python_legacy", "legacy") else {
        return;
    };
    let seen = drive(client, "python_legacy").await;
    assert_a_full_exchange(&seen, "python_legacy", "2025-11-25", "python").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_s_client_at_2026_07_28() {
    let test = "the_python_sdk_s_client_at_2026_07_28";
    let Some(client) = python(test, "python_modern", "2026-07-28") else {
        return;
    };
    let seen = drive(client, "python_modern").await;
    assert_a_full_exchange(&seen, "python_modern", "2026-07-28", "python").await;
}

/// The Node packages' folder, installed, or `None` (said in one line) where npm cannot have
/// them.
fn node_peers(test: &str) -> Option<PathBuf> {
    let folder = peers_folder().join("ts");
    peers::npm(&folder)
        .inspect_err(|why| peers::unavailable(test, why))
        .ok()?;
    Some(folder)
}

/// The TypeScript SDK's client at `mode`, or `None` where it cannot be had.
fn typescript(test: &str, namespace: &str, mode: &str) -> Option<tokio::process::Command> {
    let folder = node_peers(test)?;
    let mut command = tokio::process::Command::new("node");
    command
        .arg(folder.join("client.mjs"))
        .args([&world().gateway.url(), mode, namespace]);
    Some(command)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_s_client_at_2025_11_25() {
    let test = "the_typescript_sdk_s_client_at_2025_11_25";
    let Some(client) = typescript(test, "ts_legacy", "legacy") else {
        return;
    };
    let seen = drive(client, "ts_legacy").await;
    assert_a_full_exchange(&seen, "ts_legacy", "2025-11-25", "typescript").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_s_client_at_2026_07_28() {
    let test = "the_typescript_sdk_s_client_at_2026_07_28";
    let Some(client) = typescript(test, "ts_modern", "2026-07-28") else {
        return;
    };
    let seen = drive(client, "ts_modern").await;
    assert_a_full_exchange(&seen, "ts_modern", "2026-07-28", "typescript").await;
}

#[test]
fn the_mcp_inspector_s_cli_lists_and_calls() {
    let Some(folder) = node_peers("the_mcp_inspector_s_cli_lists_and_calls") else {
        return;
    };
    let url = world().gateway.url();
    let inspector = |args: &[&str]| {
        let output = std::process::Command::new(folder.join("node_modules/.bin/mcp-inspector"))
            .args(["--cli", &url, "--transport", "http"])
            .args(args)
            .output()
            .expect("the inspector runs");
        assert!(output.status.success(), "{}", text(&output.stderr));
        let stdout = text(&output.stdout);
        serde_json::from_str::<Value>(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let tools = inspector(&["--method", "tools/list"]);
    let names: Vec<&Value> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| &t["name"])
        .collect();
    assert_eq!(
        names,
        [&json!("get_dynamic_tools"), &json!("call_dynamic_tool")]
    );
    let answer = inspector(&[
        "--method",
        "tools/call",
        "--tool-name",
        "call_dynamic_tool",
        "--tool-arg",
        "namespace=inspector",
        "toolName=echo",
        r#"arguments={"text": "from the inspector"}"#,
    ]);
    assert_eq!(
        answer["content"][0]["text"], "from the inspector",
        "{answer}"
    );
    assert_eq!(answer["isError"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn runvil_in_front_of_the_gateway_lists_calls_follows_progress_and_cancels() {
    let front = config_of(&[("gateway", &world().gateway.url())]);
    let call = |tool: &str| {
        json!({"namespace": "runvil", "toolName": tool, "arguments": {"text": "through two gateways"}})
            .to_string()
    };
    let listing = runvil(&["tools", "gateway", "--config", front.arg()]);
    let listing: Value = serde_json::from_slice(&listing.stdout).expect("the listing is JSON");
    assert_eq!(listing["protocolVersion"], "2026-07-28", "{listing}");
    let out = runvil(&[
        "call",
        "gateway",
        "call_dynamic_tool",
        &call("echo"),
        "--config",
        front.arg(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "through two gateways\n");
    let out = runvil(&[
        "call",
        "gateway",
        "call_dynamic_tool",
        &call("progress"),
        "--config",
        front.arg(),
    ]);
    assert_eq!(text(&out.stdout), "done\n");
    assert!(
        text(&out.stderr).contains("runvil: 2 progress notices; the last: step 2 (2/2)"),
        "{}",
        text(&out.stderr)
    );
    let server = world().server("runvil");
    let slow = call("slow");
    let args = [
        "call",
        "gateway",
        "call_dynamic_tool",
        &slow,
        "--config",
        front.arg(),
    ];
    let out = signal_during_call(&args, "INT", async || !server.slow_started().is_empty()).await;
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    server
        .wait_cancelled(SOON)
        .await
        .expect("the server behind was told");
}
