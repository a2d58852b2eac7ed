//! The gatekeeper against a real identity provider over HTTP (the fixture's), with good and
//! hostile tokens, and API keys.

use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::idp::{ES256_KID, IdentityProvider, Metadata, RS256_KID, now};

use super::*;
use crate::gateway::api_keys::new_key;
use crate::gateway::issuer::{JWKS_MAX_AGE, JWKS_REFETCH_INTERVAL, JWKS_RETRY_INTERVAL};

const RESOURCE: &str = "https://gw.example/mcp";
const METADATA: &str = "https://gw.example/.well-known/oauth-protected-resource/mcp";

fn settings(idp: &IdentityProvider) -> GatekeeperSettings {
    GatekeeperSettings {
        issuer: Some(idp.issuer().to_owned()),
        resource: Some(RESOURCE.to_owned()),
        required_scopes: Vec::new(),
        api_keys: None,
    }
}

fn gatekeeper(idp: &IdentityProvider) -> Gatekeeper {
    Gatekeeper::from_settings(settings(idp)).expect("a gatekeeper")
}

fn bearer(token: &str) -> Vec<u8> {
    format!("Bearer {token}").into_bytes()
}

async fn admit(gatekeeper: &Gatekeeper, token: &str) -> Result<Identity, Refusal> {
    gatekeeper.admit(Some(&bearer(token))).await
}

/// A refusal of a bad token: 401, the challenge with `invalid_token`, and `reason`; neither
/// the reason nor the challenge holds any part of the token.
fn assert_invalid(result: Result<Identity, Refusal>, token: &str, reason: &str) {
    let refusal = result.expect_err(reason);
    assert_eq!(
        refusal,
        Refusal {
            status: 401,
            www_authenticate: format!(
                "Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\""
            ),
            reason: reason.to_owned(),
        }
    );
    assert_clean(&refusal, token);
}

fn assert_clean(refusal: &Refusal, token: &str) {
    let shown = format!(
        "{refusal:?} {} {}",
        refusal.reason, refusal.www_authenticate
    );
    for part in token.split('.').filter(|p| p.len() >= 8) {
        assert!(!shown.contains(part), "{shown} shows the token");
    }
}

#[tokio::test]
async fn a_token_of_the_issuer_for_the_resource_is_let_in_and_remembered() {
    let idp = IdentityProvider::start().await;
    let gatekeeper = gatekeeper(&idp);
    let mut claims = idp.claims(RESOURCE, "alice@example.com");
    claims["groups"] = json!(["eng"]);
    let es = idp.token(&claims);
    match admit(&gatekeeper, &es).await.expect("admitted") {
        Identity::Subject { sub, claims } => {
            assert_eq!(sub, "alice@example.com");
            assert_eq!(claims["groups"], json!(["eng"]));
        }
        other => panic!("{other:?}"),
    }
    // RS256, `aud` as an array holding the resource, no `typ`.
    let mut claims = idp.claims(RESOURCE, "bob");
    claims["aud"] = json!(["https://other.example", RESOURCE]);
    let rs = idp.sign(&json!({"alg": "RS256", "kid": RS256_KID}), &claims);
    assert_eq!(
        admit(&gatekeeper, &rs).await.expect("admitted").label(),
        "bob"
    );
    assert_eq!(idp.jwks_fetches(), 1, "the keys are fetched once");

    // A token seen is remembered until it expires: with its key withdrawn and the key set
    // fetched again, it is still let in, and a new token of the same key is not.
    idp.withdraw(ES256_KID);
    gatekeeper
        .tokens
        .as_ref()
        .expect("tokens")
        .issuer()
        .age(JWKS_MAX_AGE)
        .await;
    assert_eq!(
        admit(&gatekeeper, &es).await.expect("remembered").label(),
        "alice@example.com"
    );
    let fresh = idp.token(&idp.claims(RESOURCE, "alice@example.com"));
    assert_invalid(
        admit(&gatekeeper, &fresh).await,
        &fresh,
        "the token's key (kid) is not among the issuer's keys",
    );
    assert_eq!(idp.jwks_fetches(), 2, "a set past its age is fetched again");
}

