//! Driving the Pack as a Host does, for the commands that run it against real servers
//! (`conformance-client`, `interop`): install it through the contract, then wait for a server.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, Packs, Services, TOKIO_RUNTIME};
use serde_json::{Value, json};

/// Installs the `mcp` Pack with one server, `namespace`, at `url`, on the current runtime.
pub fn build_pack(namespace: &str, url: &str) -> Result<Arc<dyn Pack>, String> {
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": { namespace: { "url": url } } }));
    let mut services = Services::new();
    services.insert(TOKIO_RUNTIME, tokio::runtime::Handle::current());
    packs
        .construct("mcp", &services)
        .map_err(|error| error.to_string())
}

/// Polls the listing until `namespace` is no longer `loading` (or `within` is over) and
/// returns its entry.
pub async fn settled(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    within: Duration,
) -> Result<Value, String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let text = pack
            .call("mcp/get_dynamic_tools", json!({}))
            .await
            .map_err(|error| format!("the listing failed: {error}"))?;
        let listing: Value = serde_json::from_str(&text)
            .map_err(|error| format!("the listing is not JSON ({error}): {text}"))?;
        let entry = listing["servers"]
            .as_array()
            .and_then(|servers| servers.iter().find(|s| s["namespace"] == namespace))
            .cloned()
            .ok_or_else(|| format!("the listing has no `{namespace}`: {text}"))?;
        if entry["status"] != "loading" || tokio::time::Instant::now() >= deadline {
            return Ok(entry);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
