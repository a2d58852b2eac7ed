//! `runvil`: a small Host for the `plugin_mcp` Pack. It installs the Plugin through the
//! contract only, lends it this process's tokio runtime, and offers the Pack's two tools on
//! the command line.

#![forbid(unsafe_code)]

mod cli;
mod demo;
mod host;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    host::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runvil: cannot start the async runtime: {e}");
            return ExitCode::from(host::EXIT_OTHER);
        }
    };
    ExitCode::from(runtime.block_on(host::run(cli)))
}
