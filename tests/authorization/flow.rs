//! The flow itself: refused before any user is asked, no code sent, no redirect followed, no
//! token or configured header where it must not go, refreshes, the Host's store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::Url;
use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, Authorizer, CREDENTIAL_STORE, CredentialStore, Services,
};
use serde_json::json;

use crate::support;
use crate::support::hostile::{Hostile, Request, Script, Step};
use crate::support::oauth::{Answer, Bend, CODE, TOKEN, World, answer, json_answer};
use crate::{
    Browser, MAX_OAUTH_RESPONSE_BYTES, Memory, SETTLE, Setup, grants, plain, requests_to, setup,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_oauth_is_reached_and_its_token_never_shown() {
    let logs = support::logs::capture("trace");
    let world = World::default();
    let setup = setup(
        world,
        Browser::default(),
        json!({"headers": {"X-Api-Key": "configured-canary-77"}}),
    )
    .await;
    let entry = support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    assert_eq!(entry["tools"], json!(["echo"]));

    // The user was asked once, with PKCE S256, state, the resource and the challenge's scope.
    let asked = setup.browser.asked.lock().expect("asked").clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let url = Url::parse(&asked[0]).expect("url");
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    assert_eq!(param("code_challenge_method").as_deref(), Some("S256"));
    assert_eq!(param("client_id").as_deref(), Some("client-1"));
    assert_eq!(param("scope").as_deref(), Some("mcp:tools"));
    assert_eq!(param("resource"), Some(setup.server.url.clone()));

    // The token request carried the code, the verifier and the resource, and no configured
    // header reached the authorization server.
    let token = requests_to(&setup.server, "/as/token");
    assert_eq!(token.len(), 1);
    assert!(
        token[0].text.contains(&format!("code={CODE}")),
        "{}",
        token[0].text
    );
    assert!(token[0].text.contains("code_verifier="));
    for r in requests_to(&setup.server, "/as")
        .into_iter()
        .chain(requests_to(&setup.server, "/.well-known"))
    {
        assert_eq!(
            r.header("x-api-key"),
            None,
            "{} got the configured header",
            r.target
        );
        assert_eq!(
            r.header("authorization").filter(|a| a.contains(TOKEN)),
            None
        );
    }

    // The server echoes the request's headers, the token among them: scrubbed.
    let echoed = support::call(&setup.pack, "s", "echo", json!({}))
        .await
        .expect("call");
    assert!(echoed.contains("[redacted]"), "{echoed}");
    assert!(!echoed.contains(TOKEN), "{echoed}");
    assert!(!echoed.contains("configured-canary-77"), "{echoed}");

    // Nothing of the flow's secrets is in any log line, at trace, of any crate.
    let verifier = token[0]
        .text
        .split('&')
        .find_map(|pair| pair.strip_prefix("code_verifier="))
        .expect("a verifier")
        .to_owned();
    let state = param("state").expect("a state");
    let text = logs.text();
    assert!(
        text.contains("asking the Host to authorize"),
        "the log was captured"
    );
    for secret in [TOKEN, CODE, &verifier, &state, "configured-canary-77"] {
        assert!(!text.contains(secret), "{secret} is in the log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_a_user_or_the_pack_must_not_be_sent_to_are_refused_before_anyone_is_asked() {
    let cases: [(Bend, &str); 5] = [
        (
            |_, m| m["authorization_endpoint"] = json!("javascript:alert(1)"),
            "the authorization_endpoint is not an https URL",
        ),
        (
            |_, m| m["authorization_endpoint"] = json!("file:///etc/passwd"),
            "the authorization_endpoint is not an https URL",
        ),
        (
            |_, m| m["token_endpoint"] = json!("http://as.example/token"),
            "the token_endpoint is not an https URL",
        ),
        (
            |_, m| m["authorization_endpoint"] = json!("https://user:pw@as.example/a"),
            "the authorization_endpoint carries a user name or password",
        ),
        (
            |_, m| {
                m.as_object_mut()
                    .expect("object")
                    .remove("code_challenge_methods_supported");
            },
            "does not advertise PKCE with S256",
        ),
    ];
    for (metadata, reason) in cases {
        let world = World {
            metadata,
            ..World::default()
        };
        let setup = plain(world).await;
        let entry = support::wait_for(&setup.pack, "s", "error", SETTLE).await;
        let text = entry["reason"].as_str().unwrap_or_default();
        assert!(text.starts_with("authorization failed: "), "{text}");
        assert!(text.contains(reason), "{reason}: {text}");
        assert!(
            !text.contains("as.example") && !text.contains("passwd"),
            "{text}"
        );
        assert!(
            setup.browser.asked.lock().expect("asked").is_empty(),
            "{reason}"
        );
        assert!(requests_to(&setup.server, "/as/token").is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_for_another_resource_or_issuer_is_refused_before_anyone_is_asked() {
    let worlds = [
        (
            World {
                resource: |_, r| r["resource"] = json!("http://evil.example/mcp"),
                ..World::default()
            },
            "names another resource",
        ),
        (
            World {
                metadata: |_, m| m["issuer"] = json!("http://attacker.example"),
                ..World::default()
            },
            "names another issuer than the one it was fetched for",
        ),
    ];
    for (world, reason) in worlds {
        let setup = plain(world).await;
        let entry = support::wait_for(&setup.pack, "s", "error", SETTLE).await;
        let text = entry["reason"].as_str().unwrap_or_default();
        assert!(text.contains(reason), "{text}");
        assert!(setup.browser.asked.lock().expect("asked").is_empty());
        assert!(requests_to(&setup.server, "/as/register").is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_from_another_issuer_never_gets_its_code_exchanged() {
    for iss in ["http://evil.example/as", "http://127.0.0.1/as/"] {
        let browser = Browser {
            iss: Some(iss),
            ..Browser::default()
        };
        let setup = setup(World::default(), browser, json!({})).await;
        let entry = support::wait_for(&setup.pack, "s", "error", SETTLE).await;
        let text = entry["reason"].as_str().unwrap_or_default();
        assert!(text.contains("names another issuer (iss)"), "{text}");
        assert!(!setup.browser.asked.lock().expect("asked").is_empty());
        assert!(requests_to(&setup.server, "/as/token").is_empty(), "{iss}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_that_redirects_or_fails_gives_a_clean_reason() {
    let cases: [(Answer, &str); 2] = [
        (
            |_| {
                answer(
                    "302 Found",
                    &[("location", "http://127.0.0.1:1/elsewhere")],
                    b"",
                )
            },
            "answered with a redirect (HTTP 302), which is not followed",
        ),
        (
            |_| {
                let description = format!("bad\u{1b}]52;c;QUJD\u{7}\u{202e}{}", "x".repeat(10_000));
                json_answer(
                    "400 Bad Request",
                    &json!({"error": "invalid_grant", "error_description": description}),
                )
            },
            "the token request answered HTTP 400 (invalid_grant: bad",
        ),
    ];
    for (token, reason) in cases {
        let world = World {
            token: Some(token),
            ..World::default()
        };
        let setup = plain(world).await;
        let entry = support::wait_for(&setup.pack, "s", "error", SETTLE).await;
        let text = entry["reason"].as_str().unwrap_or_default();
        assert!(text.contains(reason), "{text}");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(text.chars().count() < 600, "{}", text.len());
        assert!(requests_to(&setup.server, "/elsewhere").is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_may_reach_the_answer_cap_and_a_byte_more_is_refused() {
    let at_limit: Bend = |_, m| {
        let size = m.to_string().len() + r#","padding":"""#.len();
        m["padding"] = json!("p".repeat(MAX_OAUTH_RESPONSE_BYTES - size));
        assert_eq!(m.to_string().len(), MAX_OAUTH_RESPONSE_BYTES);
    };
    let past: Bend = |_, m| {
        let size = m.to_string().len() + r#","padding":"""#.len();
        m["padding"] = json!("p".repeat(MAX_OAUTH_RESPONSE_BYTES - size + 1));
    };
    let fine = plain(World {
        metadata: at_limit,
        ..World::default()
    })
    .await;
    support::wait_for(&fine.pack, "s", "ready", SETTLE).await;
    let big = plain(World {
        metadata: past,
        ..World::default()
    })
    .await;
    let entry = support::wait_for(&big.pack, "s", "error", SETTLE).await;
    let text = entry["reason"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!("larger than {MAX_OAUTH_RESPONSE_BYTES} bytes")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorizer_the_server_says_how_this_host_logs_in() {
    let server = Hostile::start(World::default().handler()).await;
    let mut services = Services::new();
    services.insert(
        AUTHORIZATION_HINT,
        "run `runvil login {namespace}`".to_owned(),
    );
    let pack = support::pack_with(json!({"s": {"url": server.url}}), services).expect("pack");
    let entry = support::wait_for(&pack, "s", "error", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server requires authorization: run `runvil login s`"
    );
    assert!(requests_to(&server, "/as").is_empty());
}

/// The user was asked once, and the token endpoint saw that login's code, then one refresh.
fn assert_one_login_then_a_refresh(setup: &Setup) {
    assert_eq!(
        grants(&setup.server),
        ["grant_type=authorization_code", "grant_type=refresh_token"]
    );
    assert_eq!(
        setup.browser.asked.lock().expect("asked").len(),
        1,
        "no second login"
    );
}

/// On one thread, whose clock the test moves past the token's refresh.
#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    // The first token lives 2 s: it is refreshed with a tenth of that left. The server would
    // take it all the while, so only a refresh before sending explains a refresh grant.
    let world = World {
        token: Some(|r: &Request| {
            let body = if r.text.contains("grant_type=refresh_token") {
                assert!(
                    r.text.contains("refresh_token=refresh-canary-1"),
                    "{}",
                    r.text
                );
                json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600})
            } else {
                json!({"access_token": TOKEN, "token_type": "Bearer",
                       "expires_in": 2, "refresh_token": "refresh-canary-1"})
            };
            json_answer("200 OK", &body)
        }),
        ..World::default()
    };
    let setup = plain(world).await;
    let entry = support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    assert_eq!(entry["tools"], json!(["echo"]));
    assert_eq!(grants(&setup.server), ["grant_type=authorization_code"]);
    support::skip_clock(Duration::from_secs(2)).await;
    let echoed = support::call(&setup.pack, "s", "echo", json!({}))
        .await
        .expect("call");
    assert_one_login_then_a_refresh(&setup);
    assert!(
        !echoed.contains("refresh-canary-1") && !echoed.contains(TOKEN),
        "{echoed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_lived_token_is_used_for_most_of_its_life_not_refreshed_on_every_request() {
    // A token of 5 s is refreshed with half a second left: a listing and three calls in its
    // first seconds go with it as it is (before, a minute's margin refreshed it each time).
    let world = World {
        token: Some(|_: &Request| {
            json_answer(
                "200 OK",
                &json!({"access_token": TOKEN, "token_type": "Bearer",
                        "expires_in": 5, "refresh_token": "refresh-canary-5"}),
            )
        }),
        ..World::default()
    };
    let setup = plain(world).await;
    support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    for _ in 0..3 {
        support::call(&setup.pack, "s", "echo", json!({}))
            .await
            .expect("call");
    }
    assert_eq!(grants(&setup.server), ["grant_type=authorization_code"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_is_refreshed_once_before_the_user_is_asked_again() {
    // The server takes only the refreshed token; the first one, long-lived, gets a 401.
    let world = World {
        token: Some(|r: &Request| {
            let body = if r.text.contains("grant_type=refresh_token") {
                json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600})
            } else {
                json!({"access_token": "tok-revoked", "token_type": "Bearer",
                       "expires_in": 3600, "refresh_token": "refresh-canary-2"})
            };
            json_answer("200 OK", &body)
        }),
        ..World::default()
    };
    let setup = plain(world).await;
    support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    assert_one_login_then_a_refresh(&setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_that_fails_asks_the_user_again() {
    // The first token is about to expire and the server refuses it; its refresh fails. The
    // second authorization's token is the one the server takes.
    let world = World {
        token: Some(|r: &Request| {
            static CODES: AtomicUsize = AtomicUsize::new(0);
            if r.text.contains("grant_type=refresh_token") {
                return json_answer("400 Bad Request", &json!({"error": "invalid_grant"}));
            }
            let body = match CODES.fetch_add(1, Ordering::SeqCst) {
                0 => json!({"access_token": "tok-expiring", "token_type": "Bearer",
                            "expires_in": 1, "refresh_token": "refresh-canary-3"}),
                _ => json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600}),
            };
            json_answer("200 OK", &body)
        }),
        ..World::default()
    };
    let setup = plain(world).await;
    support::wait_for(&setup.pack, "s", "ready", SETTLE).await;
    assert_eq!(
        grants(&setup.server),
        [
            "grant_type=authorization_code",
            "grant_type=refresh_token",
            "grant_type=authorization_code"
        ]
    );
    assert_eq!(setup.browser.asked.lock().expect("asked").len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_that_never_comes_ends_at_the_request_deadline() {
    let server = Hostile::start(|r: &Request| {
        if r.target
            .starts_with("/.well-known/oauth-authorization-server")
        {
            return Script {
                steps: vec![Step::Stall],
                keep_alive: true,
            };
        }
        World::default().handler()(r)
    })
    .await;
    let mut services = Services::new();
    let authorizer: Arc<dyn Authorizer> = Arc::new(Browser::default());
    services.insert(AUTHORIZER, authorizer);
    let pack = support::pack_with(json!({"s": {"url": server.url}}), services).expect("pack");
    let started = std::time::Instant::now();
    let entry = support::wait_for(&pack, "s", "error", Duration::from_secs(30)).await;
    assert_eq!(
        entry["reason"],
        "authorization failed: could not reach the authorization server: an authorization \
         request took longer than 10 s"
    );
    assert!(started.elapsed() >= Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_pack_starts_authorized_from_the_host_s_store_for_the_same_server_only() {
    let store = Arc::new(Memory::default());
    let with_store = |authorizer: Option<Arc<dyn Authorizer>>| {
        let mut services = Services::new();
        let store: Arc<dyn CredentialStore> = store.clone();
        services.insert(CREDENTIAL_STORE, store);
        if let Some(authorizer) = authorizer {
            services.insert(AUTHORIZER, authorizer);
        }
        services
    };
    let server = Hostile::start(World::default().handler()).await;
    let browser = Arc::new(Browser::default());
    let first = support::pack_with(
        json!({"s": {"url": server.url}}),
        with_store(Some(browser.clone())),
    )
    .expect("pack");
    support::wait_for(&first, "s", "ready", SETTLE).await;
    drop(first);
    let kept = store.load("s").expect("the authorization was kept");
    assert!(kept.contains(TOKEN), "the store holds the token");

    // No authorizer now: the stored token is enough, and nobody is asked.
    let later =
        support::pack_with(json!({"s": {"url": server.url}}), with_store(None)).expect("pack");
    support::wait_for(&later, "s", "ready", SETTLE).await;
    assert_eq!(browser.asked.lock().expect("asked").len(), 1);
    let echoed = support::call(&later, "s", "echo", json!({}))
        .await
        .expect("call");
    assert!(!echoed.contains(TOKEN), "{echoed}");

    // The same name for another server gets nothing from the store.
    let other = Hostile::start(World::default().handler()).await;
    let elsewhere =
        support::pack_with(json!({"s": {"url": other.url}}), with_store(None)).expect("pack");
    let entry = support::wait_for(&elsewhere, "s", "error", SETTLE).await;
    assert_eq!(
        entry["reason"],
        "the server requires authorization: this Host cannot log in to servers"
    );
    let sent = other.requests();
    assert!(
        sent.iter().all(|r| r.header("authorization").is_none()),
        "the stored token went to another server"
    );
}
