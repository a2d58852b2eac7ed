//! The MCP client the conformance suite (`@modelcontextprotocol/conformance`) drives: the
//! `mcp` Pack, built through `plugin_mcp::install` as a Host builds it.
//!
//! The suite runs `conformance-client <server URL>` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`. The client waits for the server to become ready, does what the
//! scenario expects, and exits 0 on success or 1 with the reason on stderr.

// A command-line client: what it prints on stdout is its result.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use build_xtask::pack_driver::{build_pack, settled};
use runvil_plugin::Pack;
use serde_json::{Value, json};

/// The namespace the server is configured under.
const NAMESPACE: &str = "server";
/// How long the server may stay `loading`.
const READY_WITHIN: Duration = Duration::from_secs(20);
/// How long the runtime gets, once the Pack is dropped, to send its DELETE.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance-client <server URL>  (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot build the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let pack = build_pack(NAMESPACE, &url)?;
        let outcome = run(&pack, &scenario).await;
        // Dropping the Pack ends its session with a DELETE, sent by a task it spawns on this
        // runtime. Shutting the runtime down would cancel that task at once (a shutdown
        // timeout only waits for blocking threads), so the task gets its time here.
        drop(pack);
        tokio::time::sleep(SHUTDOWN_GRACE).await;
        outcome
    });
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("{reason}");
            ExitCode::FAILURE
        }
    }
}

/// Waits for the server, then does what `scenario` expects.
async fn run(pack: &Arc<dyn Pack>, scenario: &str) -> Result<(), String> {
    let entry = settled(pack, NAMESPACE, READY_WITHIN).await?;
    match entry["status"].as_str() {
        Some("ready") => {}
        Some("error") => {
            return Err(format!(
                "server is in error: {}",
                entry["reason"].as_str().unwrap_or("(no reason given)")
            ));
        }
        _ => {
            return Err(format!(
                "server did not become ready within {READY_WITHIN:?}: {entry}"
            ));
        }
    }
    match scenario {
        "initialize" => Ok(()),
        "tools_call" => call(pack, "add_numbers", json!({"a": 2, "b": 3})).await,
        "sse-retry" => call(pack, "test_reconnection", json!({})).await,
        _ => {
            let tools = entry["tools"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            for tool in tools {
                println!("{}", tool["name"].as_str().unwrap_or("(unnamed tool)"));
            }
            Ok(())
        }
    }
}

/// Calls `tool` on the server and prints its result.
async fn call(pack: &Arc<dyn Pack>, tool: &str, arguments: Value) -> Result<(), String> {
    let args = json!({"namespace": NAMESPACE, "toolName": tool, "arguments": arguments});
    let text = pack
        .call("mcp/call_dynamic_tool", args)
        .await
        .map_err(|error| format!("{tool}: {error}"))?;
    println!("{text}");
    Ok(())
}
