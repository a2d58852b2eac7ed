//! `cargo run -p build-xtask -- <subcommand>`: the project's automation entry point.
//!
//! Each subcommand is a row of [`build_xtask::SUBCOMMANDS`], its logic in its own module of
//! the library; this file only dispatches.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use build_xtask::SUBCOMMANDS;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let requested = args.first().map(String::as_str);
    if let Some(subcommand) = SUBCOMMANDS.iter().find(|s| Some(s.name) == requested) {
        return (subcommand.run)(&args[1..]);
    }
    if let Some(unknown) = requested {
        eprintln!("unknown subcommand `{unknown}`");
    }
    eprintln!("usage: cargo run -p build-xtask -- <subcommand>\n\nsubcommands:");
    for subcommand in SUBCOMMANDS {
        eprintln!("  {:<12} {}", subcommand.name, subcommand.about);
    }
    ExitCode::from(2)
}
