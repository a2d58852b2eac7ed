//! The gatekeeper against a real OpenID provider nobody here wrote: panva's `oidc-provider`
//! (npm, pinned by `oidc-provider/package-lock.json`, installed with `npm ci` into its
//! git-ignored `node_modules` on first use, run under the machine's Node). A client logs in by
//! client credentials with RFC 8707's `resource`, and the gatekeeper admits its JWT for that
//! resource and refuses one obtained for another.
//!
//! Where npm or Node cannot be had, the test is skipped with one line; under `CI=true` that is
//! a failure.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use shared_mcp_fixture::peers;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::*;

const FOLDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/oidc-provider");
const CLIENT_ID: &str = "gateway-ci";
/// The client's secret: a test value, sent only to the provider on loopback.
const CLIENT_SECRET: &str = "gateway-ci-secret-7d1f";
const RESOURCE: &str = "https://gw.example/mcp";
const OTHER_RESOURCE: &str = "https://other.example/mcp";
/// How long the provider may take to start (a first `node` run reads its modules cold).
const START_BOUND: Duration = Duration::from_secs(60);

/// Says why the test cannot run, in one line, or fails under CI.
fn skipped(why: &str) {
    peers::unavailable(
        "a_real_openid_provider_s_token_is_let_in_for_its_resource_only",
        why,
    );
}

/// `npm ci` in the provider's folder unless its pinned packages, as the lock file has them,
/// are there: the peers' one installer.
fn install() -> Result<(), String> {
    peers::npm(Path::new(FOLDER))
}

/// An access token of the provider's for `resource`, by client credentials.
async fn token_for(issuer: &str, resource: &str) -> String {
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "client_credentials")
        .append_pair("scope", "mcp:tools")
        .append_pair("resource", resource)
        .finish();
    let answer = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .basic_auth(CLIENT_ID, Some(CLIENT_SECRET))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(form)
        .send()
        .await
        .expect("the token endpoint answers");
    assert_eq!(answer.status(), 200, "a token for {resource}");
    let body = answer.bytes().await.expect("a token answer");
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    body["access_token"]
        .as_str()
        .expect("an access token")
        .to_owned()
}

#[tokio::test]
async fn a_real_openid_provider_s_token_is_let_in_for_its_resource_only() {
    if let Err(why) = install() {
        return skipped(&why);
    }
    let provider = tokio::process::Command::new("node")
        .args([
            "provider.mjs",
            CLIENT_ID,
            CLIENT_SECRET,
            RESOURCE,
            OTHER_RESOURCE,
        ])
        .current_dir(FOLDER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut provider = match provider {
        Ok(provider) => provider,
        Err(e) => return skipped(&format!("node cannot be run ({e})")),
    };
    let stdout = provider.stdout.take().expect("its stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(START_BOUND, lines.next_line())
        .await
        .expect("the provider starts")
        .expect("its stdout")
        .expect("its first line");
    let started: Value = serde_json::from_str(&first).expect("{\"issuer\": ...}");
    let issuer = started["issuer"].as_str().expect("the issuer").to_owned();

    let settings = |resource: &str| GatekeeperSettings {
        issuer: Some(issuer.clone()),
        resource: Some(resource.to_owned()),
        required_scopes: vec!["mcp:tools".into()],
        api_keys: None,
    };
    let gatekeeper = Gatekeeper::from_settings(settings(RESOURCE)).expect("a gatekeeper");
    let token = token_for(&issuer, RESOURCE).await;
    let header = format!("Bearer {token}");
    let identity = gatekeeper
        .admit(Some(header.as_bytes()))
        .await
        .expect("the provider's token for the resource is let in");
    assert_eq!(
        identity.label(),
        CLIENT_ID,
        "client credentials: sub is the client"
    );

    let other = format!("Bearer {}", token_for(&issuer, OTHER_RESOURCE).await);
    let refusal = gatekeeper
        .admit(Some(other.as_bytes()))
        .await
        .expect_err("a token for another resource");
    assert_eq!(refusal.status, 401);
    assert_eq!(refusal.reason, "the token is for another resource (aud)");
    // And the other resource's gateway refuses the first token.
    let elsewhere = Gatekeeper::from_settings(settings(OTHER_RESOURCE)).expect("a gatekeeper");
    let refusal = elsewhere
        .admit(Some(header.as_bytes()))
        .await
        .expect_err("a token for the first resource");
    assert_eq!(refusal.reason, "the token is for another resource (aud)");
}
