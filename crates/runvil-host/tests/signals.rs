//! How `runvil` stops: SIGINT, SIGTERM and SIGHUP each cancel the call in flight (its server
//! is sent `notifications/cancelled`), end the session (DELETE) before the process exits, and
//! exit with 128 + the signal; and the exit codes of a server that could not be reached.

mod support;

#[allow(dead_code, unreachable_pub)] // the test server's other helpers serve other tests
use shared_mcp_fixture::hostile;

use hostile::{Hostile, stalls_calls};
use serde_json::json;
use support::{Temp, runvil, signal_during_call, text, unreachable_url};

/// What the server saw, in order: JSON-RPC methods for POSTs, HTTP methods otherwise.
fn seen(server: &Hostile) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| match r.method.as_str() {
            "POST" => r.rpc_method().to_owned(),
            other => other.to_owned(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_signal_cancels_the_call_ends_the_session_and_exits_128_plus_its_number() {
    for (signal, code, said) in [
        ("INT", 130, "runvil: interrupted\n"),
        ("TERM", 143, "runvil: terminated (SIGTERM)\n"),
        ("HUP", 129, "runvil: hung up (SIGHUP)\n"),
    ] {
        let server = Hostile::start(stalls_calls).await;
        let config = Temp::config(json!({"s": {"url": server.url}}));
        let args = [
            "call",
            "s",
            "echo",
            r#"{"text":"x"}"#,
            "--config",
            config.arg(),
        ];
        let called = async || !server.calls_of("tools/call").is_empty();
        let out = signal_during_call(&args, signal, called).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "SIG{signal}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).ends_with(said),
            "SIG{signal}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
        // Told before the process exited: no waiting here.
        let seen = seen(&server);
        assert_eq!(
            seen[seen.len() - 2..],
            ["notifications/cancelled", "DELETE"],
            "SIG{signal}: {seen:?}"
        );
        let call_id = &server.calls_of("tools/call")[0].body["id"];
        let cancelled = &server.calls_of("notifications/cancelled")[0];
        assert_eq!(&cancelled.body["params"]["requestId"], call_id);
    }
}

#[test]
fn a_server_that_cannot_be_reached_exits_4_and_a_refused_one_2() {
    let config = Temp::config(json!({
        "down": {"url": unreachable_url()},
        "local": {"command": "npx"},
    }));
    let call = runvil(&["call", "down", "echo", "--config", config.arg()]);
    assert_eq!(call.status.code(), Some(4), "{}", text(&call.stderr));
    assert!(
        text(&call.stderr).contains("down is not ready: its status is error: could not reach"),
        "{}",
        text(&call.stderr)
    );
    let tools = runvil(&["tools", "down", "--config", config.arg()]);
    assert_eq!(tools.status.code(), Some(4), "{}", text(&tools.stderr));
    let listing: serde_json::Value = serde_json::from_slice(&tools.stdout).expect("JSON");
    assert_eq!(listing["status"], "error", "the listing is still printed");
    let refused = runvil(&["tools", "local", "--config", config.arg()]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let call = runvil(&["call", "local", "echo", "--config", config.arg()]);
    assert_eq!(call.status.code(), Some(2), "{}", text(&call.stderr));
    // The listing of every server is printed, and its exit code says the worst of them: one
    // could not be reached.
    let all = runvil(&["tools", "--config", config.arg()]);
    assert_eq!(all.status.code(), Some(4), "{}", text(&all.stderr));
    let listing: serde_json::Value = serde_json::from_slice(&all.stdout).expect("JSON");
    assert_eq!(listing["servers"].as_array().map(Vec::len), Some(2));
}
