//! Building the Pack does no I/O: its tasks connect only once the Host's runtime runs them.

use crate::support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;

#[test]
fn construct_opens_no_connection_until_the_runtime_runs_the_tasks() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("addr").port()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let pack = {
        let _inside = runtime.enter();
        support::pack(json!({"a": {"url": url}, "b": {"url": url}}))
    };
    // Nothing has run the Pack's tasks yet, so nothing may have connected.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::WouldBlock)
    );

    // Once the runtime runs them, the tasks connect: the check above could have failed.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    let deadline = Instant::now() + Duration::from_secs(5);
    let accepted = loop {
        match listener.accept() {
            Ok(_) => break true,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break false,
        }
    };
    assert!(accepted, "the tasks never connected");
    drop(pack);
}
