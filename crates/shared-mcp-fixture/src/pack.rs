//! The one way tests and tools build the Pack, through `plugin_mcp::install` and the contract
//! as a Host does, and the one way they wait for a server to settle, on the Pack's status
//! channel rather than by polling its listing.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{BackendStatus, Pack, Packs, Services, TOKIO_RUNTIME, ToolError, Unavailable};
use serde_json::{Value, json};

/// Builds the `mcp` Pack for `servers` (an `mcpServers` object) on the current runtime.
///
/// # Panics
///
/// If the Pack is unavailable; [`try_pack`] answers why instead.
pub fn pack(servers: Value) -> Arc<dyn Pack> {
    match try_pack(servers) {
        Ok(pack) => pack,
        Err(e) => panic!("the pack is unavailable: {e}"),
    }
}

/// Like [`pack`], but answers why the Pack is unavailable.
pub fn try_pack(servers: Value) -> Result<Arc<dyn Pack>, Unavailable> {
    pack_with(servers, Services::new())
}

/// Builds the `mcp` Pack for `servers`, lending it `services` and the current runtime.
///
/// # Panics
///
/// Outside a tokio runtime, which a Host always has.
pub fn pack_with(servers: Value, mut services: Services) -> Result<Arc<dyn Pack>, Unavailable> {
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": servers }));
    services.insert(TOKIO_RUNTIME, tokio::runtime::Handle::current());
    packs.construct("mcp", &services)
}

/// `mcp/get_dynamic_tools` with `args`, decoded, or why not.
pub async fn listing(pack: &Arc<dyn Pack>, args: Value) -> Result<Value, String> {
    let text = pack
        .call("mcp/get_dynamic_tools", args)
        .await
        .map_err(|error| format!("the listing failed: {error}"))?;
    serde_json::from_str(&text)
        .map_err(|error| format!("the listing is not JSON ({error}): {text}"))
}

/// `mcp/call_dynamic_tool` on `namespace`'s `tool` with `arguments`, as a model calls it.
pub async fn call(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    tool: &str,
    arguments: Value,
) -> Result<String, ToolError> {
    let args = json!({"namespace": namespace, "toolName": tool, "arguments": arguments});
    pack.call("mcp/call_dynamic_tool", args).await
}

/// `namespace`'s entry in the no-argument listing, or `Value::Null` if it has none.
pub async fn status(pack: &Arc<dyn Pack>, namespace: &str) -> Value {
    let Ok(listing) = listing(pack, json!({})).await else {
        return Value::Null;
    };
    listing["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["namespace"] == namespace))
        .cloned()
        .unwrap_or_default()
}

/// Waits (up to `within`) until `namespace` is no longer `loading`, and answers its entry,
/// still loading if `within` ran out.
pub async fn settled(pack: &Arc<dyn Pack>, namespace: &str, within: Duration) -> Value {
    let mut channel = pack.status();
    let settled = |all: &Vec<BackendStatus>| {
        all.iter()
            .any(|s| s.name == namespace && !s.state.is_loading())
    };
    // Dropped at once: the borrow `wait_for` answers must not be held across an await, or
    // the Pack could not update the status it reads.
    let _ = tokio::time::timeout(within, channel.wait_for(settled)).await;
    status(pack, namespace).await
}

/// Waits as [`settled`] does, and answers the entry if `namespace` is ready, or why it is not
/// (its reason, or that it is still loading), for tools that report rather than panic.
pub async fn ready(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    within: Duration,
) -> Result<Value, String> {
    let entry = settled(pack, namespace, within).await;
    match entry["status"].as_str() {
        Some("ready") => Ok(entry),
        Some("error") => Err(format!(
            "`{namespace}` is in error: {}",
            entry["reason"].as_str().unwrap_or("(no reason given)")
        )),
        None => Err(format!("the listing has no `{namespace}`")),
        _ => Err(format!(
            "`{namespace}` did not become ready within {within:?}: {entry}"
        )),
    }
}

/// Waits until `namespace` has the status `want`, and answers its entry.
///
/// # Panics
///
/// If `namespace` does not reach `want` within `within`, naming the entry it has instead.
pub async fn wait_for(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    want: &str,
    within: Duration,
) -> Value {
    let mut channel = pack.status();
    let reached = |all: &Vec<BackendStatus>| {
        all.iter()
            .any(|s| s.name == namespace && s.state.label() == want)
    };
    // A bool at once, for the reason [`settled`] gives.
    let reached = matches!(
        tokio::time::timeout(within, channel.wait_for(reached)).await,
        Ok(Ok(_))
    );
    let entry = status(pack, namespace).await;
    assert!(reached, "{namespace} never became {want}: {entry}");
    entry
}