#[tokio::test]
async fn hostile_tokens_are_refused_with_their_reason_and_never_shown() {
    let idp = IdentityProvider::start().await;
    let gatekeeper = gatekeeper(&idp);
    let good = idp.claims(RESOURCE, "mallory");
    let with = |changes: Value| {
        let mut claims = good.clone();
        for (k, v) in changes.as_object().expect("changes") {
            if v.is_null() {
                claims.as_object_mut().expect("claims").remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    };
    let t = now();
    let es = json!({"alg": "ES256", "kid": ES256_KID});
    let cases: Vec<(String, &str)> = vec![
        (
            idp.token(&with(json!({"exp": t - 65}))),
            "the token has expired (exp)",
        ),
        (
            idp.token(&with(json!({"nbf": t + 65}))),
            "the token is not valid yet (nbf)",
        ),
        (
            idp.token(&with(json!({"iss": format!("{}/other", idp.issuer())}))),
            "the token is from another issuer (iss)",
        ),
        (
            idp.token(&with(json!({"aud": "https://gw.example/mcp/other"}))),
            "the token is for another resource (aud)",
        ),
        (
            idp.token(&with(json!({"aud": "https://gw.example/"}))),
            "the token is for another resource (aud)",
        ),
        (
            idp.token(&with(json!({"aud": null}))),
            "the token has no aud",
        ),
        (
            idp.token(&with(json!({"exp": null}))),
            "the token has no exp",
        ),
        (
            idp.token(&with(json!({"sub": null}))),
            "the token has no sub",
        ),
        (
            idp.token(&with(json!({"sub": "key:ci"}))),
            "the token's sub reads as the anonymous identity or an API key's",
        ),
        (
            idp.token(&with(json!({"sub": "anonymous"}))),
            "the token's sub reads as the anonymous identity or an API key's",
        ),
        (
            idp.sign(&json!({"alg": "none"}), &good),
            "the token is not signed with an accepted asymmetric algorithm (RS256, RS384, RS512, \
             PS256, PS384, PS512, ES256, ES384 or EdDSA)",
        ),
        (
            idp.sign(&json!({"alg": "HS256", "kid": ES256_KID}), &good),
            "the token is not signed with an accepted asymmetric algorithm (RS256, RS384, RS512, \
             PS256, PS384, PS512, ES256, ES384 or EdDSA)",
        ),
        (
            idp.sign(&json!({"alg": "RS256", "kid": ES256_KID}), &good),
            "the token's algorithm is not one its key allows",
        ),
        (
            idp.sign(&json!({"alg": "ES256", "kid": RS256_KID}), &good),
            "the token's algorithm is not one its key allows",
        ),
        (
            idp.sign(
                &json!({"alg": "ES256", "kid": ES256_KID, "typ": "logout+jwt"}),
                &good,
            ),
            "the token's type (typ) is not an access token's (at+jwt)",
        ),
        (
            {
                // Another key's signature under the issuer's kid.
                idp.new_key("stray", false);
                let stray = idp.sign(&json!({"alg": "ES256", "kid": "stray"}), &good);
                let signature = stray.rsplit('.').next().expect("signature").to_owned();
                let genuine = idp.sign(&es, &good);
                let (message, _) = genuine.rsplit_once('.').expect("message");
                format!("{message}.{signature}")
            },
            "the token's signature does not verify",
        ),
        (
            "e30.e30.e30".to_owned(),
            "the token is not signed with an accepted asymmetric \
             algorithm (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 or EdDSA)",
        ),
        ("not-a-jwt".to_owned(), "the token is not a JWT"),
        (
            "x".repeat(16 * 1024 + 1),
            "the token is longer than 16384 bytes",
        ),
    ];
    for (token, reason) in &cases {
        assert_invalid(admit(&gatekeeper, token).await, token, reason);
    }
    // The skew: a token expired less than a minute ago, or valid in less than one, is let in.
    for changes in [json!({"exp": t - 50}), json!({"nbf": t + 50})] {
        let token = idp.token(&with(changes.clone()));
        assert!(admit(&gatekeeper, &token).await.is_ok(), "{changes}");
    }
    // A token of exactly the most bytes looked at is looked at (and refused as no JWT).
    let longest = "x".repeat(16 * 1024);
    assert_invalid(
        admit(&gatekeeper, &longest).await,
        &longest,
        "the token is not a JWT",
    );
    assert_eq!(idp.jwks_fetches(), 1);
}

#[tokio::test]
async fn a_request_without_a_token_gets_the_challenge_naming_the_metadata_and_scopes() {
    let idp = IdentityProvider::start().await;
    let gatekeeper = Gatekeeper::from_settings(GatekeeperSettings {
        required_scopes: vec!["mcp:tools".into(), "mcp:read".into()],
        ..settings(&idp)
    })
    .expect("a gatekeeper");
    let challenge = Refusal {
        status: 401,
        www_authenticate: format!(
            "Bearer resource_metadata=\"{METADATA}\", scope=\"mcp:tools mcp:read\""
        ),
        reason: "the request carries no bearer token".into(),
    };
    for header in [None, Some(&b"Basic YTpi"[..]), Some(&b"Negotiate"[..])] {
        assert_eq!(
            gatekeeper.admit(header).await.err(),
            Some(challenge.clone())
        );
    }
    for malformed in [
        &b"Bearer"[..],
        b"Bearer ",
        b"bearer a b",
        b"Bearer \xff",
        b"Bearer a\"b",
    ] {
        assert_eq!(
            gatekeeper.admit(Some(malformed)).await.err(),
            Some(Refusal {
                status: 401,
                www_authenticate: format!(
                    "Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\""
                ),
                reason: "the bearer token is not token68 text".into(),
            }),
            "{}",
            String::from_utf8_lossy(malformed)
        );
    }

    // A valid token without every required scope: 403 naming them.
    let mut claims = idp.claims(RESOURCE, "alice");
    claims["scope"] = json!("mcp:tools mcp:reader");
    let token = idp.token(&claims);
    let refusal = admit(&gatekeeper, &token)
        .await
        .expect_err("a scope is missing");
    assert_eq!(
        refusal,
        Refusal {
            status: 403,
            www_authenticate: format!(
                "Bearer resource_metadata=\"{METADATA}\", error=\"insufficient_scope\", \
                 scope=\"mcp:tools mcp:read\""
            ),
            reason: "the token lacks a required scope".into(),
        }
    );
    assert_clean(&refusal, &token);
    claims["scope"] = json!("mcp:read openid mcp:tools");
    let identity = admit(&gatekeeper, &idp.token(&claims))
        .await
        .expect("every scope");
    assert_eq!(identity.label(), "alice");
    // The header's scheme is any case, and the token may follow more than one space.
    let header = format!("bEARER   {}", idp.token(&claims));
    assert!(gatekeeper.admit(Some(header.as_bytes())).await.is_ok());
}

/// A flood of tokens naming made-up keys costs the issuer one fetch a minute; a key published
/// since is found once a minute has passed.
#[tokio::test]
async fn unknown_kids_set_off_one_fetch_a_minute_at_most() {
    let idp = IdentityProvider::start().await;
    let gatekeeper = gatekeeper(&idp);
    let issuer = gatekeeper.tokens.as_ref().expect("tokens").issuer();
    let claims = idp.claims(RESOURCE, "alice");
    assert!(admit(&gatekeeper, &idp.token(&claims)).await.is_ok());
    assert_eq!(idp.jwks_fetches(), 1);
    let flood = async |from: usize| {
        for n in from..from + 250 {
            let kid = format!("made-up-{n}");
            let token = idp.sign(&json!({"alg": "ES256", "kid": kid}), &claims);
            assert_invalid(
                admit(&gatekeeper, &token).await,
                &token,
                "the token's key (kid) is not among the issuer's keys",
            );
        }
    };
    flood(0).await;
    assert_eq!(
        idp.jwks_fetches(),
        1,
        "fetched less than a minute ago: not again"
    );
    issuer.age(JWKS_REFETCH_INTERVAL).await;
    flood(250).await;
    assert_eq!(
        idp.jwks_fetches(),
        2,
        "a minute later, one fetch for the whole flood"
    );

    idp.new_key("es-2", true);
    let rotated = idp.sign(&json!({"alg": "ES256", "kid": "es-2"}), &claims);
    issuer
        .age(JWKS_REFETCH_INTERVAL - Duration::from_secs(1))
        .await;
    assert!(
        admit(&gatekeeper, &rotated).await.is_err(),
        "within the minute: no fetch"
    );
    assert_eq!(idp.jwks_fetches(), 2);
    issuer.age(Duration::from_secs(1)).await;
    assert_eq!(
        admit(&gatekeeper, &rotated).await.expect("found").label(),
        "alice"
    );
    assert_eq!(idp.jwks_fetches(), 3, "the minute is up: fetched again");
}

#[tokio::test]
async fn an_issuer_whose_keys_cannot_be_had_gets_503_and_is_retried_within_bounds() {
    let idp = IdentityProvider::start_with(Metadata::OtherIssuer).await;
    let gatekeeper = gatekeeper(&idp);
    let token = idp.token(&idp.claims(RESOURCE, "alice"));
    let refusal = admit(&gatekeeper, &token).await.expect_err("no keys");
    assert_eq!(refusal.status, 503);
    assert_eq!(
        refusal.reason,
        "the issuer publishes no metadata (RFC 8414 or OpenID Connect) at its well-known places \
         (a document of another issuer; a document of another issuer)"
    );
    assert_clean(&refusal, &token);
    assert_eq!(idp.requests(), 2, "both well-known places, once");
    let issuer = gatekeeper.tokens.as_ref().expect("tokens").issuer();
    issuer
        .age(JWKS_RETRY_INTERVAL - Duration::from_secs(1))
        .await;
    let refusal = admit(&gatekeeper, &token).await.expect_err("no keys");
    assert_eq!(refusal.status, 503);
    assert_eq!(
        refusal.reason,
        "the issuer's keys could not be fetched yet; the next try is at most 10 s away"
    );
    assert_eq!(idp.requests(), 2, "not retried within the interval");
    issuer.age(Duration::from_secs(1)).await;
    assert_eq!(
        admit(&gatekeeper, &token).await.err().map(|r| r.status),
        Some(503)
    );
    assert_eq!(idp.requests(), 4, "retried once it is up");

    // Metadata at OpenID Connect's place only is found there.
    let idp = IdentityProvider::start_with(Metadata::OpenIdOnly).await;
    let gatekeeper = self::gatekeeper(&idp);
    let token = idp.token(&idp.claims(RESOURCE, "alice"));
    assert_eq!(
        admit(&gatekeeper, &token).await.expect("admitted").label(),
        "alice"
    );

    // Nothing listening: unreachable, said without the token.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let gatekeeper = Gatekeeper::from_settings(GatekeeperSettings {
        issuer: Some(format!("http://127.0.0.1:{port}")),
        ..settings(&idp)
    })
    .expect("a gatekeeper");
    let refusal = admit(&gatekeeper, &token).await.expect_err("unreachable");
    assert_eq!(refusal.status, 503);
    assert!(
        refusal
            .reason
            .starts_with("the issuer could not be reached: "),
        "{}",
        refusal.reason
    );
    assert_clean(&refusal, &token);
}

