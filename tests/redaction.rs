//! No secret leaves the Pack: canary values placed in the URL and in headers (through
//! `${env:...}`, set in `.cargo/config.toml`) must appear in no result, error, reason or log
//! line, with every log level on. This file is its own test binary, so it can own the global
//! log subscriber and see the lines of every thread and task.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use support::hostile::{self, Hostile, Script};

const CANARY: &str = env!("PLUGIN_MCP_TEST_CANARY");

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every log line of this test binary, at TRACE, from every crate.
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        captured
    })
}

/// The canary and the forms it could take in a URL or JSON text.
fn forms() -> Vec<String> {
    let percent: String = CANARY.bytes().map(|b| format!("%{b:02X}")).collect();
    vec![CANARY.to_owned(), percent, CANARY.replace('-', "%2D")]
}

fn assert_clean(what: &str, text: &str) {
    for form in forms() {
        assert!(!text.contains(&form), "{what} leaks the canary: {text}");
    }
}

fn secret_entry(url: &str) -> Value {
    json!({
        "url": format!("{url}?key=${{env:PLUGIN_MCP_TEST_CANARY}}"),
        "headers": {
            "Authorization": "Bearer ${env:PLUGIN_MCP_TEST_CANARY}",
            "X-Api-Key": "${env:PLUGIN_MCP_TEST_CANARY}",
        }
    })
}

async fn everything_said(pack: &Arc<dyn runvil_plugin::Pack>, namespace: &str) -> Vec<String> {
    let mut said = vec![
        support::list(pack, json!({})).await.to_string(),
        support::list(pack, json!({"namespace": namespace}))
            .await
            .to_string(),
    ];
    for args in [
        json!({"text": CANARY}),
        json!({}),
        json!({"text": format!("Bearer {CANARY}")}),
    ] {
        let outcome = support::call(pack, namespace, "echo", args).await;
        said.push(format!("{outcome:?}"));
        if let Err(e) = outcome {
            said.push(e.to_string());
        }
    }
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_output_or_log_line_names_a_secret() {
    let logs = logs();
    // A server that echoes what it is sent, including every header of the request.
    let echo = Hostile::start(hostile::mcp).await;
    // A server that is not there, and one that redirects.
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!(
            "http://127.0.0.1:{}/mcp",
            listener.local_addr().expect("addr").port()
        )
    };
    let redirect = Hostile::start(|_| {
        Script::raw(hostile::http(
            "307 Temporary Redirect",
            &[("location", "http://127.0.0.1:9/x?key=canary")],
            b"",
        ))
    })
    .await;
    let pack = support::pack(json!({
        "echo": secret_entry(&echo.url),
        "gone": secret_entry(&gone),
        "redirect": secret_entry(&redirect.url),
        "bad": {"url": "http://h", "headers": {"X-Bad": "${env:PLUGIN_MCP_TEST_CANARY}\n"}},
        "unset": {"url": "http://h/${env:PLUGIN_MCP_TEST_CANARY_UNSET}", "headers": {"A": "${env:PLUGIN_MCP_TEST_CANARY}"}},
    }));
    support::wait_for(&pack, "echo", "ready", Duration::from_secs(10)).await;
    support::settled(&pack, "gone", Duration::from_secs(10)).await;
    support::settled(&pack, "redirect", Duration::from_secs(10)).await;

    let mut said = Vec::new();
    for namespace in ["echo", "gone", "redirect", "bad", "unset"] {
        said.extend(everything_said(&pack, namespace).await);
    }
    // The echo server really received the secrets: the test could fail.
    let call = echo.calls_of("tools/call");
    assert!(
        call.iter().any(|r| r.header("x-api-key") == Some(CANARY)),
        "the header was sent"
    );

    for text in &said {
        assert_clean("an output", text);
    }
    // The echoed headers came back with the marker in place of their values.
    let echoed = said
        .iter()
        .find(|t| t.contains("x-api-key"))
        .expect("the headers were echoed");
    assert!(echoed.contains("[redacted]"), "{echoed}");

    drop(pack);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let logged = String::from_utf8_lossy(&logs.0.lock().expect("log")).into_owned();
    assert!(
        logged.contains("TRACE") || logged.contains("DEBUG"),
        "logging is on"
    );
    assert_clean("the log", &logged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_in_log_lines_is_escaped() {
    let logs = logs();
    let forged = "evil\u{1b}[2J\n2026-01-01T00:00:00Z  INFO FORGED LOG LINE";
    let server = Hostile::start(move |r: &hostile::Request| match r.rpc_method() {
        "tools/list" => hostile::json_reply(&hostile::result_for(
            r,
            json!({"tools": [
                {"name": forged, "inputSchema": {"type": "object"}},
            ]}),
        )),
        _ => hostile::mcp(r),
    })
    .await;
    let pack = support::pack(json!({"logs": {"url": server.url}}));
    support::wait_for(&pack, "logs", "ready", Duration::from_secs(10)).await;
    let logged = String::from_utf8_lossy(&logs.0.lock().expect("log")).into_owned();
    assert!(logged.contains("tool dropped"), "the rejection is logged");
    assert!(
        logged.contains("evil\\u{1b}[2J\\n"),
        "the name is escaped: {logged}"
    );
    assert!(!logged.contains('\u{1b}'), "a raw escape reached the log");
    assert!(
        !logged.lines().any(|l| l.starts_with("2026-01-01")),
        "a forged line reached the log"
    );
}
