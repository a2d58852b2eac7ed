//! `runvil login NS` and `runvil logout NS`: the user's part of an OAuth authorization, which
//! the Pack leaves to its Host.
//!
//! `login` listens on a random port of 127.0.0.1 for the redirect (RFC 8252's loopback
//! redirect), opens the system browser at the authorization URL the Pack checked (through the
//! `webbrowser` crate, which starts the platform's opener without a shell), or with
//! `--no-browser` prints that URL alone on one line of stderr, and waits up to `--wait`
//! seconds for the user to come back. The Pack does the rest and saves the outcome in the
//! credentials file (`credentials`), where later commands find it. Ctrl-C ends the wait and
//! leaves nothing behind but what was saved. `logout` forgets a server's record.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{AuthorizationRequest, Authorizer, BackendState, BoxFuture, CredentialStore};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use crate::cli::Source;
use crate::credentials::FileStore;
use crate::host::{self, EXIT_OK, EXIT_OTHER};
use crate::progress::{self, End, Waited};
use crate::{discovery, signals};

/// The path the browser comes back to.
const CALLBACK_PATH: &str = "/callback";
/// What the browser shows once it is back.
const DONE_PAGE: &str = "runvil: the authorization is complete; you can close this window.\n";
/// The longest request line read from the browser.
const MAX_REQUEST_LINE: usize = 16 * 1024;

/// Brings the user through an authorization and back to a loopback listener.
struct Loopback {
    listener: Mutex<TcpListener>,
    redirect_uri: String,
    no_browser: bool,
}

impl Authorizer for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, String>> {
        Box::pin(async move {
            if self.no_browser {
                eprintln!("runvil: open this URL to authorize {}:", request.namespace);
                eprintln!("{}", request.url);
            } else if let Err(e) = webbrowser::open(&request.url) {
                eprintln!("runvil: could not open a browser ({e}); open this URL:");
                eprintln!("{}", request.url);
            } else {
                eprintln!(
                    "runvil: authorize {} in the browser that opened",
                    request.namespace
                );
            }
            let listener = self.listener.lock().await;
            loop {
                let (stream, _) = listener
                    .accept()
                    .await
                    .map_err(|e| format!("the redirect listener failed: {e}"))?;
                if let Some(params) = callback(stream).await {
                    return Ok(params);
                }
            }
        })
    }
}

/// Reads one request; the query parameters if it is the callback, after answering it.
async fn callback(stream: tokio::net::TcpStream) -> Option<Vec<(String, String)>> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut limited = (&mut reader).take(MAX_REQUEST_LINE as u64);
    limited.read_line(&mut line).await.ok()?;
    let target = line.strip_prefix("GET ")?.split(' ').next()?.to_owned();
    let url = callback_params(&target)?;
    let mut stream = reader.into_inner();
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{DONE_PAGE}",
        DONE_PAGE.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    Some(url)
}

/// The query parameters of a request target on the callback path.
fn callback_params(target: &str) -> Option<Vec<(String, String)>> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        return None;
    }
    Some(
        url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect(),
    )
}

/// `runvil login NS`.
pub(crate) async fn login(namespace: String, source: &Source, wait: u64, no_browser: bool) -> u8 {
    let Some(store) = FileStore::default_place() else {
        eprintln!("runvil: no place for the credentials file: set HOME or RUNVIL_CREDENTIALS");
        return EXIT_OTHER;
    };
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let Some(entry) = config.servers.get(&namespace).cloned() else {
        eprintln!("runvil: the config has no server {namespace}");
        return EXIT_OTHER;
    };
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("runvil: cannot listen on 127.0.0.1 for the redirect: {e}");
            return EXIT_OTHER;
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let authorizer: Arc<dyn Authorizer> = Arc::new(Loopback {
        listener: Mutex::new(listener),
        redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        no_browser,
    });
    let store: Arc<dyn CredentialStore> = Arc::new(store);
    // The one server only: another server of the config must not ask for a login now.
    let servers = json!({ &namespace: entry });
    let pack = match host::build_pack_with(servers, Some(authorizer), Some(store)) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let wait = Duration::from_secs(wait);
    let code = tokio::select! {
        waited = progress::wait(pack.status(), Some(&namespace), wait) => outcome(&waited, &namespace),
        stop = signals::stopped() => {
            eprintln!("runvil: {}", stop.said());
            stop.exit_code()
        }
    };
    pack.shutdown().await;
    code
}

/// How the login ended, from where the server stood when the wait ended.
fn outcome(waited: &Waited, namespace: &str) -> u8 {
    match waited.servers.first().map(|s| &s.state) {
        Some(BackendState::Ready { .. }) => {
            eprintln!("runvil: {namespace} is authorized");
            EXIT_OK
        }
        Some(BackendState::Failed(reason) | BackendState::Refused(reason)) => {
            eprintln!("runvil: {namespace} is not authorized: {reason}");
            host::EXIT_TRANSPORT
        }
        _ if waited.end == End::Bound => {
            eprintln!("runvil: {namespace} was not authorized in time");
            host::EXIT_TRANSPORT
        }
        _ => {
            eprintln!("runvil: {namespace} was not authorized");
            host::EXIT_TRANSPORT
        }
    }
}

/// `runvil logout NS`.
pub(crate) fn logout(namespace: &str) -> u8 {
    let Some(store) = FileStore::default_place() else {
        eprintln!("runvil: no place for the credentials file: set HOME or RUNVIL_CREDENTIALS");
        return EXIT_OTHER;
    };
    match store.delete(namespace) {
        Ok(()) => {
            eprintln!("runvil: forgot the credentials of {namespace}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            EXIT_OTHER
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_callback_path_gives_parameters() {
        assert_eq!(
            callback_params("/callback?code=c%201&state=s"),
            Some(vec![
                ("code".to_owned(), "c 1".to_owned()),
                ("state".to_owned(), "s".to_owned())
            ])
        );
        assert_eq!(callback_params("/favicon.ico"), None);
        assert_eq!(callback_params("/callback"), Some(vec![]));
    }
}
