//! Embedding the `plugin_mcp` Pack in a Host through the Plugin contract (`runvil-plugin`):
//! install the Plugin, lend the Pack a tokio runtime, build it, wait on its status, call its
//! two tools, and shut it down. This is what `runvil` does; README shows this file.
//!
//! `cargo run -p runvil-host --example embed` lists a server that does not exist: its status
//! goes from `loading` to `error`, with the reason.

// An example's output is for the person running it.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use runvil_plugin::{Packs, Services, TOKIO_RUNTIME, ToolError};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The Host's configuration: the Pack's part is under its id, `mcp`, and is the
    // `mcpServers` object of an mcp.json.
    let config = json!({"mcp": {"docs": {"url": "http://127.0.0.1:9/mcp"}}});

    // A Plugin only registers its Pack; nothing is built and no I/O happens yet.
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &config);

    // The Pack runs on the Host's runtime, never one of its own. Building it starts one
    // background task per server and returns at once; it hands the Pack its configuration,
    // which may hold secrets, so the registry keeps no copy (and builds each Pack once).
    let mut services = Services::new();
    services.insert(TOKIO_RUNTIME, tokio::runtime::Handle::current());
    let pack = packs.construct("mcp", &services)?;
    pack.ready().await?;

    // What a model is shown: two tools, whatever the number of servers.
    for tool in pack.tools() {
        println!("{}: {}", tool.name, tool.input_schema);
    }

    // Servers connect in the background. A Host waits on their status, which changes as
    // each leaves `loading`, rather than polling; the listing then says where each stands.
    let mut status = pack.status();
    let settled = status.wait_for(|all| all.iter().all(|s| !s.state.is_loading()));
    let _ = tokio::time::timeout(Duration::from_secs(10), settled).await;
    println!("{}", pack.call("mcp/get_dynamic_tools", json!({})).await?);

    // Each kind of error is text for the model; a Host may also act on the kind.
    let call = json!({"namespace": "docs", "toolName": "search", "arguments": {"q": "tokio"}});
    match pack.call("mcp/call_dynamic_tool", call).await {
        Ok(text) => println!("{text}"),
        Err(ToolError::Invalid(text)) => println!("the model can fix this: {text}"),
        Err(other) => println!("{other}"),
    }

    // Ends every call and session; completes when their servers have been told.
    pack.shutdown().await;
    Ok(())
}
