//! The `runvil` command, run as a person runs it: `demo`, `tools`, `call`, the argument
//! errors clap reports, Ctrl-C during a call, and what the debug log shows.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use support::{Temp, backend, config_for, runvil, runvil_command, signal_during_call, text};

#[test]
fn demo_lists_and_calls_a_bundled_server() {
    let out = runvil(&["demo"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("\"status\": \"ready\""), "{stdout}");
    assert!(stdout.contains("\n5\n"), "{stdout}");
    assert!(stdout.contains("[image omitted: image/png]"), "{stdout}");
    assert!(stdout.contains("\"b\" is a required property"), "{stdout}");
    // Each step names the runvil command that does the same with one's own server.
    for heading in [
        "# the listing: runvil tools\n",
        "# one tool with its schema: runvil tools demo add\n",
        "# a call: runvil call demo add '{\"a\": 2, \"b\": 3}'\n",
        "# an image result: runvil call demo image\n",
        "# a mistake a model can fix: runvil call demo add '{\"a\": \"two\"}'\n",
    ] {
        assert!(stdout.contains(heading), "{heading}: {stdout}");
    }
    assert!(!stdout.contains("invalid error"), "{stdout}");
}

#[test]
fn a_missing_config_is_an_error_naming_the_path() {
    let out = runvil(&["tools", "--config", "no/such/mcp.json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("runvil: cannot read no/such/mcp.json:"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_example_config_lists_every_entry_with_its_status() {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mcp.json");
    let out = Command::new(env!("CARGO_BIN_EXE_runvil"))
        .args(["tools", "--config", config, "--wait", "1"])
        .env_remove("GITHUB_TOKEN")
        .env("RUNVIL_PINS", support::scratch_pins())
        .output()
        .expect("runvil runs");
    // Printed whole, and the exit code says that a server could not be reached: nothing
    // listens on local-dev's port here, which refuses the connection within the wait (at a
    // wait of 0 it said "still loading" or "could not be reached", whichever came first).
    assert_eq!(out.status.code(), Some(4));
    let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let servers = listing["servers"].as_array().expect("servers");
    let names: Vec<&str> = servers
        .iter()
        .map(|s| s["namespace"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["filesystem", "github", "legacy", "local-dev"]);
    assert_eq!(
        servers[0]["reason"],
        "local MCP servers (command) are not supported yet"
    );
    assert_eq!(
        servers[1]["reason"],
        "environment variable GITHUB_TOKEN is not set (used in headers.Authorization)"
    );
    assert_eq!(servers[3]["status"], "error");
    assert!(
        servers[3]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("could not reach the server")),
        "{}",
        servers[3]
    );
}

#[test]
fn invalid_calls_exit_2_and_argument_errors_are_clap_s() {
    let out = runvil(&[
        "call",
        "nope",
        "tool",
        "--config",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mcp.json"),
        "--wait",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unknown namespace \"nope\""),
        "{}",
        text(&out.stderr)
    );
    let out = runvil(&["call"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("the following required arguments were not provided"));
    let out = runvil(&["--help"]);
    assert!(text(&out.stdout).contains("130  interrupted"));
}

#[test]
fn argument_errors_are_clap_s_with_exit_2() {
    let cases: [(&[&str], &str); 7] = [
        (&[], "Usage: runvil <COMMAND>"),
        (
            &["frobnicate"],
            "error: unrecognized subcommand 'frobnicate'",
        ),
        (
            &["tools", "--wait", "soon"],
            "error: invalid value 'soon' for '--wait <SECS>'",
        ),
        (
            &["tools", "--wait", "18446744073709551616"],
            "error: invalid value '18446744073709551616' for '--wait <SECS>': number too large",
        ),
        (
            &["demo", "--config", "x.json"],
            "error: unexpected argument '--config' found",
        ),
        (
            &["call", "ns"],
            "the following required arguments were not provided:\n  <TOOL>",
        ),
        (
            &["tools", "a", "b", "c"],
            "error: unexpected argument 'c' found",
        ),
    ];
    for (args, message) in cases {
        let out = runvil(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = runvil(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("runvil {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = runvil(&["--help"]);
    let help = text(&out.stdout);
    for line in [
        "$RUNVIL_MCP_CONFIG",
        "4    transport",
        "143  terminated (SIGTERM)",
        "RUST_LOG",
    ] {
        assert!(help.contains(line), "{line}: {help}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_and_call_reach_a_server_and_say_one_summary_line() {
    let backend = backend().await;
    let config = config_for(&backend);
    let run = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(["--config", config.arg()]);
        tokio::process::Command::from(runvil_command(&args)).output()
    };

    // Piped: compact JSON on one line, and one summary line on stderr.
    let out = run(&["tools"]).await.expect("runvil runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"servers\":[{\"namespace\":\"backend\",\"status\":\"ready\",\"tools\":[\"echo\",\"fails\",\"progress\",\"slow\"]}]}\n"
    );
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 ready\n");

    let out = run(&["tools", "backend", "echo", "--pretty"])
        .await
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("{\n  \"namespace\": \"backend\",\n"),
        "{stdout}"
    );
    let tool: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(tool["tool"]["name"], "echo");

    let out = run(&["call", "backend", "echo", r#"{"text": "hello"}"#])
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello\n");

    // Each kind of failure has its exit code, and its text on stderr.
    let out = run(&["call", "backend", "echo", "{}"]).await.expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("\"text\" is a required property"));
    let out = run(&["call", "backend", "echo", "not json"])
        .await
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("runvil: ARGS_JSON is not JSON"));
    let out = run(&["call", "backend", "fails"]).await.expect("runs");
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr)
            .ends_with("runvil: the server answered with an error: the disk is full\n"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_server_that_never_answers_is_waited_for_at_most_wait_seconds() {
    // A port that accepts connections but never answers: the server stays `loading`.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let config = Temp::config(json!({"mute": {"url": url}}));
    let out = runvil(&[
        "call",
        "mute",
        "anything",
        "--config",
        config.arg(),
        "--wait",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("runvil: 1 server: 1 loading\n"),
        "{stderr}"
    );
    assert!(stderr.contains("its status is loading"), "{stderr}");
}

#[test]
fn the_longest_wait_overflows_nothing() {
    // A refused entry never loads, so even the longest wait ends at once.
    let config = Temp::config(json!({"local": {"command": "server"}}));
    let longest = u64::MAX.to_string();
    let cases: [(&[&str], Option<i32>, &str); 2] = [
        (&["tools"], Some(2), "runvil: 1 server: 1 error\n"),
        (
            &["call", "local", "anything"],
            Some(2),
            "runvil: 1 server: 1 error\n",
        ),
    ];
    for (command, code, stderr) in cases {
        let mut args = command.to_vec();
        args.extend(["--config", config.arg(), "--wait", &longest]);
        let out = runvil(&args);
        assert_eq!(out.status.code(), code, "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).starts_with(stderr),
            "{}",
            text(&out.stderr)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_call_cancels_it_on_the_server_and_exits_130() {
    let backend = backend().await;
    let config = config_for(&backend);
    let args = ["call", "backend", "slow", "--config", config.arg()];
    let started = async || !backend.slow_started().is_empty();
    let out = signal_during_call(&args, "INT", started).await;
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).ends_with("runvil: interrupted\n"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert!(
        backend
            .wait_cancelled(Duration::from_secs(5))
            .await
            .is_some(),
        "the server never saw the cancellation"
    );
    assert!(
        backend.cancel_notifications().is_empty(),
        "at 2026-07-28 the closed stream is the cancellation: no notifications/cancelled"
    );
}

#[test]
fn a_piped_stderr_gets_one_summary_line_and_no_warnings() {
    let config = Temp::config(
        json!({"local": {"command": "npx"}, "old": {"type": "sse", "url": "https://example.com/sse"}}),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_runvil"))
        .args(["tools", "--config", config.arg()])
        .env_remove("RUST_LOG")
        .env("RUNVIL_PINS", support::scratch_pins())
        .output()
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "runvil: 2 servers: 2 error\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_debug_log_shows_each_request_and_never_a_value() {
    let backend = backend().await;
    let config = Temp::config(json!({"backend": {
        "url": backend.url(),
        "headers": {"X-Api-Key": "canary-header-value-42"},
    }}));
    let mut command = runvil_command(&[
        "call",
        "backend",
        "echo",
        r#"{"text": "canary-argument-7"}"#,
        "--config",
        config.arg(),
    ]);
    command.env("RUST_LOG", "plugin_mcp=debug");
    let out = tokio::process::Command::from(command)
        .output()
        .await
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = text(&out.stderr);
    for method in ["server/discover", "tools/list", "tools/call"] {
        let line = format!("request method=\"{method}\"");
        let found = log
            .lines()
            .find(|l| l.contains(&line))
            .unwrap_or_else(|| panic!("no line for {method}: {log}"));
        assert!(found.contains("server{name=backend}"), "{found}");
        assert!(found.contains("outcome=\"answered\""), "{found}");
        assert!(found.contains(" ms="), "{found}");
    }
    assert!(!log.contains("canary-header-value-42"), "{log}");
    assert!(!log.contains("canary-argument-7"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_s_progress_is_summed_up_on_a_piped_stderr() {
    let backend = backend().await;
    let config = config_for(&backend);
    let out = tokio::process::Command::from(runvil_command(&[
        "call",
        "backend",
        "progress",
        "--config",
        config.arg(),
    ]))
    .output()
    .await
    .expect("runvil runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "done\n");
    // The server's escape in each message is cleaned away by the Pack.
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\nrunvil: 2 progress notices; the last: step 2 (2/2)\n"
    );
    // A call whose server reports no progress says nothing of it.
    let out = tokio::process::Command::from(runvil_command(&[
        "call",
        "backend",
        "echo",
        r#"{"text": "x"}"#,
        "--config",
        config.arg(),
    ]))
    .output()
    .await
    .expect("runvil runs");
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 ready\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tls_handshake_with_a_plain_http_server_says_so_in_words() {
    let backend = backend().await;
    let https = backend.url().replacen("http://", "https://", 1);
    let config = Temp::config(json!({"plain": {"url": https}}));
    let out = tokio::process::Command::from(runvil_command(&[
        "call",
        "plain",
        "echo",
        "--config",
        config.arg(),
    ]))
    .output()
    .await
    .expect("runvil runs");
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let hint = "(is this an http:// server? the URL says https://)";
    assert!(stderr.contains(hint), "{stderr}");
    // The call's error, the last line, ends with it.
    assert!(
        stderr.lines().last().is_some_and(|l| l.ends_with(hint)),
        "{stderr}"
    );
}

#[test]
fn every_subcommand_s_help_ends_with_an_example() {
    for command in [
        "demo", "tools", "call", "serve", "check", "login", "logout", "trust",
    ] {
        let out = runvil(&[command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command}");
        let help = text(&out.stdout);
        let (_, examples) = help
            .rsplit_once("\nExample")
            .unwrap_or_else(|| panic!("{command}: no example: {help}"));
        assert!(
            examples.contains(&format!("runvil {command}")),
            "{command}: {help}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_reads_its_arguments_from_stdin_given_a_dash() {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;

    let backend = backend().await;
    let config = config_for(&backend);
    let mut child = tokio::process::Command::from(runvil_command(&[
        "call",
        "backend",
        "echo",
        "-",
        "--config",
        config.arg(),
    ]))
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("runvil runs");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(br#"{"text": "from stdin"}"#)
        .await
        .expect("written");
    drop(stdin);
    let out = child.wait_with_output().await.expect("runvil ends");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from stdin\n");
}
