//! `runvil login --no-browser` driven end to end by a test that plays the user's browser,
//! against an MCP server behind an OAuth authorization server (the Pack's own test world),
//! then `runvil call` with the kept token, then `runvil logout`.

mod support;

#[allow(dead_code, unreachable_pub)]
#[path = "../../../tests/support/hostile.rs"]
mod hostile;
#[allow(dead_code, unreachable_pub)]
#[path = "../../../tests/support/oauth.rs"]
mod oauth;

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::{Temp, text, unique_temp_path};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A GET as a browser makes it: the status line and the `Location`, if any.
async fn get(url: &str) -> (String, Option<String>) {
    let url = url::Url::parse(url).expect("a URL");
    let host = format!(
        "{}:{}",
        url.host_str().expect("a host"),
        url.port().expect("a port")
    );
    let mut stream = TcpStream::connect(&host).await.expect("connect");
    let target = &url[url::Position::BeforePath..];
    let request = format!("GET {target} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    // The head is all a browser needs here; the server may keep the connection open.
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let answer = String::from_utf8_lossy(&head).into_owned();
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let location = answer.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_plays_through_the_browser_and_later_commands_use_the_kept_token() {
    let server = hostile::Hostile::start(oauth::World::default().handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let credentials = unique_temp_path("credentials.json");
    let credentials_env = credentials.to_str().expect("utf-8").to_owned();

    let mut login = tokio::process::Command::from(support::runvil_command(&[
        "login",
        "s",
        "--no-browser",
        "--wait",
        "30",
        "--config",
        config.arg(),
    ]));
    login
        .env("RUNVIL_CREDENTIALS", &credentials_env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = login.spawn().expect("runvil login starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut said = Vec::new();
    let authorization_url = loop {
        let line = tokio::time::timeout(Duration::from_secs(20), stderr.next_line())
            .await
            .expect("login prints the URL in time")
            .expect("stderr")
            .expect("a line before the end");
        said.push(line.clone());
        if line.starts_with("http://") || line.starts_with("https://") {
            break line;
        }
    };
    assert!(
        authorization_url.contains("code_challenge_method=S256"),
        "{authorization_url}"
    );

    // The user approves: the authorization server sends the browser back to runvil.
    let (status, back) = get(&authorization_url).await;
    assert!(status.contains("302"), "{status}");
    let back = back.expect("a redirect");
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let (status, _) = get(&back).await;
    assert!(status.contains("200"), "{status}");

    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("login ends")
        .expect("status");
    while let Ok(Some(line)) = stderr.next_line().await {
        said.push(line);
    }
    assert_eq!(status.code(), Some(0), "{said:?}");
    assert!(
        said.iter().any(|l| l == "runvil: s is authorized"),
        "{said:?}"
    );
    let mode = std::fs::metadata(&credentials)
        .expect("kept")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let kept = std::fs::read_to_string(&credentials).expect("kept");
    assert!(kept.contains(oauth::TOKEN));
    assert!(
        !said
            .iter()
            .any(|l| l.contains(oauth::TOKEN) || l.contains(oauth::CODE))
    );

    // A later command finds the token: no login, no browser.
    let env = credentials_env.clone();
    let call = move |args: &[&str]| {
        let mut command = support::runvil_command(args);
        command.env("RUNVIL_CREDENTIALS", &env);
        command.output().expect("runvil runs")
    };
    let config_arg = config.arg().to_owned();
    let called = tokio::task::spawn_blocking(move || {
        let call_args = [
            "call",
            "s",
            "echo",
            r#"{"text":"hi"}"#,
            "--config",
            &config_arg,
        ];
        let called = call(&call_args);
        let logout = call(&["logout", "s"]);
        let after = call(&call_args);
        (called, logout, after)
    })
    .await
    .expect("commands ran");
    let (called, logout, after) = called;
    assert_eq!(
        text(&called.stdout).trim(),
        "hi",
        "{}",
        text(&called.stderr)
    );
    assert_eq!(logout.status.code(), Some(0));
    assert_eq!(
        text(&logout.stderr).trim(),
        "runvil: forgot the credentials of s"
    );
    assert!(
        text(&after.stderr).contains("the server requires authorization: run `runvil login s`"),
        "{}",
        text(&after.stderr)
    );
    assert!(!text(&after.stderr).contains(oauth::TOKEN));
    let _ = std::fs::remove_file(&credentials);
}
