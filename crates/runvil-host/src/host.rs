//! `runvil tools` and `runvil call`, and what every command shares: installing the Plugin
//! through the contract with what each command lends it (the credentials file or `--store`'s
//! database, the pins file with `runvil trust`'s hint, an authorizer), exit codes, and the one
//! way results reach stdout.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, Authorizer, BackendState, CREDENTIAL_STORE, Config,
    CredentialStore, PIN_STORE, Pack, Packs, PinStore, Services, TOKIO_RUNTIME, TRUST_HINT,
    ToolError,
};
use serde_json::{Map, Value, json};
use tokio::runtime::Handle;

use crate::cli::{Answer, DEFAULT_WAIT_SECS};
use crate::credentials::FileStore;
use crate::output::Format;
use crate::pins::{self, PinFile};
use crate::policy::MAX_SUGGESTION_EDITS;
use crate::progress::Until;
use crate::store::{Credentials, Store};
use crate::untrusted::shown;
use crate::{discovery, progress, signals};

pub(crate) const EXIT_OK: u8 = 0;
pub(crate) const EXIT_OTHER: u8 = 1;
pub(crate) const EXIT_INVALID: u8 = 2;
const EXIT_BACKEND: u8 = 3;
pub(crate) const EXIT_TRANSPORT: u8 = 4;

/// `runvil tools`: the listing, of every server, one server, or one tool.
pub(crate) async fn tools(namespace: Option<String>, tool: Option<String>, answer: &Answer) -> u8 {
    let mut args = Map::new();
    if let Some(namespace) = &namespace {
        args.insert("namespace".into(), json!(namespace));
    }
    if let Some(tool) = tool {
        args.insert("toolName".into(), json!(tool));
    }
    let call = ("mcp/get_dynamic_tools", Value::Object(args));
    respond(answer, call, namespace.as_deref(), None).await
}

/// What is said on stderr of a server that holds tools until the user approves them, where
/// a person looks: after `runvil tools`, and by `serve` whenever the number changes.
pub(crate) fn held_line(namespace: &str, held: usize) -> String {
    let name = shown(namespace);
    format!("{name}: {held} held (run `runvil trust {name}`)")
}

/// Says [`held_line`] of each server of `pack` that holds tools now.
fn say_held(pack: &Arc<dyn Pack>) {
    let holding: Vec<(String, usize)> = (pack.status().borrow().iter())
        .filter(|server| server.held > 0)
        .map(|server| (server.name.clone(), server.held))
        .collect();
    for (namespace, held) in holding {
        eprintln!("runvil: {}", held_line(&namespace, held));
    }
}

/// `runvil call`: one tool's result text.
pub(crate) async fn call(
    namespace: String,
    tool: String,
    args: Option<String>,
    answer: &Answer,
) -> u8 {
    let text = match args.as_deref() {
        Some(STDIN_ARGUMENT) => match read_stdin() {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("runvil: cannot read ARGS_JSON from stdin: {e}");
                return EXIT_INVALID;
            }
        },
        other => other.map(str::to_owned),
    };
    let arguments = match text.as_deref().map(serde_json::from_str::<Value>) {
        None => json!({}),
        Some(Ok(arguments)) => arguments,
        Some(Err(e)) => {
            eprintln!("runvil: ARGS_JSON is not JSON: {e}");
            return EXIT_INVALID;
        }
    };
    let label = format!("{} {}", shown(&namespace), shown(&tool));
    let args = json!({"namespace": namespace, "toolName": tool, "arguments": arguments});
    let call = ("mcp/call_dynamic_tool", args);
    respond(answer, call, Some(&namespace), Some(&label)).await
}

/// The `ARGS_JSON` that means "read the arguments from stdin", as for most commands that take
/// a file.
const STDIN_ARGUMENT: &str = "-";

