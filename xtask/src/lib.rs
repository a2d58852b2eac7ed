//! build-xtask: the project's automation, kept out of the shipped crates. It owns only the
//! rules no standard tool knows; bans, forbidden features, licenses, sources and advisories
//! are `deny.toml`'s, run by cargo-deny ([`deny`] stages its offline advisory database).
//!
//! - **Policy checks** ([`check`], run by `cargo test -p build-xtask`): a Plugin depends on
//!   no workspace crate but `runvil-plugin` and `shared-*` ones, and `plugin_mcp`'s direct
//!   dependencies are exactly `policy/deps.allow` ([`dependency_policy`], over `cargo metadata`
//!   read into [`metadata`]); `plugin_mcp` exports `pub fn install` and nothing else
//!   ([`public_api_policy`], with `syn`).
//! - **The audit folder**: [`audit`] writes the dependency inventory from `cargo tree`;
//!   [`audit_table`] checks that the audit table names only tests (`cargo test -- --list`),
//!   files and commands that exist.
//! - **Runs against real servers**: [`conformance`] and [`interop`], the Pack built and awaited
//!   through `shared-mcp-fixture`'s `pack` helpers, as the tests do.
//!
//! Each check is a pure function over already-gathered data, so its unit tests feed it
//! crafted input; [`workspace`] does the I/O that gathers the real data.

#![forbid(unsafe_code)]

use std::process::ExitCode;

pub mod audit;
pub mod audit_table;
pub mod check;
pub mod conformance;
pub mod deny;
pub mod dependency_policy;
pub mod deps_allow;
pub mod interop;
pub mod layers;
pub mod metadata;
pub mod public_api_policy;
pub mod taint_policy;
pub mod workspace;

/// A subcommand of `cargo run -p build-xtask --`: its name, a one-line description for the
/// usage text, whether it takes arguments, and its entry point, which gets the arguments after
/// its name and answers `Ok(true)` if everything held, `Ok(false)` if something did not (it
/// printed what), or `Err` with why it could not run.
#[derive(Debug)]
pub struct Subcommand {
    /// What follows `--` on the command line.
    pub name: &'static str,
    /// One line for the usage text.
    pub about: &'static str,
    /// Whether it takes arguments; one that does not is refused any.
    pub takes_arguments: bool,
    /// The entry point.
    pub run: fn(&[String]) -> Result<bool, String>,
}

/// Every subcommand; the audit table may name only these.
pub const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "conformance",
        about: "run the MCP conformance suite (client scenarios of 2025-11-25, 2026-07-28 and the extensions) against the Pack",
        takes_arguments: false,
        run: conformance::command,
    },
    Subcommand {
        name: "conformance-client",
        about: "the MCP client the conformance suite drives: `conformance-client <server URL>`",
        takes_arguments: true,
        run: conformance::client::command,
    },
    Subcommand {
        name: "interop",
        about: "drive the Pack against the reference server @modelcontextprotocol/server-everything",
        takes_arguments: false,
        run: interop::command,
    },
    Subcommand {
        name: "layers",
        about: "print plugin_mcp's modules as layers, the lowest first, each with what it imports",
        takes_arguments: false,
        run: layers::command,
    },
    Subcommand {
        name: "audit",
        about: "write audit/dependencies.md, plugin_mcp's crates with version, license and reason",
        takes_arguments: false,
        run: audit::command,
    },
    Subcommand {
        name: "deny",
        about: "stage ../shared/advisory-db offline (--db-source <dir>) and run `cargo deny --offline --workspace check [checks]`",
        takes_arguments: true,
        run: deny::command,
    },
];

/// Runs the subcommand `args` name with the arguments after it: exit code 0 if everything
/// held, 1 if something did not or it could not run, 2 (with the usage) for an unknown
/// subcommand or arguments to one that takes none.
pub fn dispatch(args: &[String]) -> ExitCode {
    let requested = args.first().map(String::as_str);
    if let Some(subcommand) = SUBCOMMANDS.iter().find(|s| Some(s.name) == requested) {
        let (name, args) = (subcommand.name, &args[1..]);
        if !subcommand.takes_arguments && !args.is_empty() {
            eprintln!("`{name}` takes no arguments");
            return ExitCode::from(2);
        }
        return match (subcommand.run)(args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(error) => {
                eprintln!("{name}: {error}");
                ExitCode::FAILURE
            }
        };
    }
    if let Some(unknown) = requested {
        eprintln!("unknown subcommand `{unknown}`");
    }
    eprintln!("usage: cargo run -p build-xtask -- <subcommand>\n\nsubcommands:");
    for subcommand in SUBCOMMANDS {
        eprintln!("  {:<18} {}", subcommand.name, subcommand.about);
    }
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_subcommand_or_arguments_to_one_that_takes_none_is_a_usage_error() {
        let args = |args: &[&str]| args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
        for wrong in [
            &[][..],
            &["benchmarks"],
            &["interop", "--fast"],
            &["conformance", "x"],
        ] {
            assert_eq!(dispatch(&args(wrong)), ExitCode::from(2), "{wrong:?}");
        }
    }
}
