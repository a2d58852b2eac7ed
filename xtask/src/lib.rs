//! build-xtask: the project's automation, kept out of the shipped crates.
//!
//! xtask owns only the rules no standard tool knows, those a code review would otherwise have
//! to remember. What a well-kept tool does is left to it: bans, forbidden features, licenses,
//! sources and advisories are `deny.toml`, run by cargo-deny ([`deny`] stages its offline
//! advisory database); the graph comes from `cargo metadata` (typed: [`metadata`]) and
//! `cargo tree`; source is read with `syn`, Markdown with `pulldown-cmark`; test names come
//! from `cargo test -- --list`.
//!
//! - **Policy checks** (`cargo test -p build-xtask`, or `cargo run -p build-xtask -- check`):
//!   - [`dependency_policy::plugin_family_deps`]: a `plugin_*` / `plugin-*` package depends on
//!     no workspace crate other than `runvil-plugin` and `shared-*` crates;
//!   - [`public_api_policy::only_install_is_public`]: `plugin_mcp` exports `pub fn install`
//!     and nothing else, and no `#[macro_export]` macro;
//!   - [`dependency_policy::allow_list`]: every direct dependency of `plugin_mcp` is listed,
//!     with its reason, in `policy/deps.allow` ([`deps_allow`]), with no stale entries.
//! - **The audit folder**: [`audit`] writes the dependency inventory, [`audit_table`] checks
//!   that the audit table names only tests, files and commands that exist.
//! - **Runs against real servers**: [`conformance`], [`interop`] (through [`pack_driver`]).
//!
//! Each check is a pure function over already-gathered data, so its unit tests feed it
//! crafted input; [`workspace`] does the I/O that gathers the real data.

#![forbid(unsafe_code)]

use std::process::ExitCode;

pub mod audit;
pub mod audit_table;
pub mod browser;
pub mod check;
pub mod conformance;
pub mod deny;
pub mod dependency_policy;
pub mod deps_allow;
pub mod interop;
pub mod metadata;
pub mod pack_driver;
pub mod public_api_policy;
pub mod workspace;

/// A subcommand of `cargo run -p build-xtask --`: its name, a one-line description for the
/// usage text, and its entry point (which gets the arguments after the subcommand's name).
#[derive(Debug)]
pub struct Subcommand {
    /// What follows `--` on the command line.
    pub name: &'static str,
    /// One line for the usage text.
    pub about: &'static str,
    /// The entry point.
    pub run: fn(&[String]) -> ExitCode,
}

/// Every subcommand; the audit table may name only these.
pub const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "check",
        about: "run the policy checks on the workspace (the same ones `cargo test -p build-xtask` runs)",
        run: check::command,
    },
    Subcommand {
        name: "conformance",
        about: "run the MCP conformance suite (client scenarios of 2025-11-25, 2026-07-28 and the extensions) against the Pack",
        run: conformance::command,
    },
    Subcommand {
        name: "interop",
        about: "drive the Pack against the reference server @modelcontextprotocol/server-everything",
        run: interop::command,
    },
    Subcommand {
        name: "audit",
        about: "write audit/dependencies.md, plugin_mcp's crates with version, license and reason (--check: only compare)",
        run: audit::command,
    },
    Subcommand {
        name: "deny",
        about: "stage ../shared/advisory-db offline (--db-source <dir>) and run `cargo deny --offline --workspace check [checks]`",
        run: deny::command,
    },
];
