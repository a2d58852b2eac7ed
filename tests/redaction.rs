//! No secret leaves the Pack: canary values placed in the URL and in headers (through
//! `${env:...}`, set in `.cargo/config.toml`) must appear in no result, error, reason or log
//! line, in any form the client or a server gives them, with every log level on. This file is
//! its own test binary, so it can own the global log subscriber and see the lines of every
//! thread and task.

use shared_mcp_fixture::test_support as support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::canaries::{
    BASIC, CANARY, HEADER, PASS_DECODED, PATH_SENT, QUERY_SENT, USER, assert_clean, literal_target,
    url_with_canaries, url_with_literal_canaries,
};
use support::hostile::{self, Hostile, Script};

/// Every log line of this test binary, at TRACE, from every crate.
fn every_line() -> &'static support::logs::Captured {
    support::logs::capture("trace")
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
    let logs = every_line();
    // A server that echoes what it is sent, including every header of the request; one of
    // the 2026-07-28 revision that does the same, and one that refuses each call with a
    // 400 whose JSON-RPC error quotes the request's headers (a body read only at 2026-07-28).
    let echo = Hostile::start(hostile::mcp).await;
    let modern = Hostile::start(hostile::modern).await;
    let refusing = Hostile::start(|r: &hostile::Request| match r.rpc_method() {
        "tools/call" => {
            let message = format!("Header mismatch: {:?}", r.headers);
            hostile::refusal(r, -32020, &message, None)
        }
        _ => hostile::modern(r),
    })
    .await;
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
        "modern": secret_entry(&modern.url),
        "refusing": secret_entry(&refusing.url),
        "gone": secret_entry(&gone),
        "redirect": secret_entry(&redirect.url),
        "bad": {"url": "http://h", "headers": {"X-Bad": "${env:PLUGIN_MCP_TEST_CANARY}\n"}},
        "unset": {"url": "http://h/${env:PLUGIN_MCP_TEST_CANARY_UNSET}", "headers": {"A": "${env:PLUGIN_MCP_TEST_CANARY}"}},
    }));
    support::wait_for(&pack, "echo", "ready", Duration::from_secs(10)).await;
    for namespace in ["modern", "refusing"] {
        support::wait_for(&pack, namespace, "ready", Duration::from_secs(10)).await;
        let listing = support::list(&pack, json!({"namespace": namespace})).await;
        assert_eq!(listing["protocolVersion"], "2026-07-28", "{namespace}");
    }
    support::settled(&pack, "gone", Duration::from_secs(10)).await;
    support::settled(&pack, "redirect", Duration::from_secs(10)).await;

    let mut said = Vec::new();
    for namespace in [
        "echo", "modern", "refusing", "gone", "redirect", "bad", "unset",
    ] {
        said.extend(everything_said(&pack, namespace).await);
    }
    // The echo servers really received the secrets: the test could fail.
    for server in [&echo, &modern, &refusing] {
        let call = server.calls_of("tools/call");
        assert!(
            call.iter().any(|r| r.header("x-api-key") == Some(CANARY)),
            "the header was sent"
        );
    }
    let refused = said
        .iter()
        .find(|t| t.contains("-32020"))
        .expect("the refusal reached the model");
    assert!(refused.contains("x-api-key"), "{refused}");

    for text in &said {
        assert_clean("an output", text);
    }
    // The echoed headers came back with the marker in place of their values.
    let echoed = said
        .iter()
        .find(|t| t.contains("x-api-key"))
        .expect("the headers were echoed");
    assert!(echoed.contains("[redacted]"), "{echoed}");

    // When shutdown completes, the Pack has sent and logged all it ever will.
    pack.shutdown().await;
    drop(pack);
    let logged = logs.text();
    assert!(
        logged.contains("TRACE") || logged.contains("DEBUG"),
        "logging is on"
    );
    assert_clean("the log", &logged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_text_in_log_lines_is_escaped() {
    let logs = every_line();
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
    let logged = logs.text();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_form_the_client_derives_from_a_secret_gets_out() {
    let logs = every_line();
    let server = Hostile::start(hostile::echo_everything).await;
    let pack = support::pack(json!({
        "echo": {
            "url": url_with_canaries(server.port),
            "headers": {"X-Canary": "${env:PLUGIN_MCP_TEST_CANARY_HEADER}"},
        },
    }));
    support::wait_for(&pack, "echo", "ready", Duration::from_secs(10)).await;

    let mut said = vec![
        support::list(&pack, json!({})).await.to_string(),
        support::list(&pack, json!({"namespace": "echo"}))
            .await
            .to_string(),
    ];
    let calls = [
        ("echo", "echo", json!({})),
        ("echo", "echo", json!({"text": "content type"})),
        ("echo", "echo", json!({"text": "ask"})),
        ("echo", HEADER, json!({})),
        (HEADER, "echo", json!({})),
    ];
    for (namespace, tool, arguments) in calls {
        said.push(
            match support::call(&pack, namespace, tool, arguments).await {
                Ok(text) => text,
                Err(e) => e.to_string(),
            },
        );
    }
    let unknown_key = pack.call("mcp/call_dynamic_tool", json!({HEADER: 1})).await;
    said.push(unknown_key.expect_err("an unknown argument").to_string());

    // The server really received every derived form: the test could fail.
    let call = server.calls_of("tools/call").pop().expect("a call");
    assert_eq!(call.header("authorization"), Some(BASIC));
    assert_eq!(call.target, format!("/{PATH_SENT}/mcp?key={QUERY_SENT}"));
    assert_eq!(call.header("x-canary"), Some(HEADER));

    for text in &said {
        assert_clean("an output", text);
    }
    // What was echoed came back with the marker in its place.
    let echoed = said
        .iter()
        .find(|t| t.contains("authorization"))
        .expect("the headers were echoed");
    // The path and query carry a secret each, so each is a secret as a whole.
    assert!(echoed.starts_with("[redacted]?[redacted] ["), "{echoed}");
    assert!(echoed.contains("\"Basic [redacted]\""), "{echoed}");
    assert!(
        echoed.contains("(\"x-canary\", \"[redacted]\")"),
        "{echoed}"
    );
    assert!(
        said.iter()
            .any(|t| t.contains("content type is [redacted]/")),
        "{said:?}"
    );

    // When shutdown completes, the Pack has sent and logged all it ever will.
    pack.shutdown().await;
    drop(pack);
    let logged = logs.text();
    let answered = logged
        .lines()
        .find(|l| l.contains("could not answer a server request"))
        .expect("the debug line fired");
    assert!(answered.contains("[redacted]"), "{answered}");
    assert_clean("the log", &logged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relisted_catalog_passes_the_envelope_and_names_no_secret() {
    let logs = every_line();
    // After the first listing the server's tools echo what it was sent (the request's headers,
    // the configured ones among them) in names, titles and descriptions, with terminal
    // escapes and invisible characters; it tells of the change on its standalone stream.
    let changing =
        support::changing::Changing::new(json!([support::changing::tool("echo", "Echoes.")]));
    let handler = changing.handler(support::changing::Era::Legacy);
    let server = Hostile::start(move |r: &hostile::Request| {
        if r.rpc_method() == "tools/list" && r.body["id"].as_u64() > Some(2) {
            let echoed = format!("{:?}", r.headers);
            let tools = json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"},
                 "description": format!("\u{1b}[2J\u{202e}now {echoed}")},
                {"name": format!("bad {echoed}"), "inputSchema": {"type": "object"}},
                {"name": "titled", "title": format!("\u{7}{echoed}"), "inputSchema": {"type": "object"}},
            ]});
            return hostile::json_reply(&hostile::result_for(r, tools));
        }
        handler(r)
    })
    .await;
    let entry = secret_entry(&server.url);
    let pack = support::pack(json!({"s": entry}));
    support::wait_for(&pack, "s", "ready", Duration::from_secs(20)).await;
    changing.tell();
    support::wait_until(
        "the tools are listed again",
        Duration::from_secs(20),
        async || {
            let listing = support::list(&pack, json!({"namespace": "s"})).await;
            support::tool_names(&listing).contains(&"titled")
        },
    )
    .await;
    let said = everything_said(&pack, "s").await;
    for text in &said {
        assert_clean("an output of the re-listed catalog", text);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
    }
    assert!(
        said.iter().any(|text| text.contains("[redacted]")),
        "the echoes were there, scrubbed: {said:?}"
    );
    assert_clean("the log", &logs.text());
}

