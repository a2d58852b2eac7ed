//! The 2026-07-28 revision beside the session-based ones, through `install`, against the
//! hostile test server: which era a server is spoken to in, the headers and `_meta` of a
//! modern request, the version retry, the fallback to the handshake (decided once),
//! `input_required`, and cancellation by closing the response stream.

use crate::support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runvil_plugin::{Pack, ToolError};
use serde_json::{Value, json};
use support::hostile::{
    Hostile, Request, Script, Step, http, json_reply, mcp, modern, modern_meta, refusal, result_for,
};
use tokio::sync::Notify;

const SETTLE: Duration = Duration::from_secs(10);
/// policy.rs: the most bytes read from an answered stream after its answer.
const MAX_STREAM_DRAIN_BYTES: usize = 64 * 1024;

async fn ready_pack(server: &Hostile) -> Arc<dyn Pack> {
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    pack
}

fn methods(server: &Hostile) -> Vec<String> {
    let requests = server.requests();
    requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.rpc_method()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_server_is_spoken_to_statelessly_with_the_revision_s_headers_and_meta() {
    let server = Hostile::start(modern).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "hi"})).await,
        Ok("hi".to_owned())
    );
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(listing["protocolVersion"], "2026-07-28");
    // When shutdown completes, the Pack has sent all it ever will.
    pack.shutdown().await;
    drop(pack);
    // No handshake, no notification, no DELETE at the end.
    assert_eq!(
        methods(&server),
        ["POST server/discover", "POST tools/list", "POST tools/call"]
    );
    let requests = server.requests();
    for request in &requests {
        assert_eq!(request.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(request.header("mcp-method"), Some(request.rpc_method()));
        assert_eq!(request.header("mcp-session-id"), None);
        assert_eq!(
            request.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(request.header("content-type"), Some("application/json"));
    }
    assert_eq!(requests[0].body["params"], json!({"_meta": modern_meta()}));
    assert_eq!(requests[1].body["params"], json!({"_meta": modern_meta()}));
    assert_eq!(requests[1].header("mcp-name"), None);
    assert_eq!(requests[2].header("mcp-name"), Some("echo"));
    assert_eq!(
        requests[2].body["params"],
        json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": modern_meta()})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_version_is_retried_once_with_one_the_server_lists() {
    let refused = Arc::new(AtomicBool::new(false));
    let server = Hostile::start(move |r: &Request| {
        if refused.swap(true, Ordering::SeqCst) {
            modern(r)
        } else {
            let data = json!({"supported": ["2026-07-28"], "requested": "2026-07-28"});
            refusal(r, -32022, "Unsupported protocol version", Some(data))
        }
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "hi"})).await,
        Ok("hi".to_owned())
    );
    assert_eq!(
        methods(&server),
        [
            "POST server/discover",
            "POST server/discover",
            "POST tools/list",
            "POST tools/call"
        ]
    );
    let requests = server.requests();
    assert_ne!(requests[0].body["id"], requests[1].body["id"]);
    assert_eq!(requests[1].body["params"], json!({"_meta": modern_meta()}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_refuses_every_version_it_lists_is_asked_once_more_then_an_error() {
    let server = Hostile::start(|r: &Request| {
        let data = json!({"supported": ["2026-07-28"]});
        refusal(r, -32022, "Unsupported protocol version", Some(data))
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "error", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server answered with error -32022: Unsupported protocol version"
    );
    let first_attempt = &methods(&server)[..2];
    assert_eq!(
        first_attempt,
        ["POST server/discover", "POST server/discover"]
    );
    assert!(server.calls_of("initialize").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_error_listing_only_older_versions_leads_to_the_handshake() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "server/discover" => {
            let data = json!({"supported": ["2025-11-25"]});
            refusal(r, -32022, "Unsupported protocol version", Some(data))
        }
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(listing["protocolVersion"], "2025-11-25");
    assert_eq!(
        methods(&server),
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized",
            "POST tools/list"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_server_gets_the_handshake_once_whatever_4xx_it_answers() {
    let session_error = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#;
    let answers: Vec<(&str, Vec<u8>)> = vec![
        ("400 without a body", http("400 Bad Request", &[], b"")),
        (
            "400 with an older error",
            http(
                "400 Bad Request",
                &[("content-type", "application/json")],
                session_error,
            ),
        ),
        ("404", http("404 Not Found", &[], b"")),
        ("405", http("405 Method Not Allowed", &[], b"")),
    ];
    for (case, answer) in answers {
        let server = Hostile::start(move |r: &Request| match r.rpc_method() {
            "server/discover" => Script {
                steps: vec![Step::Write(answer.clone())],
                keep_alive: true,
            },
            _ => mcp(r),
        })
        .await;
        let pack = ready_pack(&server).await;
        for text in ["one", "two"] {
            assert_eq!(
                support::call(&pack, "s", "echo", json!({"text": text})).await,
                Ok(text.to_owned()),
                "{case}"
            );
        }
        let listing = support::list(&pack, json!({"namespace": "s"})).await;
        assert_eq!(listing["protocolVersion"], "2025-11-25", "{case}");
        assert_eq!(
            methods(&server),
            [
                "POST server/discover",
                "POST initialize",
                "POST notifications/initialized",
                "POST tools/list",
                "POST tools/call",
                "POST tools/call"
            ],
            "{case}: the era is decided once"
        );
        let call = &server.calls_of("tools/call")[0];
        assert_eq!(call.header("mcp-session-id"), Some("s-1"), "{case}");
        assert_eq!(call.header("mcp-protocol-version"), Some("2025-11-25"));
        assert_eq!(call.body["params"].get("_meta"), None, "{case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_to_the_probe_fails_the_attempt_without_a_handshake() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "server/discover" => Script::raw(http("500 Internal Server Error", &[], b"")),
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "error", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server answered HTTP 500 Internal Server Error"
    );
    assert!(server.calls_of("initialize").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_required_is_an_error_the_model_can_read() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => {
            let kind = r.body["params"]["arguments"]["text"].as_str().unwrap_or("");
            let result = match kind {
                "form" => json!({"resultType": "input_required", "inputRequests": {
                    "q1": {"method": "elicitation/create", "params": {"message": "Your name?"}},
                    "q2": {"method": "sampling/createMessage", "params": {}},
                }}),
                _ => json!({"resultType": "partial", "content": []}),
            };
            json_reply(&result_for(r, result))
        }
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "form"})).await,
        Err(ToolError::Backend(
            "the tool needs input this client cannot give: the server answered \
             input_required, asking for a form for the user (elicitation) and a model \
             completion (sampling); this Pack declares no client capabilities, so it cannot \
             answer a form, a sampling request or any other question from a server"
                .to_owned()
        ))
    );
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "other"})).await,
        Err(ToolError::Transport(
            "the result's resultType is neither complete nor input_required".to_owned()
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_closes_its_stream_and_sends_no_cancellation() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        // The answer's headers and a priming event, then nothing: the call waits.
        "tools/call" => Script {
            steps: vec![
                Step::Write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n: primed\n\n"
                        .to_vec(),
                ),
                Step::AwaitClose,
            ],
            keep_alive: false,
        },
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let call = support::call(&pack, "s", "echo", json!({"text": "slow"}));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err(),
        "the call waits for its answer"
    );
    server
        .until("the server sees the stream closed", SETTLE, |s| {
            s.closed_by_client() == 1
        })
        .await;
    // When shutdown completes, the Pack has sent all it ever will.
    pack.shutdown().await;
    drop(pack);
    assert_eq!(
        methods(&server),
        ["POST server/discover", "POST tools/list", "POST tools/call"],
        "no notifications/cancelled, no DELETE"
    );
}

/// An SSE answer in chunks, kept alive: its head and a first chunk holding `message` as an
/// event.
fn stream_head(message: &Value) -> Vec<u8> {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                transfer-encoding: chunked\r\n\r\n";
    [
        head.as_bytes(),
        &chunk(format!("data: {message}\n\n").as_bytes()),
    ]
    .concat()
}

/// The rest of an SSE answer in chunks: a comment of each of the sizes `sizes`, then its end.
fn stream_rest(sizes: &[usize]) -> Vec<u8> {
    let mut rest: Vec<u8> = sizes
        .iter()
        .flat_map(|&n| chunk(&[b":".as_slice(), &vec![b' '; n - 2], b"\n"].concat()))
        .collect();
    rest.extend_from_slice(b"0\r\n\r\n");
    rest
}

fn chunk(data: &[u8]) -> Vec<u8> {
    [format!("{:x}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
}

/// One gate per call, named by its text: a `Notify` keeps at most one permit, so a gate shared
/// by several streams could lose a release given before its stream waited for it.
#[derive(Default)]
struct Gates(Mutex<HashMap<String, Arc<Notify>>>);

impl Gates {
    fn of(&self, text: &str) -> Arc<Notify> {
        let mut gates = self.0.lock().expect("gates");
        Arc::clone(gates.entry(text.to_owned()).or_default())
    }
}

/// Answers like [`modern`], but a call's answer is a stream whose rest (chunks of comments of
/// the sizes `rest(text)` gives, then its end) the server holds back until its gate opens.
fn late_end(gates: Arc<Gates>, rest: fn(&str) -> Vec<usize>) -> impl Fn(&Request) -> Script {
    move |r| match r.rpc_method() {
        "tools/call" => {
            let text = r.body["params"]["arguments"]["text"].as_str().unwrap_or("");
            let result =
                json!({"resultType": "complete", "content": [{"type": "text", "text": text}]});
            let after = stream_rest(&rest(text));
            Script {
                steps: vec![
                    Step::Write(stream_head(&result_for(r, result))),
                    Step::Wait(gates.of(text)),
                    Step::Write(after),
                ],
                keep_alive: true,
            }
        }
        _ => modern(r),
    }
}

// This test and the next count the connections closed, on one worker thread: hyper-util's
// pool hands a connection given back to a request that waits for one while it also connects
// (`connection_for`), and when the new connection wins, the waiting request is dropped with
// the connection it was handed, which closes it. That needs the drain's give-back and the new
// connection's handshake to finish at once; on one worker thread (the drain, the server and
// hyper's connection tasks all on it) they run one after another. With two, 4 runs in 40 saw
// a connection closed that the Pack kept; with one, none in 120.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_answered_stream_is_read_to_its_end_without_the_call_waiting_and_its_connection_kept() {
    let gates = Arc::new(Gates::default());
    let server = Hostile::start(late_end(Arc::clone(&gates), |_| Vec::new())).await;
    let pack = ready_pack(&server).await;
    for text in ["one", "two", "three"] {
        // The call has its answer while the server still holds the stream's end back.
        assert_eq!(
            support::call(&pack, "s", "echo", json!({ "text": text })).await,
            Ok(text.to_owned())
        );
        gates.of(text).notify_one();
    }
    // Dropped before its end, a stream's connection would be closed (and a new one opened).
    assert_eq!(server.hung_up(), 0, "no connection was closed");
    // When shutdown completes, the Pack has sent all it ever will.
    pack.shutdown().await;
    drop(pack);
    assert_eq!(
        methods(&server)[2..],
        ["POST tools/call", "POST tools/call", "POST tools/call"],
        "the drain sends nothing"
    );
}

/// On one worker thread, as the test above says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_answered_stream_is_read_on_for_at_most_its_byte_bound() {
    // Past the bound, the rest is not read: the connection is closed with a megabyte unread.
    // The rest is written with the answer, so it is there to read when the call has its
    // answer: only the byte bound may end the reading, not the time bound of a rest that is
    // late (another test's).
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => {
            let text = r.body["params"]["arguments"]["text"].as_str().unwrap_or("");
            let rest = match text {
                "at" | "at again" => vec![MAX_STREAM_DRAIN_BYTES],
                "past" => vec![MAX_STREAM_DRAIN_BYTES + 1, 1024 * 1024],
                _ => Vec::new(),
            };
            let result =
                json!({"resultType": "complete", "content": [{"type": "text", "text": text}]});
            Script {
                steps: vec![Step::Write(
                    [stream_head(&result_for(r, result)), stream_rest(&rest)].concat(),
                )],
                keep_alive: true,
            }
        }
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    for text in ["at", "past", "at again"] {
        let answer = support::call(&pack, "s", "echo", json!({ "text": text })).await;
        assert_eq!(answer, Ok(text.to_owned()));
    }
    let on = |text: &str| {
        let calls = server.calls_of("tools/call");
        let call = calls
            .iter()
            .find(|r| r.body["params"]["arguments"]["text"] == text);
        call.expect("the call").connection
    };
    let past = on("past");
    server
        .until("the stream past the bound is closed", SETTLE, |s| {
            s.hung_up_connections().contains(&past)
        })
        .await;
    // A stream read to its end gives its connection back to the pool, where a later request
    // takes it: probes, as many at once as there are connections, until each connection of a
    // stream at the bound carried one, or was closed.
    let text_of = |r: &Request| r.body["params"]["arguments"]["text"].clone();
    let settled = |s: &Hostile| {
        let requests = s.requests();
        ["at", "at again"].iter().all(|text| {
            let call = requests
                .iter()
                .position(|r| text_of(r) == *text)
                .expect("the call");
            let connection = requests[call].connection;
            let later = requests[call + 1..]
                .iter()
                .any(|r| r.connection == connection);
            later || s.hung_up_connections().contains(&connection)
        })
    };
    let deadline = tokio::time::Instant::now() + SETTLE;
    while !settled(&server) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no probe took the kept connections"
        );
        let probes: Vec<_> = (0..server.connections())
            .map(|_| {
                let pack = Arc::clone(&pack);
                tokio::spawn(async move {
                    support::call(&pack, "s", "echo", json!({"text": "probe"})).await
                })
            })
            .collect();
        for probe in probes {
            assert_eq!(probe.await.expect("a probe"), Ok("probe".to_owned()));
        }
    }
    // Every connection closed carried the call past the bound last.
    for connection in server.hung_up_connections() {
        let last = server
            .requests()
            .into_iter()
            .rfind(|r| r.connection == connection)
            .expect("a request on it");
        assert_eq!(
            text_of(&last),
            "past",
            "only the stream past the bound is closed; the connections of the requests: {:?}",
            server
                .requests()
                .iter()
                .map(|r| (r.connection, text_of(r)))
                .collect::<Vec<_>>()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_stream_that_never_ends_is_closed_after_its_time_bound() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => {
            let result =
                json!({"resultType": "complete", "content": [{"type": "text", "text": "a"}]});
            Script {
                steps: vec![
                    Step::Write(stream_head(&result_for(r, result))),
                    Step::AwaitClose,
                ],
                keep_alive: false,
            }
        }
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "a"})).await,
        Ok("a".to_owned())
    );
    server
        .until("the client closes the stream", SETTLE, |s| {
            s.closed_by_client() == 1
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_with_caching_hints_is_fetched_once_and_not_again_by_the_listing() {
    let server = Hostile::start(modern).await;
    let pack = ready_pack(&server).await;
    for _ in 0..3 {
        let listing = support::list(&pack, json!({"namespace": "s"})).await;
        assert_eq!(listing["tools"][0]["name"], "echo");
    }
    let _: Value = support::list(&pack, json!({})).await;
    assert_eq!(server.calls_of("tools/list").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x_mcp_header_parameters_travel_as_mcp_param_headers_and_bad_declarations_drop_the_tool() {
    let tools = json!({"tools": [
        {"name": "query", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "text": {"type": "string"},
        }}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "n": {"type": "number", "x-mcp-header": "N"},
        }}},
    ]});
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => json_reply(&result_for(
            r,
            json!({"resultType": "complete", "tools": tools["tools"]}),
        )),
        "tools/call" => json_reply(&result_for(
            r,
            json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
        )),
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(listing["tools"][0]["name"], "query");
    assert_eq!(listing["rejected"][0]["name"], "bad");
    for (arguments, region, limit) in [
        (
            json!({"region": "us-west1", "limit": 5}),
            Some("us-west1"),
            Some("5"),
        ),
        (
            json!({"region": "Hello, 世界\r\nX-Injected: yes"}),
            Some("=?base64?SGVsbG8sIOS4lueVjA0KWC1JbmplY3RlZDogeWVz?="),
            None,
        ),
        (json!({"text": "no header"}), None, None),
        // A null for an optional parameter the schema types otherwise is left out.
        (
            json!({"region": null, "limit": null, "text": "t"}),
            None,
            None,
        ),
    ] {
        assert_eq!(
            support::call(&pack, "s", "query", arguments).await,
            Ok("ok".to_owned())
        );
        let call = server.calls_of("tools/call").pop().expect("a call");
        assert_eq!(call.header("mcp-param-region"), region);
        assert_eq!(call.header("mcp-param-limit"), limit);
        assert_eq!(call.header("x-injected"), None);
        let sent = &call.body["params"]["arguments"];
        assert!(sent.get("region").is_none_or(|v| !v.is_null()), "{sent}");
    }
}

