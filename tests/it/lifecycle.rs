//! What a Host observes of the Pack through the contract: each server's status as it changes,
//! calls that run on the lent runtime whatever polls them, progress of a call, and a shutdown
//! that ends every call and session before it completes.

use crate::support;

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;

use runvil_plugin::{BackendState, BackendStatus, Progress, ProgressSink, ToolError};
use serde_json::{Value, json};
use support::hostile::{self, Hostile, Request, Script, Step, mcp, result_for, stalls_calls};

const SETTLE: Duration = Duration::from_secs(10);

/// The states of every server once none is loading.
async fn settled_states(pack: &Arc<dyn runvil_plugin::Pack>) -> Vec<BackendStatus> {
    let mut status = pack.status();
    let settled = |all: &Vec<BackendStatus>| all.iter().all(|s| !s.state.is_loading());
    let all = tokio::time::timeout(SETTLE, status.wait_for(settled))
        .await
        .expect("every server settles")
        .expect("the Pack is alive");
    all.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_each_server_as_it_changes() {
    let server = Hostile::start(mcp).await;
    // A port nothing listens on: taken, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_url = format!("http://{}/mcp", closed.local_addr().expect("addr"));
    drop(closed);
    let pack = support::pack(json!({
        "good": {"url": server.url},
        "local": {"command": "npx"},
        "down": {"url": closed_url},
    }));
    let first = pack.status().borrow().clone();
    let names: Vec<&str> = first.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["down", "good", "local"], "the Pack's order");
    assert_eq!(first[1].state, BackendState::Loading);
    assert_eq!(
        first[2].state,
        BackendState::Refused("local MCP servers (command) are not supported yet".to_owned())
    );
    let settled = settled_states(&pack).await;
    let tools: Arc<[String]> = Arc::from(vec!["echo".to_owned()]);
    assert_eq!(settled[1].state, BackendState::Ready { tools });
    let BackendState::Failed(reason) = &settled[0].state else {
        panic!("down failed: {settled:?}");
    };
    assert!(reason.starts_with("could not reach the server"), "{reason}");
    // The listing says the same.
    assert_eq!(
        support::status(&pack, "down").await["reason"],
        reason.as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_an_unreachable_server_is_a_transport_error_and_a_refused_one_invalid() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_url = format!("http://{}/mcp", closed.local_addr().expect("addr"));
    drop(closed);
    let pack = support::pack(json!({"down": {"url": closed_url}, "local": {"command": "x"}}));
    settled_states(&pack).await;
    let down = support::call(&pack, "down", "echo", json!({})).await;
    assert!(
        matches!(&down, Err(ToolError::Transport(m)) if m.starts_with("down is not ready: its status is error: could not reach the server")),
        "{down:?}"
    );
    assert_eq!(
        support::call(&pack, "local", "echo", json!({})).await,
        Err(ToolError::Invalid(
            "local is not ready: its status is error: local MCP servers (command) are not \
             supported yet"
                .to_owned()
        ))
    );
}

/// The smallest executor: polls on this thread, parks until woken. It has no tokio context,
/// no reactor and no timers.
fn block_on_plain<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn a_call_polled_outside_any_runtime_runs_on_the_lent_one() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (server, pack) = runtime.block_on(async {
        let server = Hostile::start(mcp).await;
        let pack = support::pack(json!({"s": {"url": server.url}}));
        support::wait_for(&pack, "s", "ready", SETTLE).await;
        (server, pack)
    });
    // Polled by an executor that is not tokio's: the call's HTTP and timers are the lent
    // runtime's.
    let answer = block_on_plain(support::call(&pack, "s", "echo", json!({"text": "plain"})));
    assert_eq!(answer, Ok("plain".to_owned()));
    // And from a runtime with neither I/O nor timers enabled.
    let bare = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let answer = bare.block_on(support::call(&pack, "s", "echo", json!({"text": "bare"})));
    assert_eq!(answer, Ok("bare".to_owned()));
    assert_eq!(server.calls_of("tools/call").len(), 2);
    block_on_plain(pack.shutdown());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_calls_then_ends_each_session_before_it_completes() {
    let server = Hostile::start(stalls_calls).await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    let call = tokio::spawn({
        let pack = Arc::clone(&pack);
        async move { support::call(&pack, "s", "echo", json!({"text": "x"})).await }
    });
    server
        .until("the call reaches the server", SETTLE, |s| {
            !s.calls_of("tools/call").is_empty()
        })
        .await;
    pack.shutdown().await;
    // No wait: when shutdown completes, the server has been told everything.
    let seen: Vec<String> = server
        .requests()
        .iter()
        .map(|r| match r.method.as_str() {
            "POST" => r.rpc_method().to_owned(),
            other => other.to_owned(),
        })
        .collect();
    let tail: Vec<&str> = seen
        .iter()
        .rev()
        .take(2)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["notifications/cancelled", "DELETE"], "{seen:?}");
    let cancelled = &server.calls_of("notifications/cancelled")[0];
    let call_id = &server.calls_of("tools/call")[0].body["id"];
    assert_eq!(&cancelled.body["params"]["requestId"], call_id);
    assert_eq!(
        call.await.expect("the call's task"),
        Err(ToolError::Transport("the Pack was shut down".to_owned()))
    );
    assert_eq!(
        support::call(&pack, "s", "echo", json!({})).await,
        Err(ToolError::Transport("the Pack was shut down".to_owned())),
        "no call starts after shutdown"
    );
    pack.shutdown().await; // twice is harmless: nothing is sent again
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.method == "DELETE")
            .count(),
        1
    );
}