/// A Host's pin store in memory, to read what the Pack keeps in it.
#[derive(Default)]
struct KeptPins(std::sync::Mutex<Vec<String>>);

impl runvil_plugin::PinStore for KeptPins {
    fn load(&self, _key: &str) -> Result<Option<runvil_plugin::Stored>, runvil_plugin::StoreError> {
        Ok(None)
    }
    fn save(
        &self,
        _key: &str,
        record: &str,
        _read: Option<runvil_plugin::Version>,
    ) -> Result<runvil_plugin::Saved, runvil_plugin::StoreError> {
        self.0.lock().expect("records").push(record.to_owned());
        Ok(runvil_plugin::Saved::Kept(runvil_plugin::Version(1)))
    }
}

/// The Pack over one server `s` of `entry`, lent a [`KeptPins`] to read what it keeps.
fn pinned_pack(entry: Value) -> (Arc<dyn runvil_plugin::Pack>, Arc<KeptPins>) {
    let pins = Arc::new(KeptPins::default());
    let mut services = runvil_plugin::Services::new();
    let store: Arc<dyn runvil_plugin::PinStore> = pins.clone();
    services.insert(runvil_plugin::PIN_STORE, store);
    let pack = support::pack_with(json!({ "s": entry }), services).expect("pack");
    (pack, pins)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_behind_json_escapes_in_a_name_or_in_a_pinned_definition_gets_nowhere() {
    let logs = every_line();
    // The canary with every character a `\u` escape: JSON that no scan of the raw text finds
    // the secret in, until it is parsed.
    let escaped: String = CANARY
        .chars()
        .map(|c| format!("\\u{:04x}", u32::from(c)))
        .collect();
    let tools = format!(
        r#"{{"tools": [
            {{"name": "{CANARY}", "inputSchema": {{"type": "object"}}}},
            {{"name": "echo", "description": "uses {escaped}", "inputSchema": {{"type": "object"}}}}
        ]}}"#
    );
    let text = format!(r#"{{"content": [{{"type": "text", "text": "got {escaped}"}}]}}"#);
    let server = Hostile::start(move |r: &hostile::Request| match r.rpc_method() {
        "tools/list" => hostile::raw_result_reply(r, &tools),
        "tools/call" => hostile::raw_result_reply(r, &text),
        _ => hostile::mcp(r),
    })
    .await;
    let entry =
        json!({"url": server.url, "headers": {"X-Api-Key": "${env:PLUGIN_MCP_TEST_CANARY}"}});
    let (pack, pins) = pinned_pack(entry);
    support::wait_for(&pack, "s", "ready", Duration::from_secs(20)).await;

    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(support::tool_names(&listing), ["echo"]);
    assert_eq!(listing["tools"][0]["description"], "uses [redacted]");
    assert_eq!(
        listing["rejected"][0],
        json!({"name": "[redacted]", "reason": "a name that holds a configured secret"})
    );
    let called = support::call(&pack, "s", "echo", json!({})).await;
    assert_eq!(called, Ok("got [redacted]".to_owned()));
    let records = pins.0.lock().expect("records").join("\n");
    assert!(records.contains("uses [redacted]"), "{records}");
    assert_clean("the pin store's record", &records);
    assert_clean("the listing", &listing.to_string());
    drop(pack);
    assert_clean("the log", &logs.text());
}

