//! Who the Pack is to whom, and what a login keeps: a configured client goes to the
//! authorization server it belongs to and to no other, whatever the MCP server names later; a
//! login that can be kept is kept (a DPoP-bound one with its key) and says why it cannot be
//! renewed when it runs out; an OpenID provider is asked for a refresh token as it must be.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use runvil_plugin::{AUTHORIZATION_HINT, CredentialStore, Pack, Services, ToolError};
use serde_json::{Value, json};

use crate::support::hostile::{Hostile, Request, Script, mcp};
use crate::support::oauth::{TOKEN, World, answer, json_answer};
use crate::support::{self, logs};
use crate::{Browser, Memory, SETTLE, grants, pack_for, requests_to};

/// The machine client of these tests, and its secret: neither may reach another issuer.
const CLIENT_ID: &str = "machine-client-7d2e";
const CLIENT_SECRET: &str = "machine-secret-canary-1b9f";

fn machine_client() -> Value {
    json!({"oauth": {
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "grantType": "client_credentials",
    }})
}

/// The test world's server, until `moved` is set: then every token is refused (`401`) and its
/// resource metadata names the authorization server `elsewhere`, or is gone (`None`: the
/// 2025-03-26 fallback, the server's own origin).
async fn moving_server(moved: Arc<AtomicBool>, elsewhere: Option<String>) -> Hostile {
    let world = World::default().handler();
    Hostile::start(move |r: &Request| {
        if !moved.load(Ordering::SeqCst) {
            return world(r);
        }
        let host = r.header("host").unwrap_or_default().to_owned();
        match (r.method.as_str(), r.target.as_str()) {
            ("POST", "/mcp") => {
                let challenge = format!(
                    r#"Bearer resource_metadata="http://{host}/.well-known/oauth-protected-resource/mcp""#
                );
                answer("401 Unauthorized", &[("www-authenticate", &challenge)], b"")
            }
            ("GET", "/.well-known/oauth-protected-resource/mcp") => match &elsewhere {
                Some(issuer) => json_answer(
                    "200 OK",
                    &json!({"resource": format!("http://{host}/mcp"),
                            "authorization_servers": [issuer]}),
                ),
                None => answer("404 Not Found", &[], b""),
            },
            _ => world(r),
        }
    })
    .await
}

/// What reached `server` that must not have: a token request, or any request carrying the
/// client's credentials.
fn credentials_seen_by(server: &Hostile) -> Vec<String> {
    credentials_in(&server.requests())
}

fn credentials_in(requests: &[Request]) -> Vec<String> {
    requests
        .iter()
        .filter(|r| {
            r.target.ends_with("/token")
                || r.header("authorization")
                    .is_some_and(|a| a.starts_with("Basic"))
                || r.text.contains(CLIENT_SECRET)
        })
        .map(|r| r.target.clone())
        .collect()
}

