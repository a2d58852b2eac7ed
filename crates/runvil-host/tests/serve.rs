//! `runvil serve` under a real MCP client: rmcp's client spawns it as a child process and
//! speaks MCP over its stdio, with a real MCP server (rmcp, Streamable HTTP) behind it.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use support::{Temp, backend, backend_late, config_for, text};

type Client = RunningService<RoleClient, ()>;

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool).with_arguments(object(args));
    client.call_tool(params).await.expect("tools/call answers")
}

/// The text of a result's one text block.
fn only_text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "{result:?}");
    let block = result.content[0].as_text().expect("a text block");
    block.text.clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_lists_and_calls_through_the_gateway() {
    let backend = backend().await;
    let config = config_for(&backend);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_runvil"));
    command
        .args(["serve", "--config", config.arg()])
        .env("RUST_LOG", "off")
        .env("RUNVIL_PINS", support::scratch_pins());
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("runvil serve starts");
    let client = ().serve(transport).await.expect("the MCP handshake");

    let info = client.peer_info().expect("server info");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("runvil"));

    // Exactly the Pack's two tools, without the `mcp/` prefix, with the Pack's schemas.
    let tools = client.list_tools(None).await.expect("tools/list").tools;
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["get_dynamic_tools", "call_dynamic_tool"]);
    let call_tool = &tools[1];
    assert!(
        call_tool
            .description
            .as_deref()
            .is_some_and(|d| d.contains("get_dynamic_tools first")),
        "{call_tool:?}"
    );
    assert_eq!(
        call_tool.input_schema.get("required"),
        Some(&json!(["namespace", "toolName"]))
    );

    // Asked at once, the listing of one server waits for it to leave `loading`; then the
    // listing of every server shows it ready, with its tools.
    let one = call(
        &client,
        "get_dynamic_tools",
        json!({"namespace": "backend"}),
    )
    .await;
    let one: Value = serde_json::from_str(&only_text(&one)).expect("JSON");
    assert_eq!(one["status"], "ready", "{one}");
    let listing = call(&client, "get_dynamic_tools", json!({})).await;
    let listing: Value = serde_json::from_str(&only_text(&listing)).expect("JSON");
    assert_eq!(
        listing,
        json!({"servers": [{"namespace": "backend", "status": "ready", "tools": ["echo", "fails", "progress", "slow"]}]})
    );

    // A call reaches the server behind.
    let result = call(
        &client,
        "call_dynamic_tool",
        json!({"namespace": "backend", "toolName": "echo", "arguments": {"text": "through"}}),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(only_text(&result), "through");

    // A mistake is a result the model reads, with the Pack's text.
    let result = call(
        &client,
        "call_dynamic_tool",
        json!({"namespace": "backend", "toolName": "echo", "arguments": {}}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        only_text(&result).contains("\"text\" is a required property"),
        "{result:?}"
    );
    let result = call(
        &client,
        "call_dynamic_tool",
        json!({"namespace": "nope", "toolName": "x"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        only_text(&result),
        "unknown namespace \"nope\"; the namespaces are: backend"
    );

    // So is the server's own tool error.
    let result = call(
        &client,
        "call_dynamic_tool",
        json!({"namespace": "backend", "toolName": "fails"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        only_text(&result).contains("the disk is full"),
        "{result:?}"
    );

    // A tool the gateway does not have is a protocol error.
    let params = CallToolRequestParams::new("mcp/get_dynamic_tools");
    assert!(client.call_tool(params).await.is_err());

    client.cancel().await.expect("closed");
}

/// `runvil serve` driven line by line, as a stdio MCP client drives it.
struct LineClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl LineClient {
    /// Starts `runvil serve --config config` with `RUST_LOG=log` and shakes hands.
    fn start(config: &str, log: &str, stderr: Stdio) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_runvil"))
            .args(["serve", "--config", config])
            .env("RUST_LOG", log)
            .env("RUNVIL_PINS", support::scratch_pins())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("runvil serve starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = Self {
            child,
            stdin,
            stdout,
        };
        client.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        );
        client.answer_to(1);
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// Writes one JSON-RPC message as a line.
    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").expect("written");
        stdin.flush().expect("flushed");
    }

    /// Reads stdout until the answer to request `id`, and returns every message read, each
    /// a JSON-RPC message: stdout carries nothing else.
    fn answer_to(&mut self, id: i64) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let mut line = String::new();
            let read = self.stdout.read_line(&mut line).expect("read");
            assert!(read > 0, "stdout closed early; got {messages:?}");
            let message: Value = serde_json::from_str(&line).expect("every stdout line is JSON");
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            let done = message["id"] == id;
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// Closes stdin, as a client that is done does, and waits for runvil to exit.
    fn close(mut self) -> std::process::Output {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        let mut out = self.child.wait_with_output().expect("runvil exits");
        out.stdout = rest;
        out
    }
}

#[test]
fn stdout_carries_only_protocol_and_closing_stdin_exits_0() {
    let config = Temp::config(json!({"local": {"command": "npx"}}));
    // Warnings are on (a refused entry makes one): they must go to stderr.
    let mut client = LineClient::start(config.arg(), "debug", Stdio::piped());
    client.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "get_dynamic_tools", "arguments": {}}}),
    );
    let lines = client.answer_to(2);
    let answer = lines.last().expect("an answer");
    let listing = answer["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert!(
        listing.contains("local MCP servers (command) are not supported yet"),
        "{listing}"
    );
    let out = client.close();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("runvil: serving MCP on stdio for"),
        "{stderr}"
    );
    assert!(stderr.contains("server entry refused"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_made_at_once_waits_for_its_server_and_forwards_its_progress() {
    // The server answers nothing for a second: a call the gateway did not hold would be told
    // "backend is not ready: its status is loading".
    let backend = backend_late(Duration::from_secs(1)).await;
    let config = config_for(&backend);
    let path = config.arg().to_owned();
    let (messages, out) = tokio::task::spawn_blocking(move || {
        let mut client = LineClient::start(&path, "off", Stdio::null());
        // Sent right after the handshake, before the server behind can have connected.
        client.send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "call_dynamic_tool", "_meta": {"progressToken": "tok-1"},
            "arguments": {"namespace": "backend", "toolName": "progress"}}}),
        );
        let messages = client.answer_to(2);
        (messages, client.close())
    })
    .await
    .expect("the exchange");
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"])
        .collect();
    assert_eq!(
        progress,
        [
            &json!({"progressToken": "tok-1", "progress": 1.0, "total": 2.0, "message": "step 1"}),
            &json!({"progressToken": "tok-1", "progress": 2.0, "total": 2.0, "message": "step 2"}),
        ],
        "{messages:?}"
    );
    let answer = messages.last().expect("the answer");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert_eq!(out.status.code(), Some(0));
}