/// The most read from stdin as ARGS_JSON: far more than any tool's arguments, and a bound on
/// a stdin that never ends (`runvil call ns t - < /dev/zero`).
const MAX_STDIN_BYTES: u64 = 16 * 1024 * 1024;

/// Reads ARGS_JSON from stdin, up to [`MAX_STDIN_BYTES`].
fn read_stdin() -> Result<String, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        return Err(format!(
            "it is larger than {} MiB",
            MAX_STDIN_BYTES / 1024 / 1024
        ));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8".to_owned())
}

/// Builds the Pack of the config (over the one server `only` names, so that no other is
/// contacted), waits for the servers the call needs, makes the call and prints its answer;
/// a call with `progress_of` (its label) shows the progress its server reports.
/// A signal at any point drops the call (its server is told) and exits 128 + the signal;
/// either way the Pack is shut down before the exit.
///
/// `--wait` given, a command about one server waits for it to be ready, through the retries
/// of a server that is down; without it, up to [`DEFAULT_WAIT_SECS`] for its first attempt to end,
/// so a server that is down is said at once. The listing of every server waits until none is
/// loading.
async fn respond(
    answer: &Answer,
    (tool, args): (&str, Value),
    only: Option<&str>,
    progress_of: Option<&str>,
) -> u8 {
    let config = match discovery::load(&answer.source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    discovery::say_warnings(&config.warnings);
    let servers = match only {
        Some(namespace) => match self::only(config, namespace) {
            Ok(servers) => servers,
            Err(unknown) => {
                eprintln!("runvil: {unknown}");
                return EXIT_INVALID;
            }
        },
        None => config.servers,
    };
    let store = match Store::choose(&answer.store).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let pack = match build_pack_with(servers, Lent::kept(&store)) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let _following = store.follow(&pack);
    let format = Format::choose(
        answer.pretty,
        answer.compact,
        std::io::stdout().is_terminal(),
    );
    let until = match (only, answer.wait) {
        (Some(_), Some(_)) => Until::Ready,
        _ => Until::Settled,
    };
    let wait = Duration::from_secs(answer.wait.unwrap_or(DEFAULT_WAIT_SECS));
    let code = tokio::select! {
        code = async {
            progress::wait(pack.status(), only, wait, until).await;
            let outcome = match progress_of {
                Some(label) => progress::call::call(&pack, tool, args, label).await,
                None => pack.call(tool, args).await,
            };
            let code = finish(outcome, format);
            if progress_of.is_none() {
                // `tools`: the listing names held tools only under one server's `rejected`.
                say_held(&pack);
            }
            match code {
                EXIT_OK => servers_exit_code(&pack, only),
                _ => code,
            }
        } => code,
        stop = signals::stopped() => {
            eprintln!("runvil: {}", stop.said());
            stop.exit_code()
        }
    };
    pack.shutdown().await;
    code
}

/// The exit code of a command that answered about the servers it asked for (`only` the one
/// of that name, or every one): the listing is printed even when a server is in error or still
/// loading, which the exit code then says, as a call to it would. A server that could not be
/// reached says the most ([`EXIT_TRANSPORT`]); a refused one, or one still loading,
/// [`EXIT_INVALID`].
fn servers_exit_code(pack: &Arc<dyn Pack>, only: Option<&str>) -> u8 {
    let status = pack.status();
    let all = status.borrow();
    let asked = || {
        all.iter()
            .filter(|s| only.is_none_or(|name| s.name == name))
    };
    if asked().any(|s| matches!(s.state, BackendState::Failed(_))) {
        EXIT_TRANSPORT
    } else if asked().any(|s| matches!(s.state, BackendState::Refused(_) | BackendState::Loading)) {
        EXIT_INVALID
    } else {
        EXIT_OK
    }
}

/// The config's servers narrowed to the one named `namespace`, so that a command about one
/// server contacts no other; or, when the config has no such server, the error that says so
/// with the nearest namespace it has (`did you mean docs?`) and then all of them; an entry
/// turned off (`"disabled": true`) is said to be. A servers value that is not an object is left whole, for the
/// Pack to refuse with its own reason.
pub(crate) fn only(config: discovery::Config, namespace: &str) -> Result<Value, String> {
    if config.disabled.iter().any(|name| name == namespace) {
        return Err(format!(
            "{} is turned off in {} (\"disabled\": true); remove that key to use it",
            shown(namespace),
            config.path.display()
        ));
    }
    let unknown = format!("unknown namespace \"{}\"", shown(namespace));
    match config.servers {
        Value::Object(mut all) => match all.remove(namespace) {
            Some(entry) => Ok(json!({ namespace: entry })),
            None if all.is_empty() => Err(format!("{unknown}; the config has no servers")),
            None => {
                let names: Vec<String> = all.keys().map(|name| shown(name)).collect();
                let nearest = runvil_plugin::nearest(
                    namespace,
                    all.keys().map(String::as_str),
                    MAX_SUGGESTION_EDITS,
                );
                let did_you_mean = match nearest {
                    Some(name) => format!("did you mean {}? ", shown(name)),
                    None => String::new(),
                };
                Err(format!(
                    "{unknown}; {did_you_mean}the namespaces are: {}",
                    names.join(", ")
                ))
            }
        },
        Value::Null => Err(format!("{unknown}; the config has no servers")),
        other => Ok(other),
    }
}

/// What a server that needs a login says under every command but `login`.
const LOGIN_HINT: &str = "run `runvil login {namespace}`";

/// What a held tool's reason says the user can do, under every command that lends the pins
/// file (`{namespace}` is the Pack's to fill in).
const TRUST_HINT_TEXT: &str = "the user can review it with `runvil trust {namespace}`";

/// What a command lends the Pack besides its runtime.
#[derive(Default)]
pub(crate) struct Lent {
    /// How the user logs in (`runvil login`); without it, the Pack says [`LOGIN_HINT`].
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// The credentials file, so servers a user logged in to stay authorized.
    pub(crate) credentials: Option<Arc<dyn CredentialStore>>,
    /// The pins file, so a tool that changed since the user trusted it is held; lent with
    /// [`TRUST_HINT_TEXT`].
    pub(crate) pins: Option<Arc<dyn PinStore>>,
}

impl Lent {
    /// The credentials file at its usual place, when one is known.
    pub(crate) fn credentials() -> Self {
        let store =
            FileStore::default_place().map(|store| Arc::new(store) as Arc<dyn CredentialStore>);
        Self {
            credentials: store,
            ..Self::default()
        }
    }

    /// What `tools`, `call` and `serve` lend: the credentials file and the pins file. Without
    /// a place for the pins file the Pack holds nothing back, which is said, since the user
    /// would otherwise believe a changed tool is held.
    ///
    /// A pins file that cannot be used is said too, once, before any server is listed: the
    /// Pack then holds every tool with that reason, and under `serve` a person reads only the
    /// client's log of runvil's stderr.
    fn pinned() -> Self {
        let pins = match PinFile::default_place() {
            Some(pins) => {
                if let Err(e) = pins.check() {
                    eprintln!("runvil: {e}; until then no tool is trusted");
                }
                Some(Arc::new(pins) as Arc<dyn PinStore>)
            }
            None => {
                eprintln!(
                    "runvil: {}; no tool is held when it changes",
                    pins::NO_PLACE
                );
                None
            }
        };
        Self {
            pins,
            ..Self::credentials()
        }
    }
}

impl Lent {
    /// What `tools`, `call` and `serve` lend, from where `store` keeps it: the files
    /// ([`Lent::pinned`]), or the database's logins and records of trusted tools.
    pub(crate) fn kept(store: &Store) -> Self {
        match store.database_pins() {
            None => Self::pinned(),
            Some(pins) => Self {
                credentials: store.credentials().as_ref().map(Credentials::lent),
                pins: Some(pins),
                authorizer: None,
            },
        }
    }
}

/// Installs `plugin_mcp` through the contract and builds its Pack on `runtime`, with the
/// credentials file lent (so servers a user logged in to stay authorized) and no way to log
/// in but the hint, and no pins: for `check`, whose Pack never runs, and `demo`, which writes
/// no file.
pub(crate) fn build_pack(servers: Value, runtime: Handle) -> Result<Arc<dyn Pack>, String> {
    build_pack_on(servers, runtime, Lent::credentials())
}

/// [`build_pack`] on the current runtime, with what `lent` holds (`tools`, `call`, `serve`,
/// `login`, `trust`).
pub(crate) fn build_pack_with(servers: Value, lent: Lent) -> Result<Arc<dyn Pack>, String> {
    build_pack_on(servers, Handle::current(), lent)
}

/// The Pack over `servers` on `runtime`, with what `lent` holds (`disable` and `enable`, on a
/// runtime that never runs its tasks).
pub(crate) fn build_pack_on(
    servers: Value,
    runtime: Handle,
    lent: Lent,
) -> Result<Arc<dyn Pack>, String> {
    let mut packs = Packs::new();
    // The Host's copy, moved in rather than copied, is wiped once the Plugin has its own.
    let config = Config::new(Value::Object(Map::from_iter([("mcp".to_owned(), servers)])));
    plugin_mcp::install(&mut packs, config.value());
    drop(config);
    let mut services = Services::new();
    services.insert(TOKIO_RUNTIME, runtime);
    services.insert(AUTHORIZATION_HINT, LOGIN_HINT.to_owned());
    if let Some(authorizer) = lent.authorizer {
        services.insert(AUTHORIZER, authorizer);
    }
    if let Some(store) = lent.credentials {
        services.insert(CREDENTIAL_STORE, store);
    }
    if let Some(pins) = lent.pins {
        services.insert(PIN_STORE, pins);
        services.insert(TRUST_HINT, TRUST_HINT_TEXT.to_owned());
    }
    packs
        .construct("mcp", &services)
        .map_err(|e| format!("the mcp configuration is unusable: {}", shown(&e.reason)))
}

fn finish(outcome: Result<String, ToolError>, format: Format) -> u8 {
    match outcome {
        Ok(text) => {
            say(&format.render(&text));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: {}", said(&e));
            exit_code(&e)
        }
    }
}

/// A failed call as runvil says it: in the Pack's own words (written for a model, and plain
/// to a person: `unknown namespace "x"; the namespaces are: ...`, `docs did not answer within
/// 300 s`), and a server's own error said to be one, since its text may be a bare `the disk is
/// full`.
///
/// An invalid call's text is the Pack's own words, whose line breaks are its own (a schema's
/// violations, one per line: the Pack writes each violation on one line, whatever a server's
/// schema says), so it is printed as lines, each indented under runvil's; every other text
/// may quote a server and stays on runvil's one line, its line breaks escaped.
pub(crate) fn said(e: &ToolError) -> String {
    match e {
        ToolError::Backend(message) => {
            format!("the server answered with an error: {}", shown(message))
        }
        ToolError::Invalid(message) => (message.split('\n').map(shown))
            .collect::<Vec<String>>()
            .join(&format!("\n{CONTINUED}")),
        _ => shown(e.message()),
    }
}

/// What starts each line of a message of runvil's after its first.
const CONTINUED: &str = "  ";

/// The exit code of a failed call.
pub(crate) fn exit_code(e: &ToolError) -> u8 {
    match e {
        ToolError::Invalid(_) => EXIT_INVALID,
        ToolError::Backend(_) => EXIT_BACKEND,
        ToolError::Transport(_) => EXIT_TRANSPORT,
        _ => EXIT_OTHER,
    }
}

/// Writes a line of results to stdout; a closed stdout (a pipe into `head`) is not an error.
pub(crate) fn say(text: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}
