//! `runvil check` and config discovery: which file is read, and what the Pack says of each
//! entry, without a single connection.

mod support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::Output;

use serde_json::json;

use support::{Temp, runvil, runvil_command, runvil_in, text};

/// `runvil check` in `dir`, with `home` as HOME.
fn check_in(dir: &Temp, home: &Temp, extra: &[&str]) -> Output {
    runvil_in(dir, home, &[&["check"], extra].concat())
}

#[test]
fn every_refusal_is_named_with_its_exact_reason() {
    let config = Temp::config(json!({
        "a-not-object": 7,
        "b-local": {"command": "npx", "args": ["server"]},
        "c-sse": {"type": "sse", "url": "https://example.com/sse"},
        "d-no-url": {"headers": {}},
        "e-url-number": {"url": 5},
        "f-headers-list": {"url": "https://example.com/mcp", "headers": ["x"]},
        "g-bad-url": {"url": "http://"},
        "h-scheme": {"url": "ftp://example.com/mcp"},
        "i-unset": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:RUNVIL_TEST_UNSET}"}},
        "j-reserved": {"url": "https://example.com/mcp", "headers": {"Mcp-Session-Id": "x"}},
        "k-header-name": {"url": "https://example.com/mcp", "headers": {"bad name": "x"}},
        "l-header-value": {"url": "https://example.com/mcp", "headers": {"X-A": "a\nb"}},
        "m-ok": {"url": "https://example.com/mcp", "headers": {"X-Home": "${userHome}"}},
    }));
    let out = runvil_command(&["check", "--config", config.arg()])
        .env_remove("RUNVIL_TEST_UNSET")
        .env("HOME", "/home/someone")
        .output()
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let expected = format!(
        "{} (from --config)
  a-not-object    refused: the entry is not an object
  b-local         refused: local MCP servers (command) are not supported yet
  c-sse           refused: type \"sse\" is the legacy HTTP+SSE transport, which is not supported; use Streamable HTTP
  d-no-url        refused: url is missing
  e-url-number    refused: url is not a string
  f-headers-list  refused: headers is not an object
  g-bad-url       refused: url is not a valid URL
  h-scheme        refused: url must start with http:// or https://
  i-unset         refused: environment variable RUNVIL_TEST_UNSET is not set (used in headers.Authorization)
  j-reserved      refused: header Mcp-Session-Id is set by the client and may not be configured
  k-header-name   refused: header name bad name cannot be sent over HTTP
  l-header-value  refused: the value of header X-A cannot be sent over HTTP
  m-ok            accepted
1 of 13 accepted
",
        config.arg()
    );
    assert_eq!(text(&out.stdout), expected);
}

#[test]
fn an_all_accepted_config_exits_0_and_no_byte_reaches_its_servers() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let config = Temp::config(json!({"here": {"url": url}, "also": {"url": url}}));
    let out = runvil(&["check", "--config", config.arg()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).ends_with("  also  accepted\n  here  accepted\n2 of 2 accepted\n"),
        "{}",
        text(&out.stdout)
    );
    listener.set_nonblocking(true).expect("non-blocking");
    let accepted = listener.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(accepted, Err(ErrorKind::WouldBlock), "check connected");
}