/// A credential written into the URL as it is, not through `${env:...}` (a user name and
/// password, key-shaped path segments, a query token): a server that echoes the URL it was
/// sent, into a description and a result, shows none of it to the model, to the pins the Host
/// keeps or to any log line, while the URL's ordinary words stay readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_written_into_the_url_is_shown_nowhere() {
    let logs = every_line();
    let server = Hostile::start(|r: &hostile::Request| match r.rpc_method() {
        "tools/list" => {
            let description = format!("Sent to {}.", hostile::echoed_url(r));
            let tools = json!({"tools": [
                {"name": "echo", "description": description, "inputSchema": {"type": "object"}},
            ]});
            hostile::json_reply(&hostile::result_for(r, tools))
        }
        "tools/call" => {
            let text = json!({"content": [{"type": "text", "text": hostile::echoed_url(r)}]});
            hostile::json_reply(&hostile::result_for(r, text))
        }
        _ => hostile::mcp(r),
    })
    .await;
    let (pack, pins) = pinned_pack(json!({"url": url_with_literal_canaries(server.port)}));
    support::wait_for(&pack, "s", "ready", Duration::from_secs(20)).await;

    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    let called = support::call(&pack, "s", "echo", json!({})).await;
    // The server was sent every credential, and echoed each.
    let call = server.calls_of("tools/call").pop().expect("a call");
    assert_eq!(call.target, literal_target());
    assert_eq!(call.header("authorization"), Some(BASIC));
    let scrubbed = "/[redacted]/[redacted]/v1/mcp?api_key=[redacted]&v=v1 | \
                    /[redacted]/[redacted]/v1/mcp ? api_key=[redacted] & v=v1 | Basic [redacted]";
    assert_eq!(
        listing["tools"][0]["description"],
        format!("Sent to {scrubbed}.")
    );
    assert_eq!(called, Ok(scrubbed.to_owned()));

    let records = pins.0.lock().expect("records").join("\n");
    assert!(
        records.contains("/v1/mcp?api_key=[redacted]&v=v1"),
        "{records}"
    );
    for (what, text) in [
        ("the listing", &listing.to_string()),
        (
            "the listing of every server",
            &support::list(&pack, json!({})).await.to_string(),
        ),
        ("the pin store's record", &records),
    ] {
        assert_clean(what, text);
    }
    drop(pack);
    assert_clean("the log", &logs.text());
}