async fn call_error(pack: &Arc<dyn Pack>) -> String {
    match support::call(pack, "s", "echo", json!({})).await {
        Err(ToolError::Transport(text)) => text,
        other => panic!("the call should fail for want of authorization: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_client_is_never_presented_to_an_issuer_the_server_names_later() {
    let logs = logs::capture("trace");
    let other = Hostile::start(World::default().handler()).await;
    let other_issuer = format!("http://127.0.0.1:{}/as", other.port);
    for elsewhere in [Some(other_issuer.clone()), None] {
        let moved = Arc::new(AtomicBool::new(false));
        let server = moving_server(Arc::clone(&moved), elsewhere.clone()).await;
        let pack = pack_for(&server.url, machine_client(), None, None);
        support::wait_for(&pack, "s", "ready", SETTLE).await;
        assert_eq!(grants(&server), ["grant_type=client_credentials"]);
        let before = server.requests().len();

        moved.store(true, Ordering::SeqCst);
        let error = call_error(&pack).await;
        let first = format!("http://127.0.0.1:{}", server.port);
        let (bound, named) = match &elsewhere {
            Some(_) => (first.clone(), format!("http://127.0.0.1:{}", other.port)),
            // The same origin: the issuers themselves tell them apart.
            None => (format!("{first}/as"), first.clone()),
        };
        assert!(
            error.contains(&format!(
                "authorization failed: s: the configured OAuth client (oauth.clientId) belongs \
                 to the authorization server at {bound}, but the server now sends it to the \
                 one at {named}, so its credentials are not presented there"
            )),
            "{error}"
        );
        assert!(!error.contains(CLIENT_SECRET), "{error}");
        let after = &server.requests()[before..];
        assert_eq!(
            credentials_in(after),
            Vec::<String>::new(),
            "the credentials went to the server's own origin"
        );
    }
    assert_eq!(credentials_seen_by(&other), Vec::<String>::new());
    assert!(!logs.text().contains(CLIENT_SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_s_stated_issuer_is_the_only_one_it_is_presented_to() {
    let server = Hostile::start(World::default().handler()).await;
    let mut entry = machine_client();
    entry["oauth"]["issuer"] = json!("https://as.example.com/tenant");
    let pack = pack_for(&server.url, entry, None, None);
    let listed = support::wait_for(&pack, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("belongs to the authorization server at https://as.example.com"),
        "{reason}"
    );
    assert_eq!(credentials_seen_by(&server), Vec::<String>::new());

    // Stated as the server's own, it is used.
    let mut entry = machine_client();
    entry["oauth"]["issuer"] = json!(format!("http://127.0.0.1:{}/as", server.port));
    let pack = pack_for(&server.url, entry, None, None);
    support::wait_for(&pack, "s", "ready", SETTLE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issuer_a_configured_client_was_first_used_with_is_kept_with_the_login() {
    let other = Hostile::start(World::default().handler()).await;
    let moved = Arc::new(AtomicBool::new(false));
    let elsewhere = format!("http://127.0.0.1:{}/as", other.port);
    let server = moving_server(Arc::clone(&moved), Some(elsewhere)).await;
    let store = Arc::new(Memory::default());
    let first = pack_for(&server.url, machine_client(), None, Some(&store));
    support::wait_for(&first, "s", "ready", SETTLE).await;
    first.shutdown().await;
    let kept = store.load("s").expect("kept");
    assert!(
        !kept.contains(CLIENT_SECRET),
        "a configured secret stays in the configuration: {kept}"
    );

    // A later Pack, with the server now naming another issuer: bound by what was kept.
    moved.store(true, Ordering::SeqCst);
    let later = pack_for(&server.url, machine_client(), None, Some(&store));
    let listed = support::wait_for(&later, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("so its credentials are not presented there"),
        "{reason}"
    );
    assert_eq!(credentials_seen_by(&other), Vec::<String>::new());
}

/// The test world with DPoP: its authorization server offers ES256 proofs and issues DPoP
/// tokens, and its server takes the token only with a proof.
async fn dpop_server(revoked: Arc<AtomicBool>) -> Hostile {
    let world = World {
        metadata: |_, m| m["dpop_signing_alg_values_supported"] = json!(["ES256"]),
        token: Some(|r: &Request| {
            assert!(r.header("dpop").is_some(), "a token request with a proof");
            json_answer(
                "200 OK",
                &json!({"access_token": TOKEN, "token_type": "DPoP", "expires_in": 3600}),
            )
        }),
        ..World::default()
    }
    .handler();
    Hostile::start(move |r: &Request| {
        let bound = r.header("authorization") == Some(&format!("DPoP {TOKEN}"))
            && r.header("dpop").is_some();
        if r.target == "/mcp" && bound && !revoked.load(Ordering::SeqCst) {
            return mcp(r);
        }
        world(r)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dpop_bound_login_is_kept_with_its_key_and_used_by_a_later_pack() {
    let logs = logs::capture("trace");
    let server = dpop_server(Arc::new(AtomicBool::new(false))).await;
    let store = Arc::new(Memory::default());
    let browser = Arc::new(Browser::default());
    let first = pack_for(&server.url, json!({}), Some(&browser), Some(&store));
    support::wait_for(&first, "s", "ready", SETTLE).await;
    first.shutdown().await;
    let kept: Value = serde_json::from_str(&store.load("s").expect("kept")).expect("JSON");
    let key = kept["dpop_key"]
        .as_str()
        .expect("the key is kept with the token");

    // No browser now: the kept token and its key are all the later Pack needs.
    let before = server.requests().len();
    let later = pack_for(&server.url, json!({}), None, Some(&store));
    support::wait_for(&later, "s", "ready", SETTLE).await;
    assert_eq!(browser.asked.lock().expect("asked").len(), 1);
    let proofs = server.requests()[before..]
        .iter()
        .filter(|r| r.target == "/mcp" && r.header("dpop").is_some())
        .count();
    assert!(proofs > 0, "the later Pack presented the token with proofs");
    assert!(requests_to(&server, "/as/token").len() == 1, "no new token");
    let text = logs.text();
    assert!(!text.contains(key) && !text.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_without_a_refresh_token_says_why_it_is_needed_again() {
    let revoked = Arc::new(AtomicBool::new(false));
    let server = dpop_server(Arc::clone(&revoked)).await;
    let store = Arc::new(Memory::default());
    let browser = Arc::new(Browser::default());
    let first = pack_for(&server.url, json!({}), Some(&browser), Some(&store));
    support::wait_for(&first, "s", "ready", SETTLE).await;
    first.shutdown().await;

    revoked.store(true, Ordering::SeqCst);
    let mut services = Services::new();
    services.insert(
        AUTHORIZATION_HINT,
        "run `runvil login {namespace}`".to_owned(),
    );
    let store_service: Arc<dyn CredentialStore> = store.clone();
    services.insert(runvil_plugin::CREDENTIAL_STORE, store_service);
    let later = support::pack_with(json!({"s": {"url": server.url}}), services).expect("pack");
    let listed = support::wait_for(&later, "s", "error", SETTLE).await;
    assert_eq!(
        listed["reason"],
        "the server requires authorization: its access token expired or was refused, and its \
         authorization server granted no refresh token to renew it; run `runvil login s`"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openid_provider_is_asked_for_a_refresh_token_with_consent() {
    for openid in [true, false] {
        let world = World {
            metadata: |_, m| m["scopes_supported"] = json!(["mcp:tools", "offline_access"]),
            ..World::default()
        }
        .handler();
        // An OpenID provider publishes only `openid-configuration`.
        let server = Hostile::start(move |r: &Request| -> Script {
            let rfc8414 = "/.well-known/oauth-authorization-server/as";
            let oidc = "/.well-known/openid-configuration/as";
            match r.target.as_str() {
                path if openid && path == rfc8414 => answer("404 Not Found", &[], b""),
                path if openid && path == oidc => {
                    let mut as_8414 = r.clone();
                    as_8414.target = rfc8414.to_owned();
                    world(&as_8414)
                }
                _ => world(r),
            }
        })
        .await;
        let browser = Arc::new(Browser::default());
        let pack = pack_for(&server.url, json!({}), Some(&browser), None);
        support::wait_for(&pack, "s", "ready", SETTLE).await;
        let asked = browser.asked.lock().expect("asked").clone();
        let url = reqwest::Url::parse(&asked[0]).expect("url");
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        assert_eq!(param("scope").as_deref(), Some("mcp:tools offline_access"));
        let prompt = openid.then(|| "consent".to_owned());
        assert_eq!(param("prompt"), prompt, "openid: {openid}");
    }
}
