//! `runvil`: a small Host for the `plugin_mcp` Pack. It installs the Plugin through the
//! contract only, lends it this process's tokio runtime, and offers the Pack's two tools on
//! the command line (`tools`, `call`) and as an MCP server (`serve`), on stdio or over HTTP.
//!
//! # Layout
//!
//! - `cli`: the arguments and the help. `discovery`: which mcp.json is read, as the other
//!   clients write it (`discovery::jsonc`), and what in it runvil does not honour
//!   (`discovery::lint`).
//! - `host`: `tools` and `call`, and what every command shares (the Pack, exit codes, stdout).
//! - `progress`: the wait for servers, live on a terminal. `output`: pretty or compact.
//! - `logging`: log lines on stderr, only the Pack's and runvil's below WARN.
//! - `completions`: the shell's script, with the config's names.
//! - `check`, `serve`, `demo`, `login` (with `logout`), `edit` (`add` and `remove`): one
//!   command each. `serve` has its two rooms: `serve::stdio` and `serve::http` (the team
//!   gateway). `signals`: what stops a command, and its exit code.
//! - `trust`: reviewing and approving the tools the Pack holds. `disable`: turning a server
//!   or a tool off and on (`disable`, `enable`), kept with the approvals.
//! - `record_file`: the one kind of state file, and `record_lock` its lock across processes;
//!   `credentials`: the file where logins are kept; `pins`: the file of the tool definitions
//!   the user trusts.
//! - `policy`: runvil's own limits and waits, each a named constant.
//! - `untrusted`: how a text that came through the Pack is printed, so it cannot forge a line.
//! - `gateway`: the team gateway's authentication, policy and audit trail (`serve --http`),
//!   and the commands `audit` and `gateway-key`.
//! - `store`: the files or `--store`'s PostgreSQL database (the `runvil-store` crate), and
//!   `key_file`: a key kept in a file (the store key, which seals credentials there).

#![forbid(unsafe_code)]
// Every dependency is used; test builds also see the dev-dependencies, which need not be.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod check;
mod cli;
mod completions;
mod credentials;
mod demo;
mod disable;
mod discovery;
mod edit;
mod file_owner;
mod gateway;
mod host;
mod key_file;
mod logging;
mod login;
mod output;
mod pins;
mod policy;
mod progress;
mod record_file;
mod record_lock;
mod serve;
mod signals;
mod store;
mod trust;
mod untrusted;

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Command, GatewayArgs, HttpArgs, SecretText, Source, StoreArgs};

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
            http,
            gateway,
            store,
        } => serve(&source, wait, http, &gateway, &store),
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
        Command::Audit {
            audit,
            follow,
            since,
            namespace,
            tool,
            identity,
            store,
        } => {
            let filter = gateway::Filter {
                since,
                namespace,
                tool,
                identity,
            };
            audit_trail(audit, follow, &filter, store.store)
        }
        Command::GatewayKey { name } => gateway_key(&name),
        Command::Disable {
            namespace,
            tool,
            source,
            store,
        } => disable::run(&namespace, tool.as_deref(), false, &source, &store),
        Command::Enable {
            namespace,
            tool,
            source,
            store,
        } => disable::run(&namespace, tool.as_deref(), true, &source, &store),
        Command::Completions { shell, source } => block_on(completions::run(shell, &source)),
    };
    ExitCode::from(code)
}

/// `runvil serve`: over HTTP with `--http`, else over stdio.
fn serve(
    source: &Source,
    wait: Option<u64>,
    http: HttpArgs,
    gateway: &GatewayArgs,
    store: &StoreArgs,
) -> u8 {
    let waits = serve::Waits::from_flag(wait);
    if let Some(settings) = serve::http::Settings::of(http) {
        return block_on(serve::http::run(source, store, waits, settings, gateway));
    }
    // Who is let in, what each may use and what is recorded are the HTTP gateway's: stdio has
    // one client, the process that started runvil.
    match gateway.first_given() {
        Some(flag) => {
            eprintln!("runvil: {flag} is a flag of the HTTP gateway (`runvil serve --http`)");
            host::EXIT_INVALID
        }
        None => block_on(serve::run_stdio(source, store, waits)),
    }
}

/// `runvil audit`: the trail in a file, or in the store. A file named on the command line is
/// read even when a store is set.
fn audit_trail(
    audit: Option<PathBuf>,
    follow: bool,
    filter: &gateway::Filter,
    store: Option<SecretText>,
) -> u8 {
    match (audit, store) {
        (None, Some(store)) => block_on(gateway::read_audit_store(&store, follow, filter)),
        (audit, _) => gateway::read_audit(audit, follow, filter),
    }
}

/// `runvil gateway-key NAME`: a new API key, shown this once, and its line for the file.
fn gateway_key(name: &str) -> u8 {
    match gateway::new_key(name) {
        Ok((key, line)) => {
            host::say(&key);
            host::say(&line);
            eprintln!(
                "runvil: line 1 is the key, shown this once: the client sends it as \
                 `Authorization: Bearer KEY`. Line 2 goes into the --api-keys file."
            );
            host::EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            host::EXIT_INVALID
        }
    }
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
