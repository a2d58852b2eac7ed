//! `runvil tools` and `runvil call`, and what every command shares: installing the Plugin
//! through the contract, exit codes, and the one way results reach stdout.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, Authorizer, BackendState, CREDENTIAL_STORE, CredentialStore,
    Pack, Packs, Services, TOKIO_RUNTIME, ToolError,
};
use serde_json::{Value, json};
use tokio::runtime::Handle;

use crate::cli::Answer;
use crate::credentials::FileStore;
use crate::output::Format;
use crate::{discovery, progress, signals};

pub(crate) const EXIT_OK: u8 = 0;
pub(crate) const EXIT_OTHER: u8 = 1;
const EXIT_INVALID: u8 = 2;
const EXIT_BACKEND: u8 = 3;
pub(crate) const EXIT_TRANSPORT: u8 = 4;

/// `runvil tools`: the listing, of every server, one server, or one tool.
pub(crate) async fn tools(namespace: Option<String>, tool: Option<String>, answer: &Answer) -> u8 {
    let mut args = serde_json::Map::new();
    if let Some(namespace) = &namespace {
        args.insert("namespace".into(), json!(namespace));
    }
    if let Some(tool) = tool {
        args.insert("toolName".into(), json!(tool));
    }
    let call = ("mcp/get_dynamic_tools", Value::Object(args));
    respond(answer, call, namespace.as_deref()).await
}

/// `runvil call`: one tool's result text.
pub(crate) async fn call(
    namespace: String,
    tool: String,
    args: Option<String>,
    answer: &Answer,
) -> u8 {
    let arguments = match args.as_deref().map(serde_json::from_str::<Value>) {
        None => json!({}),
        Some(Ok(arguments)) => arguments,
        Some(Err(e)) => {
            eprintln!("runvil: ARGS_JSON is not JSON: {e}");
            return EXIT_INVALID;
        }
    };
    let args = json!({"namespace": namespace, "toolName": tool, "arguments": arguments});
    respond(answer, ("mcp/call_dynamic_tool", args), Some(&namespace)).await
}

/// Builds the Pack of the config, waits for the servers the call needs (`only` one, or all),
/// makes the call and prints its answer. A signal at any point drops the call (its server is
/// told) and exits 128 + the signal; either way the Pack is shut down before the exit.
async fn respond(answer: &Answer, (tool, args): (&str, Value), only: Option<&str>) -> u8 {
    let pack = match discovery::load(&answer.source).and_then(|config| {
        discovery::say_warnings(&config.warnings);
        build_pack(config.servers, Handle::current())
    }) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let format = Format::choose(
        answer.pretty,
        answer.compact,
        std::io::stdout().is_terminal(),
    );
    let wait = Duration::from_secs(answer.wait);
    let code = tokio::select! {
        code = async {
            progress::wait(pack.status(), only, wait).await;
            let code = finish(pack.call(tool, args).await, format);
            match only {
                Some(namespace) if code == EXIT_OK => server_exit_code(&pack, namespace),
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

/// The exit code of a command that answered about one server: its listing is printed even
/// when the server is in error, which the exit code then says, as a call to it would.
fn server_exit_code(pack: &Arc<dyn Pack>, namespace: &str) -> u8 {
    let status = pack.status();
    let state = status.borrow();
    match state.iter().find(|s| s.name == namespace).map(|s| &s.state) {
        Some(BackendState::Failed(_)) => EXIT_TRANSPORT,
        Some(BackendState::Refused(_)) => EXIT_INVALID,
        _ => EXIT_OK,
    }
}

/// What a server that needs a login says under every command but `login`.
const LOGIN_HINT: &str = "run `runvil login {namespace}`";

/// Installs `plugin_mcp` through the contract and builds its Pack on `runtime`, with the
/// credentials file lent (so servers a user logged in to stay authorized) and no way to log
/// in but the hint.
pub(crate) fn build_pack(servers: Value, runtime: Handle) -> Result<Arc<dyn Pack>, String> {
    let store = FileStore::default_place().map(|store| Arc::new(store) as Arc<dyn CredentialStore>);
    build_pack_on(servers, runtime, None, store)
}

/// [`build_pack`] on the current runtime, with an authorizer (`runvil login`) and a store.
pub(crate) fn build_pack_with(
    servers: Value,
    authorizer: Option<Arc<dyn Authorizer>>,
    store: Option<Arc<dyn CredentialStore>>,
) -> Result<Arc<dyn Pack>, String> {
    build_pack_on(servers, Handle::current(), authorizer, store)
}

fn build_pack_on(
    servers: Value,
    runtime: Handle,
    authorizer: Option<Arc<dyn Authorizer>>,
    store: Option<Arc<dyn CredentialStore>>,
) -> Result<Arc<dyn Pack>, String> {
    let mut packs = Packs::new();
    plugin_mcp::install(&mut packs, &json!({ "mcp": servers }));
    let mut services = Services::new();
    services.insert(TOKIO_RUNTIME, runtime);
    services.insert(AUTHORIZATION_HINT, LOGIN_HINT.to_owned());
    if let Some(authorizer) = authorizer {
        services.insert(AUTHORIZER, authorizer);
    }
    if let Some(store) = store {
        services.insert(CREDENTIAL_STORE, store);
    }
    packs.construct("mcp", &services).map_err(|e| e.to_string())
}

fn finish(outcome: Result<String, ToolError>, format: Format) -> u8 {
    match outcome {
        Ok(text) => {
            say(&format.render(&text));
            EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            exit_code(&e)
        }
    }
}

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
