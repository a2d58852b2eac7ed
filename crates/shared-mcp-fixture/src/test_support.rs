//! What every black-box test of the Pack and of `runvil` shares beyond the servers: reading
//! the Pack's two tools, the one way a test waits for a condition it cannot be told about,
//! the log lines of a test binary (`logs`), and the Python SDK's server in a child process
//! (`python_sdk`). A test binary names it `support` (`use shared_mcp_fixture::test_support as
//! support;`), as it did when each binary carried its own copy.

pub mod logs;
pub mod python_sdk;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::Pack;
use serde_json::Value;

// The test servers, the canaries and building the Pack, under the one name tests use.
pub use crate::{call, pack, pack_with, settled, status, try_pack, wait_for};
pub use crate::{canaries, changing, hostile, oauth};

/// How often [`wait_until`] looks again: short beside any wait a test allows, long enough
/// that looking costs nothing.
const LOOK_AGAIN: Duration = Duration::from_millis(20);

/// `mcp/get_dynamic_tools` with `args`, decoded.
///
/// # Panics
///
/// If the listing fails or is not JSON: the test fails with why.
pub async fn list(pack: &Arc<dyn Pack>, args: Value) -> Value {
    crate::listing(pack, args)
        .await
        .expect("the listing answers JSON")
}

/// The names of the tools in one server's listing (`get_dynamic_tools {namespace}`), in order.
///
/// # Panics
///
/// If the listing has no `tools` array of named tools.
pub fn tool_names(listing: &Value) -> Vec<&str> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name"))
        .collect()
}

/// Waits until `done` holds, failing the test with `what` after `within`. For conditions
/// nothing announces (a listing's content, another process's state); what a fixture server
/// records is awaited on its own events instead (`Hostile::until`).
///
/// # Panics
///
/// If `done` does not hold within `within`.
pub async fn wait_until(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}