/// Answers like [`modern`], but `server/discover`'s answer is a stream whose end comes as a
/// write of its own after the answer (`then`: the end at once, or never).
fn discover_streamed(then: Step) -> impl Fn(&Request) -> Script {
    move |r| match r.rpc_method() {
        "server/discover" => {
            let result = json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
            });
            Script {
                steps: vec![
                    Step::Write(stream_head(&result_for(r, result))),
                    then.clone(),
                ],
                keep_alive: true,
            }
        }
        _ => modern(r),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_answer_s_stream_is_read_to_its_end_so_the_listing_takes_its_connection() {
    let end = Step::Write(b"0\r\n\r\n".to_vec());
    let server = Hostile::start(discover_streamed(end)).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "a"})).await,
        Ok("a".to_owned())
    );
    assert_eq!(
        methods(&server),
        ["POST server/discover", "POST tools/list", "POST tools/call"]
    );
    // Listed before the discover stream had ended, the tools/list would open a second one.
    assert_eq!(
        server.connections(),
        1,
        "one connection for the start and the call"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_up_answer_s_stream_that_never_ends_does_not_hold_the_start_up_back() {
    let server = Hostile::start(discover_streamed(Step::AwaitClose)).await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "a"})).await,
        Ok("a".to_owned())
    );
    // The listing went out on a second connection; the first is read on in the background
    // and closed after its time bound.
    assert_eq!(server.connections(), 2);
    support::wait_until("the client closes the stream", SETTLE, async || {
        server.closed_by_client() == 1
    })
    .await;
}
