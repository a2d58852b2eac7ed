//! A command about one server (`call NS`, `tools NS`) builds the Pack over that server alone,
//! so no other server of the config is contacted, and an unknown namespace is said before any
//! is; with `--wait` it waits for that server to be ready, through the retries of a server
//! that is down; and a plain-HTTP server needs no trust roots on the machine.

mod support;

use shared_mcp_fixture::hostile;

use std::time::{Duration, Instant};

use hostile::Hostile;
use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet};
use support::{Temp, runvil_command, text};

/// Runs `command` (a [`runvil_command`]) as a child the test's runtime waits on, so its
/// servers answer meanwhile.
async fn output(command: std::process::Command) -> std::process::Output {
    tokio::process::Command::from(command)
        .output()
        .await
        .expect("runvil runs")
}

/// Runs `runvil` with `args`, as [`output`] does.
async fn run(args: &[&str]) -> std::process::Output {
    output(runvil_command(args)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_about_one_server_contacts_no_other() {
    let asked = Hostile::start(hostile::mcp).await;
    let other = Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({"asked": {"url": asked.url}, "other": {"url": other.url}}));
    let config = config.arg().to_owned();

    let out = run(&[
        "call",
        "asked",
        "echo",
        r#"{"text":"hi"}"#,
        "--config",
        &config,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 ready\n");
    let out = run(&["tools", "asked", "--config", &config]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(listing["namespace"], "asked");
    assert!(!asked.requests().is_empty());
    assert_eq!(other.connections(), 0, "the other server was contacted");

    // An unknown namespace is said, with the config's, before any server is contacted.
    let before = asked.connections();
    for command in [&["call", "nope", "echo"][..], &["tools", "nope"]] {
        let out = run(&[command, &["--config", &config]].concat()).await;
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        assert_eq!(
            text(&out.stderr),
            "runvil: unknown namespace \"nope\"; the namespaces are: asked, other\n",
            "{command:?}"
        );
        assert!(out.stdout.is_empty());
    }
    assert_eq!(asked.connections(), before);
    assert_eq!(other.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_waits_for_a_server_that_comes_up_later_through_its_retries() {
    // The port hangs up on runvil's first attempt, and the server binds it only then: the
    // Pack reaches it by retrying (after 1 s).
    let door = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = door.local_addr().expect("address").port();
    let config = Temp::config(json!({"late": {"url": format!("http://127.0.0.1:{port}/mcp")}}));
    let started = Instant::now();
    let call = tokio::spawn(output(runvil_command(&[
        "call",
        "late",
        "echo",
        r#"{"text":"at last"}"#,
        "--config",
        config.arg(),
        "--wait",
        "20",
    ])));
    let first = tokio::time::timeout(Duration::from_secs(20), door.accept())
        .await
        .expect("runvil's first attempt")
        .expect("accepted");
    drop((first, door));
    let server = Fixture::builder()
        .tools(ToolSet::Only(&["echo"]))
        .port(port)
        .start()
        .await;
    let out = call.await.expect("runvil ran");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "at last\n");
    assert!(started.elapsed() < Duration::from_secs(20));
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_loading_when_wait_runs_out_exits_2_for_tools_as_for_call() {
    // A port that accepts connections but never answers: the server stays `loading`.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let config = Temp::config(json!({"mute": {"url": url}}));
    for command in [&["tools", "mute"][..], &["call", "mute", "echo"]] {
        let out = run(&[command, &["--config", config.arg(), "--wait", "1"]].concat()).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).starts_with("runvil: 1 server: 1 loading\n"),
            "{command:?}: {}",
            text(&out.stderr)
        );
    }
    drop(listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_server_is_called_on_a_machine_without_trust_roots() {
    // The Pack's clients read the system's roots at a first TLS handshake, which a plain-HTTP
    // server never asks for: roots that cannot be read (SSL_CERT_FILE and SSL_CERT_DIR naming
    // nothing, where a client built with them refused every request) stop nothing.
    let server = Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let mut command = runvil_command(&[
        "call",
        "s",
        "echo",
        r#"{"text":"hi"}"#,
        "--config",
        config.arg(),
    ]);
    command
        .env("SSL_CERT_FILE", "/nonexistent/roots.pem")
        .env("SSL_CERT_DIR", "/nonexistent");
    let out = output(command).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
}
