//! OAuth through `install`: a server behind an authorization server of the hostile test
//! server's making (both on one loopback port, a second one on another when a test needs it),
//! and an authorizer that plays the user's browser. Each test bends one thing the
//! authorization server or the server says, and checks what the Pack does. One test binary,
//! which owns the global log subscriber (every test may assert what is never logged):
//!
//! - `flow`: the flow itself: refused before any user is asked, no code sent, no redirect
//!   followed, no token or configured header where it must not go, refreshes, the store.
//! - `hold`: the store's hold of a server's key, taken by a refresh only when it can help.
//! - `identity`: a client goes only to its authorization server; what a login keeps.
//! - `texts`: no secret leaves through a party's error text, a cut, a log line or a URL.

use shared_mcp_fixture::test_support as support;

mod flow;
mod hold;
mod identity;
mod texts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use runvil_plugin::{
    AUTHORIZER, AuthorizationRequest, AuthorizeError, Authorizer, BoxFuture, CREDENTIAL_STORE,
    CredentialStore, Services, StoreError,
};
use serde_json::{Value, json};
use support::hostile::{Hostile, Request};
use support::oauth::{CODE, World};

const SETTLE: Duration = Duration::from_secs(20);
/// The largest answer the Pack reads from an authorization server (policy).
const MAX_OAUTH_RESPONSE_BYTES: usize = 64 * 1024;

/// The user's browser: approves at once, answering with the code, the request's `state`, and
/// `iss` (the issuer the request was sent to, unless the test says otherwise).
#[derive(Default)]
struct Browser {
    asked: Mutex<Vec<String>>,
    iss: Option<&'static str>,
    /// Denies instead, with a description that quotes the request's `state`.
    deny: bool,
}

impl Authorizer for Browser {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".to_owned()
    }

    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthorizeError>> {
        self.asked.lock().expect("asked").push(request.url.clone());
        Box::pin(async move {
            let url = Url::parse(&request.url).map_err(|e| AuthorizeError::new(e.to_string()))?;
            let param = |name: &str| {
                url.query_pairs()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default()
            };
            let host = url.host_str().unwrap_or_default();
            let issuer = match url.port() {
                Some(port) => format!("http://{host}:{port}/as"),
                None => format!("http://{host}/as"),
            };
            let iss = ("iss".to_owned(), self.iss.map_or(issuer, str::to_owned));
            if self.deny {
                let description = format!("denied for the request of state {}", param("state"));
                return Ok(vec![
                    ("error".to_owned(), "access_denied".to_owned()),
                    ("error_description".to_owned(), description),
                    ("state".to_owned(), param("state")),
                    iss,
                ]);
            }
            Ok(vec![
                ("code".to_owned(), CODE.to_owned()),
                ("state".to_owned(), param("state")),
                iss,
            ])
        })
    }
}

struct Setup {
    server: Hostile,
    browser: Arc<Browser>,
    pack: Arc<dyn runvil_plugin::Pack>,
}

async fn setup(world: World, browser: Browser, entry: Value) -> Setup {
    let server = Hostile::start(world.handler()).await;
    let browser = Arc::new(browser);
    let mut services = Services::new();
    let authorizer: Arc<dyn Authorizer> = browser.clone();
    services.insert(AUTHORIZER, authorizer);
    let mut entry = entry;
    entry["url"] = json!(format!("{}", server.url));
    let pack = support::pack_with(json!({ "s": entry }), services).expect("pack");
    Setup {
        server,
        browser,
        pack,
    }
}

/// A Pack over the one server `s`, `entry` with its url set to `url`, lent `browser` and
/// `store` when given.
fn pack_for(
    url: &str,
    entry: Value,
    browser: Option<&Arc<Browser>>,
    store: Option<&Arc<Memory>>,
) -> Arc<dyn runvil_plugin::Pack> {
    let mut services = Services::new();
    if let Some(browser) = browser {
        let authorizer: Arc<dyn Authorizer> = browser.clone();
        services.insert(AUTHORIZER, authorizer);
    }
    if let Some(store) = store {
        let store: Arc<dyn CredentialStore> = store.clone();
        services.insert(CREDENTIAL_STORE, store);
    }
    let mut entry = entry;
    entry["url"] = json!(url);
    support::pack_with(json!({ "s": entry }), services).expect("pack")
}

/// [`setup`] with the browser that approves at once and a bare entry.
async fn plain(world: World) -> Setup {
    setup(world, Browser::default(), json!({})).await
}

fn requests_to(server: &Hostile, path: &str) -> Vec<Request> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.target.starts_with(path))
        .collect()
}

/// A Host's credential store in memory.
#[derive(Default)]
struct Memory(Mutex<HashMap<String, String>>);

impl CredentialStore for Memory {
    fn load(&self, key: &str) -> Option<String> {
        self.0.lock().expect("store").get(key).cloned()
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.0
            .lock()
            .expect("store")
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.0.lock().expect("store").remove(key);
        Ok(())
    }
}

/// The grant of each token request, in order.
fn grants(server: &Hostile) -> Vec<String> {
    requests_to(server, "/as/token")
        .iter()
        .map(|r| r.text.split('&').next().unwrap_or_default().to_owned())
        .collect()
}
