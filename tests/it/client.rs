//! The Pack against a real MCP server: rmcp, the reference Rust SDK, in this process.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, ToolError};
use serde_json::{Value, json};

use shared_mcp_fixture::{
    ECHO_DESCRIPTION, Fixture, Mode, PAGED_TOOL_NAMES, TOOL_NAMES, ToolSet, echo_schema,
};
use support::{call, list, pack, settled, status, wait_for};

/// Generous: a local server is ready in milliseconds.
const READY: Duration = Duration::from_secs(10);

/// A Pack with one server, `s`, at `server`, once it is ready.
async fn ready_pack(server: &Fixture) -> Arc<dyn Pack> {
    let pack = pack(json!({"s": {"url": server.url()}}));
    wait_for(&pack, "s", "ready", READY).await;
    pack
}

/// `mcp/get_dynamic_tools` with `args`, expecting an error.
async fn list_error(pack: &Arc<dyn Pack>, args: Value) -> ToolError {
    pack.call("mcp/get_dynamic_tools", args)
        .await
        .expect_err("the listing refuses")
}

/// The `Invalid` message of `error`, failing the test for any other kind.
fn invalid(error: ToolError) -> String {
    match error {
        ToolError::Invalid(message) => message,
        other => panic!("expected an invalid error, got {other:?}"),
    }
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|t| {
            t.as_str()
                .or_else(|| t["name"].as_str())
                .expect("a tool name")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_while_the_handshake_is_held_then_ready() {
    let server = Fixture::builder().mode(Mode::Sse).held().start().await;
    let pack = pack(json!({"s": {"url": server.url()}}));
    // The connector reached the server, which holds its handshake.
    assert!(
        server.wait_held(READY).await,
        "the handshake never reached the server"
    );
    let entry = status(&pack, "s").await;
    assert_eq!(entry, json!({"namespace": "s", "status": "loading"}));
    assert_eq!(server.initializes(), 0);

    server.release();
    let entry = wait_for(&pack, "s", "ready", READY).await;
    assert_eq!(names(&entry["tools"]), TOOL_NAMES);
    assert_eq!(server.initializes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_comes_up_late_becomes_ready() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.local_addr().expect("an address").port()
    };
    let pack = pack(json!({"late": {"url": format!("http://127.0.0.1:{port}/mcp")}}));
    let entry = settled(&pack, "late", Duration::from_secs(5)).await;
    assert_eq!(entry["status"], "error", "{entry}");
    let reason = entry["reason"].as_str().expect("a reason");
    assert!(reason.contains("could not reach the server"), "{reason}");

    let _server = Fixture::builder().mode(Mode::Sse).port(port).start().await;
    let entry = wait_for(&pack, "late", "ready", Duration::from_secs(15)).await;
    assert_eq!(names(&entry["tools"]), TOOL_NAMES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_tools_across_pages() {
    let server = Fixture::builder()
        .tools(ToolSet::Paged)
        .mode(Mode::Sse)
        .start()
        .await;
    let pack = ready_pack(&server).await;
    let entry = status(&pack, "s").await;
    assert_eq!(names(&entry["tools"]), PAGED_TOOL_NAMES);

    let listing = list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(names(&listing["tools"]), PAGED_TOOL_NAMES);
    assert!(listing.get("rejected").is_none(), "{listing}");
    assert_eq!(
        call(&pack, "s", "p3a", json!({})).await,
        Ok("called p3a".to_owned())
    );
}

async fn every_content_type(mode: Mode) {
    let server = Fixture::start(mode).await;
    let pack = ready_pack(&server).await;
    let cases = [
        ("echo", json!({"text": "hello there"}), "hello there"),
        ("image", json!({}), "[image omitted: image/png]"),
        ("audio", json!({}), "[audio omitted: audio/wav]"),
        (
            "embedded",
            json!({}),
            "embedded text\n\n[resource omitted: application/octet-stream]",
        ),
        ("link", json!({}), "[resource: file:///tmp/report.txt]"),
        (
            "mixed",
            json!({}),
            "first\n\n[image omitted: image/png]\n\nlast",
        ),
        ("structured", json!({}), r#"{"answer":42}"#),
    ];
    for (tool, arguments, want) in cases {
        let got = call(&pack, "s", tool, arguments).await;
        assert_eq!(got, Ok(want.to_owned()), "{tool} over {mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_content_type_over_sse() {
    every_content_type(Mode::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_content_type_over_json() {
    every_content_type(Mode::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_is_a_backend_error() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        call(&pack, "s", "fails", json!({})).await,
        Err(ToolError::Backend("the disk is full".to_owned()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_rpc_error_is_a_backend_error() {
    for mode in [Mode::Sse, Mode::Json] {
        let server = Fixture::start(mode).await;
        let pack = ready_pack(&server).await;
        match call(&pack, "s", "rpc_error", json!({})).await {
            Err(ToolError::Backend(message)) => {
                assert!(message.contains("-32602"), "{message}");
                assert!(message.contains("bad thing"), "{message}");
            }
            other => panic!("expected a backend error over {mode:?}, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_one_namespace_and_one_tool() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = ready_pack(&server).await;
    let want_echo = json!({
        "name": "echo",
        "description": ECHO_DESCRIPTION,
        "inputSchema": echo_schema(),
    });

    let listing = list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(listing["namespace"], "s");
    assert_eq!(listing["status"], "ready");
    assert_eq!(names(&listing["tools"]), TOOL_NAMES);
    let echo = listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo is listed");
    assert_eq!(echo, &want_echo);
    assert!(listing.get("rejected").is_none(), "{listing}");

    let listing = list(&pack, json!({"namespace": "s", "toolName": "echo"})).await;
    assert_eq!(listing, json!({"namespace": "s", "tool": want_echo}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_get_errors_a_model_can_act_on() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = pack(json!({"beta": {"url": server.url()}, "alpha": {"url": server.url()}}));
    wait_for(&pack, "alpha", "ready", READY).await;
    wait_for(&pack, "beta", "ready", READY).await;

    // An unknown namespace names the known ones, in both tools.
    let message = invalid(list_error(&pack, json!({"namespace": "gamma"})).await);
    assert!(message.contains("\"gamma\""), "{message}");
    assert!(message.contains("alpha, beta"), "{message}");
    let message = invalid(
        call(&pack, "gamma", "echo", json!({}))
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("alpha, beta"), "{message}");

    // An unknown tool names the server's tools.
    let message = invalid(
        call(&pack, "alpha", "nope", json!({}))
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("\"nope\""), "{message}");
    assert!(message.contains(&TOOL_NAMES.join(", ")), "{message}");
    let message =
        invalid(list_error(&pack, json!({"namespace": "alpha", "toolName": "nope"})).await);
    assert!(message.contains(&TOOL_NAMES.join(", ")), "{message}");

    // toolName needs a namespace.
    let message = invalid(list_error(&pack, json!({"toolName": "echo"})).await);
    assert!(message.contains("namespace"), "{message}");

    // Wrong argument types.
    let message = invalid(list_error(&pack, json!({"namespace": 5})).await);
    assert!(message.contains("namespace must be a string"), "{message}");
    let args = json!({"namespace": 5, "toolName": "echo"});
    let message = invalid(
        pack.call("mcp/call_dynamic_tool", args)
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("namespace must be a string"), "{message}");
    let args = json!({"namespace": "alpha", "toolName": "echo", "arguments": [1]});
    let message = invalid(
        pack.call("mcp/call_dynamic_tool", args)
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("arguments must be an object"), "{message}");

    // Arguments that break the tool's input schema never reach the server.
    let message = invalid(
        call(&pack, "alpha", "echo", json!({"text": 5}))
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("input schema"), "{message}");
    assert!(message.contains("/text"), "{message}");
    let message = invalid(
        call(&pack, "alpha", "add", json!({"a": 1}))
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("input schema"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calling_a_loading_server_says_it_is_loading() {
    let server = Fixture::builder().mode(Mode::Sse).held().start().await;
    let pack = pack(json!({"s": {"url": server.url()}}));
    let message = invalid(
        call(&pack, "s", "echo", json!({"text": "hi"}))
            .await
            .expect_err("refused"),
    );
    assert!(message.contains("loading"), "{message}");

    server.release();
    wait_for(&pack, "s", "ready", READY).await;
    assert_eq!(
        call(&pack, "s", "echo", json!({"text": "hi"})).await,
        Ok("hi".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_cancels_it_on_the_server() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = ready_pack(&server).await;

    // The call is dropped once the server started it, as a Host drops an abandoned call.
    let started = tokio::select! {
        outcome = call(&pack, "s", "slow", json!({})) => panic!("slow answered: {outcome:?}"),
        started = server.wait_slow_started(Duration::from_secs(5)) => {
            started.expect("the server started slow")
        }
    };

    let cancelled = server
        .wait_cancelled(Duration::from_secs(5))
        .await
        .expect("the server observed a cancellation");
    assert_eq!(cancelled, started, "the slow call was cancelled");
    // The handler hears of the notification after the token fired.
    server
        .wait_cancel_notification(Duration::from_secs(5))
        .await;
    assert_eq!(
        server.cancel_notifications(),
        [started],
        "notifications/cancelled named the request the client sent"
    );
    assert_eq!(server.slow_started().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_a_new_session_when_the_server_forgets_it() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        call(&pack, "s", "echo", json!({"text": "one"})).await,
        Ok("one".to_owned())
    );
    assert_eq!(server.initializes(), 1);
    assert_eq!(server.session_count().await, 1);

    server.forget_sessions().await;
    assert_eq!(server.session_count().await, 0);
    assert_eq!(
        call(&pack, "s", "echo", json!({"text": "two"})).await,
        Ok("two".to_owned())
    );
    assert_eq!(server.initializes(), 2);
    assert_eq!(
        call(&pack, "s", "echo", json!({"text": "three"})).await,
        Ok("three".to_owned())
    );
    assert_eq!(server.initializes(), 2);
}

async fn echo_and_add(mode: Mode) {
    let server = Fixture::start(mode).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        call(&pack, "s", "echo", json!({"text": "over the wire"})).await,
        Ok("over the wire".to_owned())
    );
    assert_eq!(
        call(&pack, "s", "add", json!({"a": 2, "b": 3})).await,
        Ok("5".to_owned())
    );
    assert_eq!(
        call(&pack, "s", "add", json!({"a": 0.5, "b": 2})).await,
        Ok("2.5".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_and_add_over_sse() {
    echo_and_add(Mode::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_and_add_over_json() {
    echo_and_add(Mode::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_each_get_their_own_answer() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = ready_pack(&server).await;
    let calls = (0..8).map(|i| {
        let pack = Arc::clone(&pack);
        async move { call(&pack, "s", "echo", json!({"text": format!("call {i}")})).await }
    });
    let answers = futures_join_all(calls).await;
    for (i, answer) in answers.into_iter().enumerate() {
        assert_eq!(answer, Ok(format!("call {i}")));
    }
}

/// Runs every future to completion on its own task, keeping their order.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.expect("the call task finished"));
    }
    outputs
}
