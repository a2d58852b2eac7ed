//! Driving the Pack as a Host does, for the commands that run it against real servers
//! (`conformance-client`, `interop`, the benchmarks): install it through the contract, wait for
//! a server, look at its tools and call them, always through the Pack's two tools.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, Services};
use serde_json::{Value, json};
pub use shared_mcp_fixture::call;

/// Installs the `mcp` Pack with one server, `namespace`, at `url`, on the current runtime.
pub fn build_pack(namespace: &str, url: &str) -> Result<Arc<dyn Pack>, String> {
    build_pack_with(namespace, json!({ "url": url }), Services::new())
}

/// Installs the `mcp` Pack with one server, `namespace`, configured by `entry`, lending it
/// `services` and the current runtime.
pub fn build_pack_with(
    namespace: &str,
    entry: Value,
    services: Services,
) -> Result<Arc<dyn Pack>, String> {
    shared_mcp_fixture::pack_with(json!({ namespace: entry }), services)
        .map_err(|error| error.to_string())
}

/// Waits until `namespace` is no longer `loading` (or `within` is over), watching the Pack's
/// status, and returns its listing entry.
pub async fn settled(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    within: Duration,
) -> Result<Value, String> {
    match shared_mcp_fixture::settled(pack, namespace, within).await {
        Value::Null => Err(format!("the listing has no `{namespace}`")),
        entry => Ok(entry),
    }
}

/// Waits as [`settled`] does and answers the entry if `namespace` is ready, or why it is not.
pub async fn ready(
    pack: &Arc<dyn Pack>,
    namespace: &str,
    within: Duration,
) -> Result<Value, String> {
    let entry = settled(pack, namespace, within).await?;
    match entry["status"].as_str() {
        Some("ready") => Ok(entry),
        Some("error") => Err(format!(
            "`{namespace}` is in error: {}",
            entry["reason"].as_str().unwrap_or("(no reason given)")
        )),
        _ => Err(format!(
            "`{namespace}` did not become ready within {within:?}: {entry}"
        )),
    }
}

/// What a model sees when it asks for one server's tools: each with its description and input
/// schema, and the tools the Pack rejected, with the reasons.
pub async fn tools(pack: &Arc<dyn Pack>, namespace: &str) -> Result<Value, String> {
    shared_mcp_fixture::listing(pack, json!({ "namespace": namespace })).await
}
