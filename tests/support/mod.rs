//! What every black-box test needs: a Pack built through `install` and the contract, as a
//! Host builds it, and small helpers to read its two tools.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different part of this module

pub mod canaries;
pub mod hostile;
pub mod logs;
pub mod oauth;
pub mod python_sdk;
pub mod rmcp_server;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{BackendStatus, Pack, Packs, Services, TOKIO_RUNTIME, ToolError, Unavailable};
use serde_json::{Value, json};

/// Builds the `mcp` Pack for `servers` (an `mcpServers` object) on the current runtime.
pub fn pack(servers: Value) -> Arc<dyn Pack> {
    try_pack(servers).expect("the pack is available")
}

/// Like [`pack`], but returns why the Pack is unavailable.
pub fn try_pack(servers: Value) -> Result<Arc<dyn Pack>, Unavailable> {
    pack_with(servers, Services::new())
}

/// Builds the `mcp` Pack for `servers`, lending it `services` and the current runtime.
pub fn pack_with(servers: Value, mut services: Services) -> Result<Arc<dyn Pack>, Unavailable> {
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": servers }));
    services.insert(TOKIO_RUNTIME, tokio::runtime::Handle::current());
    packs.construct("mcp", &services)
}

/// `mcp/get_dynamic_tools` with `args`, decoded.
pub async fn list(pack: &Arc<dyn Pack>, args: Value) -> Value {
    let text = pack
        .call("mcp/get_dynamic_tools", args)
        .await
        .expect("the listing answers");
    serde_json::from_str(&text).expect("the listing is JSON")
}

/// The names of the tools in one server's listing (`get_dynamic_tools {namespace}`), in order.
pub fn tool_names(listing: &Value) -> Vec<&str> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect()
}

/// `mcp/call_dynamic_tool` on `namespace`'s `tool` with `arguments`.
pub async fn call(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    tool: &str,
    arguments: Value,
) -> Result<String, ToolError> {
    let args = json!({"namespace": namespace, "toolName": tool, "arguments": arguments});
    pack.call("mcp/call_dynamic_tool", args).await
}

/// The status of `namespace` in the no-argument listing.
pub async fn status(pack: &Arc<dyn Pack>, namespace: &str) -> Value {
    let listing = list(pack, json!({})).await;
    listing["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|s| s["namespace"] == namespace)
        .cloned()
        .expect("the namespace is listed")
}

/// Waits until `done` holds, failing the test with `what` after `within`.
pub async fn wait_until(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (up to `within`) until `namespace` is no longer `loading`, and returns its entry.
pub async fn settled(pack: &Arc<dyn Pack>, namespace: &str, within: Duration) -> Value {
    let mut status = pack.status();
    let settled = |all: &Vec<BackendStatus>| {
        all.iter()
            .any(|s| s.name == namespace && !s.state.is_loading())
    };
    let _ = tokio::time::timeout(within, status.wait_for(settled)).await;
    self::status(pack, namespace).await
}

/// Waits until `namespace` has `want` status, failing the test after `within`.
pub async fn wait_for(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    want: &str,
    within: Duration,
) -> Value {
    let mut status = pack.status();
    let reached = |all: &Vec<BackendStatus>| {
        all.iter()
            .any(|s| s.name == namespace && s.state.label() == want)
    };
    // A bool at once: the borrow `wait_for` answers must not be held across an await, or
    // the Pack could not update the status it reads.
    let reached = matches!(
        tokio::time::timeout(within, status.wait_for(reached)).await,
        Ok(Ok(_))
    );
    let entry = self::status(pack, namespace).await;
    assert!(reached, "{namespace} never became {want}: {entry}");
    entry
}
