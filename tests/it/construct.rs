//! Building the Pack does no I/O: its tasks connect only once the Host's runtime runs them.

use crate::support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;

#[test]
fn construct_opens_no_connection_until_the_runtime_runs_the_tasks() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = url_of(&listener);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let pack = {
        let _inside = runtime.enter();
        support::pack(json!({"a": {"url": url}, "b": {"url": url}}))
    };
    // The clock of the check below: the same Pack on a runtime that runs, built after the one
    // under test. Once it connected, a task of the first that ran would have connected too.
    let control = TcpListener::bind("127.0.0.1:0").expect("bind");
    control.set_nonblocking(true).expect("nonblocking");
    let running = tokio::runtime::Runtime::new().expect("runtime");
    let control_pack = {
        let _inside = running.enter();
        support::pack(json!({"a": {"url": url_of(&control)}}))
    };
    running.block_on(accepted(control));
    // Nothing has run the Pack's tasks yet, so nothing may have connected.
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::WouldBlock)
    );

    // Once the runtime runs them, the tasks connect: the check above could have failed.
    runtime.block_on(accepted(listener));
    drop(pack);
    drop(control_pack);
}

fn url_of(listener: &TcpListener) -> String {
    format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    )
}

/// Waits (on the runtime it runs on) until `listener` accepts a connection.
async fn accepted(listener: TcpListener) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    let accepted = tokio::time::timeout(Duration::from_secs(5), listener.accept()).await;
    assert!(matches!(accepted, Ok(Ok(_))), "the tasks never connected");
}
