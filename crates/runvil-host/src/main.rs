//! `runvil`: a small Host for the `plugin_mcp` Pack. It installs the Plugin through the
//! contract only, lends it this process's tokio runtime, and offers the Pack's two tools on
//! the command line (`tools`, `call`) and as an MCP server on stdio (`serve`).
//!
//! # Layout
//!
//! - `cli`: the arguments and the help. `discovery`: which mcp.json is read, as the other
//!   clients write it (`discovery::jsonc`), and what in it runvil does not honour
//!   (`discovery::lint`).
//! - `host`: `tools` and `call`, and what every command shares (the Pack, exit codes, stdout).
//! - `progress`: the wait for servers, live on a terminal. `output`: pretty or compact.
//! - `logging`: log lines on stderr, only the Pack's and runvil's below WARN.
//! - `check`, `serve`, `demo`, `login` (with `logout`), `edit` (`add` and `remove`): one
//!   command each. `signals`: what stops a command, and its exit code.
//! - `trust`: reviewing and approving the tools the Pack holds.
//! - `record_file`: the one kind of state file, and `record_lock` its lock across processes;
//!   `credentials`: the file where logins are kept; `pins`: the file of the tool definitions
//!   the user trusts.
//! - `untrusted`: how a text that came through the Pack is printed, so it cannot forge a line.
//! - `store`: the files or `--store`'s PostgreSQL database (the `runvil-store` crate), and
//!   `key_file`: a key kept in a file (the store key, which seals credentials there).

#![forbid(unsafe_code)]
// Every dependency is used; test builds also see the dev-dependencies, which need not be.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod check;
mod cli;
mod credentials;
mod demo;
mod discovery;
mod edit;
mod host;
mod key_file;
mod logging;
mod login;
mod output;
mod pins;
mod progress;
mod record_file;
mod record_lock;
mod serve;
mod signals;
mod store;
mod trust;
mod untrusted;

use std::future::Future;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::Command;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // `check`, `tools` and `call` show every server's status and reason themselves, so the
    // Pack's warnings would say each one twice; under `serve` the log is all a person sees.
    let default_log = match cli.command {
        Command::Serve { .. } | Command::Demo => "warn",
        _ => "error",
    };
    logging::init(default_log);
    let code = match cli.command {
        // No runtime: `check` must not let the Pack's connection tasks run at all.
        Command::Check { source } => check::run(&source),
        Command::Demo => block_on(demo::run()),
        Command::Serve {
            source,
            wait,
            store,
        } => block_on(serve::run(
            &source,
            std::time::Duration::from_secs(wait),
            &store,
        )),
        Command::Tools {
            namespace,
            tool,
            answer,
        } => block_on(host::tools(namespace, tool, &answer)),
        Command::Call {
            namespace,
            tool,
            args,
            answer,
        } => block_on(host::call(namespace, tool, args, &answer)),
        Command::Login {
            namespace,
            source,
            wait,
            no_browser,
            store,
        } => block_on(login::login(namespace, &source, wait, no_browser, &store)),
        Command::Logout {
            namespace,
            source,
            store,
        } => block_on(login::logout(&namespace, &source, &store)),
        Command::Trust {
            namespace,
            tool,
            yes,
            source,
            wait,
            store,
        } => {
            let asked = trust::Asked {
                namespace: &namespace,
                tool: tool.as_deref(),
                yes: yes.as_deref(),
                wait,
            };
            block_on(trust::trust(asked, &source, &store))
        }
        Command::Add {
            name,
            url,
            headers,
            force,
            config,
        } => edit::add(&name, &url, &headers, force, config.as_deref()),
        Command::Remove { name, config } => edit::remove(&name, config.as_deref()),
        Command::Completions { shell } => {
            let mut command = <cli::Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "runvil", &mut std::io::stdout());
            host::EXIT_OK
        }
    };
    ExitCode::from(code)
}

/// Runs a command on the runtime the Pack is lent, and answers its exit code.
fn block_on(command: impl Future<Output = u8>) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runvil: cannot start the async runtime: {e}");
            return host::EXIT_OTHER;
        }
    };
    // Each command shuts its Pack down before it answers: its farewells are sent by then.
    let code = runtime.block_on(command);
    // Waiting longer for what is left (a blocking read of a terminal's stdin in `serve`, the
    // demo's server) would only delay the exit.
    runtime.shutdown_background();
    code
}
