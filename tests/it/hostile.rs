//! The hostile-server matrix: each misbehaviour ends in a clear outcome within its documented
//! deadline, never a panic or a hang, and never affects the other servers of the Pack.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use runvil_plugin::{Pack, ToolError};
use serde_json::{Value, json};
use support::hostile::{Hostile, Request, Script, Step, http, json_reply, mcp, result_for};

/// A quick failure settles within the first attempt; this bounds the wait, not the client.
const QUICK: Duration = Duration::from_secs(15);

fn sse_bytes(body: &[u8]) -> Vec<u8> {
    let mut out =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s-1\r\n\r\n"
            .to_vec();
    out.extend_from_slice(body);
    out
}

/// A server that behaves except for `method`, which gets `bad`.
async fn breaking(
    method: &'static str,
    bad: impl Fn(&Request) -> Script + Send + Sync + 'static,
) -> Hostile {
    Hostile::start(move |r: &Request| {
        if r.rpc_method() == method {
            bad(r)
        } else {
            mcp(r)
        }
    })
    .await
}

/// Builds a Pack on `bad` plus a well-behaved server, waits for `bad` to settle, and checks
/// the good one is untouched.
async fn settle_beside_a_good_server(bad: &Hostile, within: Duration) -> (Arc<dyn Pack>, Value) {
    let good = Hostile::start(mcp).await;
    let pack = support::pack(json!({"bad": {"url": bad.url}, "good": {"url": good.url}}));
    let entry = support::settled(&pack, "bad", within).await;
    support::wait_for(&pack, "good", "ready", QUICK).await;
    assert_eq!(
        support::call(&pack, "good", "echo", json!({"text": "fine"})).await,
        Ok("fine".to_owned())
    );
    (pack, entry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_answers_at_start_get_a_reason_and_leave_the_others_alone() {
    let big_line = {
        let mut line = b"data: ".to_vec();
        line.resize(16 * 1024 * 1024 + 7, b'a');
        line
    };
    let cases: Vec<(&str, &'static str, Script, &str)> = vec![
        ("403", "initialize", Script::raw(http("403 Forbidden", &[], b"no")), "the server answered HTTP 403 Forbidden"),
        ("malformed JSON", "initialize", Script::raw(http("200 OK", &[("content-type", "application/json")], b"{nope}")), "the answer is not JSON"),
        ("closed after headers", "initialize", Script::raw(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n".to_vec()), "the answer broke off"),
        ("reset mid-body", "tools/list", Script::raw(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",".to_vec()), "the answer broke off"),
        ("invalid UTF-8 in SSE", "tools/list", Script::raw(sse_bytes(b"data: \xff\xfe\n\n")), "an SSE event is not valid UTF-8"),
        ("an SSE line past the cap", "tools/list", Script::raw(sse_bytes(&big_line)), "an SSE event is larger than 16777216 bytes"),
        ("brotli", "initialize", Script::raw(http("200 OK", &[("content-type", "application/json"), ("content-encoding", "br")], b"\x8b\x02\x80")), "the answer is not JSON"),
        ("a session id HTTP cannot carry", "initialize", Script::raw(http("200 OK", &[("content-type", "application/json"), ("mcp-session-id", "caf\u{e9}")], b"{}")), "the server sent a session id that is not 1 to 1024 visible ASCII characters"),
    ];
    for (name, method, script, reason) in cases {
        let bad = breaking(method, move |_| script.clone()).await;
        let (_pack, entry) = settle_beside_a_good_server(&bad, QUICK).await;
        assert_eq!(entry["status"], "error", "{name}: {entry}");
        let got = entry["reason"].as_str().expect("reason");
        assert!(got.starts_with(reason), "{name}: {got}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_past_the_cap_sent_slowly_fails_at_the_cap() {
    let bad = breaking("tools/list", |_| {
        let mut steps = vec![Step::Write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n".to_vec(),
        )];
        for _ in 0..17 {
            steps.push(Step::Write(vec![b' '; 1 << 20]));
            steps.push(Step::Sleep(Duration::from_millis(50)));
        }
        Script {
            steps,
            keep_alive: false,
        }
    })
    .await;
    let (_pack, entry) = settle_beside_a_good_server(&bad, QUICK).await;
    assert_eq!(entry["reason"], "the answer is larger than 16777216 bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_recovers_becomes_ready() {
    let failures = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&failures);
    let bad = Hostile::start(move |r: &Request| {
        if r.rpc_method() == "initialize" && count.fetch_add(1, Ordering::SeqCst) < 2 {
            return Script::raw(http("503 Service Unavailable", &[], b""));
        }
        mcp(r)
    })
    .await;
    let pack = support::pack(json!({"s": {"url": bad.url}}));
    let entry = support::settled(&pack, "s", QUICK).await;
    assert_eq!(
        entry["reason"],
        "the server answered HTTP 503 Service Unavailable"
    );
    // Retries after 1 s and 2 s: the third attempt succeeds.
    support::wait_for(&pack, "s", "ready", QUICK).await;
    assert_eq!(failures.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ready_server_that_fails_a_call_stays_ready_and_works_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&calls);
    let server = breaking("tools/call", move |r| {
        match count.fetch_add(1, Ordering::SeqCst) {
            0 => Script::raw(http("502 Bad Gateway", &[], b"")),
            1 => Script::raw(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{"
                    .to_vec(),
            ),
            _ => mcp(r),
        }
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", QUICK).await;
    let first = support::call(&pack, "s", "echo", json!({"text": "a"})).await;
    assert_eq!(
        first,
        Err(ToolError::Transport(
            "the server answered HTTP 502 Bad Gateway".to_owned()
        ))
    );
    let second = support::call(&pack, "s", "echo", json!({"text": "b"})).await;
    assert!(
        matches!(&second, Err(ToolError::Transport(m)) if m.starts_with("the answer broke off")),
        "{second:?}"
    );
    assert_eq!(support::status(&pack, "s").await["status"], "ready");
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "c"})).await,
        Ok("c".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_answers_for_one_id_take_the_first() {
    let server = breaking("tools/call", |r| {
        let one = result_for(r, json!({"content": [{"type": "text", "text": "first"}]}));
        let two = result_for(r, json!({"content": [{"type": "text", "text": "second"}]}));
        Script::raw(sse_bytes(
            format!("data: {one}\n\ndata: {two}\n\n").as_bytes(),
        ))
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", QUICK).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({})).await,
        Ok("first".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_zero_is_clamped_and_idle_resumptions_are_bounded() {
    let server = Hostile::start(|r: &Request| match (r.method.as_str(), r.rpc_method()) {
        ("POST", "tools/call") | ("GET", _) => {
            Script::raw(sse_bytes(b"id: e1\nretry: 0\ndata: \n\n"))
        }
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", QUICK).await;
    let started = tokio::time::Instant::now();
    let outcome = support::call(&pack, "s", "echo", json!({})).await;
    assert_eq!(
        outcome,
        Err(ToolError::Transport(
            "the stream was resumed 5 times without a new event".to_owned()
        ))
    );
    let gets = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .count();
    assert_eq!(
        gets, 4,
        "four resumptions, the fifth idle stream ends the call"
    );
    // Clamped to at least 100 ms a wait: not a busy loop.
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_tools_in_one_page_are_listed() {
    let tools: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("t{i:05}"), "inputSchema": {"type": "object"}}))
        .collect();
    let server = breaking("tools/list", move |r| {
        json_reply(&result_for(r, json!({"tools": tools})))
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "ready", QUICK).await;
    assert_eq!(entry["tools"].as_array().map(Vec::len), Some(10_000));
    let error = support::call(&pack, "s", "nope", json!({}))
        .await
        .expect_err("unknown");
    assert!(error.message().ends_with("and 9950 more"), "{error}");
}

/// Every stall ends at the start deadline of two minutes: one test, all cases at once. The
/// servers run on a runtime of their own, in real time; the Pack on one whose clock is paused
/// once every stalling server holds its `tools/list`, so the deadline comes without the
/// suite waiting two minutes for it (and the clock cannot cut connecting short).
#[test]
fn stalls_end_at_the_start_deadline() {
    let servers_runtime = tokio::runtime::Runtime::new().expect("the servers' runtime");
    let stalls: Vec<(&str, Script)> = vec![
        ("headers never arrive", Script { steps: vec![Step::Stall], keep_alive: true }),
        ("a body that trickles a byte a second", Script {
            steps: std::iter::once(Step::Write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n".to_vec()))
                .chain((0..1000).flat_map(|_| [Step::Write(b" ".to_vec()), Step::Sleep(Duration::from_secs(1))]))
                .collect(),
            keep_alive: false,
        }),
        ("a stream that stalls", Script { steps: vec![Step::Write(sse_bytes(b"id: 1\ndata: \n\n")), Step::Stall], keep_alive: true }),
        ("endless pings and notifications", Script {
            steps: std::iter::once(Step::Write(sse_bytes(b"")))
                .chain((0..100_000).flat_map(|i| [
                    Step::Write(format!("data: {}\n\ndata: {}\n\n",
                        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": i}}),
                        json!({"jsonrpc": "2.0", "id": format!("p{i}"), "method": "ping"})).into_bytes()),
                    Step::Sleep(Duration::from_millis(20)),
                ]))
                .collect(),
            keep_alive: false,
        }),
    ];
    let (servers, good, config) = servers_runtime.block_on(async {
        let mut servers = Vec::new();
        let mut config = serde_json::Map::new();
        for (name, script) in stalls {
            let server = breaking("tools/list", move |_| script.clone()).await;
            config.insert(name.to_owned(), json!({"url": server.url}));
            servers.push(server);
        }
        let good = Hostile::start(mcp).await;
        config.insert("good".to_owned(), json!({"url": good.url}));
        (servers, good, config)
    });
    let client_runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client's runtime");
    client_runtime.block_on(async {
        let pack = support::pack(Value::Object(config.clone()));
        support::wait_for(&pack, "good", "ready", QUICK).await;
        for server in &servers {
            server
                .until("the server holds the listing", QUICK, |s| {
                    !s.calls_of("tools/list").is_empty()
                })
                .await;
        }
        tokio::time::pause();
        let started = tokio::time::Instant::now();
        for name in config.keys().filter(|n| *n != "good") {
            let entry = support::settled(&pack, name, Duration::from_secs(150)).await;
            assert_eq!(
                entry["reason"], "did not connect and list its tools within 120 s",
                "{name}"
            );
        }
        assert!(started.elapsed() < Duration::from_secs(150));
        // While the others stalled, the good server answered at once.
        assert_eq!(
            support::call(&pack, "good", "echo", json!({"text": "ok"})).await,
            Ok("ok".to_owned())
        );
    });
    drop(good);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_retry_is_clamped_to_the_policy_maximum() {
    let server = Hostile::start(|r: &Request| match (r.method.as_str(), r.rpc_method()) {
        ("POST", "tools/call") => Script::raw(sse_bytes(b"id: e1\nretry: 99999999999999\ndata: \n\n")),
        ("GET", _) => {
            // Ids count from 0: the server/discover probe, initialize, tools/list, then this
            // tools/call.
            let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "back"}]}});
            Script::raw(sse_bytes(format!("id: e2\ndata: {answer}\n\n").as_bytes()))
        }
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", QUICK).await;
    let started = tokio::time::Instant::now();
    let call = support::call(&pack, "s", "echo", json!({}));
    let outcome = tokio::time::timeout(Duration::from_secs(90), call)
        .await
        .expect("the wait was clamped");
    assert_eq!(outcome, Ok("back".to_owned()));
    // SSE_MAX_RETRY is 30 s: the client waited that long, and no longer than the timeout above.
    assert!(started.elapsed() >= Duration::from_secs(30));
}
