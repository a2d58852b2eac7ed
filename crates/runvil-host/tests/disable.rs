//! `runvil disable` and `runvil enable`, and `"disabled": true` in the config, through the
//! binary against servers that count what reaches them: a tool turned off is in no listing and
//! is called as one the server does not have; a server turned off is never contacted, nor is
//! an entry the config turns off, which `check` says is `disabled`.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use shared_mcp_fixture::hostile::{self, Hostile};
use support::{Temp, backend, config_for, runvil_command, scratch_pins, text};

/// Runs `runvil` with `args` and the pins file `pins`, off the test's runtime (its servers
/// answer on it meanwhile).
async fn run(pins: &Path, args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let pins = pins.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = runvil_command(&args);
        command.env("RUNVIL_PINS", pins);
        command.output().expect("runvil runs")
    })
    .await
    .expect("runvil ran")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_turned_off_is_in_no_listing_and_called_as_one_the_server_lacks() {
    let server = backend().await;
    let config = config_for(&server);
    let config = config.arg();
    let pins = scratch_pins();

    let out = run(&pins, &["disable", "backend", "slow", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: backend slow is turned off\n");
    assert!(out.stdout.is_empty());
    assert_eq!(server.requests("POST"), 0, "deciding contacts no server");
    let out = run(&pins, &["disable", "backend", "slow", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        "runvil: backend slow was turned off already\n"
    );

    // Its first listing is trusted as ever (the record held only the decision), without it.
    let out = run(&pins, &["tools", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 ready\n");
    assert_eq!(
        json_of(&out),
        json!({"servers": [{"namespace": "backend", "status": "ready",
            "tools": ["echo", "fails", "progress"]}]})
    );
    let out = run(&pins, &["tools", "backend", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0));
    let names: Vec<Value> = (json_of(&out)["tools"].as_array().expect("tools").iter())
        .map(|tool| tool["name"].clone())
        .collect();
    assert_eq!(names, ["echo", "fails", "progress"]);
    let unknown = "runvil: 1 server: 1 ready\nrunvil: backend has no tool \"slow\"; its tools \
                   are: echo, fails, progress\n";
    for command in [
        &["tools", "backend", "slow"][..],
        &["call", "backend", "slow"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--config", config]);
        let out = run(&pins, &args).await;
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        assert_eq!(text(&out.stderr), unknown, "{command:?}");
    }
    assert!(server.slow_started().is_empty(), "the tool was not called");

    let out = run(&pins, &["enable", "backend", "slow", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stderr), "runvil: backend slow is turned on\n");
    let out = run(&pins, &["tools", "--config", config]).await;
    assert_eq!(
        json_of(&out)["servers"][0]["tools"],
        json!(["echo", "fails", "progress", "slow"]),
        "back, and trusted: it was listed, though not shown, when first seen"
    );
    let out = run(&pins, &["enable", "backend", "slow", "--config", config]).await;
    assert_eq!(
        text(&out.stderr),
        "runvil: backend slow was turned on already\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_turned_off_is_never_contacted_until_turned_on() {
    let server = Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let config = config.arg();
    let pins = scratch_pins();

    let out = run(&pins, &["disable", "s", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: s is turned off\n");

    let out = run(&pins, &["tools", "--config", config]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 disabled\n");
    assert_eq!(
        json_of(&out),
        json!({"servers": [{"namespace": "s", "status": "disabled"}]})
    );
    let out = run(
        &pins,
        &["call", "s", "echo", r#"{"text": "hi"}"#, "--config", config],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 disabled\nrunvil: s is not ready: its status is disabled (the \
         user turned it off)\n"
    );
    let out = run(&pins, &["trust", "s", "--config", config]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).ends_with(
            "runvil: cannot review the tools of s: it is turned off (run `runvil enable s`)\n"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.connections(), 0, "a server turned off was contacted");

    let out = run(&pins, &["enable", "s", "--config", config]).await;
    assert_eq!(text(&out.stderr), "runvil: s is turned on\n");
    assert_eq!(server.connections(), 0);
    let out = run(
        &pins,
        &["call", "s", "echo", r#"{"text": "hi"}"#, "--config", config],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi\n");
    assert!(server.connections() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_the_config_turns_off_is_left_out_and_check_says_disabled() {
    let off = Hostile::start(hostile::mcp).await;
    let on = Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({
        "off": {"url": off.url, "disabled": true, "headers": {"X-A": "${TOKEN}"}},
        "on": {"url": on.url, "disabled": false},
    }));
    let pins = scratch_pins();

    let out = run(&pins, &["check", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{} (from --config)\n  off  disabled\n  on   accepted\n1 of 1 accepted, 1 disabled\n",
            config.arg()
        )
    );
    assert!(out.stderr.is_empty(), "no advice about an entry left out");

    let out = run(&pins, &["tools", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = json_of(&out);
    assert_eq!(listing["servers"].as_array().map(Vec::len), Some(1));
    assert_eq!(listing["servers"][0]["namespace"], "on");
    let turned_off = format!(
        "runvil: off is turned off in {} (\"disabled\": true); remove that key to use it\n",
        config.arg()
    );
    for command in [
        &["tools", "off"][..],
        &["call", "off", "echo"],
        &["disable", "off"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--config", config.arg()]);
        let out = run(&pins, &args).await;
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        assert_eq!(text(&out.stderr), turned_off, "{command:?}");
    }
    assert_eq!(off.connections(), 0, "an entry turned off was contacted");
    assert!(on.connections() > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misspelled_server_is_not_turned_off_and_a_pins_file_is_needed() {
    let server = Hostile::start(hostile::mcp).await;
    let config = Temp::config(json!({"docs": {"url": server.url}}));
    let out = run(
        &scratch_pins(),
        &["disable", "dcos", "--config", config.arg()],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: unknown namespace \"dcos\"; did you mean docs? the namespaces are: docs\n"
    );
    // A pins file that cannot be read: said as itself, nothing decided.
    let corrupt = Temp(support::unique_temp_path("pins.json"));
    std::fs::write(corrupt.path(), "not json").expect("written");
    let out = run(&corrupt.0, &["disable", "docs", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("runvil: cannot disable: "),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(corrupt.path()).expect("kept"),
        "not json"
    );
    assert_eq!(server.connections(), 0);
}
