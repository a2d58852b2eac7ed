//! No secret leaves through what a party says: an authorization server's error text quoting
//! a token, a code, a verifier, the `state` or the client's secret is scrubbed before it is
//! cut, never logged raw, never able to forge a log line; and nothing sent to an
//! authorization server or shown to the user holds a value expanded into the server's URL.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::support::hostile::{Hostile, Request, Script, mcp};
use crate::support::oauth::{CODE, TOKEN, World, answer, json_answer};
use crate::support::{self, canaries, logs};
use crate::{Browser, SETTLE, grants, pack_for, requests_to, setup};

/// A configured client whose id and secret an authorization server quotes back.
const CLIENT_ID: &str = "client-canary-id-4e1a";
const CLIENT_SECRET: &str = "client-secret-canary-2c7f";

fn configured() -> serde_json::Value {
    json!({"oauth": {"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET}})
}

/// A value of `name=` in a form body.
fn form_value(form: &str, name: &str) -> String {
    url::form_urlencoded::parse(form.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// On one thread, whose clock the test moves past the token's refresh.
#[tokio::test]
async fn a_refused_refresh_is_logged_scrubbed_and_on_one_line() {
    let logs = logs::capture("trace");
    let world = World {
        token: Some(|r: &Request| {
            static CODES: AtomicUsize = AtomicUsize::new(0);
            if r.text.contains("grant_type=refresh_token") {
                let description = format!(
                    "refresh token {} of {CLIENT_ID}:{CLIENT_SECRET} is revoked\n\
                     FORGED-LINE  INFO plugin_mcp: s is authorized",
                    form_value(&r.text, "refresh_token")
                );
                return json_answer(
                    "400 Bad Request",
                    &json!({"error": "invalid_grant", "error_description": description}),
                );
            }
            let lifetime = match CODES.fetch_add(1, Ordering::SeqCst) {
                0 => 1,
                _ => 3600,
            };
            json_answer(
                "200 OK",
                &json!({"access_token": TOKEN, "token_type": "Bearer",
                        "expires_in": lifetime, "refresh_token": "refresh-canary-4a8d"}),
            )
        }),
        ..World::default()
    };
    let setup = setup(world, Browser::default(), configured()).await;
    support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    support::skip_clock(Duration::from_secs(1)).await;
    // The token is due for its refresh: the refresh is refused before the call goes out.
    support::call(&setup.pack, "s", "echo", json!({}))
        .await
        .expect("the call goes with the token it has");
    assert_eq!(
        grants(&setup.server)[..2],
        ["grant_type=authorization_code", "grant_type=refresh_token"]
    );
    let text = logs.text();
    let refused = text
        .lines()
        .find(|line| line.contains("the refresh failed"))
        .expect("the refusal is logged at debug");
    assert!(refused.contains("invalid_grant"), "{refused}");
    for secret in ["refresh-canary-4a8d", CLIENT_ID, CLIENT_SECRET, TOKEN] {
        assert!(!text.contains(secret), "{secret} is in the log: {refused}");
    }
    assert!(
        !text.lines().any(|line| line.starts_with("FORGED-LINE")),
        "a party's text forged a log line"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_quoted_across_the_quote_s_cut_is_scrubbed_before_it_is_cut() {
    // 47 characters, quoted so that only its last one falls past the 200-character quote.
    const SECRET: &str = "cut-canary-0123456789-abcdefghij-klmnopqrstuvwx";
    assert_eq!(SECRET.len(), 47);
    let world = World {
        token: Some(|_: &Request| {
            let quoted_before = "invalid_client: ".len() + 138;
            assert_eq!(quoted_before + SECRET.len() - 1, 200);
            let description = format!("{}{SECRET}", "p".repeat(138));
            json_answer(
                "401 Unauthorized",
                &json!({"error": "invalid_client", "error_description": description}),
            )
        }),
        ..World::default()
    };
    let entry = json!({"oauth": {"clientId": CLIENT_ID, "clientSecret": SECRET}});
    let setup = setup(world, Browser::default(), entry).await;
    let listed = support::wait_for(&setup.pack, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(
            "authorization failed: the token request answered HTTP 401 (invalid_client: ppp"
        ),
        "{reason}"
    );
    assert!(reason.contains("[redacted]"), "{reason}");
    assert!(!reason.contains("cut-canary"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_the_verifier_and_the_state_are_secrets_from_the_moment_they_exist() {
    let logs = logs::capture("trace");
    // The token endpoint quotes the code and the verifier it was sent.
    let world = World {
        token: Some(|r: &Request| {
            let description = format!(
                "code {} with verifier {} was already used",
                form_value(&r.text, "code"),
                form_value(&r.text, "code_verifier")
            );
            json_answer(
                "400 Bad Request",
                &json!({"error": "invalid_grant", "error_description": description}),
            )
        }),
        ..World::default()
    };
    let quoted = setup(world, Browser::default(), json!({})).await;
    let listed = support::wait_for(&quoted.pack, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default().to_owned();
    let form = requests_to(&quoted.server, "/as/token")[0].text.clone();
    let verifier = form_value(&form, "code_verifier");
    assert!(
        reason.contains("invalid_grant: code [redacted]"),
        "{reason}"
    );
    assert!(
        !reason.contains(CODE) && !reason.contains(&verifier),
        "{reason}"
    );

    // The user's browser comes back denied, the description quoting the request's state.
    let browser = Browser {
        deny: true,
        ..Browser::default()
    };
    let denied = setup(World::default(), browser, json!({})).await;
    let listed = support::wait_for(&denied.pack, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default().to_owned();
    let asked = denied.browser.asked.lock().expect("asked")[0].clone();
    let state = reqwest::Url::parse(&asked)
        .expect("url")
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .expect("a state");
    assert!(
        reason.contains("(access_denied: denied for the request of state [redacted])"),
        "{reason}"
    );
    let text = logs.text();
    for secret in [CODE, &verifier, &state] {
        assert!(
            !reason.contains(secret) && !text.contains(secret),
            "{secret}"
        );
    }
}

/// The test world's server at `/s/<canary>/mcp` as well as `/mcp`, with no resource metadata
/// (the 2025-03-26 fallback) unless `metadata`, whose resource is then the whole URL.
async fn server_at_a_secret_path(metadata: bool) -> Hostile {
    let world = World::default().handler();
    Hostile::start(move |r: &Request| -> Script {
        let secret_path = format!("/s/{}/mcp", canaries::CANARY);
        let host = r.header("host").unwrap_or_default().to_owned();
        if metadata && r.target == format!("/.well-known/oauth-protected-resource{secret_path}") {
            return json_answer(
                "200 OK",
                &json!({"resource": format!("http://{host}{secret_path}"),
                        "authorization_servers": [format!("http://{host}/as")]}),
            );
        }
        if r.target == secret_path && r.method == "POST" {
            if r.header("authorization") == Some(&format!("Bearer {TOKEN}")) {
                return mcp(r);
            }
            return answer(
                "401 Unauthorized",
                &[("www-authenticate", r#"Bearer scope="mcp:tools""#)],
                b"",
            );
        }
        world(r)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_derived_from_an_expanded_part_of_the_url_is_sent_or_shown() {
    let logs = logs::capture("trace");
    for metadata in [false, true] {
        let server = server_at_a_secret_path(metadata).await;
        let url = format!(
            "http://127.0.0.1:{}/s/${{env:PLUGIN_MCP_TEST_CANARY}}/mcp",
            server.port
        );
        let browser = Arc::new(Browser::default());
        let pack = pack_for(&url, json!({}), Some(&browser), None);
        let listed = support::wait_for(&pack, "s", "error", SETTLE).await;
        let reason = listed["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(
                "authorization failed: the server's url holds a value of ${env:...} or \
                 ${userHome} in a part an authorization server would be sent or the user shown"
            ),
            "{reason}"
        );
        canaries::assert_clean("the reason", reason);
        assert!(browser.asked.lock().expect("asked").is_empty());
        let sent: Vec<String> = server
            .requests()
            .into_iter()
            .map(|r| r.target)
            .filter(|t| {
                ["/register", "/token", "/authorize"]
                    .iter()
                    .any(|p| t.contains(p))
            })
            .collect();
        assert_eq!(sent, Vec::<String>::new(), "metadata: {metadata}");
    }
    canaries::assert_clean("the log", &logs.text());

    // In the query, which no authorization server is sent, a value is no obstacle.
    let server = Hostile::start(World::default().handler()).await;
    let url = format!("{}?key=${{env:PLUGIN_MCP_TEST_CANARY}}", server.url);
    let browser = Arc::new(Browser::default());
    let pack = pack_for(&url, json!({}), Some(&browser), None);
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    let asked = browser.asked.lock().expect("asked").clone();
    canaries::assert_clean("the authorization URL", &asked[0]);
}