#[tokio::test]
async fn api_keys_are_let_in_by_name_and_other_keys_are_not() {
    let dir = std::env::temp_dir().join(format!("runvil-gatekeeper-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("keys");
    let (key, line) = new_key("ci").expect("a key");
    let (other, _) = new_key("ci").expect("another key");
    std::fs::write(&path, format!("{line}\n")).expect("written");
    let keys_only = Gatekeeper::from_settings(GatekeeperSettings {
        issuer: None,
        resource: None,
        required_scopes: Vec::new(),
        api_keys: Some(path.clone()),
    })
    .expect("a gatekeeper");
    assert!(!keys_only.is_open());
    assert!(keys_only.resource_metadata().is_none());
    assert_eq!(
        admit(&keys_only, &key).await.expect("admitted").label(),
        "key:ci"
    );
    let refusal = admit(&keys_only, &other)
        .await
        .expect_err("not in the file");
    assert_eq!(
        refusal,
        Refusal {
            status: 401,
            www_authenticate: "Bearer error=\"invalid_token\"".into(),
            reason: "the API key is not one of the key file's".into(),
        }
    );
    assert!(!format!("{refusal:?}").contains(&other[4..]));
    assert_eq!(
        admit(&keys_only, "eyJhbGciOiJFUzI1NiJ9.e30.e30")
            .await
            .err()
            .map(|r| r.reason),
        Some("the bearer token is no API key, and no issuer is configured".into())
    );
    assert_eq!(
        keys_only
            .admit(None)
            .await
            .err()
            .map(|r| r.www_authenticate),
        Some("Bearer".into())
    );

    // Beside an issuer, a key is still a key, and needs no scope.
    let idp = IdentityProvider::start().await;
    let both = Gatekeeper::from_settings(GatekeeperSettings {
        required_scopes: vec!["mcp:tools".into()],
        api_keys: Some(path),
        ..settings(&idp)
    })
    .expect("a gatekeeper");
    assert_eq!(
        admit(&both, &key).await.expect("admitted").label(),
        "key:ci"
    );
    assert_eq!(idp.requests(), 0, "a key costs the issuer nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn without_authentication_everyone_is_anonymous() {
    let open = Gatekeeper::open();
    assert!(open.is_open());
    assert!(open.resource_metadata().is_none());
    assert_eq!(open.admit(None).await.expect("in").label(), "anonymous");
    let none = Gatekeeper::from_settings(GatekeeperSettings {
        issuer: None,
        resource: None,
        required_scopes: Vec::new(),
        api_keys: None,
    })
    .expect("a gatekeeper");
    assert!(none.is_open());
}

#[test]
fn the_metadata_names_the_resource_and_the_issuer_and_is_served_at_its_path() {
    for (resource, path) in [
        (
            "https://gw.example/mcp",
            "/.well-known/oauth-protected-resource/mcp",
        ),
        (
            "https://gw.example/team/mcp/",
            "/.well-known/oauth-protected-resource/team/mcp",
        ),
        (
            "https://gw.example",
            "/.well-known/oauth-protected-resource",
        ),
        (
            "https://gw.example/",
            "/.well-known/oauth-protected-resource",
        ),
    ] {
        let gatekeeper = Gatekeeper::from_settings(GatekeeperSettings {
            issuer: Some("https://id.example/tenant".into()),
            resource: Some(resource.into()),
            required_scopes: vec!["mcp:tools".into()],
            api_keys: None,
        })
        .expect("a gatekeeper");
        assert_eq!(gatekeeper.resource_metadata_path(), Some(path));
        assert_eq!(
            gatekeeper.resource_metadata(),
            Some(json!({
                "resource": resource,
                "authorization_servers": ["https://id.example/tenant"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp:tools"],
            }))
        );
    }
}

#[test]
fn bad_settings_name_the_flag_and_never_the_value() {
    let base = || GatekeeperSettings {
        issuer: Some("https://id.example".into()),
        resource: Some("https://gw.example/mcp".into()),
        required_scopes: Vec::new(),
        api_keys: None,
    };
    let cases = [
        (
            GatekeeperSettings {
                resource: None,
                ..base()
            },
            "--auth-issuer: needs --resource, the gateway's public URL (the audience of its tokens)",
        ),
        (
            GatekeeperSettings {
                issuer: None,
                ..base()
            },
            "--resource: needs --auth-issuer, the issuer of the tokens for it",
        ),
        (
            GatekeeperSettings {
                issuer: None,
                resource: None,
                required_scopes: vec!["a".into()],
                api_keys: None,
            },
            "--required-scope: needs --auth-issuer: scopes are a token's",
        ),
        (
            GatekeeperSettings {
                issuer: Some("http://id.example/secret-x".into()),
                ..base()
            },
            "--auth-issuer: is not an https URL (plain http is allowed to a loopback address only)",
        ),
        (
            GatekeeperSettings {
                issuer: Some("https://u:secret-x@id.example".into()),
                ..base()
            },
            "--auth-issuer: carries a user name or password",
        ),
        (
            GatekeeperSettings {
                issuer: Some("https://id.example/?secret-x".into()),
                ..base()
            },
            "--auth-issuer: has a query",
        ),
        (
            GatekeeperSettings {
                resource: Some("gw.example/secret-x".into()),
                ..base()
            },
            "--resource: is not a URL",
        ),
        (
            GatekeeperSettings {
                resource: Some("https://gw.example/mcp#secret-x".into()),
                ..base()
            },
            "--resource: has a fragment",
        ),
        (
            GatekeeperSettings {
                resource: Some("https://gw.example/mcp?secret-x".into()),
                ..base()
            },
            "--resource: has a query (RFC 8707: a resource is named without one)",
        ),
        (
            GatekeeperSettings {
                required_scopes: vec!["a\"secret-x".into()],
                ..base()
            },
            "--required-scope: a scope is one or more visible ASCII characters other than \" and \\",
        ),
        (
            GatekeeperSettings {
                required_scopes: vec![String::new()],
                ..base()
            },
            "--required-scope: a scope is one or more visible ASCII characters other than \" and \\",
        ),
    ];
    for (settings, want) in cases {
        let error = Gatekeeper::from_settings(settings)
            .err()
            .expect("refused")
            .to_string();
        assert_eq!(error, want);
        assert!(!error.contains("secret-x"));
    }
}

/// Canary values in every part of a token (its claims, its header, its signature), in an API
/// key, and in the header around them reach no refusal, no `Debug` and no log line of any
/// level.
#[tokio::test]
async fn no_token_key_or_canary_reaches_a_refusal_or_a_log_line() {
    use shared_mcp_fixture::canaries::{CANARY, HEADER, assert_clean};

    let captured = crate::gateway::CapturedLogs::start();

    let idp = IdentityProvider::start().await;
    let gatekeeper = gatekeeper(&idp);
    let mut said = Vec::new();
    let mut claims = idp.claims(RESOURCE, CANARY);
    claims["groups"] = json!([HEADER]);
    let good = idp.token(&claims);
    let identity = admit(&gatekeeper, &good).await.expect("admitted");
    said.push(format!("{identity:?}").replace(CANARY, "the-sub"));
    let mut expired = claims.clone();
    expired["exp"] = json!(now() - 600);
    for token in [
        idp.token(&expired),
        idp.sign(&json!({"alg": "ES256", "kid": CANARY}), &claims),
        idp.sign(&json!({"alg": "none", "kid": HEADER}), &claims),
        format!("{good}{CANARY}"),
        format!("rvk_{CANARY}"),
        format!("{CANARY}.{HEADER}.{CANARY}"),
    ] {
        let refusal = admit(&gatekeeper, &token).await.expect_err("refused");
        said.push(format!("{refusal:?}"));
    }
    let header = format!("Basic {CANARY}");
    said.push(format!(
        "{:?}",
        gatekeeper.admit(Some(header.as_bytes())).await
    ));
    assert_clean("the log", &captured.text());
    for text in &said {
        assert_clean("a refusal", text);
        assert!(!text.contains(&good[good.len() - 20..]), "{text}");
    }
}
