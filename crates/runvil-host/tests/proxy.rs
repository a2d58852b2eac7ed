//! No proxy: `runvil` reaches its servers directly even when every proxy variable of its
//! environment names a listener, which must see no connection. The variables are set on the
//! child process, as a user's shell would set them: a test may not change its own environment.

mod support;

use std::io::ErrorKind;
use std::net::TcpListener;

use support::{backend, config_for, runvil_command, text};

/// Every spelling reqwest and curl read; NO_PROXY is removed so that nothing is excepted.
const PROXY_VARIABLES: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

#[tokio::test(flavor = "multi_thread")]
async fn proxy_variables_are_ignored() {
    let backend = backend().await;
    let config = config_for(&backend);
    let proxy = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("address"));

    let mut command = runvil_command(&[
        "call",
        "backend",
        "echo",
        r#"{"text": "direct"}"#,
        "--config",
        config.arg(),
        "--wait",
        "10",
    ]);
    for name in PROXY_VARIABLES {
        command.env(name, &proxy_url);
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("runvil runs");

    // A connection runvil made would wait in the listener's queue, as it was never accepted.
    proxy.set_nonblocking(true).expect("non-blocking");
    let seen = proxy.accept().map(|(_, from)| from);
    assert!(
        seen.as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::WouldBlock),
        "the proxy saw a connection: {seen:?}"
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "direct\n");
}
