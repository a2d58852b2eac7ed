//! The user's part of an authorization: the [`Authorizer`] `runvil login` lends the Pack.
//!
//! It listens on a random port of 127.0.0.1 for the redirect (RFC 8252's loopback redirect),
//! opens the system browser at the authorization URL the Pack checked (through the
//! `webbrowser` crate, which starts the platform's opener without a shell, and honours
//! `$BROWSER`), or with `--no-browser` prints that URL alone on one line of stderr, and
//! answers the callback's query parameters to the Pack, which checks every one of them. The
//! page the browser shows says what the callback carried, never more than runvil knows then:
//! the code is not exchanged yet, so even a good callback only sends the user back to the
//! terminal, where `login` says whether the authorization was kept.

use std::sync::atomic::{AtomicBool, Ordering};

use runvil_plugin::{AuthorizationRequest, AuthorizeError, Authorizer, BoxFuture};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// The path the browser comes back to.
const CALLBACK_PATH: &str = "/callback";
/// The longest request line read from the browser.
const MAX_REQUEST_LINE: usize = 16 * 1024;

/// The page of a callback that carries a code: the Pack still has to exchange it.
const RECEIVED_PAGE: &str = "runvil: the authorization server answered. Return to the \
                             terminal, which says whether the authorization was kept; you can \
                             close this window.\n";
/// The page of a callback that carries an `error`.
const DENIED_PAGE: &str = "runvil: the authorization was denied or failed. Return to the \
                           terminal to see why; you can close this window.\n";
/// The page of a callback with neither a code nor an error.
const INCOMPLETE_PAGE: &str = "runvil: the authorization is incomplete: the answer carried no \
                               code. Return to the terminal; you can close this window.\n";

/// Brings the user through an authorization and back to a loopback listener.
pub(super) struct Loopback {
    listener: Mutex<TcpListener>,
    redirect_uri: String,
    no_browser: bool,
    /// Whether the Pack asked for the user at all.
    asked: AtomicBool,
}

impl Loopback {
    /// Listens on a random port of 127.0.0.1.
    pub(super) async fn bind(no_browser: bool) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener: Mutex::new(listener),
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
            no_browser,
            asked: AtomicBool::new(false),
        })
    }

    /// Whether the Pack brought the user through an authorization.
    pub(super) fn asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }
}

impl Authorizer for Loopback {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthorizeError>> {
        self.asked.store(true, Ordering::Release);
        Box::pin(async move {
            let namespace = crate::untrusted::shown(&request.namespace);
            if self.no_browser {
                eprintln!("runvil: open this URL to authorize {namespace}:");
                eprintln!("{}", request.url);
            } else if let Err(e) = webbrowser::open(&request.url) {
                eprintln!("runvil: could not open a browser ({e}); open this URL:");
                eprintln!("{}", request.url);
            } else {
                eprintln!("runvil: authorize {namespace} in the browser that opened");
            }
            let listener = self.listener.lock().await;
            loop {
                let (stream, _) = listener.accept().await.map_err(|e| {
                    AuthorizeError::new(format!("the redirect listener failed: {e}"))
                })?;
                if let Some(params) = callback(stream).await {
                    return Ok(params);
                }
            }
        })
    }
}

/// Reads one request; the query parameters if it is the callback, after answering it.
async fn callback(stream: TcpStream) -> Option<Vec<(String, String)>> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut limited = (&mut reader).take(MAX_REQUEST_LINE as u64);
    limited.read_line(&mut line).await.ok()?;
    let target = line.strip_prefix("GET ")?.split(' ').next()?.to_owned();
    let params = callback_params(&target)?;
    let page = page(&params);
    let mut stream = reader.into_inner();
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    Some(params)
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

/// What the browser shows for a callback with `params`.
fn page(params: &[(String, String)]) -> &'static str {
    let has = |name: &str| params.iter().any(|(key, _)| key == name);
    if has("error") {
        DENIED_PAGE
    } else if has("code") {
        RECEIVED_PAGE
    } else {
        INCOMPLETE_PAGE
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

    #[test]
    fn the_page_says_what_the_callback_carried() {
        let params = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            page(&params(&[("code", "c"), ("state", "s")])),
            RECEIVED_PAGE
        );
        let denied = page(&params(&[("error", "access_denied"), ("code", "c")]));
        assert_eq!(denied, DENIED_PAGE);
        assert_eq!(page(&params(&[("state", "s")])), INCOMPLETE_PAGE);
        for page in [RECEIVED_PAGE, DENIED_PAGE, INCOMPLETE_PAGE] {
            assert!(!page.contains("complete;"), "{page}");
            assert!(page.contains("terminal"), "{page}");
        }
    }
}
