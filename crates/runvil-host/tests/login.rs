//! `runvil login --no-browser` driven end to end by a test that plays the user's browser,
//! against an MCP server behind an OAuth authorization server (the Pack's own test world),
//! then `runvil call` with the kept token, then `runvil logout`; and a login that says the
//! truth: 0 only when what it obtained is kept, a credentials file it cannot use refused
//! before anyone is sent to a browser, a server's text unable to forge runvil's lines, and a
//! browser page that says what the callback carried. With `--store`, the same login kept
//! sealed in a throwaway PostgreSQL database, used by a second process, and the connection
//! string's password shown nowhere.

mod support;

use shared_mcp_fixture::hostile;
use shared_mcp_fixture::oauth;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::{Temp, text, unique_temp_path};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A connection to `url`'s host on which a browser's GET of it was sent.
async fn send_get(url: &str) -> TcpStream {
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
    stream
}

/// A GET as a browser makes it: the status line and the `Location`, if any.
async fn get(url: &str) -> (String, Option<String>) {
    let mut stream = send_get(url).await;
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

    let mut first = tokio::process::Command::from(support::runvil_command(&[
        "login",
        "s",
        "--no-browser",
        "--wait",
        "30",
        "--config",
        config.arg(),
    ]));
    first
        .env("RUNVIL_CREDENTIALS", &credentials_env)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = first.spawn().expect("runvil login starts");
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

    // A second login finds the token kept: nobody is asked.
    let again = login("s", &config, &credentials, async |url: &str| {
        panic!("the user was asked again: {url}")
    })
    .await;
    assert_eq!(again.code, Some(0), "{}", again.all());
    assert_eq!(
        again.said,
        [
            "runvil: 1 server: 1 ready",
            "runvil: s is already authorized"
        ]
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
        let twice = call(&["logout", "s", "--config", &config_arg]);
        let unknown = call(&["logout", "nosuch", "--config", &config_arg]);
        (called, logout, after, twice, unknown)
    })
    .await
    .expect("commands ran");
    let (called, logout, after, twice, unknown) = called;
    // Nothing kept is said as such, and a name the config lacks is the likely typo it is.
    assert_eq!(twice.status.code(), Some(0));
    assert_eq!(
        text(&twice.stderr),
        format!(
            "runvil: nothing was stored for s in {}; nothing to forget\n",
            credentials.display()
        )
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        text(&unknown.stderr),
        "runvil: unknown namespace \"nosuch\"; the namespaces are: s (and nothing was stored for it)\n"
    );
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

/// How a `runvil login` ended: its exit code and every line of its stderr.
struct Ended {
    code: Option<i32>,
    said: Vec<String>,
}

impl Ended {
    fn all(&self) -> String {
        self.said.join("\n")
    }
}

/// Runs `runvil login NAMESPACE --no-browser` on `config` with `credentials`, and plays the
/// user's browser with `browser` each time it prints an authorization URL.
async fn login(
    namespace: &str,
    config: &Temp,
    credentials: &Path,
    browser: impl AsyncFnMut(&str),
) -> Ended {
    let env = [("RUNVIL_CREDENTIALS", credentials.as_os_str())];
    login_with(namespace, config, &env, browser).await
}

