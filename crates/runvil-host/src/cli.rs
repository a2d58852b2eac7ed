//! The command line: what `runvil` accepts, and the help that documents it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "\
Exit codes:
  0    success
  1    anything else (a missing or unreadable config, an unavailable Pack)
  2    invalid: the tool call was wrong (unknown namespace or tool, bad arguments, server not ready)
  3    backend: the server answered with an error
  4    transport: the server could not be reached or did not answer in time
  130  interrupted (Ctrl-C); a call in flight is cancelled on the server first

Logs go to stderr; set RUST_LOG (for example RUST_LOG=plugin_mcp=debug) to see more.";

/// Reach every remote MCP server of an mcp.json through two tools.
#[derive(Debug, Parser)]
#[command(name = "runvil", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// The mcp.json to read: its mcpServers object (or VS Code's servers) configures the Pack.
    #[arg(long, global = true, value_name = "PATH", default_value = "mcp.json")]
    pub(crate) config: PathBuf,

    /// Seconds to wait for servers to leave `loading` before answering.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 30)]
    pub(crate) wait: u64,

    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the Pack against a bundled MCP server on 127.0.0.1: no set-up, no files written.
    Demo,
    /// Print the get_dynamic_tools JSON: every server, one server's tools, or one tool.
    Tools {
        /// A server's namespace, as the config names it.
        namespace: Option<String>,
        /// A tool of that server.
        tool: Option<String>,
    },
    /// Call a tool and print its result text.
    Call {
        /// The server's namespace.
        namespace: String,
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object (default {}).
        #[arg(value_name = "ARGS_JSON")]
        args: Option<String>,
    },
}
