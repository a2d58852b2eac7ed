//! No line of any crate in `runvil`'s process names a configured value, at `RUST_LOG=trace`:
//! canaries in every part of a URL (userinfo, host, port, path, query) and in a header. The
//! Pack scrubs its own lines; the HTTP stack's lines that name hosts are capped by the Host's
//! log filter. The canaries come from `.cargo/config.toml`, which `runvil` inherits; the port
//! is the loopback server's, passed through `${env:...}` as well.

mod support;

use shared_mcp_fixture::canaries;
use shared_mcp_fixture::hostile;

use serde_json::{Value, json};

use canaries::{BASIC, PATH_SENT, QUERY_SENT, assert_clean, url_with_canaries};
use hostile::Hostile;
use support::{Temp, runvil_command, text};

/// Every crate at trace.
const ALL: &str = "trace";
/// The targets that name hosts, asked for by name: more specific than a cap on their crate.
const NAMED: &str = "hyper_util::client::legacy::pool=trace,reqwest::connect=trace,\
                     rustls_platform_verifier=trace,trace";

/// `runvil` with `args` on `config`, logging as `rust_log` says.
fn run(config: &Temp, port: u16, rust_log: &str, args: &[&str]) -> (String, String) {
    let out = runvil_command(args)
        .args(["--config", config.arg(), "--wait", "20", "--compact"])
        .env("RUST_LOG", rust_log)
        .env("RUNVIL_TEST_PORT", port.to_string())
        .output()
        .expect("runvil runs");
    (text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_line_of_any_crate_names_a_configured_value() {
    let server = Hostile::start(hostile::echo_everything).await;
    let config = Temp::config(json!({
        "echo": {
            "url": url_with_canaries("${env:RUNVIL_TEST_PORT}"),
            "headers": {"X-Canary": "${env:PLUGIN_MCP_TEST_CANARY_HEADER}"},
        },
        // A host that does not resolve: connecting to it is what the HTTP stack logs.
        "nowhere": {
            "url": "https://${env:PLUGIN_MCP_TEST_CANARY_HOST}.invalid/mcp?k=${env:PLUGIN_MCP_TEST_CANARY}",
        },
    }));
    let port = server.port;
    // Off the runtime: the server answers on it while `runvil` runs.
    let runs = tokio::task::spawn_blocking(move || {
        [
            run(&config, port, ALL, &["tools"]),
            run(&config, port, NAMED, &["tools"]),
            run(
                &config,
                port,
                ALL,
                &["call", "echo", "echo", r#"{"text": "ask"}"#],
            ),
        ]
    });
    let [(listing, listed_log), (_, named_log), (called, called_log)] =
        runs.await.expect("runvil ran");

    // Every canary reached its place: the test could fail.
    let call = server.calls_of("tools/call").pop().expect("a call");
    assert_eq!(call.header("authorization"), Some(BASIC));
    assert_eq!(call.target, format!("/{PATH_SENT}/mcp?key={QUERY_SENT}"));
    let servers: Value = serde_json::from_str(&listing).expect("a JSON listing");
    let nowhere = &servers["servers"][1];
    assert_eq!(nowhere["status"], "error", "the host was tried: {listing}");
    assert!(called.contains("\"Basic [redacted]\""), "{called}");
    // Logging was on at trace, and the Pack's debug line quoting the server fired.
    assert!(
        called_log.contains("could not answer a server request"),
        "{called_log}"
    );

    for (what, output) in [("the listing", &listing), ("the call", &called)] {
        assert_clean(what, output);
    }
    // The port is also in the logs' sight: the connection logs name it with the host. (In an
    // echo it is left, as every value shorter than the scrubber's minimum is.)
    for (what, log) in [
        ("the listing's log", &listed_log),
        ("the listing's log, the targets named", &named_log),
        ("the call's log", &called_log),
    ] {
        assert_clean(what, log);
        assert!(
            !log.contains(&format!(":{port}")),
            "{what} names the port: {log}"
        );
    }
}
