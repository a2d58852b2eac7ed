//! The Pack against another SDK's dual-era server: the Python SDK's (`mcp`, pinned in
//! `tests/peers/requirements.txt`), which answers 2026-07-28 and the session-based revisions
//! on one endpoint. Through `install`, as a Host would: which revision is chosen, the headers
//! the server saw, `x-mcp-header` values as the server decodes them, `input_required`, a
//! dropped call cancelled at the server, and the redaction canaries against what it echoes.
//! This file is its own test binary, so it owns the global log subscriber.

use shared_mcp_fixture::test_support as support;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, ToolError};
use serde_json::{Value, json};
use support::canaries::{CANARY, assert_clean};
use support::python_sdk::PythonServer;

const SETTLE: Duration = Duration::from_secs(20);

async fn ready_pack(server: &PythonServer) -> Arc<dyn Pack> {
    let pack = support::pack(json!({"py": {"url": server.url}}));
    support::wait_for(&pack, "py", "ready", SETTLE).await;
    pack
}

/// A call's result, read as the JSON object the tool returned.
async fn call_json(pack: &Arc<dyn Pack>, tool: &str, arguments: Value) -> Value {
    let text = support::call(pack, "py", tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool} answered {text:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dual_era_server_is_spoken_to_at_2026_07_28_with_the_revision_s_headers() {
    let server = PythonServer::start().await;
    let pack = ready_pack(&server).await;
    let listing = support::list(&pack, json!({"namespace": "py"})).await;
    assert_eq!(listing["protocolVersion"], "2026-07-28");
    let names = support::tool_names(&listing);
    assert_eq!(
        names,
        [
            "change_tools",
            "echo",
            "headers",
            "needs_input",
            "region",
            "slow",
            "slow_calls"
        ]
    );
    assert_eq!(listing.get("rejected"), None, "{listing}");
    assert_eq!(
        support::call(&pack, "py", "echo", json!({"text": "hi"})).await,
        Ok("hi".to_owned())
    );
    let seen = call_json(&pack, "headers", json!({})).await;
    assert_eq!(seen["mcp-protocol-version"], "2026-07-28", "{seen}");
    assert_eq!(seen["mcp-method"], "tools/call");
    assert_eq!(seen["mcp-name"], "headers");
    assert_eq!(seen.get("mcp-session-id"), None, "no session at 2026-07-28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_mcp_header_values_reach_the_server_encoded_as_it_decodes_them() {
    let server = PythonServer::start().await;
    let pack = ready_pack(&server).await;
    // The server itself checks that the header matches the argument, and refuses the call
    // if it does not; the tool returns both as it saw them.
    for (region, header) in [
        ("us-west1", "us-west1"),
        ("Zürich", "=?base64?WsO8cmljaA==?="),
        (
            "eu\r\nX-Injected: yes",
            "=?base64?ZXUNClgtSW5qZWN0ZWQ6IHllcw==?=",
        ),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ] {
        let seen = call_json(&pack, "region", json!({"region": region})).await;
        assert_eq!(seen, json!({"argument": region, "header": header}));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_an_error_the_model_can_read() {
    let server = PythonServer::start().await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "py", "needs_input", json!({})).await,
        Err(ToolError::Backend(
            "the tool needs input this client cannot give: the server answered \
             input_required; this Pack declares no client capabilities, so it cannot answer \
             a form, a sampling request or any other question from a server"
                .to_owned()
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_at_the_server() {
    let server = PythonServer::start().await;
    let pack = ready_pack(&server).await;
    let slow = support::call(&pack, "py", "slow", json!({}));
    let waiting = tokio::time::timeout(Duration::from_millis(1500), slow).await;
    assert!(waiting.is_err(), "the call waits for its answer");
    support::wait_until("the server sees the call cancelled", SETTLE, async || {
        call_json(&pack, "slow_calls", json!({})).await == json!({"started": 1, "cancelled": 1})
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_output_or_log_line_names_a_secret_the_server_echoes() {
    let logs = support::logs::capture("trace");
    let server = PythonServer::start().await;
    let pack = support::pack(json!({"py": {
        "url": format!("{}?key=${{env:PLUGIN_MCP_TEST_CANARY}}", server.url),
        "headers": {
            "Authorization": "Bearer ${env:PLUGIN_MCP_TEST_CANARY}",
            "X-Api-Key": "${env:PLUGIN_MCP_TEST_CANARY}",
        },
    }}));
    support::wait_for(&pack, "py", "ready", SETTLE).await;
    let mut said = vec![
        support::list(&pack, json!({"namespace": "py"}))
            .await
            .to_string(),
    ];
    let echoed = support::call(&pack, "py", "headers", json!({})).await;
    let echoed = echoed.expect("the headers are echoed");
    // The server really received the secret, and it came back redacted.
    let seen: Value = serde_json::from_str(&echoed).expect("JSON");
    assert_eq!(seen["x-api-key"], "[redacted]", "{seen}");
    // The whole configured value is a secret, its scheme included.
    assert_eq!(seen["authorization"], "[redacted]", "{seen}");
    said.push(echoed);
    for args in [
        json!({"text": CANARY}),
        json!({"text": format!("Bearer {CANARY}")}),
        json!({}),
    ] {
        let outcome = support::call(&pack, "py", "echo", args).await;
        said.push(format!("{outcome:?}"));
    }
    for text in &said {
        assert_clean("an output", text);
    }
    // When shutdown completes, the Pack has sent and logged all it ever will.
    pack.shutdown().await;
    drop(pack);
    assert_clean("the log", &logs.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_server_returns_passes_the_envelope() {
    let server = PythonServer::start().await;
    let pack = ready_pack(&server).await;
    let hostile = "ok\u{1b}]52;c;cGF5bG9hZA==\u{7}\u{202e}txt.exe\u{200b}\u{e0041}";
    let result = support::call(&pack, "py", "echo", json!({"text": hostile}))
        .await
        .expect("the echo answers");
    for forbidden in ['\u{1b}', '\u{7}', '\u{202e}', '\u{200b}', '\u{e0041}'] {
        assert!(!result.contains(forbidden), "{result:?}");
    }
    assert!(result.starts_with("ok"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_the_server_adds_removes_and_changes_appear_without_a_restart_in_both_eras() {
    for (args, era) in [(&[][..], "2026-07-28"), (&["--legacy"][..], "2025-11-25")] {
        let server = PythonServer::start_with(args).await;
        let pack = ready_pack(&server).await;
        let listing = support::list(&pack, json!({"namespace": "py"})).await;
        assert_eq!(listing["protocolVersion"], era);
        let change = |action: &'static str, name: &'static str| {
            let pack = Arc::clone(&pack);
            async move {
                let args = json!({"action": action, "name": name});
                support::call(&pack, "py", "change_tools", args).await
            }
        };
        let names = async || {
            let listing = support::list(&pack, json!({"namespace": "py"})).await;
            support::tool_names(&listing)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(change("add", "fresh").await, Ok("changed".to_owned()));
        support::wait_until(&format!("{era}: fresh is listed"), SETTLE, async || {
            names().await.contains(&"fresh".to_owned())
        })
        .await;
        assert_eq!(
            support::call(&pack, "py", "fresh", json!({"text": "hi"})).await,
            Ok("hi".to_owned())
        );
        assert_eq!(change("describe", "fresh").await, Ok("changed".to_owned()));
        support::wait_until(
            &format!("{era}: fresh is described anew"),
            SETTLE,
            async || {
                let one =
                    support::list(&pack, json!({"namespace": "py", "toolName": "fresh"})).await;
                one["tool"]["description"] == "fresh, described anew"
            },
        )
        .await;
        assert_eq!(change("remove", "echo").await, Ok("changed".to_owned()));
        support::wait_until(&format!("{era}: echo is gone"), SETTLE, async || {
            !names().await.contains(&"echo".to_owned())
        })
        .await;
    }
}