/// An rmcp client of `runvil serve --config config` with `extra` arguments.
async fn client_of(config: &str, extra: &[&str]) -> Client {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_runvil"));
    command
        .args(["serve", "--config", config])
        .args(extra)
        .env("RUST_LOG", "off")
        .env("RUNVIL_PINS", support::scratch_pins());
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("runvil serve starts");
    ().serve(transport).await.expect("the MCP handshake")
}

/// The status of each server in a listing, in order.
fn statuses(listing: &CallToolResult) -> Vec<(String, String)> {
    let listing: Value = serde_json::from_str(&only_text(listing)).expect("JSON");
    let servers = listing["servers"].as_array().expect("servers").iter();
    servers
        .map(|s| {
            let field = |key: &str| s[key].as_str().expect("a string").to_owned();
            (field("namespace"), field("status"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_shot_client_s_first_listing_shows_a_server_that_is_up_as_ready() {
    let up = backend().await;
    // Accepts connections and never answers: still loading when the first listing's wait
    // (here --wait 3) runs out, which the listing then says.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let mute_url = format!("http://{}/mcp", mute.local_addr().expect("address"));
    let config = Temp::config(json!({"up": {"url": up.url()}}));
    // Listed right after the handshake, as an inspector's command line does.
    let client = client_of(config.arg(), &[]).await;
    let listing = call(&client, "get_dynamic_tools", json!({})).await;
    assert_eq!(statuses(&listing), [("up".to_owned(), "ready".to_owned())]);
    client.cancel().await.expect("closed");

    let config = Temp::config(json!({"mute": {"url": mute_url}, "up": {"url": up.url()}}));
    let client = client_of(config.arg(), &["--wait", "3"]).await;
    let listing = call(&client, "get_dynamic_tools", json!({})).await;
    let want = [("mute", "loading"), ("up", "ready")].map(|(n, s)| (n.to_owned(), s.to_owned()));
    assert_eq!(statuses(&listing), want);
    client.cancel().await.expect("closed");
    drop(mute);
}
