//! What every black-box test of the Pack shares beyond the servers: reading the Pack's two
//! tools, the log lines of a test binary (`logs`), the Python SDK's server in a child process
//! (`python_sdk`), and moving tokio's clock on (`skip_clock`), beside the crate's servers,
//! canaries and waits re-exported. A test binary names it `support` (`use
//! shared_mcp_fixture::test_support as support;`), as it did when each binary carried its own
//! copy.

pub mod logs;
pub mod python_sdk;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::Pack;
use serde_json::Value;

// The test servers, the canaries, building the Pack and waiting, under the one name tests use.
pub use crate::{call, pack, pack_with, settled, status, try_pack, wait_for, wait_until};
pub use crate::{canaries, changing, hostile, oauth};

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

/// Moves tokio's clock on by `by` at once, then lets it run on from there: a deadline the Pack
/// keeps on that clock (a token's refresh, a listing's `ttlMs`) passes without the test waiting
/// it out. Here, not beside `wait_until`, because it needs tokio's `test-util`, which a
/// benchmark must not build with (its clock takes a lock at every reading).
///
/// # Panics
///
/// On a multi-thread runtime, which tokio does not let a test pause.
pub async fn skip_clock(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}
