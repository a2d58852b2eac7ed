//! The command line: what `runvil` accepts, and the help that documents it. Every option
//! belongs to the commands it means something to, so `runvil demo --config x` is an error
//! rather than a silently ignored flag.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = "\
Configuration:
  The config is the first of: --config PATH, $RUNVIL_MCP_CONFIG, ./mcp.json,
  ./.cursor/mcp.json, ./.vscode/mcp.json, ./.mcp.json, $XDG_CONFIG_HOME/runvil/mcp.json
  (~/.config/runvil/mcp.json by default), ~/.cursor/mcp.json. Its mcpServers
  object (or VS Code's servers) names the remote MCP servers; comments and trailing commas
  are accepted, as VS Code writes them. `runvil check` shows which file it read; check,
  tools, call and serve warn (without failing) about what runvil does not honour as other
  clients do: ${VAR} and ${input:...} (write ${env:NAME}), disabled: true, serverUrl or
  httpUrl for url, a key written twice, an mcp-remote command (write its URL as url).

Exit codes:
  0    success
  1    anything else (no config, an unreadable config, a refused entry in `check`, an `add`
       of a name the file has, a `login` whose authorization could not be kept, a `trust`
       answered no, whose approval or review could not be kept or whose pins file cannot
       be used, or with a tool that changed again since it was shown or last reviewed)
  2    invalid: the command line or the tool call was wrong (unknown namespace or tool, bad
       arguments, a server still loading when the wait ran out, a server whose entry
       runvil refused, a held tool that is not approved, a `trust` of a tool that is not
       held, or with neither a terminal to ask on nor --yes)
  3    backend: the server answered with an error
  4    transport: the server could not be reached or did not answer in time (a call to it,
       or `tools NAMESPACE` for it), or `login` ended without authorizing it
  129  hung up (SIGHUP)
  130  interrupted (Ctrl-C, SIGINT)
  143  terminated (SIGTERM)

Signals:
  SIGINT, SIGTERM and SIGHUP stop tools, call, serve, login and trust the same way: the call
  in flight is dropped and its server told (notifications/cancelled, or at 2026-07-28 the
  closed stream), every session is ended, then runvil exits with 128 + the signal's number
  (demo, check, logout, add, remove and completions are simply ended by the signal). `runvil
  serve` exits 0 when its client closes stdin.

Files:
  Logins are kept in $RUNVIL_CREDENTIALS, else $XDG_STATE_HOME/runvil/credentials.json
  (~/.local/state/runvil/credentials.json by default); the tool definitions you trust in
  $RUNVIL_PINS, else pins.json in that same folder. tools, call, serve and trust trust each
  server's tools as they are first listed, then hold a tool that changes, or a new one,
  until `runvil trust NAMESPACE` approves it. Both files are 0600; runvil refuses one that
  other users may read or change, and never replaces a file it cannot read.

Logs go to stderr; set RUST_LOG (for example RUST_LOG=plugin_mcp=debug) to see more.";

const DEMO_EXAMPLES: &str = "\
Example:
  runvil demo                  the listing, one tool's schema and a few calls, then it exits";

const TOOLS_EXAMPLES: &str = "\
Examples:
  runvil tools                 every server: its status and its tools' names
  runvil tools docs            the tools of docs, with their input schemas
  runvil tools docs search     one tool
  runvil tools docs --wait 60  wait up to 60 s for docs to be ready, through its retries";

const CALL_EXAMPLES: &str = "\
Examples:
  runvil call docs search '{\"q\": \"tokio\"}'
  echo '{\"q\": \"tokio\"}' | runvil call docs search -
  runvil call docs search '{\"q\": \"tokio\"}' --wait 60   wait for docs, through its retries";

const SERVE_EXAMPLES: &str = "\
Example (the command an MCP client starts; README.md has each client's config):
  runvil serve --config ~/.config/runvil/mcp.json";

const CHECK_EXAMPLES: &str = "\
Examples:
  runvil check                          the config runvil finds (it says which)
  runvil check --config .vscode/mcp.json";

const LOGIN_EXAMPLES: &str = "\
Examples:
  runvil login github                   opens the browser
  runvil login github --no-browser      prints the URL, to open it anywhere";

const LOGOUT_EXAMPLES: &str = "\
Example:
  runvil logout github";

const ADD_EXAMPLES: &str = "\
Examples:
  runvil add docs https://docs.example/mcp
  runvil add github https://api.githubcopilot.com/mcp/ \\
      --header 'Authorization: Bearer ${env:GITHUB_TOKEN}'   the file holds no token
  runvil add docs http://127.0.0.1:8000/mcp --force          replaces docs";

const REMOVE_EXAMPLES: &str = "\
Examples:
  runvil remove docs
  runvil remove docs --config .vscode/mcp.json";

const TRUST_EXAMPLES: &str = "\
Examples:
  runvil trust docs              what changed in each held tool of docs; asks, then approves
                                 (without a terminal: records the review and approves nothing)
  runvil trust docs search       the tool search only
  runvil trust docs --yes        approves what the last review showed, as it showed it
  runvil trust docs --yes 3f2a9c0e51b7d84a6c1f0e2d9b3a7c58
                                 approves the tool whose pin the review showed is that";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  runvil completions bash > ~/.local/share/bash-completion/completions/runvil
  runvil completions zsh > ~/.zfunc/_runvil
  runvil completions fish > ~/.config/fish/completions/runvil.fish";

/// How long `tools`, `call` and `serve` wait for a server to leave `loading` when `--wait` is
/// not given: a server that has not ended its first attempt to connect and list its tools by
/// then is shown as it stands.
pub(crate) const DEFAULT_WAIT_SECS: u64 = 30;

/// Reach every remote MCP server of an mcp.json through two tools.
#[derive(Parser)]
#[command(name = "runvil", version, after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// List and call the tools of a bundled MCP server on 127.0.0.1: no set-up, no files
    /// written.
    #[command(after_help = DEMO_EXAMPLES)]
    Demo,
    /// Print the get_dynamic_tools JSON: every server, one server's tools, or one tool.
    #[command(after_help = TOOLS_EXAMPLES)]
    Tools {
        /// A server's namespace, as the config names it.
        namespace: Option<String>,
        /// A tool of that server.
        tool: Option<String>,
        #[command(flatten)]
        answer: Answer,
    },
    /// Call a tool and print its result text.
    #[command(after_help = CALL_EXAMPLES)]
    Call {
        /// The server's namespace.
        namespace: String,
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object (default {}); `-` reads them from stdin.
        #[arg(value_name = "ARGS_JSON")]
        args: Option<String>,
        #[command(flatten)]
        answer: Answer,
    },
    /// Serve get_dynamic_tools and call_dynamic_tool as one MCP server on stdio: a gateway
    /// for Claude Desktop, Cursor, Codex or VS Code over every server of the config.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve {
        #[command(flatten)]
        source: Source,
        /// Seconds a request about one server waits for it to leave `loading`.
        #[arg(long, value_name = "SECS", default_value_t = DEFAULT_WAIT_SECS)]
        wait: u64,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Say whether each server of the config is accepted or refused, and why, without
    /// connecting to any. Exits 0 when every entry is accepted, 1 otherwise.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        #[command(flatten)]
        source: Source,
    },
    /// Log in to a server that requires OAuth: opens the browser (or prints the URL) and keeps
    /// the outcome in the credentials file for the other commands. Exits 0 only when what
    /// it obtained is kept there (or the server needs no login, or was authorized already).
    #[command(after_help = LOGIN_EXAMPLES)]
    Login {
        /// The server's namespace.
        namespace: String,
        #[command(flatten)]
        source: Source,
        /// Seconds to wait for the authorization to complete.
        #[arg(long, value_name = "SECS", default_value_t = 300)]
        wait: u64,
        /// Print the authorization URL on stderr instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Review the tools of a server that are held because they changed since they were
    /// approved (or trusted at first use) or are new, field by field, and approve them: until
    /// then no model can call them. Asks on a terminal; without one, the review is recorded and
    /// --yes then approves exactly what it showed.
    #[command(after_help = TRUST_EXAMPLES)]
    Trust {
        /// The server's namespace.
        namespace: String,
        /// One of its held tools: approve that one only.
        tool: Option<String>,
        /// Approve without asking the tools that are still as the last review showed them;
        /// with PINs (from a review), the tools that are as those pins say instead. A tool
        /// that changed since is not approved (exit 1).
        #[arg(long, short = 'y', num_args = 0.., value_name = "PIN")]
        yes: Option<Vec<String>>,
        #[command(flatten)]
        source: Source,
        /// Seconds to wait for the server to be ready, through its retries [default: 30, and a
        /// server that is down is said when its first attempt ends]
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Add a remote MCP server to the config, as `claude mcp add` does: every other entry,
    /// field and comment stays as written. Without --config it writes the file the other
    /// commands read, else a new ./mcp.json.
    #[command(after_help = ADD_EXAMPLES)]
    Add {
        /// The server's name: its namespace in `tools` and `call`.
        name: String,
        /// Its Streamable HTTP endpoint, http:// or https:// (${env:NAME} may be used).
        url: String,
        /// A header sent with every request to it, as `Name: value`; write a secret value as
        /// ${env:NAME}, so the file holds only the variable's name (repeatable).
        #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Replace a server of that name instead of refusing.
        #[arg(long)]
        force: bool,
        /// The mcp.json to change [default: the one the other commands read, else ./mcp.json]
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Remove a server from the config, leaving every other entry, field and comment as
    /// written.
    #[command(after_help = REMOVE_EXAMPLES)]
    Remove {
        /// The server's name.
        name: String,
        /// The mcp.json to change [default: the one the other commands read]
        #[arg(long, value_name = "PATH")]
        config: Option<PathBuf>,
    },
    /// Print the completion script of a shell, for `runvil`'s commands and options.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Forget what `login` kept for a server.
    #[command(after_help = LOGOUT_EXAMPLES)]
    Logout {
        /// The server's namespace.
        namespace: String,
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// Where the config comes from.
#[derive(Debug, Args)]
pub(crate) struct Source {
    /// The mcp.json to read [default: the first of $RUNVIL_MCP_CONFIG, ./mcp.json,
    /// ./.cursor/mcp.json, ./.vscode/mcp.json, ./.mcp.json,
    /// $XDG_CONFIG_HOME/runvil/mcp.json (~/.config/runvil/mcp.json), ~/.cursor/mcp.json]
    #[arg(long, value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,
}

/// How `tools` and `call` wait for servers and print their answer.
#[derive(Debug, Args)]
pub(crate) struct Answer {
    #[command(flatten)]
    pub(crate) source: Source,

    /// Seconds to wait before answering: for a call or one server's listing, until that
    /// server is ready, through the retries of a server that is down; for the listing of
    /// every server, until none is loading [default: 30, and a server that is down is said
    /// when its first attempt ends]
    #[arg(long, value_name = "SECS")]
    pub(crate) wait: Option<u64>,

    /// Pretty-print JSON output (the default when stdout is a terminal).
    #[arg(long, overrides_with = "compact")]
    pub(crate) pretty: bool,

    /// Print output exactly as it was received (the default otherwise).
    #[arg(long, overrides_with = "pretty")]
    pub(crate) compact: bool,

    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// Where state is kept: the files, or a PostgreSQL database several runvil share.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// Keep logins and approvals in this PostgreSQL database instead of the files:
    /// postgres://USER:PASSWORD@HOST:PORT/DATABASE (add ?sslmode=require for one elsewhere).
    /// Prefer $RUNVIL_STORE: other users of the machine can read a command line
    #[arg(long, value_name = "DSN", env = "RUNVIL_STORE", hide_env_values = true, value_parser = secret_text)]
    pub(crate) store: Option<SecretText>,

    /// The file of the key that seals credentials in --store's database (64 hex characters,
    /// 0600; made when missing): the same for every runvil sharing the database, which
    /// never holds it
    #[arg(long, value_name = "PATH", env = "RUNVIL_STORE_KEY_FILE")]
    pub(crate) store_key_file: Option<PathBuf>,
}

/// A value that may hold a secret (a connection string's password): clap keeps it, and
/// nothing prints it, `Debug` included.
#[derive(Clone)]
pub(crate) struct SecretText(zeroize::Zeroizing<String>);

impl SecretText {
    /// The text, for the one parser that reads it.
    pub(crate) fn text(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// clap's parser of a [`SecretText`]: it takes any text, so clap never quotes the value in an
/// error; `store` parses it, with errors of its own that never show it.
fn secret_text(text: &str) -> Result<SecretText, std::convert::Infallible> {
    Ok(SecretText(zeroize::Zeroizing::new(text.to_owned())))
}
