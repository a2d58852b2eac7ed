//! `cargo run -p build-xtask -- <subcommand>`: the project's automation entry point.
//!
//! Each subcommand is a row in [`SUBCOMMANDS`] and its logic lives in its own module of the
//! `build_xtask` library; this file only dispatches and prints.

// xtask is a command-line tool whose output is its result, unlike the libraries the workspace
// lint `print_stdout` protects.
#![allow(clippy::print_stdout)]

use std::process::ExitCode;

/// A subcommand: its name, a one-line description for the usage text, and its entry point
/// (which gets the arguments after the subcommand's name).
struct Subcommand {
    name: &'static str,
    about: &'static str,
    run: fn(&[String]) -> ExitCode,
}

const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "check",
        about: "run the policy checks on the workspace (the same ones `cargo test -p build-xtask` runs)",
        run: check,
    },
    Subcommand {
        name: "conformance",
        about: "run the MCP conformance suite (client scenarios of 2025-11-25, 2026-07-28 and the extensions) against the Pack",
        run: build_xtask::conformance::command,
    },
    Subcommand {
        name: "interop",
        about: "drive the Pack against the reference server @modelcontextprotocol/server-everything",
        run: build_xtask::interop::command,
    },
    Subcommand {
        name: "bench",
        about: "benchmark the Pack against raw reqwest and rmcp's client (use --release)",
        run: build_xtask::bench::command,
    },
    Subcommand {
        name: "audit",
        about: "write audit/dependencies.md, plugin_mcp's crates with version, license and reason (--check: only compare)",
        run: build_xtask::audit::command,
    },
    Subcommand {
        name: "advisories",
        about: "check Cargo.lock offline against ../shared/advisory-db with cargo-audit (--db-source <dir>)",
        run: build_xtask::advisories::command,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let requested = args.first().map(String::as_str);
    match SUBCOMMANDS
        .iter()
        .find(|subcommand| Some(subcommand.name) == requested)
    {
        Some(subcommand) => (subcommand.run)(&args[1..]),
        None => {
            if let Some(unknown) = requested {
                eprintln!("unknown subcommand `{unknown}`");
            }
            usage()
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("usage: cargo run -p build-xtask -- <subcommand>\n\nsubcommands:");
    for subcommand in SUBCOMMANDS {
        eprintln!("  {:<12} {}", subcommand.name, subcommand.about);
    }
    ExitCode::from(2)
}

/// `check`: prints every violation on stdout; exit code 1 if there is any or the checks could
/// not run.
fn check(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("`check` takes no arguments");
        return usage();
    }
    match build_xtask::check::run_all(&build_xtask::workspace::root()) {
        Ok(violations) if violations.is_empty() => {
            println!(
                "policy: all {} checks passed",
                build_xtask::check::CHECK_COUNT
            );
            ExitCode::SUCCESS
        }
        Ok(violations) => {
            for violation in &violations {
                println!("{violation}");
            }
            eprintln!("policy: {} violation(s)", violations.len());
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("policy: the checks could not run: {error}");
            ExitCode::FAILURE
        }
    }
}
