//! The `runvil` command, run as a person runs it.

use std::process::{Command, Output};

fn runvil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_runvil"))
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("runvil runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

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
        .args(["tools", "--config", config, "--wait", "0"])
        .env_remove("GITHUB_TOKEN")
        .output()
        .expect("runvil runs");
    assert_eq!(out.status.code(), Some(0));
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
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