/// Answers a call with progress notices on its stream, then the result: under the request's
/// token, a repeat (not growing), another token's, a hostile message, and one at each side
/// of the message cap.
fn reports_progress(r: &Request) -> Script {
    if r.rpc_method() != "tools/call" {
        return mcp(r);
    }
    let token = r.body["params"]["_meta"]["progressToken"].clone();
    let notice = |token: &Value, progress: f64, message: &str| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": token, "progress": progress, "total": 5, "message": message}})
    };
    let events = [
        notice(&token, 1.0, "one\u{1b}]52;c;AAAA\u{7} \u{202e}two"),
        notice(&token, 1.0, "again"),
        notice(&json!("other"), 2.0, "not ours"),
        notice(&token, 2.0, "key h-value-123"),
        notice(&token, 3.0, &"a".repeat(1024)),
        notice(&token, 4.0, &"b".repeat(1025)),
        result_for(r, json!({"content": [{"type": "text", "text": "done"}]})),
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    Script {
        steps: vec![Step::Write(hostile::http(
            "200 OK",
            &[("content-type", "text/event-stream")],
            body.as_bytes(),
        ))],
        keep_alive: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_of_a_call_reaches_the_host_cleaned_scrubbed_and_capped() {
    let server = Hostile::start(reports_progress).await;
    let pack = support::pack(
        json!({"s": {"url": server.url, "headers": {"X-Secret-Header": "h-value-123"}}}),
    );
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink: ProgressSink = {
        let seen = Arc::clone(&seen);
        Arc::new(move |p: Progress| seen.lock().expect("seen").push(p))
    };
    let args = json!({"namespace": "s", "toolName": "echo", "arguments": {"text": "x"}});
    let answer = pack
        .call_with_progress("mcp/call_dynamic_tool", args, sink)
        .await;
    assert_eq!(answer, Ok("done".to_owned()));
    let call = &server.calls_of("tools/call")[0];
    assert_eq!(
        call.body["params"]["_meta"]["progressToken"], call.body["id"],
        "the token is the request's id"
    );
    let notice = |progress: f64, message: String| Progress {
        progress,
        total: Some(5.0),
        message: Some(message),
    };
    let cut = format!("{}\n[... 1 characters cut]", "b".repeat(1024));
    assert_eq!(
        *seen.lock().expect("seen"),
        [
            notice(1.0, "one two".to_owned()),
            notice(2.0, "key [redacted]".to_owned()),
            notice(3.0, "a".repeat(1024)),
            notice(4.0, cut),
        ]
    );
    // A call that asks for no progress sends no token.
    support::call(&pack, "s", "echo", json!({"text": "y"}))
        .await
        .expect("answered");
    assert!(
        server.calls_of("tools/call")[1].body["params"]
            .get("_meta")
            .is_none()
    );
}
