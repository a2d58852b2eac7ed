//! The specification's configuration rules, checked through `install` and the contract: each
//! entry parsed on its own, refused entries shown as `error` with their reason, valid ones as
//! `loading` until their task runs.

use crate::support;

use serde_json::{Value, json};

/// The no-argument listing of a Pack built on `servers`, before any background task runs
/// (the listing never yields, so a current-thread runtime runs none).
async fn listing(servers: Value) -> Vec<Value> {
    let pack = support::pack(servers);
    let listing = support::list(&pack, json!({})).await;
    listing["servers"].as_array().expect("servers").clone()
}

fn status_of(entry: &Value) -> (String, Option<String>) {
    let status = entry["status"].as_str().expect("status").to_owned();
    (status, entry["reason"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn every_entry_rule() {
    let loading = || ("loading".to_owned(), None);
    let refused = |reason: &str| ("error".to_owned(), Some(reason.to_owned()));
    let cases: Vec<(Value, (String, Option<String>))> = vec![
        (json!({"url": "http://127.0.0.1:9/mcp"}), loading()),
        (
            json!({"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer x"}}),
            loading(),
        ),
        (json!({"url": "http://h/mcp", "type": "http"}), loading()),
        (
            json!({"url": "http://h/mcp", "type": "streamable-http", "unknown": {"any": 1}}),
            loading(),
        ),
        (
            json!({"url": "http://h/${env:PLUGIN_MCP_TEST_PLAIN}"}),
            loading(),
        ),
        (
            json!({"url": "http://h/mcp", "headers": {"X-A": "${env:PLUGIN_MCP_TEST_PLAIN}-${env:PLUGIN_MCP_TEST_CANARY}"}}),
            loading(),
        ),
        (
            json!({"url": "http://h/${other}/${env:}/${userHome}"}),
            loading(),
        ),
        (
            json!({"url": "http://h/mcp", "type": "sse"}),
            refused(
                "type \"sse\" is the legacy HTTP+SSE transport, which is not supported; use Streamable HTTP",
            ),
        ),
        (
            json!({"command": "npx", "args": ["-y", "server"], "env": {"K": "v"}, "cwd": "/tmp"}),
            refused("local MCP servers (command) are not supported yet"),
        ),
        (
            json!({"command": "uvx"}),
            refused("local MCP servers (command) are not supported yet"),
        ),
        (json!("http://h/mcp"), refused("the entry is not an object")),
        (json!(null), refused("the entry is not an object")),
        (json!({}), refused("url is missing")),
        (json!({"url": ["x"]}), refused("url is not a string")),
        (json!({"url": "h/mcp"}), refused("url is not a valid URL")),
        (
            json!({"url": "ws://h/mcp"}),
            refused("url must start with http:// or https://"),
        ),
        (
            json!({"url": "http://h", "headers": ["Authorization: x"]}),
            refused("headers is not an object"),
        ),
        (
            json!({"url": "http://h", "headers": {"X-Count": 3}}),
            refused("headers.X-Count is not a string"),
        ),
        (
            json!({"url": "http://h", "headers": {"accept": "*/*"}}),
            refused("header accept is set by the client and may not be configured"),
        ),
        (
            json!({"url": "http://h", "headers": {"Mcp-Session-Id": "s"}}),
            refused("header Mcp-Session-Id is set by the client and may not be configured"),
        ),
        (
            json!({"url": "http://h", "headers": {"last-EVENT-id": "1"}}),
            refused("header last-EVENT-id is set by the client and may not be configured"),
        ),
        (
            json!({"url": "http://h", "headers": {"X Bad": "v"}}),
            refused("header name X Bad cannot be sent over HTTP"),
        ),
        (
            json!({"url": "http://h", "headers": {"X-Inject": "${env:PLUGIN_MCP_TEST_CRLF}"}}),
            refused("the value of header X-Inject cannot be sent over HTTP"),
        ),
        (
            json!({"url": "http://h/${env:PLUGIN_MCP_TEST_UNSET_VARIABLE}"}),
            refused("environment variable PLUGIN_MCP_TEST_UNSET_VARIABLE is not set (used in url)"),
        ),
        (
            json!({"url": "http://h", "headers": {"Authorization": "Bearer ${env:PLUGIN_MCP_TEST_PLAIN}${env:PLUGIN_MCP_TEST_UNSET_B}"}}),
            refused(
                "environment variable PLUGIN_MCP_TEST_UNSET_B is not set (used in headers.Authorization)",
            ),
        ),
    ];
    let servers: serde_json::Map<String, Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (entry, _))| (format!("s{i:02}"), entry.clone()))
        .collect();
    let listed = listing(Value::Object(servers)).await;
    assert_eq!(
        listed.len(),
        cases.len(),
        "one bad entry never hides another"
    );
    for (i, ((entry, want), got)) in cases.iter().zip(&listed).enumerate() {
        assert_eq!(got["namespace"], format!("s{i:02}"));
        assert_eq!(&status_of(got), want, "entry {entry}");
    }
}

