//! The command line: what `runvil` accepts, and the help that documents it. Every option
//! belongs to the commands it means something to, so `runvil demo --config x` is an error
//! rather than a silently ignored flag.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = "\
Configuration:
  The config is the first of: --config PATH, $RUNVIL_MCP_CONFIG, ./mcp.json,
  ./.cursor/mcp.json, ./.vscode/mcp.json, ./.mcp.json, $XDG_CONFIG_HOME/runvil/mcp.json
  (~/.config/runvil/mcp.json by default), ~/.cursor/mcp.json. Its mcpServers
  object (or VS Code's servers) names the remote MCP servers; comments and trailing commas
  are accepted, as VS Code writes them. `runvil check` shows which file it read; check,
  tools, call and serve warn (without failing) about what runvil does not honour as other
  clients do: ${VAR} and ${input:...} (write ${env:NAME}), serverUrl or httpUrl for url, a
  key written twice, an mcp-remote command (write its URL as url). An entry with
  \"disabled\": true is left out, and never contacted; `runvil disable` turns a server or a
  tool off in the pins file instead.

Exit codes:
  0    success
  1    anything else (no config, an unreadable config, a refused entry in `check`, an `add`
       of a name the file has, a `login` whose authorization could not be kept, a `trust`
       answered no, whose approval or review could not be kept or whose pins file cannot
       be used, or with a tool that changed again since it was shown or last reviewed, a
       `disable` or `enable` whose pins file cannot be used or whose decision could not
       be kept)
  2    invalid: the command line or the tool call was wrong (unknown namespace or tool,
       one turned off in the config or with `runvil disable`, bad arguments, a server
       still loading when the wait ran out, a server whose entry runvil refused, a held
       tool that is not approved, a `trust` of a tool that is not held, or with neither a
       terminal to ask on nor --yes)
  3    backend: the server answered with an error
  4    transport: the server could not be reached or did not answer in time (a call to it,
       or `tools NAMESPACE` for it), or `login` ended without authorizing it
  `tools` with no namespace prints the listing and exits 4 when a server could not be
  reached, else 2 when one is refused or still loading.
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
  The gateway (`runvil serve --http`) appends its audit trail to audit.jsonl in that same
  folder, or to --audit FILE; `runvil audit` reads it.

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
Examples:
  runvil serve --config ~/.config/runvil/mcp.json    the command an MCP client starts
                                                     (README.md has each client's config)
  runvil serve --http 127.0.0.1:8080                 a gateway at http://127.0.0.1:8080/mcp
                                                     for the clients of this machine";

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

const DISABLE_EXAMPLES: &str = "\
Examples:
  runvil disable docs            docs is not contacted by any command, nor by serve
  runvil disable docs search     the tool search is in no listing; calling it is an error
  runvil enable docs search      on again";

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
        /// Seconds a request about one server waits for it to leave `loading`, and the first
        /// listing of every server for each one's first attempt to end [default: 30 for one
        /// server, 5 for the first listing]
        #[arg(long, value_name = "SECS")]
        wait: Option<u64>,
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        gateway: GatewayArgs,
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
    /// Turn a server off, or one of its tools: a server turned off is not contacted, a tool
    /// turned off is in no listing and calling it is the unknown-tool error. Kept with the
    /// approvals (the pins file, or --store's database), for every command and every `runvil
    /// serve` (which sees a tool's change at its next use, a server's at its next start).
    /// Contacts no server.
    #[command(after_help = DISABLE_EXAMPLES)]
    Disable {
        /// The server's namespace.
        namespace: String,
        /// One of its tools: turn that one off only.
        tool: Option<String>,
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Turn a server, or one of its tools, on again after `runvil disable`.
    #[command(after_help = DISABLE_EXAMPLES)]
    Enable {
        /// The server's namespace.
        namespace: String,
        /// One of its tools: turn that one on only.
        tool: Option<String>,
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the completion script of a shell, for `runvil`'s commands and options, and the
    /// config's namespaces and its servers' tool names (those listed within 3 s, as `runvil
    /// tools` lists them). Run it again when the config changes.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
        #[command(flatten)]
        source: Source,
    },
    /// Print the gateway's audit trail (`runvil serve --http`): a table on a terminal, JSON
    /// lines otherwise, oldest first, the rotated files included.
    #[command(after_help = AUDIT_EXAMPLES)]
    Audit {
        /// The audit file [default: with --store the store's table, else audit.jsonl beside
        /// the pins file]
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Go on printing lines as they are written, across rotations, until interrupted.
        #[arg(long, short = 'f')]
        follow: bool,
        /// Only lines of the last DURATION: 30s, 10m, 2h, 7d.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
        since: Option<Duration>,
        /// Only calls to this namespace.
        #[arg(long = "ns", value_name = "NS")]
        namespace: Option<String>,
        /// Only calls to this tool.
        #[arg(long, value_name = "TOOL")]
        tool: Option<String>,
        /// Only lines of this identity: a token's sub, key:NAME or anonymous.
        #[arg(long, value_name = "ID")]
        identity: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Make an API key for the gateway (`runvil serve --http --api-keys FILE`): prints the key
    /// once (line 1), then the line to add to the key file (line 2), which holds its SHA-256.
    #[command(name = "gateway-key", after_help = GATEWAY_KEY_EXAMPLES)]
    GatewayKey {
        /// The key's name: its identity is key:NAME in the policy and the audit trail.
        name: String,
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

// The HTTP server's flags (`serve --http`): where it listens, its session key, TLS, how it
// stops, and each identity's limits.

/// `runvil serve --http`'s flags of the server itself.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Serve over Streamable HTTP at this address and port (127.0.0.1:8080, localhost:8080,
    /// [::]:443) instead of stdio; the MCP endpoint is /mcp. Without authentication only a
    /// loopback address is allowed.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// The key session ids are sealed under, the same file for every instance of the gateway:
    /// 64 hex characters, 0600; created when missing [default: session.key beside the pins
    /// file]
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) session_key_file: Option<PathBuf>,
    /// Speak TLS with this PEM certificate chain (with --tls-key); without it, plain HTTP for
    /// a proxy in front.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    pub(crate) tls_key: Option<PathBuf>,
    /// Seconds calls in flight get to finish after SIGTERM before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_DRAIN_SECS)]
    pub(crate) drain: u64,
    /// The longest a call may take, its wait for the server included.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_CALL_TIMEOUT_SECS,
        value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) call_timeout: u64,
    /// Requests a second each identity may make, over time.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RATE,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) rate: u32,
    /// Requests each identity may make at once after a pause.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BURST,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) burst: u32,
    /// Requests of one identity in flight at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_REQUESTS,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_requests: u32,
    /// Calls of one identity answering with their progress (an event stream) at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_STREAMS,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_streams: u32,
}

// The gateway's flags and commands (`serve --http`'s authentication, policy and audit).

const AUDIT_EXAMPLES: &str = "\
Examples:
  runvil audit                               every line, as a table on a terminal
  runvil audit --since 2h --ns github        the last two hours' calls to github
  runvil audit --identity key:ci --follow    the ci key's calls, as they happen
  runvil audit --audit /var/lib/runvil/audit.jsonl | jq .   JSON lines when piped
  RUNVIL_STORE=postgres://... runvil audit -f   every instance's lines in the store, as they come";

const GATEWAY_KEY_EXAMPLES: &str = "\
Example:
  runvil gateway-key ci     line 1: the key, for the script; line 2: for the --api-keys file";

/// `runvil serve --http`'s flags of who is let in, what each may use and what is recorded.
#[derive(Debug, Args, Default)]
pub(crate) struct GatewayArgs {
    /// The team's authorization server: tokens it issued for --resource are let in (its
    /// RFC 8414 or OpenID metadata gives its keys).
    #[arg(long, value_name = "URL")]
    pub(crate) auth_issuer: Option<String>,
    /// The gateway's public URL: the audience its tokens must name (RFC 8707).
    #[arg(long, value_name = "URL")]
    pub(crate) resource: Option<String>,
    /// A scope every token must hold (repeatable); a token without it gets 403.
    #[arg(long, value_name = "SCOPE")]
    pub(crate) required_scope: Vec<String>,
    /// The API keys let in: lines of `NAME SHA256HEX` (`runvil gateway-key NAME` makes one).
    #[arg(long, value_name = "FILE")]
    pub(crate) api_keys: Option<PathBuf>,
    /// What each identity may use: JSON rules (README.md's "Policy file"); without it,
    /// everything.
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: Option<PathBuf>,
    /// Where each call and refusal is recorded [default: audit.jsonl beside the pins file]
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
}

impl GatewayArgs {
    /// The first gateway flag given, as written, if any.
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (self.auth_issuer.is_some(), "--auth-issuer"),
            (self.resource.is_some(), "--resource"),
            (!self.required_scope.is_empty(), "--required-scope"),
            (self.api_keys.is_some(), "--api-keys"),
            (self.policy.is_some(), "--policy"),
            (self.audit.is_some(), "--audit"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
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

// The gateway's defaults: flags' values, kept here with the flags so that nothing the command
// line needs is imported from what it configures.

/// The default of `--rate`: requests a second each identity may make, over time.
pub(crate) const DEFAULT_RATE: u32 = 20;
/// The default of `--burst`: requests an identity may make at once after a pause.
pub(crate) const DEFAULT_BURST: u32 = 100;
/// The default of `--max-requests`: requests of one identity in flight at once (a call
/// counts until its answer is sent).
pub(crate) const DEFAULT_MAX_REQUESTS: u32 = 32;
/// The default of `--max-streams`: event streams (calls answered with their progress) one
/// identity holds open at once.
pub(crate) const DEFAULT_MAX_STREAMS: u32 = 16;

/// The default of `--drain`: seconds calls in flight get to finish after SIGTERM.
pub(crate) const DEFAULT_DRAIN_SECS: u64 = 30;
/// The default of `--call-timeout`: the longest a call may take through the gateway, its wait
/// for the server included. The Pack's own bound on a call is the same five minutes, counted
/// from after the wait, so the gateway's comes first and is the one the audit trail calls
/// `timeout`.
pub(crate) const DEFAULT_CALL_TIMEOUT_SECS: u64 = 300;

/// `--since`'s value: a whole number and a unit, `30s`, `10m`, `2h` or `7d`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 30s, 10m, 2h or 7d");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_a_number_and_a_unit() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        for bad in [
            "",
            "10",
            "m",
            "1.5h",
            "10 m",
            "-1d",
            "1w",
            "18446744073709551615d",
        ] {
            assert_eq!(
                parse_duration(bad),
                Err(format!(
                    "{bad:?} is not a duration such as 30s, 10m, 2h or 7d"
                ))
            );
        }
    }
}