/// [`login`] with `env` set for it.
async fn login_with(
    namespace: &str,
    config: &Temp,
    env: &[(&str, &std::ffi::OsStr)],
    mut browser: impl AsyncFnMut(&str),
) -> Ended {
    let mut login = tokio::process::Command::from(support::runvil_command(&[
        "login",
        namespace,
        "--no-browser",
        "--wait",
        "30",
        "--config",
        config.arg(),
    ]));
    login
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = login.spawn().expect("runvil login starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut said = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(40), stderr.next_line())
        .await
        .expect("login says something in time")
        .expect("stderr")
    {
        said.push(line.clone());
        if line.starts_with("http://") || line.starts_with("https://") {
            browser(&line).await;
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("login ends")
        .expect("status");
    Ended {
        code: status.code(),
        said,
    }
}

/// The user approves: the authorization server sends the browser back to runvil.
async fn approve(authorization_url: &str) {
    let (_, back) = get(authorization_url).await;
    let back = back.expect("a redirect");
    let (status, _) = get(&back).await;
    assert!(status.contains("200"), "{status}");
}

/// A GET that reads the whole answer, for a server that closes the connection (runvil's
/// redirect listener): the page's text.
async fn page(url: &str) -> String {
    let mut stream = send_get(url).await;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("the page in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    answer
        .split_once("\r\n\r\n")
        .map_or(answer.clone(), |(_, body)| body.to_owned())
}

/// The value of `name` in the query of `url`.
fn query_param(url: &str, name: &str) -> String {
    url::Url::parse(url)
        .expect("a URL")
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_else(|| panic!("no {name} in the URL"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentials_file_that_cannot_be_used_stops_the_login_before_anyone_is_asked() {
    let server = hostile::Hostile::start(oauth::World::default().handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let dir = Temp::dir();
    let credentials = dir.path().join("credentials.json");
    let cases = [
        (
            "not JSON at all",
            0o600,
            "is not a runvil credentials file; move it away",
        ),
        (
            "{}",
            0o644,
            "may be read by other users (its permissions are 644); run `chmod 600",
        ),
    ];
    for (text, mode, why) in cases {
        std::fs::write(&credentials, text).expect("written");
        std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(mode))
            .expect("chmod");
        let ended = login("s", &config, &credentials, approve).await;
        let all = ended.all();
        assert_eq!(ended.code, Some(1), "{all}");
        assert!(
            all.contains(&format!(
                "runvil: cannot log in to s: {}",
                credentials.display()
            )),
            "{all}"
        );
        assert!(all.contains(why), "{all}");
        assert!(!all.contains("is authorized"), "{all}");
        assert!(
            server.requests().is_empty(),
            "the server was contacted: {all}"
        );
        assert_eq!(std::fs::read_to_string(&credentials).expect("kept"), text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_whose_credentials_cannot_be_saved_fails_saying_why() {
    let server = hostile::Hostile::start(oauth::World::default().handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let dir = Temp::dir();
    let credentials = dir.path().join("credentials.json");
    // The file is readable (absent), but the new file it is replaced from cannot be made.
    std::fs::create_dir_all(dir.path().join("credentials.json.new/in-the-way")).expect("dir");
    let ended = login("s", &config, &credentials, approve).await;
    let all = ended.all();
    assert_eq!(ended.code, Some(1), "{all}");
    assert!(
        all.contains(&format!(
            "runvil: s was authorized, but the credentials could not be kept: cannot write {}",
            credentials.display()
        )),
        "{all}"
    );
    assert!(all.contains("run `runvil login s` again"), "{all}");
    assert!(
        !all.lines().any(|l| l == "runvil: s is authorized"),
        "{all}"
    );
    assert!(!all.contains(oauth::TOKEN), "{all}");
    assert!(!credentials.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_description_cannot_forge_a_line_of_runvil_s_own() {
    let world = oauth::World {
        token: Some(|_| {
            oauth::json_answer(
                "400 Bad Request",
                &json!({
                    "error": "invalid_grant",
                    "error_description": "nope\nrunvil: s is authorized",
                }),
            )
        }),
        ..oauth::World::default()
    };
    let server = hostile::Hostile::start(world.handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let credentials = unique_temp_path("credentials.json");
    let ended = login("s", &config, &credentials, approve).await;
    let all = ended.all();
    assert!(
        server.requests().iter().any(|r| r.target == "/as/token"),
        "the token endpoint was reached: {all}"
    );
    assert_ne!(ended.code, Some(0), "{all}");
    assert!(all.contains("nope\\nrunvil: s is authorized"), "{all}");
    assert!(
        !ended.said.iter().any(|l| l == "runvil: s is authorized"),
        "{all}"
    );
    let _ = std::fs::remove_file(&credentials);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_page_says_a_denied_or_incomplete_authorization_is_not_complete() {
    let server = hostile::Hostile::start(oauth::World::default().handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let credentials = unique_temp_path("credentials.json");
    for (query, said) in [
        (
            "error=access_denied",
            "the authorization was denied or failed",
        ),
        (
            "",
            "the authorization is incomplete: the answer carried no code",
        ),
    ] {
        let mut shown = Vec::new();
        let ended = login("s", &config, &credentials, async |url: &str| {
            let back = query_param(url, "redirect_uri");
            let state = query_param(url, "state");
            let separator = if query.is_empty() { "" } else { "&" };
            shown.push(page(&format!("{back}?{query}{separator}state={state}")).await);
        })
        .await;
        let all = ended.all();
        assert_eq!(ended.code, Some(4), "{query}: {all}");
        assert!(!shown.is_empty(), "{all}");
        for page in &shown {
            assert!(page.contains(said), "{query}: {page}");
            assert!(!page.contains("the authorization is complete"), "{page}");
            assert!(page.contains("Return to the terminal"), "{page}");
        }
        assert!(!credentials.exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_authorization_needs_none_and_an_unknown_one_is_listed() {
    let server = hostile::Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({"open": {"url": server.url}, "other": {"url": server.url}}));
    let credentials = unique_temp_path("credentials.json");
    let ended = login("open", &config, &credentials, approve).await;
    assert_eq!(ended.code, Some(0), "{}", ended.all());
    assert_eq!(
        ended.said,
        [
            "runvil: 1 server: 1 ready",
            "runvil: open needs no authorization"
        ]
    );
    assert!(!credentials.exists());

    let requests = server.requests().len();
    let ended = login("nosuch", &config, &credentials, approve).await;
    assert_eq!(ended.code, Some(2), "{}", ended.all());
    assert_eq!(
        ended.said,
        ["runvil: unknown namespace \"nosuch\"; the namespaces are: open, other"]
    );
    assert_eq!(server.requests().len(), requests, "no server was contacted");
}

/// A browser for `$BROWSER`, which the `webbrowser` crate runs on Linux with the URL as its
/// argument: it GETs the authorization URL, reads the `Location` it is sent to, and GETs that,
/// runvil's loopback callback, as a user who approves does.
const BROWSER: &str = r#"#!/usr/bin/env python3
import sys, urllib.error, urllib.request

class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

try:
    urllib.request.build_opener(Stay).open(sys.argv[1], timeout=20)
    sys.exit("the authorization server did not redirect")
except urllib.error.HTTPError as answer:
    back = answer.headers["Location"]
urllib.request.urlopen(back, timeout=20).read()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_s_url_and_state_are_in_no_log_line_at_debug_or_trace() {
    let dir = Temp::dir();
    let browser = dir.write("browser.py", BROWSER);
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    for level in ["debug", "trace"] {
        let server = hostile::Hostile::start(oauth::World::default().handler()).await;
        let config = Temp::config(json!({"s": {"url": server.url}}));
        let credentials = dir.path().join(format!("credentials-{level}.json"));
        let mut command = support::runvil_command(&["login", "s", "--wait", "30", "--config"]);
        command
            .arg(config.arg())
            .env("RUNVIL_CREDENTIALS", &credentials)
            .env("BROWSER", &browser)
            .env("RUST_LOG", level);
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::from(command).output(),
        )
        .await
        .expect("login ends")
        .expect("runvil runs");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{level}: {stderr}");
        assert!(
            stderr.ends_with("runvil: s is authorized\n"),
            "{level}: {stderr}"
        );
        // The browser came: the authorization server saw the URL, with its state.
        let authorize = server
            .requests()
            .into_iter()
            .find(|r| r.target.starts_with("/as/authorize?"))
            .expect("the browser opened the authorization URL");
        let url = format!("http://127.0.0.1:{}{}", server.port, authorize.target);
        let state = query_param(&url, "state");
        assert!(state.len() >= 16, "{state}");
        assert!(
            !stderr.contains(&state),
            "{level}: the state is logged: {stderr}"
        );
        assert!(
            !stderr.contains("/as/authorize"),
            "{level}: the URL is logged: {stderr}"
        );
        assert!(
            stderr.contains("plugin_mcp"),
            "{level}: the Pack's own lines are still written: {stderr}"
        );
    }
}

/// The password of the store's database: it must appear in no output, at any log level.
const STORE_CANARY: &str = "pg-canary-5d8e-do-not-print";

/// `runvil` with `args`, every log line on, and the store and its key from the environment.
fn with_store(args: &[&str], dsn: &str, key: &Path) -> std::process::Output {
    support::runvil_command(args)
        .env("RUST_LOG", "trace")
        .env("RUNVIL_STORE", dsn)
        .env("RUNVIL_STORE_KEY_FILE", key)
        .env(
            "RUNVIL_CREDENTIALS",
            unique_temp_path("unused-credentials.json"),
        )
        .output()
        .expect("runvil runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_kept_in_the_store_is_sealed_and_used_by_another_process() {
    let Some(postgres) = shared_mcp_fixture::services::Postgres::start_with_password(STORE_CANARY)
    else {
        return;
    };
    let server = hostile::Hostile::start(oauth::World::default().handler()).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let dir = Temp::dir();
    let key = dir.path().join("keys/store.key");
    let file = dir.path().join("credentials.json");
    let dsn = postgres.dsn();
    let env = [
        ("RUNVIL_STORE", std::ffi::OsStr::new(&dsn)),
        ("RUNVIL_STORE_KEY_FILE", key.as_os_str()),
        ("RUNVIL_CREDENTIALS", file.as_os_str()),
        ("RUST_LOG", std::ffi::OsStr::new("trace")),
    ];
    let ended = login_with("s", &config, &env, approve).await;
    let all = ended.all();
    assert_eq!(ended.code, Some(0), "{all}");
    assert!(
        ended.said.iter().any(|l| l == "runvil: s is authorized"),
        "{all}"
    );
    assert!(
        !all.contains(STORE_CANARY) && !all.contains(oauth::TOKEN),
        "{all}"
    );
    assert!(!file.exists(), "the credentials file is not written");
    let mode = std::fs::metadata(&key)
        .expect("the key made")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let row = postgres.psql("SELECT kind, key, value FROM runvil.records");
    assert!(row.starts_with("credentials|s|v1:"), "{row}");
    assert!(
        !row.contains(oauth::TOKEN) && !row.contains("client-1"),
        "sealed: {row}"
    );

    let (config_arg, dsn2, key2) = (config.arg().to_owned(), dsn.clone(), key.clone());
    let call = move |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(["--config", &config_arg]);
        with_store(&args, &dsn2, &key2)
    };
    let called = tokio::task::spawn_blocking({
        let call = call.clone();
        move || call(&["call", "s", "echo", r#"{"text":"hi"}"#])
    })
    .await
    .expect("ran");
    assert_eq!(
        text(&called.stdout).trim(),
        "hi",
        "{}",
        text(&called.stderr)
    );
    assert!(!text(&called.stderr).contains(STORE_CANARY));

    // The database away: said, naming it without its password; back: served again.
    postgres.stop();
    let away = tokio::task::spawn_blocking({
        let call = call.clone();
        move || call(&["call", "s", "echo", r#"{"text":"hi"}"#])
    })
    .await
    .expect("ran");
    let said = text(&away.stderr);
    assert_eq!(away.status.code(), Some(1), "{said}");
    assert!(
        said.starts_with(&format!(
            "runvil: cannot reach the store, database \"postgres\" at 127.0.0.1:{} as runvil: ",
            postgres.port()
        )),
        "{said}"
    );
    assert!(!said.contains(STORE_CANARY), "{said}");
    postgres.start_again();

    // Another key opens nothing: a login is refused naming the server, not started afresh.
    let other = dir.path().join("other.key");
    let env = [
        ("RUNVIL_STORE", std::ffi::OsStr::new(&dsn)),
        ("RUNVIL_STORE_KEY_FILE", other.as_os_str()),
    ];
    let refused = login_with("s", &config, &env, async |url: &str| {
        panic!("the user was asked: {url}")
    })
    .await;
    assert_eq!(refused.code, Some(1), "{}", refused.all());
    assert_eq!(
        refused.said,
        [
            "runvil: cannot log in to s: the credentials of s in the store cannot be opened with \
          the store key (--store-key-file): they were sealed under another key, or their row \
          was changed; use the key they were sealed with, or `runvil logout s` and log in again"
        ]
    );

    let (logout, after) =
        tokio::task::spawn_blocking(move || (call(&["logout", "s"]), call(&["logout", "s"])))
            .await
            .expect("ran");
    // What runvil says to the user, among the trace lines of the store's.
    let said = |out: &std::process::Output| -> Vec<String> {
        text(&out.stderr)
            .lines()
            .filter(|line| line.starts_with("runvil: "))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(said(&logout), ["runvil: forgot the credentials of s"]);
    assert_eq!(
        said(&after),
        [format!(
            "runvil: nothing was stored for s in the store (database \"postgres\" at \
             127.0.0.1:{} as runvil); nothing to forget",
            postgres.port()
        )]
    );
    // What is left is the record of s's trusted tools, which the call kept there too.
    assert_eq!(
        postgres.psql("SELECT kind FROM runvil.records").trim(),
        "pins"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_s_password_is_shown_nowhere_at_any_log_level() {
    let Some(postgres) = shared_mcp_fixture::services::Postgres::start_with_password(STORE_CANARY)
    else {
        return;
    };
    let dir = Temp::dir();
    let key = dir.path().join("store.key");
    let config = Temp::config(json!({}));
    let port = postgres.port();
    let wrong = format!("postgres://runvil:{STORE_CANARY}x@127.0.0.1:{port}/postgres");
    let nothing = format!(
        "postgres://runvil:{STORE_CANARY}@{}",
        support::unreachable_url()
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    );
    let cases = [
        (postgres.dsn(), 0, ""),
        (
            wrong,
            1,
            "password authentication failed for user \"runvil\"",
        ),
        (
            nothing,
            1,
            "cannot reach the store, database \"runvil\" at 127.0.0.1:",
        ),
        (
            format!("host=127.0.0.1 password='{STORE_CANARY}"),
            1,
            "is not a PostgreSQL connection string",
        ),
        (
            format!("postgres://u:{STORE_CANARY}@h/d?sslmode={STORE_CANARY}"),
            1,
            "is not a PostgreSQL",
        ),
    ];
    for (dsn, code, why) in cases {
        let output = tokio::task::spawn_blocking({
            let (config, key) = (config.arg().to_owned(), key.clone());
            move || {
                let listed = with_store(&["tools", "--config", &config], &dsn, &key);
                let help = with_store(&["tools", "--help"], &dsn, &key);
                let flag =
                    support::runvil_command(&["tools", "--store", &dsn, "--config", &config])
                        .env("RUST_LOG", "trace")
                        .env("RUNVIL_STORE_KEY_FILE", &key)
                        .output()
                        .expect("runvil runs");
                (listed, help, flag)
            }
        })
        .await
        .expect("ran");
        let (listed, help, flag) = output;
        let all = [&listed, &help, &flag]
            .iter()
            .map(|o| format!("{}{}", text(&o.stdout), text(&o.stderr)))
            .collect::<String>();
        assert_eq!(listed.status.code(), Some(code), "{all}");
        assert_eq!(flag.status.code(), Some(code), "{all}");
        assert!(text(&listed.stderr).contains(why), "{all}");
        assert!(
            !all.contains(STORE_CANARY) && !all.contains("canary"),
            "{all}"
        );
        assert!(text(&help.stdout).contains("[env: RUNVIL_STORE]"), "{all}");
    }
}

/// Two `runvil call`s sharing the credentials file, both holding the login's token when the
/// server stops taking it: one redeems the refresh token while the other waits on the file's
/// lock, then takes up what the first saved. Both answer; the refresh token was redeemed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_calls_needing_a_new_token_at_once_redeem_the_refresh_token_once() {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let gate = Arc::new(tokio::sync::Notify::new());
    let revoked = Arc::new(AtomicBool::new(false));
    let handler = oauth::refreshing(Arc::clone(&gate), Arc::clone(&revoked));
    let server = hostile::Hostile::start(handler).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let dir = Temp::dir();
    let credentials = dir.path().join("credentials.json");
    let ended = login("s", &config, &credentials, approve).await;
    assert_eq!(ended.code, Some(0), "{}", ended.all());
    revoked.store(true, Ordering::SeqCst);

    let call = || {
        let mut command = tokio::process::Command::from(support::runvil_command(&[
            "call",
            "s",
            "echo",
            r#"{"text":"hi"}"#,
            "--config",
            config.arg(),
        ]));
        command.env("RUNVIL_CREDENTIALS", &credentials);
        command.output()
    };
    let (a, b) = (tokio::spawn(call()), tokio::spawn(call()));
    // One refresh is at the authorization server (held there) and the other call waits on the
    // lock (a blocked lock of the lock file in /proc/locks); without it, the second refresh
    // arrives instead.
    let lock = dir.path().join("credentials.json.lock");
    support::wait_until(
        "the calls never met at the refresh",
        Duration::from_secs(30),
        async || {
            let redeemed = oauth::redemptions(&server.requests());
            let inode = std::fs::metadata(&lock).map(|m| m.ino()).unwrap_or(0);
            let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
            let waits = locks
                .lines()
                .any(|line| line.contains("->") && line.contains(&format!(":{inode} ")));
            redeemed >= 2 || (redeemed == 1 && waits)
        },
    )
    .await;
    for _ in 0..oauth::redemptions(&server.requests()) {
        gate.notify_one();
    }
    for call in [a, b] {
        let output = call.await.expect("joined").expect("runvil runs");
        assert_eq!(
            text(&output.stdout).trim(),
            "hi",
            "{}",
            text(&output.stderr)
        );
    }
    assert_eq!(
        oauth::redemptions(&server.requests()),
        1,
        "the refresh token was redeemed once"
    );
    let kept = std::fs::read_to_string(&credentials).expect("kept");
    assert!(
        kept.contains(oauth::REFRESHED),
        "the refreshed token is kept"
    );
}