#[test]
fn a_config_with_no_servers_or_not_an_object_fails() {
    let empty = Temp::dir();
    let path = empty.write("mcp.json", r#"{"mcpservers": {"typo": {}}}"#);
    let out = runvil(&["check", "--config", path.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no servers"),
        "{}",
        text(&out.stderr)
    );

    let wrong = empty.write("wrong.json", r#"{"mcpServers": [1]}"#);
    let out = runvil(&["check", "--config", wrong.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            "the mcp configuration must be an object of servers (an mcp.json mcpServers object) or null"
        ),
        "{}",
        text(&out.stderr)
    );

    let not_json = empty.write("bad.json", "{");
    let not_json = not_json.to_str().expect("UTF-8");
    let out = runvil(&["check", "--config", not_json]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!("runvil: {not_json}: line 1, column 1: EOF while parsing an object\n")
    );
}

#[test]
fn vs_code_s_servers_shape_is_read() {
    let dir = Temp::dir();
    let path = dir.write(
        ".vscode/mcp.json",
        r#"{"servers": {"web": {"type": "http", "url": "https://example.com/mcp"}}, "inputs": []}"#,
    );
    let out = runvil(&["check", "--config", path.to_str().expect("UTF-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("  web  accepted\n"));
}

#[test]
fn discovery_takes_the_first_of_flag_variable_project_cursor_and_home() {
    let project = Temp::dir();
    let home = Temp::dir();
    let entry = |name: &str| json!({"mcpServers": {name: {"url": "https://example.com/mcp"}}});
    let read = |extra: &[&str], env: Option<&str>| {
        let mut args = vec!["check"];
        args.extend_from_slice(extra);
        let mut command = runvil_command(&args);
        command.current_dir(project.path()).env("HOME", home.path());
        if let Some(env) = env {
            command.env("RUNVIL_MCP_CONFIG", env);
        }
        let out = command.output().expect("runvil runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let first = stdout.lines().next().unwrap_or_default().to_owned();
        let server = stdout.lines().nth(1).unwrap_or_default().trim().to_owned();
        (first, server)
    };

    // Nothing anywhere: an error that lists every place looked.
    let out = check_in(&project, &home, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("runvil: no config file found. Looked for:\n"),
        "{stderr}"
    );
    for place in [
        "--config PATH (not given)".to_owned(),
        "$RUNVIL_MCP_CONFIG (not set)".to_owned(),
        "./mcp.json".to_owned(),
        "./.cursor/mcp.json".to_owned(),
        home.path().join(".cursor/mcp.json").display().to_string(),
    ] {
        assert!(
            stderr.contains(&format!("\n  {place}\n")),
            "{place}: {stderr}"
        );
    }

    let home_file = home.write(".cursor/mcp.json", &entry("from-home").to_string());
    assert_eq!(
        read(&[], None),
        (
            format!("{} (found in ~/.cursor)", home_file.display()),
            "from-home  accepted".to_owned()
        )
    );
    project.write(".cursor/mcp.json", &entry("from-cursor").to_string());
    assert_eq!(
        read(&[], None),
        (
            "./.cursor/mcp.json (found in ./.cursor)".to_owned(),
            "from-cursor  accepted".to_owned()
        )
    );
    project.write("mcp.json", &entry("from-project").to_string());
    assert_eq!(
        read(&[], None),
        (
            "./mcp.json (found in the current directory)".to_owned(),
            "from-project  accepted".to_owned()
        )
    );
    let env_file = project.write("env.json", &entry("from-env").to_string());
    let env_file = env_file.to_str().expect("UTF-8");
    assert_eq!(
        read(&[], Some(env_file)),
        (
            format!("{env_file} (from $RUNVIL_MCP_CONFIG)"),
            "from-env  accepted".to_owned()
        )
    );
    // An empty variable is no variable.
    assert_eq!(read(&[], Some("")).1, "from-project  accepted");
    let flag_file = project.write("flag.json", &entry("from-flag").to_string());
    let flag_file = flag_file.to_str().expect("UTF-8");
    assert_eq!(
        read(&["--config", flag_file], Some(env_file)),
        (
            format!("{flag_file} (from --config)"),
            "from-flag  accepted".to_owned()
        )
    );

    // A named file that is missing is an error, never a fall-back to the next place.
    let out = runvil_command(&["check"])
        .current_dir(project.path())
        .env("RUNVIL_MCP_CONFIG", "missing.json")
        .output()
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("runvil: cannot read missing.json:"),
        "{}",
        text(&out.stderr)
    );
}