/// What a Host can format of what the registry and the built Pack keep shows no secret: a
/// configuration with tokens written into it as they are (headers, the URL's credentials, an
/// OAuth client) is handed to the Pack once, and the registry keeps nothing to show or to
/// build from again.
#[tokio::test]
async fn no_debug_of_what_the_registry_or_the_pack_keeps_shows_a_secret() {
    let servers = json!({"s": {
        "url": url_with_literal_canaries(9),
        "headers": {"Authorization": format!("Bearer {CANARY}"), "X-Canary": HEADER},
        "oauth": {"clientId": USER, "clientSecret": PASS_DECODED},
    }});
    let mut packs = runvil_plugin::Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": servers }));
    let mut services = runvil_plugin::Services::new();
    services.insert(
        runvil_plugin::TOKIO_RUNTIME,
        tokio::runtime::Handle::current(),
    );
    let pack = packs.construct("mcp", &services).expect("built");
    let again = packs.construct("mcp", &services).err();
    assert_eq!(
        again.map(|e| e.reason),
        Some("the pack \"mcp\" was built already; a registry builds each pack once".to_owned())
    );
    assert_eq!(format!("{packs:?}"), r#"{"mcp": "runvil/mcp"}"#);
    let status = format!("{:?}", *pack.status().borrow());
    for (what, text) in [
        ("the registry", format!("{packs:?}")),
        ("the services", format!("{services:?}")),
        ("the tools", format!("{:?}", pack.tools())),
        ("the status", status),
        ("the held tools", format!("{:?}", pack.held("s").await)),
        (
            "the listing",
            support::list(&pack, json!({})).await.to_string(),
        ),
    ] {
        assert_clean(what, &text);
    }
    pack.shutdown().await;
}
