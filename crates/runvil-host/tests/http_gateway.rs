//! `runvil serve --http` as a team gateway, through the binary: who is let in (access tokens of
//! the fixture's identity provider, API keys of `runvil gateway-key`, each hostile token
//! refused with its status), what each identity may use (`--policy`: two identities see
//! different listings, and a tool an identity may not use reads exactly as one that does not
//! exist), what is recorded (`--audit`: a line per call and per refusal, never an argument, a
//! result or a token), and what is never forwarded (the client's token stays at the gateway).

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::canaries::CANARY;
use shared_mcp_fixture::hostile::{self, Hostile};
use shared_mcp_fixture::idp::{IdentityProvider, RS256_KID, now};
use shared_mcp_fixture::{Fixture, ToolSet};
use support::gateway::{
    Gateway, Http, config_of, key_path, messages, result_text, serve_args, tool_call,
};
use support::{Temp, runvil, text};

/// The gateway's public URL: the audience of its tokens.
const RESOURCE: &str = "https://gateway.example/mcp";
/// The scope every token must hold.
const SCOPE: &str = "mcp:tools";
/// How long a test waits for something that happens at once; it bounds a failure only.
const SOON: Duration = Duration::from_secs(30);

/// The policy of these tests: alice uses every tool of `docs`, the `eng` group `build/echo`,
/// the `ci` key `build/add`; no one else anything.
const POLICY: &str = r#"{"rules": [
  {"match": {"sub": "alice@example.com"}, "allow": ["docs/*"]},
  {"match": {"claim": "groups", "value": "eng"}, "allow": ["build/echo"]},
  {"match": {"key": "ci"}, "allow": ["build/add"]}
]}"#;

/// A gateway before `servers`, authenticating with `idp` and the key file, under the
/// policy, auditing to a file of its own; its folder holds the key file, the policy and the
/// audit file.
struct Team {
    gateway: Gateway,
    dir: Temp,
    /// The `ci` key, as `runvil gateway-key ci` printed it.
    ci_key: String,
}

impl Team {
    fn start(idp: &IdentityProvider, servers: &[(&str, &str)], extra: &[&str]) -> Team {
        let dir = Temp::dir();
        let made = runvil(&["gateway-key", "ci"]);
        assert_eq!(made.status.code(), Some(0), "{}", text(&made.stderr));
        let printed = text(&made.stdout);
        let mut lines = printed.lines();
        let ci_key = lines.next().expect("the key").to_owned();
        let keys = dir.write(
            "api-keys",
            &format!("{}\n", lines.next().expect("its line")),
        );
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let policy = dir.write("policy.json", POLICY);
        let audit = dir.path().join("audit.jsonl");
        let config = config_of(servers);
        let mut args = vec![
            "--auth-issuer",
            idp.issuer(),
            "--resource",
            RESOURCE,
            "--required-scope",
            SCOPE,
            "--api-keys",
            keys.to_str().expect("UTF-8"),
            "--policy",
            policy.to_str().expect("UTF-8"),
            "--audit",
            audit.to_str().expect("UTF-8"),
            "--rate",
            "10000",
            "--burst",
            "10000",
        ];
        args.extend_from_slice(extra);
        // Every log line, so the test can prove what is not in any of them.
        let env = [("RUST_LOG", "debug")];
        let gateway = Gateway::start_with(config.path(), &key_path(), &args, &env);
        Team {
            gateway,
            dir,
            ci_key,
        }
    }

    fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// The audit lines so far, once there are `count`: the file is written by a thread of the
    /// gateway's own, a moment after the answer.
    async fn audit_lines(&self, count: usize) -> Vec<Value> {
        let path = self.audit_path();
        support::wait_until("the audit lines", SOON, async || {
            read_lines(&path).len() >= count
        })
        .await;
        read_lines(&path)
    }
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A good token of `idp` for the gateway, of `sub`, with these extra claims.
fn token(idp: &IdentityProvider, sub: &str, extra: Value) -> String {
    let mut claims = idp.claims(RESOURCE, sub);
    claims["scope"] = json!(SCOPE);
    for (key, value) in extra.as_object().expect("an object") {
        claims[key] = value.clone();
    }
    idp.token(&claims)
}

/// Calls `call_dynamic_tool` at 2026-07-28 as `http`: the result's text and whether it is an
/// error.
async fn call(http: &Http, namespace: &str, tool: &str, arguments: Value) -> (String, bool) {
    let params = tool_call(
        "call_dynamic_tool",
        json!({"namespace": namespace, "toolName": tool, "arguments": arguments}),
    );
    let response = http.modern(1, "tools/call", params).await;
    assert_eq!(response.status(), 200);
    result_text(&messages(response).await[0])
}

/// What `get_dynamic_tools` answers `http` for `namespace`, parsed.
async fn listing(http: &Http, namespace: Option<&str>) -> Value {
    let arguments = match namespace {
        Some(namespace) => json!({"namespace": namespace}),
        None => json!({}),
    };
    let response = http
        .modern(1, "tools/call", tool_call("get_dynamic_tools", arguments))
        .await;
    assert_eq!(response.status(), 200);
    let (text, error) = result_text(&messages(response).await[0]);
    if error {
        return json!({"error": text});
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The names of the tools a namespace's listing shows.
fn names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn fixture() -> Fixture {
    Fixture::builder()
        .tools(ToolSet::Only(&["echo", "add", "slow"]))
        .start()
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn two_identities_see_different_listings_and_a_denied_tool_reads_as_an_unknown_one() {
    let idp = IdentityProvider::start().await;
    let (docs, build) = (fixture().await, fixture().await);
    let team = Team::start(&idp, &[("docs", docs.url()), ("build", build.url())], &[]);
    let http = Http::new(team.gateway.url());
    let alice = http.with_token(&token(&idp, "alice@example.com", json!({})));
    let bob = http.with_token(&token(&idp, "bob@example.com", json!({"groups": ["eng"]})));
    let ci = http.with_token(&team.ci_key);

    // Each sees only what the policy gives it, of both servers.
    let tools = ["add".to_owned(), "echo".to_owned(), "slow".to_owned()];
    assert_eq!(names(&listing(&alice, Some("docs")).await), tools);
    assert_eq!(names(&listing(&bob, Some("build")).await), ["echo"]);
    assert_eq!(names(&listing(&ci, Some("build")).await), ["add"]);
    // A namespace an identity may not see answers as one that does not exist.
    let hidden = listing(&alice, Some("build")).await;
    let absent = listing(&alice, Some("nowhere")).await;
    assert_eq!(
        hidden.to_string().replace("build", "NS"),
        absent.to_string().replace("nowhere", "NS"),
    );
    let everything = listing(&alice, None).await.to_string();
    assert!(
        everything.contains("docs") && !everything.contains("build"),
        "{everything}"
    );

    // Allowed calls are made; a denied one reads exactly as a tool that does not exist.
    assert_eq!(
        call(&alice, "docs", "echo", json!({"text": "hi"})).await,
        ("hi".to_owned(), false)
    );
    let added = call(&ci, "build", "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(added, ("5".to_owned(), false));
    let denied = call(&ci, "build", "slow", json!({})).await;
    let unknown = call(&ci, "build", "nosuch", json!({})).await;
    assert!(denied.1 && unknown.1, "{denied:?} {unknown:?}");
    assert_eq!(
        denied.0.replace("slow", "TOOL"),
        unknown.0.replace("nosuch", "TOOL")
    );
    let denied = call(&bob, "docs", "slow", json!({})).await;
    let unknown = call(&bob, "nowhere", "slow", json!({})).await;
    assert_eq!(
        denied.0.replace("docs", "NS"),
        unknown.0.replace("nowhere", "NS")
    );
    // The servers behind never saw a denied call: it was refused here.
    assert!(docs.slow_started().is_empty() && build.slow_started().is_empty());

    // Each refusal is logged by the policy, with its reason, and no token in any line.
    let stderr = team.gateway.stderr();
    assert!(
        stderr.contains("the policy refuses a call")
            && stderr.contains("the rules that match the identity do not allow the tool")
            && stderr.contains("the policy refuses a listing"),
        "{stderr}"
    );
    assert!(!stderr.contains(&team.ci_key), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_hostile_token_is_refused_with_its_status_and_never_said() {
    let idp = IdentityProvider::start().await;
    let docs = fixture().await;
    let team = Team::start(&idp, &[("docs", docs.url())], &[]);
    let http = Http::new(team.gateway.url());
    let metadata_url = "https://gateway.example/.well-known/oauth-protected-resource/mcp";

    // The protected-resource metadata, at its path and at the bare well-known one.
    let base = team.gateway.base.clone();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let answer = reqwest::get(format!("{base}{path}"))
            .await
            .expect("an answer")
            .text()
            .await
            .expect("a body");
        let metadata: Value = serde_json::from_str(&answer).expect("JSON");
        assert_eq!(metadata["resource"], RESOURCE);
        assert_eq!(metadata["authorization_servers"], json!([idp.issuer()]));
    }

    let good = idp.claims(RESOURCE, "alice@example.com");
    let with = |change: Value| {
        let mut claims = good.clone();
        claims["scope"] = json!(SCOPE);
        for (key, value) in change.as_object().expect("an object") {
            claims[key] = value.clone();
        }
        claims
    };
    let now = now();
    let es256 = json!({"alg": "ES256", "kid": shared_mcp_fixture::idp::ES256_KID, "typ": "at+jwt"});
    let hostile: Vec<(&str, String, u16, Option<&str>)> = vec![
        (
            "expired",
            idp.token(&with(json!({"exp": now - 120, "nbf": now - 600}))),
            401,
            Some("invalid_token"),
        ),
        (
            "not yet valid",
            idp.token(&with(json!({"nbf": now + 600}))),
            401,
            Some("invalid_token"),
        ),
        (
            "another issuer",
            idp.token(&with(json!({"iss": "https://evil.example"}))),
            401,
            Some("invalid_token"),
        ),
        (
            "another audience",
            idp.token(&with(json!({"aud": "https://other.example/mcp"}))),
            401,
            Some("invalid_token"),
        ),
        (
            "alg none",
            idp.sign(&json!({"alg": "none", "typ": "at+jwt"}), &with(json!({}))),
            401,
            Some("invalid_token"),
        ),
        (
            "HMAC with the public key",
            idp.sign(
                &json!({"alg": "HS256", "kid": shared_mcp_fixture::idp::ES256_KID}),
                &with(json!({})),
            ),
            401,
            Some("invalid_token"),
        ),
        (
            "an unknown kid",
            idp.sign(&json!({"alg": "ES256", "kid": "nobody"}), &with(json!({}))),
            401,
            Some("invalid_token"),
        ),
        (
            "RS256 under the ES256 kid",
            idp.sign(
                &json!({"alg": "RS256", "kid": shared_mcp_fixture::idp::ES256_KID}),
                &with(json!({})),
            ),
            401,
            Some("invalid_token"),
        ),
        (
            "without the required scope",
            idp.sign(&es256, &good),
            403,
            Some("insufficient_scope"),
        ),
        (
            "an unknown API key",
            format!("rvk_{}", "A".repeat(43)),
            401,
            Some("invalid_token"),
        ),
        ("not a token", "a b".to_owned(), 401, Some("invalid_token")),
    ];
    let mut presented = Vec::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    // No token at all: 401 naming the metadata, at either revision.
    for response in [
        http.post(&[], &initialize).await,
        http.modern(1, "tools/list", json!({})).await,
    ] {
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .expect("text");
        assert_eq!(
            challenge,
            format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"{SCOPE}\"")
        );
    }
    for (what, token, status, error) in &hostile {
        let response = http.with_token(token).post(&[], &initialize).await;
        assert_eq!(response.status().as_u16(), *status, "{what}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .expect("text")
            .to_owned();
        assert!(
            challenge.starts_with(&format!("Bearer resource_metadata=\"{metadata_url}\"")),
            "{what}: {challenge}"
        );
        if let Some(error) = error {
            assert!(
                challenge.contains(&format!("error=\"{error}\"")),
                "{what}: {challenge}"
            );
        }
        let body = response.text().await.expect("a body");
        assert!(!body.contains(token.as_str()), "{what}: {body}");
        presented.push(token.clone());
    }
    // A flood of tokens naming keys the issuer never had fetches its keys a bounded number of
    // times, and the good token still gets in.
    let before = idp.jwks_fetches();
    for n in 0..200 {
        let kid = format!("flood-{n}");
        let flood = idp.sign(&json!({"alg": "ES256", "kid": kid}), &with(json!({})));
        let response = http
            .with_token(&flood)
            .modern(1, "tools/list", json!({}))
            .await;
        assert_eq!(response.status(), 401);
    }
    assert!(
        idp.jwks_fetches() - before <= 1,
        "{} fetches",
        idp.jwks_fetches() - before
    );
    let rs256 = idp.sign(
        &json!({"alg": "RS256", "kid": RS256_KID, "typ": "at+jwt"}),
        &with(json!({})),
    );
    for good in [idp.token(&with(json!({}))), rs256] {
        let response = http
            .with_token(&good)
            .modern(1, "tools/list", json!({}))
            .await;
        assert_eq!(response.status(), 200);
        presented.push(good);
    }

    // Every refusal has its audit line, naming no one; no token is in any line of the log or
    // the trail.
    let refusals = 2 + hostile.len() + 200;
    let lines = team.audit_lines(refusals).await;
    let unauthenticated: Vec<&Value> = lines
        .iter()
        .filter(|l| l["outcome"] == "unauthenticated")
        .collect();
    assert_eq!(unauthenticated.len(), refusals);
    assert!(unauthenticated.iter().all(|l| l["identity"].is_null()));
    let trail = std::fs::read_to_string(team.audit_path()).expect("the trail");
    let stderr = team.gateway.stderr();
    for token in &presented {
        // The signature is the part no one else could write; an unsigned token is all its own.
        let secret = match token.rsplit('.').next() {
            Some(signature) if signature.len() >= 16 => signature,
            _ => token.as_str(),
        };
        assert!(!trail.contains(secret), "a token in the trail");
        assert!(!stderr.contains(secret), "a token in the log: {stderr}");
    }
    assert!(!stderr.contains(&team.ci_key));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_whose_issuer_cannot_be_reached_answers_503_and_says_nothing_open() {
    let idp = IdentityProvider::start().await;
    let docs = fixture().await;
    let issuer = support::unreachable_url();
    let config = config_of(&[("docs", docs.url())]);
    let audit = Temp::dir();
    let audit = audit.path().join("audit.jsonl");
    let gateway = Gateway::start(
        config.path(),
        &key_path(),
        &[
            "--auth-issuer",
            &issuer,
            "--resource",
            RESOURCE,
            "--audit",
            audit.to_str().expect("UTF-8"),
        ],
    );
    let token = idp.token(&idp.claims(RESOURCE, "alice@example.com"));
    let response = Http::new(gateway.url())
        .with_token(&token)
        .modern(1, "tools/list", json!({}))
        .await;
    assert_eq!(response.status(), 503);
    // Authenticated, it says nothing of loopback-only clients.
    assert!(
        !gateway.stderr().contains("no authentication"),
        "{}",
        gateway.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_its_opener_s_and_no_token_reaches_the_server_behind() {
    let idp = IdentityProvider::start().await;
    let behind = Hostile::start(hostile::mcp).await;
    let team = Team::start(&idp, &[("docs", &behind.url)], &[]);
    let alice_token = token(&idp, "alice@example.com", json!({}));
    let alice = Http::new(team.gateway.url()).with_token(&alice_token);
    let bob = Http::new(team.gateway.url()).with_token(&token(&idp, "bob@example.com", json!({})));

    let session = alice.initialize().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(alice.in_session(&session, &list).await.status(), 200);
    // Another identity presenting alice's session id: no such session.
    assert_eq!(bob.in_session(&session, &list).await.status(), 404);

    // The server behind echoes every header it was sent: none is the client's token.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params":
        {"name": "call_dynamic_tool", "arguments": {"namespace": "docs", "toolName": "echo",
         "arguments": {}}}});
    let answer = messages(alice.in_session(&session, &call).await).await;
    let (echoed, error) = result_text(&answer[0]);
    assert!(!error, "{echoed}");
    let signature = alice_token.rsplit('.').next().expect("a signature");
    assert!(!echoed.contains(signature), "{echoed}");
    assert!(
        !echoed.to_ascii_lowercase().contains("authorization"),
        "{echoed}"
    );
    for request in behind.requests() {
        assert!(request.header("authorization").is_none(), "{request:?}");
        assert!(
            request.headers.iter().all(|(_, v)| !v.contains(signature)),
            "{request:?}"
        );
    }
    // Nor is the session id in a log line or the trail.
    assert!(!team.gateway.stderr().contains(&session));
    let trail = std::fs::read_to_string(team.audit_path()).expect("the trail");
    assert!(!trail.contains(&session));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_and_refusal_has_its_audit_line_and_none_holds_an_argument_or_a_result() {
    let idp = IdentityProvider::start().await;
    let (docs, build) = (fixture().await, fixture().await);
    let team = Team::start(&idp, &[("docs", docs.url()), ("build", build.url())], &[]);
    let http = Http::new(team.gateway.url());
    let alice = http.with_token(&token(&idp, "alice@example.com", json!({})));
    let ci = http.with_token(&team.ci_key);

    // ok (the result is the canary), a tool error, denied, an unknown tool, unauthenticated.
    let canary = json!({"text": CANARY});
    assert_eq!(call(&alice, "docs", "echo", canary.clone()).await.0, CANARY);
    let invalid = call(&alice, "docs", "echo", json!({"text": 5, "note": CANARY})).await;
    assert!(invalid.1, "{invalid:?}");
    assert!(call(&ci, "build", "echo", canary.clone()).await.1);
    assert!(call(&alice, "docs", "nosuch", canary.clone()).await.1);
    let response = http.modern(1, "tools/list", json!({})).await;
    assert_eq!(response.status(), 401);

    let lines = team.audit_lines(5).await;
    assert_eq!(lines.len(), 5, "{lines:#?}");
    let hash = |arguments: &Value| {
        let canonical = serde_json_canonical(arguments);
        sha256_hex(canonical.as_bytes())
    };
    let fields = |l: &Value| {
        (
            l["identity"].clone(),
            l["namespace"].clone(),
            l["tool"].clone(),
            l["outcome"].clone(),
        )
    };
    let got: Vec<_> = lines.iter().map(fields).collect();
    assert_eq!(
        got,
        [
            (
                json!("alice@example.com"),
                json!("docs"),
                json!("echo"),
                json!("ok")
            ),
            (
                json!("alice@example.com"),
                json!("docs"),
                json!("echo"),
                json!("invalid")
            ),
            (
                json!("key:ci"),
                json!("build"),
                json!("echo"),
                json!("denied")
            ),
            (
                json!("alice@example.com"),
                json!("docs"),
                json!("nosuch"),
                json!("invalid")
            ),
            (
                json!(null),
                json!(null),
                json!(null),
                json!("unauthenticated")
            ),
        ]
    );
    assert_eq!(lines[0]["args_sha256"], hash(&canary));
    assert_eq!(lines[0]["result_bytes"], CANARY.len());
    assert_eq!(lines[0]["v"], 1);
    for line in &lines {
        let keys: Vec<&str> = line
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 9, "exactly the format's fields: {line}");
    }
    let trail = std::fs::read_to_string(team.audit_path()).expect("the trail");
    assert!(!trail.contains(CANARY), "{trail}");
    let mode = std::fs::metadata(team.audit_path())
        .expect("the file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn an_audit_file_others_may_read_is_refused_at_start() {
    let dir = Temp::dir();
    let audit = dir.write("audit.jsonl", "");
    std::fs::set_permissions(&audit, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = serve_with_file("--audit", &audit);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "runvil: {0}: other users may read or change it (its permissions are 644); run \
             `chmod 600 {0}`\n",
            audit.display()
        )
    );
}

/// The files that say who gets in and what each may use are refused at start when other users
/// may change them (others may read them: the keys file holds only hashes).
#[test]
fn a_keys_or_policy_file_others_may_change_is_refused_at_start() {
    let dir = Temp::dir();
    let keys = dir.write("api-keys", "");
    let policy = dir.write("policy.json", POLICY);
    for (flag, file) in [("--api-keys", &keys), ("--policy", &policy)] {
        for bits in [0o620, 0o602] {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(bits)).expect("chmod");
            let out = serve_with_file(flag, file);
            assert_eq!(out.status.code(), Some(1), "{flag} {bits:o}");
            assert_eq!(
                text(&out.stderr),
                format!(
                    "runvil: {0}: other users may change it (its permissions are {bits:o}); run \
                     `chmod go-w {0}`\n",
                    file.display()
                )
            );
        }
    }
}

/// `runvil serve --http` on loopback with no servers, given `file` for `flag`: for the checks
/// a gateway makes of its files before it starts.
fn serve_with_file(flag: &str, file: &Path) -> std::process::Output {
    let (config, key) = (config_of(&[]), key_path());
    let file = file.to_str().expect("UTF-8");
    runvil(&serve_args(config.path(), &key, &[flag, file]))
}

/// RFC 8785's form of a JSON value, as the gateway hashes arguments: here only objects of
/// strings, whose canonical form is sorted keys without spaces.
fn serde_json_canonical(value: &Value) -> String {
    let object = value.as_object().expect("an object");
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    let fields: Vec<String> = keys
        .iter()
        .map(|k| format!("{}:{}", json!(k), object[*k]))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// Hex SHA-256, by the system's `sha256sum`.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("written");
    let out = child.wait_with_output().expect("hashed");
    text(&out.stdout)
        .split_whitespace()
        .next()
        .expect("a hash")
        .to_owned()
}
