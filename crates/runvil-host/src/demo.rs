//! `runvil demo`: the main job on an embedded default. It serves a small MCP server on a free
//! loopback port in this process (the workspace's fixture: rmcp over Streamable HTTP, writing no
//! files), installs the Pack on a config naming it, and shows the listing, one tool with its
//! schema, and calls, each headed by the `runvil` command that makes it against a config of
//! one's own and by the Pack tool it is.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::Pack;
use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet};

use crate::host::{self, EXIT_OK, EXIT_OTHER};
use crate::output::Format;
use crate::progress::{self, Until};

/// The demo server's tools: a few kinds of answer, none that needs explaining.
const TOOLS: &[&str] = &["echo", "add", "image", "slow"];

/// How long the `slow` tool takes: long enough to see, short enough for a demo.
const SLOW: Duration = Duration::from_millis(1500);

/// Runs the demo and answers the process's exit code.
pub(crate) async fn run() -> u8 {
    let server = Fixture::builder()
        .tools(ToolSet::Only(TOOLS))
        .slow_for(SLOW)
        .try_start()
        .await;
    let server = match server {
        Ok(server) => server,
        Err(e) => {
            eprintln!("runvil: cannot open a loopback port for the demo server: {e}");
            return EXIT_OTHER;
        }
    };
    let servers = json!({"demo": {"url": server.url()}});
    let code = match host::build_pack(servers.clone(), tokio::runtime::Handle::current()) {
        Ok(pack) => {
            let code = show(&pack, &servers).await;
            pack.shutdown().await;
            code
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            EXIT_OTHER
        }
    };
    // Stopped only now, after the Pack's farewells have reached it.
    drop(server);
    code
}

async fn show(pack: &Arc<dyn Pack>, servers: &Value) -> u8 {
    // Each step with the command that makes the same call against a config naming the server.
    let steps: [(&str, &str, &str, Value); 5] = [
        (
            "the listing",
            "runvil tools",
            "mcp/get_dynamic_tools",
            json!({}),
        ),
        (
            "one tool with its schema",
            "runvil tools demo add",
            "mcp/get_dynamic_tools",
            json!({"namespace": "demo", "toolName": "add"}),
        ),
        (
            "a call",
            r#"runvil call demo add '{"a": 2, "b": 3}'"#,
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "add", "arguments": {"a": 2, "b": 3}}),
        ),
        (
            "an image result",
            "runvil call demo image",
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "image"}),
        ),
        (
            "a mistake a model can fix",
            r#"runvil call demo add '{"a": "two"}'"#,
            "mcp/call_dynamic_tool",
            json!({"namespace": "demo", "toolName": "add", "arguments": {"a": "two"}}),
        ),
    ];
    let config = json!({"mcpServers": servers}).to_string();
    host::say(&format!("# mcp.json\n{}\n", Format::Pretty.render(&config)));
    progress::wait(pack.status(), None, Duration::from_secs(10), Until::Settled).await;
    for (title, command, tool, args) in steps {
        host::say(&format!("# {title}: {command}\n#   the tool {tool} {args}"));
        match pack.call(tool, args).await {
            Ok(text) => host::say(&format!("{}\n", Format::Pretty.render(&text))),
            Err(e) if title.starts_with("a mistake") => host::say(&format!("{}\n", host::said(&e))),
            Err(e) => {
                eprintln!("runvil: {}", host::said(&e));
                return host::exit_code(&e);
            }
        }
    }
    EXIT_OK
}
