//! Wire rules checked against the hostile server: redirects refused, sessions restarted once,
//! server requests on a stream answered, resumption, and caps that hold.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use runvil_plugin::ToolError;
use serde_json::{Value, json};
use support::hostile::{self, Hostile, Request, Script, Step, http, mcp, result_for};

const SETTLE: Duration = Duration::from_secs(10);

async fn ready_pack(server: &Hostile) -> Arc<dyn runvil_plugin::Pack> {
    let pack = support::pack(
        json!({"s": {"url": server.url, "headers": {"X-Secret-Header": "h-value-123"}}}),
    );
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    pack
}

fn sse(events: &str) -> Vec<u8> {
    http(
        "200 OK",
        &[
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "s-1"),
        ],
        events.as_bytes(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_refused_and_their_location_never_contacted() {
    for status in [
        "301 Moved Permanently",
        "302 Found",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
    ] {
        let elsewhere = Hostile::start(mcp).await;
        let location = elsewhere.url.clone();
        let server =
            Hostile::start(move |_| Script::raw(http(status, &[("location", &location)], b"")))
                .await;
        let pack = support::pack(
            json!({"s": {"url": server.url, "headers": {"Authorization": "Bearer t0ken-value"}}}),
        );
        let entry = support::settled(&pack, "s", SETTLE).await;
        assert_eq!(entry["status"], "error", "{status}");
        let code = &status[..3];
        assert_eq!(
            entry["reason"],
            format!(
                "the server answered HTTP {code} (a redirect); redirects are refused so configured headers reach only the configured server: configure the final URL"
            )
        );
        assert_eq!(
            elsewhere.connections(),
            0,
            "{status}: the Location was contacted"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_carries_the_protocol_headers() {
    let server = Hostile::start(mcp).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "hi"})).await,
        Ok("hi".to_owned())
    );
    let requests = server.requests();
    // The probe of a 2026-07-28 server, which this one is not (it answers 202).
    let probe = &requests[0];
    assert_eq!(probe.rpc_method(), "server/discover");
    assert_eq!(probe.header("mcp-protocol-version"), Some("2026-07-28"));
    let requests = &requests[1..];
    let initialize = &requests[0];
    assert_eq!(initialize.rpc_method(), "initialize");
    assert_eq!(initialize.body["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(initialize.body["params"]["capabilities"], json!({}));
    assert_eq!(
        initialize.body["params"]["clientInfo"]["name"],
        "plugin_mcp"
    );
    assert_eq!(initialize.header("mcp-session-id"), None);
    assert_eq!(initialize.header("mcp-protocol-version"), None);
    for request in requests {
        assert_eq!(
            request.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(request.header("content-type"), Some("application/json"));
        assert_eq!(request.header("x-secret-header"), Some("h-value-123"));
        assert_eq!(
            request.header("accept-encoding"),
            None,
            "no compressed answers asked for"
        );
    }
    for request in &requests[1..] {
        assert_eq!(
            request.header("mcp-session-id"),
            Some("s-1"),
            "{}",
            request.rpc_method()
        );
        assert_eq!(request.header("mcp-protocol-version"), Some("2025-11-25"));
    }
    let methods: Vec<&str> = requests.iter().map(Request::rpc_method).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    let call = &requests[3].body;
    assert_eq!(
        call["params"],
        json!({"name": "echo", "arguments": {"text": "hi"}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_restarts_the_session_once_and_never_loops() {
    // After the handshake, every tools/call gets 404: one restart, one retry, then an error.
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => Script::raw(http("404 Not Found", &[], b"")),
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let outcome = support::call(&pack, "s", "echo", json!({"text": "x"})).await;
    assert_eq!(
        outcome,
        Err(ToolError::Transport(
            "the server answered HTTP 404 Not Found".to_owned()
        ))
    );
    assert_eq!(server.calls_of("initialize").len(), 2);
    assert_eq!(server.calls_of("tools/call").len(), 2);
    assert_eq!(
        support::status(&pack, "s").await["status"],
        "ready",
        "a ready server stays ready"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_without_a_session_is_not_a_restart() {
    let server = Hostile::start(|_| Script::raw(http("404 Not Found", &[], b"nope"))).await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::settled(&pack, "s", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server answered HTTP 404 Not Found: nope"
    );
    assert_eq!(server.calls_of("initialize").len(), 1);
}

/// A server that forgets its sessions when it restarts (`restart`), answering a request in
/// a forgotten session with `status`, `kind` and `body`, as real servers do.
async fn forgetful(
    status: &'static str,
    kind: &'static str,
    body: &'static str,
) -> (Hostile, Arc<AtomicUsize>) {
    let generation = Arc::new(AtomicUsize::new(1));
    let current = Arc::clone(&generation);
    let server = Hostile::start(move |r: &Request| {
        let now = format!("s-{}", current.load(Ordering::SeqCst));
        let answer = |result: Value| {
            let body = result_for(r, result).to_string();
            let headers = [("content-type", "application/json"), ("mcp-session-id", now.as_str())];
            Script { steps: vec![Step::Write(http("200 OK", &headers, body.as_bytes()))], keep_alive: true }
        };
        match (r.rpc_method(), r.header("mcp-session-id")) {
            ("initialize", _) => answer(json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                               "serverInfo": {"name": "forgetful", "version": "1"}})),
            (_, Some(id)) if id != now => Script {
                steps: vec![Step::Write(http(status, &[("content-type", kind)], body.as_bytes()))],
                keep_alive: true,
            },
            ("tools/list" | "tools/call", _) => match hostile::mcp_result(r) {
                Some(result) => answer(result),
                None => mcp(r),
            },
            _ => mcp(r),
        }
    })
    .await;
    (server, generation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_server_forgot_is_started_anew_whatever_it_answers() {
    let forgotten: [(&str, &str, &str); 3] = [
        // server-everything's answer.
        (
            "400 Bad Request",
            "application/json",
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
        ),
        ("401 Unauthorized", "text/plain", "unknown session"),
        (
            "404 Not Found",
            "application/json",
            r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#,
        ),
    ];
    for (status, kind, body) in forgotten {
        let (server, generation) = forgetful(status, kind, body).await;
        let pack = ready_pack(&server).await;
        assert_eq!(
            support::call(&pack, "s", "echo", json!({"text": "a"})).await,
            Ok("a".to_owned())
        );
        // The server restarts: the Pack's session is no longer one it knows.
        generation.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            support::call(&pack, "s", "echo", json!({"text": "b"})).await,
            Ok("b".to_owned()),
            "{status}"
        );
        assert_eq!(server.calls_of("initialize").len(), 2, "{status}");
        assert_eq!(support::status(&pack, "s").await["status"], "ready");
        // And again at the next restart.
        generation.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            support::call(&pack, "s", "echo", json!({"text": "c"})).await,
            Ok("c".to_owned())
        );
        assert_eq!(server.calls_of("initialize").len(), 3, "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_status_says_what_the_server_said_and_only_a_lost_session_restarts_it() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => Script::raw(http(
            "400 Bad Request",
            &[("content-type", "application/json")],
            br#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"the argument \u001b[31mx\u001b[0m is wrong"},"id":null}"#,
        )),
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "x"})).await,
        Err(ToolError::Transport(
            "the server answered HTTP 400 Bad Request: the argument x is wrong".to_owned()
        ))
    );
    assert_eq!(
        server.calls_of("initialize").len(),
        1,
        "no session was lost"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_on_a_stream_are_answered_and_notifications_ignored() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => {
            let answer = result_for(r, json!({"content": [{"type": "text", "text": "done"}]}));
            let events = format!(
                "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
                json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
                json!({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}),
                json!({"jsonrpc": "2.0", "id": 999_999, "result": {"content": []}}),
                answer,
            );
            Script { steps: vec![Step::Write(sse(&events))], keep_alive: true }
        }
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({})).await,
        Ok("done".to_owned())
    );
    let answers: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r.body.get("method").is_none() && r.method == "POST")
        .map(|r| r.body)
        .collect();
    assert_eq!(
        answers,
        [
            json!({"jsonrpc": "2.0", "id": "p1", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}}),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_early_is_resumed_with_last_event_id() {
    let server = Hostile::start(|r: &Request| match (r.method.as_str(), r.rpc_method()) {
        ("POST", "tools/call") => Script {
            steps: vec![Step::Write(sse("id: ev-1\nretry: 200\ndata: \n\n"))],
            keep_alive: false,
        },
        ("GET", _) => {
            // Ids count from 0: the server/discover probe, initialize, tools/list, then this
            // tools/call.
            let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "resumed"}]}});
            Script { steps: vec![Step::Write(sse(&format!("id: ev-2\ndata: {answer}\n\n")))], keep_alive: false }
        }
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let call = support::call(&pack, "s", "echo", json!({}));
    let outcome = tokio::time::timeout(SETTLE, call)
        .await
        .expect("resumed in time");
    assert_eq!(outcome, Ok("resumed".to_owned()));
    let get = server
        .requests()
        .into_iter()
        .find(|r| r.method == "GET")
        .expect("a GET");
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_answers_get_clear_reasons() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "500",
            http("500 Internal Server Error", &[], b"boom"),
            "the server answered HTTP 500 Internal Server Error: boom",
        ),
        (
            "401",
            http("401 Unauthorized", &[], b""),
            "the server requires authorization: this Host cannot log in to servers",
        ),
        (
            "html",
            http(
                "200 OK",
                &[("content-type", "text/html")],
                b"<html>hi</html>",
            ),
            "the answer's content type is text/html, not application/json or text/event-stream",
        ),
        (
            "empty",
            http("200 OK", &[], b""),
            "the server answered a request with no body",
        ),
        (
            "truncated",
            http(
                "200 OK",
                &[("content-type", "application/json")],
                b"{\"jsonrpc\":",
            ),
            "the answer is not JSON",
        ),
        (
            "wrong id",
            http(
                "200 OK",
                &[("content-type", "application/json")],
                br#"{"jsonrpc":"2.0","id":99,"result":{}}"#,
            ),
            "the answer does not respond to the request",
        ),
        (
            "bad session id",
            http(
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("mcp-session-id", "a b"),
                ],
                b"{}",
            ),
            "the server sent a session id that is not 1 to 1024 visible ASCII characters",
        ),
        (
            "sse no id",
            sse("data: \n\n"),
            "the stream ended before the answer, with no event id to resume from",
        ),
        (
            "gzip",
            http(
                "200 OK",
                &[
                    ("content-type", "application/json"),
                    ("content-encoding", "gzip"),
                ],
                b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
            ),
            "the answer is not JSON",
        ),
    ];
    for (name, answer, reason) in cases {
        let server = Hostile::start(move |_| Script::raw(answer.clone())).await;
        let pack = support::pack(json!({"s": {"url": server.url}}));
        let entry = support::settled(&pack, "s", SETTLE).await;
        assert_eq!(entry["status"], "error", "{name}");
        assert_eq!(entry["reason"], reason, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_outside_the_accepted_three_are_refused() {
    for (version, ready) in [
        ("2025-03-26", true),
        ("2025-06-18", true),
        ("2024-11-05", false),
        ("2026-07-28", false),
    ] {
        let server = Hostile::start(move |r: &Request| match r.rpc_method() {
            "initialize" => hostile::json_reply(&result_for(r, json!({"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}))),
            _ => mcp(r),
        })
        .await;
        let pack = support::pack(json!({"s": {"url": server.url}}));
        let entry = support::settled(&pack, "s", SETTLE).await;
        if ready {
            assert_eq!(entry["status"], "ready", "{version}");
        } else {
            assert_eq!(
                entry["reason"],
                "the server speaks none of the protocol versions 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26",
                "{version}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_pages_stop_at_a_repeated_cursor_and_at_the_page_cap() {
    let repeat = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/list" => {
            hostile::json_reply(&result_for(r, json!({"tools": [], "nextCursor": "same"})))
        }
        _ => mcp(r),
    })
    .await;
    let endless = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/list" => {
            let n = r.body["params"]["cursor"]
                .as_str()
                .map_or(0, |c| c.parse::<u64>().unwrap_or(0) + 1);
            hostile::json_reply(&result_for(
                r,
                json!({"tools": [], "nextCursor": n.to_string()}),
            ))
        }
        _ => mcp(r),
    })
    .await;
    let pack =
        support::pack(json!({"repeat": {"url": repeat.url}, "endless": {"url": endless.url}}));
    let entry = support::settled(&pack, "repeat", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "tools/list repeated a cursor, which would never end"
    );
    let entry = support::settled(&pack, "endless", SETTLE).await;
    assert_eq!(entry["reason"], "tools/list sent more than 100 pages");
    assert_eq!(endless.calls_of("tools/list").len(), 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_cap_fails_without_buffering_it_all() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/list" => {
            let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17000000\r\n\r\n".to_vec();
            let chunk = vec![b' '; 1 << 20];
            let mut steps = vec![Step::Write(head)];
            steps.extend(std::iter::repeat_n(Step::Write(chunk), 17));
            Script { steps, keep_alive: false }
        }
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::settled(&pack, "s", SETTLE).await;
    assert_eq!(entry["reason"], "the answer is larger than 16777216 bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_pack_ends_the_session_with_delete() {
    let server = Hostile::start(|r: &Request| match r.method.as_str() {
        "DELETE" => Script::raw(http("405 Method Not Allowed", &[], b"")),
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    drop(pack);
    let is_delete = |r: &Request| r.method == "DELETE";
    server
        .until("no DELETE was sent", SETTLE, |s| {
            s.requests().iter().any(is_delete)
        })
        .await;
    let requests = server.requests();
    let delete = requests.iter().find(|r| is_delete(r)).expect("the DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
    assert_eq!(delete.header("x-secret-header"), Some("h-value-123"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_rpc_error_at_start_is_a_cleaned_reason() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "initialize" => hostile::json_reply(&json!({"jsonrpc": "2.0", "id": r.body["id"],
            "error": {"code": -32602, "message": "\u{1b}[1mUnsupported\u{1b}[0m protocol version"}})),
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::settled(&pack, "s", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server answered with error -32602: Unsupported protocol version"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_is_cancelled_before_the_session_ends() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => Script {
            steps: vec![Step::Stall],
            keep_alive: true,
        },
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let call = support::call(&pack, "s", "echo", json!({"text": "never"}));
    let sent = server.until("the call reaches the server", SETTLE, |s| {
        !s.calls_of("tools/call").is_empty()
    });
    tokio::select! {
        _ = call => panic!("the call never answers"),
        () = sent => {}
    }
    // The call future is gone; dropping the Pack at once ends the session.
    drop(pack);
    server
        .until("no DELETE", SETTLE, |s| {
            s.requests().iter().any(|r| r.method == "DELETE")
        })
        .await;
    let order: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            if r.method == "POST" {
                r.rpc_method().to_owned()
            } else {
                r.method.clone()
            }
        })
        .collect();
    let cancelled = order
        .iter()
        .position(|m| m == "notifications/cancelled")
        .expect("cancelled");
    let deleted = order.iter().position(|m| m == "DELETE").expect("deleted");
    assert!(cancelled < deleted, "{order:?}");
    let cancel = &server.calls_of("notifications/cancelled")[0].body;
    assert_eq!(
        cancel["params"]["requestId"],
        server.calls_of("tools/call")[0].body["id"]
    );
}
