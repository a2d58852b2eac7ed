//! `runvil completions SHELL`: the shell's completion script, from the same definition as the
//! help (clap's generator), with the config's namespaces and its servers' tool names as the
//! values of the arguments that take them.
//!
//! The names are written into the script, which the shell then runs: a name is offered only
//! when it is made of the characters the MCP specification recommends for tool names (A-Z,
//! a-z, 0-9, `_`, `-`, `.`), not starting with `-`, so no name in a config copied from
//! elsewhere, nor any a server sends, can put shell syntax into the script. Tool names come
//! from the catalog where that is cheap: the servers are listed as `runvil tools` lists them
//! (the same pins file, so a server turned off is not contacted), for up to
//! [`COMPLETIONS_WAIT`]; a server not ready by then adds none. The script is a snapshot: run
//! the command again when the config changes.

use std::collections::BTreeSet;

use clap::CommandFactory;
use clap::builder::PossibleValuesParser;
use clap_complete::Shell;
use runvil_plugin::BackendState;
use serde_json::Value;

use crate::cli::{Cli, Source};
use crate::discovery;
use crate::host::{self, EXIT_OK, EXIT_OTHER, Lent};
use crate::policy::COMPLETIONS_WAIT;
use crate::store::Store;

/// The subcommands and their arguments that take a namespace.
const NAMESPACE_ARGS: &[(&str, &str)] = &[
    ("tools", "namespace"),
    ("call", "namespace"),
    ("login", "namespace"),
    ("logout", "namespace"),
    ("trust", "namespace"),
    ("disable", "namespace"),
    ("enable", "namespace"),
    ("remove", "name"),
];

/// The subcommands whose `tool` argument takes a tool's name.
const TOOL_ARGS: &[&str] = &["tools", "call", "trust", "disable", "enable"];

/// Prints the script of `shell`; with a config (the one the other commands read, or
/// `--config`), with its names. No config found is no error: the script completes the
/// commands only. Needs the runtime only to list the servers.
pub(crate) async fn run(shell: Shell, source: &Source) -> u8 {
    let config = match discovery::load(source) {
        Ok(config) => Some(config),
        Err(e) if source.config.is_some() => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
        Err(_) => None,
    };
    let mut command = Cli::command();
    if let Some(config) = config {
        let namespaces = namespaces(&config.servers);
        let tools = tools(config.servers).await;
        for (subcommand, arg) in NAMESPACE_ARGS {
            command = offer(command, subcommand, arg, &namespaces);
        }
        for subcommand in TOOL_ARGS {
            command = offer(command, subcommand, "tool", &tools);
        }
    }
    clap_complete::generate(shell, &mut command, "runvil", &mut std::io::stdout());
    EXIT_OK
}

/// `command` with `values` as what `arg` of `subcommand` completes to (none: as it was).
fn offer(command: clap::Command, subcommand: &str, arg: &str, values: &[String]) -> clap::Command {
    if values.is_empty() {
        return command;
    }
    // Changed in place: `mut_arg` would move the argument last, and so change the order of
    // the positional ones.
    command.mut_subcommand(subcommand, |sub| {
        sub.mut_args(|a| {
            if a.get_id() == arg {
                a.value_parser(PossibleValuesParser::new(values.to_vec()))
            } else {
                a
            }
        })
    })
}

/// The config's namespaces that are safe to write into a script, in name order.
fn namespaces(servers: &Value) -> Vec<String> {
    let Value::Object(entries) = servers else {
        return Vec::new();
    };
    let safe: BTreeSet<String> = entries.keys().filter(|n| is_safe(n)).cloned().collect();
    safe.into_iter().collect()
}

/// The tool names of the servers ready within [`COMPLETIONS_WAIT`], every server's together,
/// in name order.
async fn tools(servers: Value) -> Vec<String> {
    let Ok(pack) = host::build_pack_with(servers, Lent::kept(&Store::Files)) else {
        return Vec::new();
    };
    let mut status = pack.status();
    let settled = |all: &Vec<runvil_plugin::BackendStatus>| {
        !all.iter().any(|server| server.state.is_loading())
    };
    let _ = tokio::time::timeout(COMPLETIONS_WAIT, status.wait_for(settled)).await;
    let names: BTreeSet<String> = (status.borrow().iter())
        .filter_map(|server| match &server.state {
            BackendState::Ready { tools } => Some(tools.to_vec()),
            _ => None,
        })
        .flatten()
        .filter(|name| is_safe(name))
        .collect();
    pack.shutdown().await;
    names.into_iter().collect()
}

/// Whether `name` can be written into a completion script as it is.
fn is_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_that_cannot_be_shell_syntax_are_offered() {
        for safe in ["docs", "git-hub", "a.b_c", "A1"] {
            assert!(is_safe(safe), "{safe}");
        }
        for unsafe_name in [
            "",
            "-x",
            "a b",
            "a$(touch x)",
            "a\"b",
            "a'b",
            "a;b",
            "a`b`",
            "é",
        ] {
            assert!(!is_safe(unsafe_name), "{unsafe_name}");
        }
    }

    #[test]
    fn every_argument_named_exists() {
        let command = Cli::command();
        let tool_args = TOOL_ARGS.iter().map(|subcommand| (*subcommand, "tool"));
        for (subcommand, arg) in NAMESPACE_ARGS.iter().copied().chain(tool_args) {
            let sub = command.find_subcommand(subcommand).expect("a subcommand");
            assert!(
                sub.get_arguments().any(|a| a.get_id() == arg),
                "{subcommand} {arg}"
            );
        }
    }
}
