//! The call deadline: a call that its server never answers ends after five minutes with a
//! transport error. The client runs on tokio's paused clock, so the five minutes pass at once;
//! the server runs on a runtime of its own, whose clock keeps going, so the paused clock
//! cannot stop it from reading the call.

use crate::support;

use std::time::Duration;

use runvil_plugin::ToolError;
use serde_json::json;
use support::hostile::{Hostile, Request, Script, Step, mcp};

/// The deadline SECURITY.md promises for a call (`CALL_DEADLINE` in the policy).
const CALL_DEADLINE: Duration = Duration::from_secs(300);
/// Bounds the real-time waits before the clock is paused; the client needs far less.
const SETTLE: Duration = Duration::from_secs(15);

#[test]
fn a_call_the_server_never_answers_ends_at_the_five_minute_deadline() {
    let server_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("the server's runtime");
    let server = server_runtime.block_on(Hostile::start(|r: &Request| {
        if r.rpc_method() == "tools/call" {
            Script {
                steps: vec![Step::Stall],
                keep_alive: true,
            }
        } else {
            mcp(r)
        }
    }));
    // The client on a thread of its own, so that a call that never ends fails the test in
    // real time instead of hanging it.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let client_runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("the client's runtime");
        let _ = done.send(client_runtime.block_on(call_past_the_deadline(&server)));
    });
    let (outcome, waited) = ended
        .recv_timeout(4 * SETTLE)
        .expect("the call ended (without a deadline it waits forever)");
    assert_eq!(
        outcome,
        Err(ToolError::Transport(
            "mute did not answer within 300 s".to_owned()
        ))
    );
    assert!(waited >= CALL_DEADLINE, "it ended after {waited:?}");
}

/// Calls `echo` on `server`, which never answers a call, and pauses the clock once the call
/// is in flight. Returns the outcome and how long the clock says the call took.
async fn call_past_the_deadline(server: &Hostile) -> (Result<String, ToolError>, Duration) {
    let pack = support::pack(json!({"mute": {"url": server.url}}));
    support::wait_for(&pack, "mute", "ready", SETTLE).await;
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(async move {
        support::call(&pack, "mute", "echo", json!({"text": "hello"})).await
    });
    // Once the server holds the call, nothing but the deadline can end it; only then is the
    // clock paused, so that connecting and sending are not cut short by a jump of the clock.
    server
        .until("the server holds the call", SETTLE, |s| {
            !s.calls_of("tools/call").is_empty()
        })
        .await;
    tokio::time::pause();
    let outcome = call.await.expect("the call's task");
    (outcome, started.elapsed())
}
