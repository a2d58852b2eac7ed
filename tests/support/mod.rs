//! What every black-box test needs: a Pack built through `install` and the contract, as a
//! Host builds it (the fixture crate's helpers, re-exported), and small helpers to read its two
//! tools.

#![allow(dead_code, unreachable_pub)] // each test binary uses a different part of this module

pub mod logs;
pub mod python_sdk;

// The test servers and canaries are the fixture crate's (feature `hostile`), shared with
// runvil's tests; each binary uses some of them.
#[allow(unused_imports)]
pub use shared_mcp_fixture::{canaries, changing, hostile, oauth};

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::Pack;
use serde_json::Value;

// Building the Pack through `install` and waiting for a server are the fixture crate's, shared
// with `runvil`'s tests and the benchmarks. Each binary uses some of them.
#[allow(unused_imports)]
pub use shared_mcp_fixture::{call, pack, pack_with, settled, status, try_pack, wait_for};

/// `mcp/get_dynamic_tools` with `args`, decoded.
pub async fn list(pack: &Arc<dyn Pack>, args: Value) -> Value {
    shared_mcp_fixture::listing(pack, args)
        .await
        .expect("the listing answers JSON")
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

/// Waits until `done` holds, failing the test with `what` after `within`.
pub async fn wait_until(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
