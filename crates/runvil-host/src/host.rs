//! Runs one command: reads the config, installs the Plugin, builds the Pack, waits for its
//! servers, and calls one of its two tools.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, Packs, Services, TOKIO_RUNTIME, ToolError};
use serde_json::{Value, json};

use crate::cli::{Cli, Command};

pub(crate) const EXIT_OK: u8 = 0;
pub(crate) const EXIT_OTHER: u8 = 1;
const EXIT_INVALID: u8 = 2;
const EXIT_BACKEND: u8 = 3;
const EXIT_TRANSPORT: u8 = 4;
const EXIT_INTERRUPTED: u8 = 130;

/// How long farewell messages get to leave before the process exits.
pub(crate) const FAREWELL_GRACE: Duration = Duration::from_millis(200);

/// How often the wait for servers looks at their status.
const POLL: Duration = Duration::from_millis(50);

/// Logs to stderr, filtered by RUST_LOG (warnings by default), so stdout carries only results.
pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

pub(crate) async fn run(cli: Cli) -> u8 {
    if let Command::Demo = cli.command {
        return crate::demo::run().await;
    }
    let servers = match read_config(&cli.config) {
        Ok(servers) => servers,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let pack = match build_pack(servers) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let wait = Duration::from_secs(cli.wait);
    let (tool, args, only) = match cli.command {
        Command::Tools { namespace, tool } => {
            let args = json!({"namespace": namespace, "toolName": tool});
            ("mcp/get_dynamic_tools", args, namespace)
        }
        Command::Demo => return EXIT_OTHER, // handled above
        Command::Call {
            namespace,
            tool,
            args,
        } => {
            let arguments = match args.as_deref().map(serde_json::from_str::<Value>) {
                None => json!({}),
                Some(Ok(arguments)) => arguments,
                Some(Err(e)) => {
                    eprintln!("runvil: ARGS_JSON is not JSON: {e}");
                    return EXIT_INVALID;
                }
            };
            let args = json!({"namespace": namespace, "toolName": tool, "arguments": arguments});
            ("mcp/call_dynamic_tool", args, Some(namespace))
        }
    };
    wait_for_servers(&pack, only.as_deref(), wait).await;
    let code = tokio::select! {
        outcome = pack.call(tool, without_nulls(args)) => finish(outcome),
        _ = tokio::signal::ctrl_c() => {
            eprintln!("runvil: interrupted");
            EXIT_INTERRUPTED
        }
    };
    // Dropping the call told its server to stop; dropping the Pack ends the sessions. Both
    // are sent by tasks on this runtime, which get a moment before the process exits.
    drop(pack);
    tokio::time::sleep(FAREWELL_GRACE).await;
    code
}

/// Reads `mcpServers` (or VS Code's `servers`) from the config file.
fn read_config(path: &Path) -> Result<Value, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let config: Value =
        serde_json::from_str(&text).map_err(|e| format!("{shown} is not JSON: {e}"))?;
    if !config.is_object() {
        return Err(format!("{shown} is not a JSON object"));
    }
    Ok(config
        .get("mcpServers")
        .or_else(|| config.get("servers"))
        .cloned()
        .unwrap_or(Value::Null))
}

/// Installs `plugin_mcp` through the contract and builds its Pack on this runtime.
pub(crate) fn build_pack(servers: Value) -> Result<Arc<dyn Pack>, String> {
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": servers }));
    let mut services = Services::new();
    services.insert(TOKIO_RUNTIME, tokio::runtime::Handle::current());
    packs.construct("mcp", &services).map_err(|e| e.to_string())
}

/// Waits until no server (or `only` that one) is `loading`, or `wait` passes.
pub(crate) async fn wait_for_servers(pack: &Arc<dyn Pack>, only: Option<&str>, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let Ok(text) = pack.call("mcp/get_dynamic_tools", json!({})).await else {
            return;
        };
        let listing: Value = serde_json::from_str(&text).unwrap_or_default();
        let loading = listing["servers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| only.is_none_or(|name| s["namespace"] == name))
            .any(|s| s["status"] == "loading");
        if !loading || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The listing's optional arguments, without the ones not given.
fn without_nulls(args: Value) -> Value {
    match args {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    }
}

fn finish(outcome: Result<String, ToolError>) -> u8 {
    match outcome {
        Ok(text) => {
            say(&text);
            EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            exit_code(&e)
        }
    }
}

/// The exit code of a failed call.
pub(crate) fn exit_code(e: &ToolError) -> u8 {
    match e {
        ToolError::Invalid(_) => EXIT_INVALID,
        ToolError::Backend(_) => EXIT_BACKEND,
        ToolError::Transport(_) => EXIT_TRANSPORT,
        _ => EXIT_OTHER,
    }
}

/// Writes a line of results to stdout; a closed stdout (a pipe into `head`) is not an error.
pub(crate) fn say(text: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}