#[tokio::test]
async fn null_config_means_no_servers() {
    assert!(listing(Value::Null).await.is_empty());
    assert!(listing(json!({})).await.is_empty());
}

#[tokio::test]
async fn install_without_an_mcp_key_passes_null() {
    let mut packs = runvil_plugin::Packs::new();
    let mut services = runvil_plugin::Services::new();
    services.insert(
        runvil_plugin::TOKIO_RUNTIME,
        tokio::runtime::Handle::current(),
    );
    let mut namespaces = async |config: Value| {
        plugin_mcp::install(&mut packs, &config);
        assert_eq!(packs.name("mcp"), Some("runvil/mcp"));
        let pack = packs.construct("mcp", &services).expect("built");
        let listing = support::list(&pack, json!({})).await;
        let servers = listing["servers"].as_array().expect("servers").clone();
        servers
            .iter()
            .map(|s| s["namespace"].clone())
            .collect::<Vec<_>>()
    };
    assert!(namespaces(json!({"other": 1})).await.is_empty());
    let mcp = json!({"mcp": {"a": {"url": "http://h"}}});
    assert_eq!(namespaces(mcp).await, [json!("a")]);
}

#[tokio::test]
async fn any_other_config_value_leaves_the_pack_unavailable() {
    for config in [json!([]), json!("servers"), json!(1), json!(false)] {
        let error = support::try_pack(config.clone())
            .err()
            .expect("unavailable");
        assert_eq!(
            error.reason,
            "the mcp configuration must be an object of servers (an mcp.json mcpServers object) or null",
            "{config}"
        );
    }
}

#[test]
fn a_host_without_a_runtime_gets_an_unavailable_pack_even_with_no_servers() {
    let mut packs = runvil_plugin::Packs::new();
    plugin_mcp::install(&mut packs, &json!({}));
    let error = packs
        .construct("mcp", &runvil_plugin::Services::new())
        .err()
        .expect("unavailable");
    assert_eq!(
        error.reason,
        "the Host lends no tokio runtime (the contract's TOKIO_RUNTIME service)"
    );
}

#[tokio::test]
async fn namespaces_match_exactly_and_are_listed_in_name_order() {
    let listed = listing(
        json!({"b": {"url": "http://h"}, "B": {"url": "http://h"}, "a b": {"command": "x"}}),
    )
    .await;
    let names: Vec<&str> = listed
        .iter()
        .map(|s| s["namespace"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["B", "a b", "b"]);
    let pack = support::pack(json!({"Srv": {"url": "http://h"}}));
    let error = pack
        .call("mcp/get_dynamic_tools", json!({"namespace": "srv"}))
        .await
        .expect_err("namespaces are case-sensitive");
    assert_eq!(
        error,
        runvil_plugin::ToolError::Invalid(
            "unknown namespace \"srv\"; the namespaces are: Srv".to_owned()
        )
    );
}

#[tokio::test]
async fn the_pack_offers_exactly_two_tools_and_no_prelude() {
    let pack = support::pack(Value::Null);
    let names: Vec<String> = pack.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["mcp/get_dynamic_tools", "mcp/call_dynamic_tool"]);
    assert_eq!(pack.prelude(), None);
    assert_eq!(pack.ready().await, Ok(()));
}
