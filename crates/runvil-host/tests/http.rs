//! `runvil serve --http` on the wire, through the binary: sessions any instance opens, the
//! 2026-07-28 revision's rules, cancellation, the drain, TLS, and hostile clients (bounds on
//! bodies, headers, slow senders and one identity's rate), against the workspace's fixture
//! server behind it. The real clients of other SDKs are `tests/clients.rs`'.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet};
use support::gateway::{Gateway, Http, config_of, key_path, messages, result_text, tool_call};
use support::{Temp, backend, backend_late, runvil, text};

/// How long a test waits for something that happens at once; it bounds a failure, nothing is
/// timed.
const SOON: Duration = Duration::from_secs(20);

/// A backend whose `slow` takes `slow_for`, and a config naming it `backend`.
async fn slow_backend(slow_for: Duration) -> (Fixture, Temp) {
    let server = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "progress", "slow"]))
        .slow_for(slow_for)
        .start()
        .await;
    let config = config_of(&[("backend", server.url())]);
    (server, config)
}

fn call_slow() -> Value {
    tool_call(
        "call_dynamic_tool",
        json!({"namespace": "backend", "toolName": "slow"}),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_opened_on_one_instance_is_answered_by_another_with_the_same_key_only() {
    let server = backend().await;
    let config = config_of(&[("backend", server.url())]);
    let (shared, other) = (key_path(), key_path());
    let env = [("RUST_LOG", "runvil=debug,plugin_mcp=debug")];
    let first = Gateway::start_with(config.path(), &shared, &[], &env);
    let second = Gateway::start_with(config.path(), &shared, &[], &env);
    let stranger = Gateway::start(config.path(), &other, &[]);
    let session = Http::new(first.url()).initialize().await;

    let listing = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": tool_call("get_dynamic_tools", json!({"namespace": "backend"}))});
    let answer = Http::new(second.url()).in_session(&session, &listing).await;
    assert_eq!(answer.status(), 200);
    let (text, error) = result_text(&messages(answer).await[0]);
    assert!(!error && text.contains("\"status\":\"ready\""), "{text}");

    // Under another key, changed, or cut: each a session that does not exist.
    let mut changed = session.clone().into_bytes();
    changed[40] = if changed[40] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).expect("ASCII");
    for (gateway, id) in [
        (&stranger, session.as_str()),
        (&first, changed.as_str()),
        (&first, &session[..60]),
    ] {
        let answer = Http::new(gateway.url()).in_session(id, &listing).await;
        assert_eq!(answer.status(), 404, "{id}");
        let body: Value = json_of(answer).await;
        assert_eq!(
            body["error"]["message"],
            "no such session: start a new one with initialize"
        );
    }

    // DELETE answers 204 where it is sent, which refuses the id from then on; without a
    // store another instance keeps answering it until it expires, as README says.
    assert_eq!(Http::new(first.url()).delete(&session).await.status(), 204);
    let answer = Http::new(second.url()).in_session(&session, &listing).await;
    assert_eq!(answer.status(), 200);
    let answer = Http::new(first.url()).in_session(&session, &listing).await;
    assert_eq!(answer.status(), 404);

    // No log line holds the session id, even at debug.
    for gateway in [&first, &second] {
        let logs = gateway.stderr();
        assert!(!logs.contains(&session), "{logs}");
        assert!(!logs.contains(&session[10..40]), "{logs}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn notifications_cancelled_and_delete_end_the_session_s_calls_running_here() {
    let (server, config) = slow_backend(Duration::from_secs(60)).await;
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    let session = http.initialize().await;

    let call =
        json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": call_slow()});
    let running = tokio::spawn({
        let (http, session) = (http.clone(), session.clone());
        async move { messages(http.in_session(&session, &call).await).await }
    });
    server
        .wait_slow_started(SOON)
        .await
        .expect("the call reached the server");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "call-1", "reason": "the user stopped it"}});
    assert_eq!(http.in_session(&session, &cancel).await.status(), 202);
    server
        .wait_cancelled(SOON)
        .await
        .expect("the server was told");
    let answer = running.await.expect("the call's answer");
    assert_eq!(
        answer,
        Vec::<Value>::new(),
        "a call its client cancelled is not answered"
    );

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call_slow()});
    let running = tokio::spawn({
        let (http, session) = (http.clone(), session.clone());
        async move { messages(http.in_session(&session, &call).await).await }
    });
    support::wait_until("the second call reached the server", SOON, async || {
        server.slow_started().len() == 2
    })
    .await;
    assert_eq!(http.delete(&session).await.status(), 204);
    let answer = running.await.expect("the call's answer");
    assert_eq!(answer, Vec::<Value>::new());
    support::wait_until("the server was told", SOON, async || {
        server.slow_cancelled().len() == 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn closing_a_2026_07_28_response_cancels_its_call() {
    let (server, config) = slow_backend(Duration::from_secs(60)).await;
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    // An event stream (progress asked for) and a JSON answer, each dropped unread.
    for (n, meta) in [(1, json!({"progressToken": "p"})), (2, json!({}))] {
        let mut params = call_slow();
        params["_meta"] = meta;
        let response = tokio::spawn({
            let http = http.clone();
            async move { http.modern(n, "tools/call", params).await }
        });
        support::wait_until("the call reached the server", SOON, async || {
            server.slow_started().len() == n as usize
        })
        .await;
        response.abort();
        let _ = response.await;
        support::wait_until("the server was told", SOON, async || {
            server.slow_cancelled().len() == n as usize
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_s_progress_comes_ahead_of_its_answer_on_its_stream() {
    let server = backend().await;
    let config = config_of(&[("backend", server.url())]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    let mut params = tool_call(
        "call_dynamic_tool",
        json!({"namespace": "backend", "toolName": "progress"}),
    );
    params["_meta"] = json!({"progressToken": 7});
    let response = http.modern(1, "tools/call", params).await;
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "a call with a progress token is answered on a stream"
    );
    let events = messages(response).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[0],
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 7, "progress": 1.0, "total": 2.0, "message": "step 1"}})
    );
    assert_eq!(events[1]["params"]["progress"], 2.0);
    assert_eq!(result_text(&events[2]), ("done".to_owned(), false));
    assert_eq!(events[2]["result"]["resultType"], "complete");
    assert_eq!(
        events[2]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "runvil"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_revision_s_refusals_carry_its_status_and_code() {
    let config = config_of(&[]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    let body = |method: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": support::gateway::modern_meta()}});
    let refusal = async |headers: &[(&str, &str)], body: &Value| {
        let response = http.post(headers, body).await;
        let status = response.status().as_u16();
        let body: Value = json_of(response).await;
        (
            status,
            body["error"]["code"].as_i64().unwrap_or_default(),
            body,
        )
    };
    // No MCP-Protocol-Version header, one that disagrees with `_meta`, a revision nobody
    // speaks, no Mcp-Method, an unknown method.
    let list = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, code, _) = refusal(&list[1..], &body("tools/list")).await;
    assert_eq!((status, code), (400, -32020));
    let mut other = body("tools/list");
    other["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    assert_eq!(refusal(&list, &other).await.0, 400);
    assert_eq!(refusal(&list, &other).await.1, -32020);
    let mut future = body("tools/list");
    future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (status, code, answer) = refusal(
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &future,
    )
    .await;
    assert_eq!((status, code), (400, -32022));
    assert_eq!(
        answer["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
            "requested": "2099-01-01"})
    );
    assert_eq!(refusal(&list[..1], &body("tools/list")).await.1, -32020);
    let (status, code, _) = refusal(
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "prompts/list"),
        ],
        &body("prompts/list"),
    )
    .await;
    assert_eq!((status, code), (404, -32601));
    // A request of neither revision: no session, no request metadata.
    let bare = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(refusal(&[], &bare).await.0, 400);
    // server/discover names every revision, and tools/list the two tools, cacheable.
    let discover: Value = json_of(http.modern(1, "server/discover", json!({})).await).await;
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    let tools: Value = json_of(http.modern(2, "tools/list", json!({})).await).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect();
    assert_eq!(names, ["get_dynamic_tools", "call_dynamic_tool"]);
    assert_eq!(tools["result"]["cacheScope"], "public");
    // The session revisions' GET stream is not offered; other paths are not the endpoint.
    let client = reqwest::Client::new();
    let get = client.get(gateway.url()).send().await.expect("an answer");
    assert_eq!(get.status(), 405);
    let other = client
        .get(format!("{}/other", gateway.base))
        .send()
        .await
        .expect("an answer");
    assert_eq!(other.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_and_headers_are_bounded_at_their_limits() {
    const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
    const MAX_HEADER_BYTES: usize = 64 * 1024;
    let config = config_of(&[]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    // A request padded with spaces to exactly the limit is read; one byte more is not.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": support::gateway::modern_meta()}})
    .to_string();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let padded = format!("{request}{}", " ".repeat(MAX_BODY_BYTES - request.len()));
    let response = reqwest::Client::new()
        .post(gateway.url())
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header(headers[0].0, headers[0].1)
        .header(headers[1].0, headers[1].1)
        .body(padded)
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 200, "a body of exactly the limit");
    // One byte more is refused as soon as the request says so, before the body is sent.
    let port = gateway.base.rsplit(':').next().expect("a port").to_owned();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        MAX_BODY_BYTES + 1
    );
    let answer = raw_exchange(&port, head.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    // The request line and headers at exactly the limit, then one byte past it.
    for (size, status) in [(MAX_HEADER_BYTES, "200"), (MAX_HEADER_BYTES + 1, "431")] {
        let frame = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: \r\n\r\n";
        let pad = "a".repeat(size - frame.len());
        let head = frame.replace("X-Pad: ", &format!("X-Pad: {pad}"));
        assert_eq!(head.len(), size);
        let answer = raw_exchange(&port, head.as_bytes());
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{size}: {answer}"
        );
    }
    assert!(
        !gateway.stderr().contains("panicked"),
        "{}",
        gateway.stderr()
    );
}

async fn json_of(response: reqwest::Response) -> Value {
    let text = response.text().await.expect("a body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Sends `request` on a new connection and reads what comes back until the server closes it
/// or a second passes without a byte.
fn raw_exchange(port: &str, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
    stream.write_all(request).expect("sent");
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("a read timeout");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buffer) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..n]);
    }
    text(&answer)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_sender_is_cut_off_after_the_send_timeout() {
    let config = config_of(&[]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let port = gateway.base.rsplit(':').next().expect("a port").to_owned();
    // Headers never finished, and a body that never comes: each connection is given up.
    let cut = |opening: &'static str| {
        let port = port.clone();
        tokio::task::spawn_blocking(move || {
            let mut stream = TcpStream::connect(format!("127.0.0.1:{port}")).expect("connect");
            stream.write_all(opening.as_bytes()).expect("sent");
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .expect("a read timeout");
            let mut answer = Vec::new();
            let read = stream.read_to_end(&mut answer);
            (read.is_ok(), text(&answer))
        })
    };
    let headers = cut("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty");
    let body = cut(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{\"jsonrpc\"",
    );
    let (closed, answer) = headers.await.expect("the first client");
    assert!(closed, "the connection was closed, not left open: {answer}");
    let (closed, answer) = body.await.expect("the second client");
    assert!(closed);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_requests_of_one_identity_meet_its_rate_without_growing_the_gateway() {
    let config = config_of(&[]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    let list = move |n: i64| {
        let http = http.clone();
        async move {
            let response = http.modern(n, "tools/list", json!({})).await;
            let retry = response.headers().get("retry-after").cloned();
            (response.status().as_u16(), retry)
        }
    };
    let before = gateway.resident_kib();
    let mut counts = std::collections::BTreeMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..16 {
        let list = list.clone();
        tasks.spawn(async move {
            let mut seen = Vec::new();
            for n in 0..625 {
                seen.push(list(worker * 1000 + n).await);
            }
            seen
        });
    }
    while let Some(seen) = tasks.join_next().await {
        for (status, retry) in seen.expect("a worker") {
            if status == 429 {
                assert!(retry.is_some_and(
                    |r| r.to_str().ok().and_then(|s| s.parse::<u64>().ok()) >= Some(1)
                ));
            }
            *counts.entry(status).or_insert(0) += 1;
        }
    }
    assert_eq!(
        counts.keys().copied().collect::<Vec<_>>(),
        [200, 429],
        "{counts:?}"
    );
    assert_eq!(counts.values().sum::<usize>(), 10_000);
    let grown = gateway.resident_kib().saturating_sub(before);
    assert!(grown < 32 * 1024, "the gateway grew by {grown} KiB");
    let health = reqwest::get(format!("{}/healthz", gateway.base))
        .await
        .expect("an answer");
    assert_eq!(health.status(), 200);
    assert!(
        !gateway.stderr().contains("panicked"),
        "{}",
        gateway.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_identity_s_streams_are_bounded_at_max_streams() {
    let (server, config) = slow_backend(Duration::from_secs(60)).await;
    let gateway = Gateway::start(config.path(), &key_path(), &["--max-streams", "1"]);
    let http = Http::new(gateway.url());
    let mut params = call_slow();
    params["_meta"] = json!({"progressToken": 1});
    // The limit's one stream is open while its call runs.
    let first = http.modern(1, "tools/call", params.clone()).await;
    assert_eq!(first.status(), 200);
    server
        .wait_slow_started(SOON)
        .await
        .expect("the call reached the server");
    let second = http.modern(2, "tools/call", params.clone()).await;
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    // A call that streams nothing is not held back, and once the stream closes another opens.
    let plain = http
        .modern(3, "tools/call", tool_call("get_dynamic_tools", json!({})))
        .await;
    assert_eq!(plain.status(), 200);
    drop(first);
    support::wait_until("the stream's place was given back", SOON, async || {
        http.modern(4, "tools/call", params.clone()).await.status() == 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn healthz_and_readyz_answer_without_naming_a_server() {
    let server = backend_late(Duration::from_secs(2)).await;
    let config = config_of(&[("secret-name", server.url())]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let get = async |path: &str| {
        let response = reqwest::get(format!("{}{path}", gateway.base))
            .await
            .expect("an answer");
        (
            response.status().as_u16(),
            response.text().await.expect("a body"),
        )
    };
    assert_eq!(get("/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(
        get("/readyz").await,
        (503, r#"{"error":0,"loading":1,"ready":0}"#.to_owned())
    );
    support::wait_until("the server became ready", SOON, async || {
        get("/readyz").await == (200, r#"{"error":0,"loading":0,"ready":1}"#.to_owned())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_lets_a_call_in_flight_finish_then_ends() {
    let (server, config) = slow_backend(Duration::from_secs(1)).await;
    let mut gateway = Gateway::start(config.path(), &key_path(), &[]);
    let http = Http::new(gateway.url());
    let running = tokio::spawn({
        let http = http.clone();
        async move { messages(http.modern(1, "tools/call", call_slow()).await).await }
    });
    server
        .wait_slow_started(SOON)
        .await
        .expect("the call reached the server");
    gateway.signal("TERM");
    let answer = running.await.expect("the call's answer");
    assert_eq!(result_text(&answer[0]), ("done".to_owned(), false));
    let status = gateway.exited(SOON).await;
    assert_eq!(status.code(), Some(143));
    let stderr = gateway.stderr();
    assert!(
        stderr.contains("runvil: terminated (SIGTERM): finishing the calls in flight (up to 30 s)"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_still_running_when_the_drain_runs_out_is_cancelled_at_its_server() {
    let (server, config) = slow_backend(Duration::from_secs(600)).await;
    let mut gateway = Gateway::start(config.path(), &key_path(), &["--drain", "1"]);
    let http = Http::new(gateway.url());
    let running = tokio::spawn({
        let http = http.clone();
        async move { messages(http.modern(1, "tools/call", call_slow()).await).await }
    });
    server
        .wait_slow_started(SOON)
        .await
        .expect("the call reached the server");
    gateway.signal("TERM");
    server
        .wait_cancelled(SOON)
        .await
        .expect("the server was told");
    let status = gateway.exited(SOON).await;
    assert_eq!(status.code(), Some(143));
    assert!(
        gateway.stderr().contains("the drain ran out"),
        "{}",
        gateway.stderr()
    );
    let _ = running.await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_call_timeout_ends_as_an_error_the_model_reads() {
    let (server, config) = slow_backend(Duration::from_secs(600)).await;
    let gateway = Gateway::start(config.path(), &key_path(), &["--call-timeout", "1"]);
    let http = Http::new(gateway.url());
    let answer = messages(http.modern(1, "tools/call", call_slow()).await).await;
    assert_eq!(
        result_text(&answer[0]),
        (
            "the call did not finish within 1 s, the gateway's bound on a call".to_owned(),
            true
        )
    );
    server
        .wait_cancelled(SOON)
        .await
        .expect("the server was told");
}

/// A file of tests/data: the gateway's test certificate (`gateway-test.crt`, for 127.0.0.1
/// and localhost, self-signed) and its key, and a root that signed nothing.
fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A gateway with no servers speaking TLS with the test certificate, and its config.
fn tls_gateway() -> (Gateway, Temp) {
    let (cert, key) = (test_data("gateway-test.crt"), test_data("gateway-test.key"));
    let config = config_of(&[]);
    let args = [
        "--tls-cert",
        cert.to_str().expect("UTF-8"),
        "--tls-key",
        key.to_str().expect("UTF-8"),
    ];
    let gateway = Gateway::start(config.path(), &key_path(), &args);
    (gateway, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_is_spoken_with_the_certificate_given() {
    let (gateway, _config) = tls_gateway();
    assert!(
        gateway.base.starts_with("https://127.0.0.1:"),
        "{}",
        gateway.base
    );
    let cert = test_data("gateway-test.crt");
    let answer = support::tls_get(&gateway.base, &cert, "/healthz").await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("ok\n"), "{answer}");
}

/// The Pack's own TLS, as a client of the gateway over HTTPS: it trusts the system's roots,
/// here the gateway's certificate alone (`SSL_CERT_FILE`, with `SSL_CERT_DIR` naming no
/// folder, as OpenSSL reads them, and the Pack when it first verifies a certificate), speaks
/// to a server they hold and refuses one they do not, whose tools it never lists.
#[tokio::test(flavor = "multi_thread")]
async fn the_pack_speaks_tls_to_a_server_the_system_trusts_and_refuses_one_it_does_not() {
    let (gateway, _config) = tls_gateway();
    let client = Temp::config(json!({"gw": {"url": format!("{}/mcp", gateway.base)}}));
    // A server that fails is tried again until the wait ends: the refused run waits 2 s.
    let tools = |roots: &Path, wait: &str| {
        support::runvil_command(&["tools", "gw", "--config", client.arg(), "--wait", wait])
            .env("SSL_CERT_FILE", roots)
            .env("SSL_CERT_DIR", "/nonexistent")
            .output()
            .expect("runvil runs")
    };
    let trusted = tools(&test_data("gateway-test.crt"), "20");
    assert_eq!(trusted.status.code(), Some(0), "{}", text(&trusted.stderr));
    assert!(
        text(&trusted.stdout).contains("get_dynamic_tools"),
        "{}",
        text(&trusted.stdout)
    );
    // Another certificate as the only root (tests/data/other-root.crt, which signed nothing).
    let refused = tools(&test_data("other-root.crt"), "2");
    assert_ne!(refused.status.code(), Some(0));
    let status = text(&refused.stdout);
    assert!(
        status.contains("invalid peer certificate: UnknownIssuer"),
        "{status}"
    );
    assert!(!status.contains("get_dynamic_tools"), "{status}");
}

#[test]
fn a_gateway_refuses_to_start_open_to_the_network_or_with_a_key_others_may_read() {
    let config = config_of(&[]);
    let key = key_path();
    let out = runvil(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--config",
        config.arg(),
        "--session-key-file",
        key.to_str().expect("UTF-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "runvil: --http: a gateway on an address other than loopback needs authentication: \
         --auth-issuer with --resource, or --api-keys\n"
    );
    let secret = "c0ffee".repeat(10) + "c0ff";
    std::fs::write(&key, &secret).expect("written");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = runvil(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--config",
        config.arg(),
        "--session-key-file",
        key.to_str().expect("UTF-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("may be read or changed by other users (its permissions are 644)"),
        "{stderr}"
    );
    assert!(!stderr.contains("c0ffee"), "{stderr}");
    // A flag of the HTTP server without --http is a mistake, said at once.
    let out = runvil(&["serve", "--tls-cert", "x", "--tls-key", "y"]);
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_to_another_host_name_is_refused_by_a_gateway_without_authentication() {
    let config = config_of(&[]);
    let gateway = Gateway::start(config.path(), &key_path(), &[]);
    let port = gateway.base.rsplit(':').next().expect("a port").to_owned();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: rebound.example:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = raw_exchange(&port, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
}
