//! `cargo run -p build-xtask -- <subcommand>`: the project's automation entry point.
//!
//! Each subcommand is a row of [`build_xtask::SUBCOMMANDS`], its logic in its own module of
//! the library; [`build_xtask::dispatch`] picks it.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    build_xtask::dispatch(&std::env::args().skip(1).collect::<Vec<_>>())
}
