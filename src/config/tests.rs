//! Every configuration rule of the specification, one case a row.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;
use crate::text::Scrubber;

pub(super) struct FakeEnvironment {
    pub(super) vars: HashMap<&'static str, &'static str>,
    pub(super) home: Option<&'static str>,
}

impl Environment for FakeEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).map(|v| (*v).to_owned())
    }
    fn home(&self) -> Option<String> {
        self.home.map(str::to_owned)
    }
}

fn env() -> FakeEnvironment {
    FakeEnvironment {
        vars: HashMap::from([
            ("A", "alpha"),
            ("B", "beta"),
            ("EMPTY", ""),
            ("CRLF", "x\r\ny"),
            ("USER", "canary-user"),
            ("PASS", "Pa%20ss'%21-9e1c"),
            ("HOST", "Canary-Höst-7c2e"),
            ("PATH", "Canary Päth"),
            ("QUERY", "Canary Qüery'"),
        ]),
        home: Some("/home/u"),
    }
}

fn one(entry: Value) -> Result<ServerSpec, String> {
    let config = json!({ "s": entry });
    let mut parsed = parse(&config, &env()).expect("an object");
    match parsed.pop() {
        Some((_, Entry::Remote(spec))) => Ok(spec),
        Some((_, Entry::Refused(refusal))) => Err(refusal.to_string()),
        None => panic!("one entry in, none out"),
    }
}

fn url_of(entry: Value) -> String {
    one(entry)
        .expect("accepted")
        .url
        .expose()
        .as_str()
        .to_owned()
}

#[test]
fn null_is_no_servers_and_other_values_are_not_objects() {
    assert!(parse(&Value::Null, &env()).expect("null").is_empty());
    for bad in [json!([]), json!("x"), json!(1), json!(true)] {
        assert!(parse(&bad, &env()).is_err(), "{bad}");
    }
}

#[test]
fn entries_come_back_in_name_order() {
    let config = json!({"b": {"url": "http://b"}, "a": {"command": "x"}, "C": 1});
    let names: Vec<String> = parse(&config, &env())
        .expect("object")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, ["C", "a", "b"]);
}

#[test]
fn refusals_name_the_key_and_use_the_policy_texts() {
    let cases = [
        (json!(7), "the entry is not an object"),
        (
            json!({"command": "npx", "args": ["x"], "env": {}, "cwd": "/"}),
            "local MCP servers (command) are not supported yet",
        ),
        (
            json!({"command": "npx", "url": "http://x"}),
            "local MCP servers (command) are not supported yet",
        ),
        (
            json!({"type": "sse", "url": "http://x"}),
            "type \"sse\" is the legacy HTTP+SSE transport, which is not supported; use Streamable HTTP",
        ),
        (json!({}), "url is missing"),
        (json!({"headers": {}}), "url is missing"),
        (json!({"url": 5}), "url is not a string"),
        (json!({"url": "not a url"}), "url is not a valid URL"),
        (
            json!({"url": "ftp://x"}),
            "url must start with http:// or https://",
        ),
        (
            json!({"url": "file:///etc/passwd"}),
            "url must start with http:// or https://",
        ),
        (
            json!({"url": "http://x", "headers": []}),
            "headers is not an object",
        ),
        (
            json!({"url": "http://x", "headers": "a"}),
            "headers is not an object",
        ),
        (
            json!({"url": "http://x", "headers": {"X-N": 1}}),
            "headers.X-N is not a string",
        ),
        (
            json!({"url": "http://x", "headers": {"Accept": "a"}}),
            "header Accept is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"mcp-session-id": "a"}}),
            "header mcp-session-id is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"LAST-EVENT-ID": "a"}}),
            "header LAST-EVENT-ID is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"MCP-Protocol-Version": "2025-11-25"}}),
            "header MCP-Protocol-Version is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"mcp-method": "tools/call"}}),
            "header mcp-method is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"Mcp-Name": "t"}}),
            "header Mcp-Name is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"MCP-PARAM-Region": "eu"}}),
            "header MCP-PARAM-Region is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"DPoP": "proof"}}),
            "header DPoP is set by the client and may not be configured",
        ),
        (
            json!({"url": "http://x", "headers": {"bad name": "a"}}),
            "header name bad name cannot be sent over HTTP",
        ),
        (
            json!({"url": "http://x", "headers": {"X-V": "a\nb"}}),
            "the value of header X-V cannot be sent over HTTP",
        ),
        (
            json!({"url": "http://x", "headers": {"X-V": "${env:CRLF}"}}),
            "the value of header X-V cannot be sent over HTTP",
        ),
        (
            json!({"url": "http://${env:NOPE}/mcp"}),
            "environment variable NOPE is not set (used in url)",
        ),
        (
            json!({"url": "http://x", "headers": {"Authorization": "Bearer ${env:A}-${env:UNSET_B}"}}),
            "environment variable UNSET_B is not set (used in headers.Authorization)",
        ),
    ];
    for (entry, reason) in cases {
        assert_eq!(one(entry.clone()).err().as_deref(), Some(reason), "{entry}");
    }
}

#[test]
fn refusals_never_show_a_value() {
    let entry = json!({"url": "http://x", "headers": {"X-V": "${env:CRLF}"}});
    let reason = one(entry).expect_err("refused");
    assert_eq!(reason, "the value of header X-V cannot be sent over HTTP");
    assert!(
        !reason.contains('\r') && !reason.contains("x\r\ny"),
        "{reason}"
    );
}

#[test]
fn other_types_and_unknown_fields_are_ignored() {
    for entry in [
        json!({"url": "http://x/mcp", "type": "http"}),
        json!({"url": "http://x/mcp", "type": "streamable-http", "timeout": 5, "disabled": false}),
        json!({"url": "http://x/mcp", "type": 3}),
        json!({"url": "https://x/mcp", "headers": null}),
    ] {
        assert!(one(entry.clone()).is_ok(), "{entry}");
    }
}

#[test]
fn substitution_expands_env_and_home_anywhere_any_number_of_times() {
    let cases = [
        ("http://x/${env:A}", "http://x/alpha"),
        (
            "http://${env:A}.${env:B}/${env:A}",
            "http://alpha.beta/alpha",
        ),
        ("http://x${userHome}/p", "http://x/home/u/p"),
        ("http://x/${env:EMPTY}e", "http://x/e"),
        ("http://x/${other}", "http://x/$%7Bother%7D"),
    ];
    for (raw, want) in cases {
        let got = url_of(json!({"url": raw}));
        assert_eq!(Url::parse(&got).expect("url").as_str(), want, "{raw}");
    }
}

#[test]
fn other_forms_pass_through_unchanged() {
    let mut secrets = Vec::new();
    let cases = [
        ("${env:}", "${env:}"),
        ("a${", "a${"),
        ("a${env:A", "a${env:A"),
        ("${workspaceFolder}/x", "${workspaceFolder}/x"),
        ("${input:token}", "${input:token}"),
        ("$env:A", "$env:A"),
        ("${ env:A}", "${ env:A}"),
        ("Bearer ${env:A}-${env:B}", "Bearer alpha-beta"),
        ("${env:A}${", "alpha${"),
        ("}${userHome}{", "}/home/u{"),
    ];
    for (raw, want) in cases {
        assert_eq!(
            expand(raw, "k", &env(), &mut secrets).as_deref(),
            Ok(want),
            "{raw}"
        );
    }
}

#[test]
fn user_home_without_home_is_refused() {
    let no_home = FakeEnvironment {
        vars: HashMap::new(),
        home: None,
    };
    let got = expand("${userHome}/x", "url", &no_home, &mut Vec::new());
    assert_eq!(
        got.map_err(|r| r.to_string()),
        Err("${userHome} is used in url but HOME is not set".to_owned())
    );
}

#[test]
fn headers_are_sensitive_and_every_value_is_a_secret() {
    let spec = one(json!({
        "url": "https://h/mcp?k=${env:A}",
        "headers": {"Authorization": "Bearer ${env:B}", "X-Plain": "plain-value"}
    }))
    .expect("accepted");
    assert!(spec.headers.iter().all(|h| h.value().is_sensitive()));
    let exposed: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    for want in [
        "alpha",
        "beta",
        "https://h/mcp?k=alpha",
        "Bearer beta",
        "plain-value",
    ] {
        assert!(exposed.contains(&want), "{want} missing from {exposed:?}");
    }
    let shown = format!("{spec:?}");
    for value in ["alpha", "beta", "plain-value", "https://h"] {
        assert!(!shown.contains(value), "{value} in {shown}");
    }
}

#[test]
fn no_debug_of_a_parsed_entry_shows_a_value() {
    let config = json!({"s": {
        "url": "https://literal-user:literal-pass@h.example/AbCdEf0123456789xYz/mcp?k=token-9",
        "headers": {"Authorization": "Bearer hunter2-token", "X-Key": "${env:A}"},
        "oauth": {"clientId": "client-hunter2", "clientSecret": "hunter2-secret"},
    }});
    let parsed = parse(&config, &env()).expect("an object");
    assert_eq!(
        format!("{parsed:?}"),
        r#"[("s", Remote(ServerSpec { headers: ["authorization", "x-key"], oauth: Some(Preregistered { machine: false, .. }), .. }))]"#
    );
}

#[test]
fn every_form_the_url_takes_on_the_wire_is_a_secret() {
    let spec = one(json!({
        "url": "http://${env:USER}:${env:PASS}@${env:HOST}.example:8443/t/${env:PATH}/mcp?k=${env:QUERY}",
    }))
    .expect("accepted");
    let exposed: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    for want in [
        // As the url crate serializes it, and as reqwest keeps it after taking the userinfo.
        "http://canary-user:Pa%20ss'%21-9e1c@xn--canary-hst-7c2e-gtb.example:8443\
         /t/Canary%20P%C3%A4th/mcp?k=Canary%20Q%C3%BCery%27",
        "http://xn--canary-hst-7c2e-gtb.example:8443/t/Canary%20P%C3%A4th/mcp?k=Canary%20Q%C3%BCery%27",
        // The userinfo decoded, and the `Basic` credential reqwest builds from it.
        "Pa ss'!-9e1c",
        "canary-user:Pa ss'!-9e1c",
        "Y2FuYXJ5LXVzZXI6UGEgc3MnIS05ZTFj",
        // Each part an expanded value went into, as sent.
        "xn--canary-hst-7c2e-gtb.example",
        "/t/Canary%20P%C3%A4th/mcp",
        "k=Canary%20Q%C3%BCery%27",
    ] {
        assert!(exposed.contains(&want), "{want} missing from {exposed:?}");
    }
}

#[test]
fn parts_of_the_url_without_an_expanded_value_are_not_secrets() {
    let spec = one(json!({"url": "https://api.example/mcp?k=${env:QUERY}"})).expect("accepted");
    let exposed: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    assert!(exposed.contains(&"k=Canary%20Q%C3%BCery%27"), "{exposed:?}");
    for literal in ["api.example", "/mcp"] {
        assert!(!exposed.contains(&literal), "{literal} in {exposed:?}");
    }
}

#[test]
fn a_credential_written_into_the_url_is_a_secret_in_every_part() {
    let spec = one(json!({
        "url": "https://literal-user:literal-pass@k3y1n4h0st5l4b3l9.example/v1/\
                s/AbCdEf0123456789xYz/mcp?api_key=tok%2Bliteral+9e1c&bare9c1ekey0a4f7d&v=v1",
    }))
    .expect("accepted");
    let exposed: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    for want in [
        // The userinfo, the query values as sent and decoded, a bare key-shaped item.
        "literal-user",
        "literal-pass",
        "tok%2Bliteral+9e1c",
        "tok+literal 9e1c",
        "bare9c1ekey0a4f7d",
        // The key-shaped path segment and host label.
        "AbCdEf0123456789xYz",
        "k3y1n4h0st5l4b3l9",
    ] {
        assert!(exposed.contains(&want), "{want} missing from {exposed:?}");
    }
    // Echoed, each is scrubbed and the ordinary words of the URL stay (`v1` is a query
    // value, but shorter than a secret the scrubber looks for).
    let scrubber = Scrubber::new(spec.secrets);
    let echoed = "GET /v1/s/AbCdEf0123456789xYz/mcp?api_key=tok%2Bliteral+9e1c&v=v1 \
                  (\"api_key\": \"tok+literal 9e1c\") from k3y1n4h0st5l4b3l9.example";
    assert_eq!(
        scrubber.scrub(echoed),
        "GET /v1/s/[redacted]/mcp?api_key=[redacted]&v=v1 (\"api_key\": \"[redacted]\") \
         from [redacted].example"
    );
}

#[test]
fn a_key_shape_needs_the_length_letters_and_digits() {
    let at = format!("a1{}", "b".repeat(MIN_KEY_SHAPED_CHARS - 2));
    assert!(is_key_shaped(&at));
    assert!(!is_key_shaped(&at[1..]), "one character less");
    assert!(!is_key_shaped("streamable-http-transport"), "no digit");
    assert!(!is_key_shaped("2025-11-25-00-00-00"), "no letter");
    let spec =
        one(json!({"url": format!("https://h.example/{}/{at}", &at[1..])})).expect("accepted");
    let exposed: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    assert!(exposed.contains(&at.as_str()), "{exposed:?}");
    assert!(!exposed.contains(&&at[1..]), "{exposed:?}");
}

#[test]
fn an_oauth_client_is_read_with_its_secrets_and_grant() {
    let spec = one(json!({"url": "https://h.example/mcp", "oauth": {
        "clientId": "client-${env:A}",
        "clientSecret": "${env:PASS}",
        "privateKey": "key-${env:B}-material",
        "grantType": "client_credentials"
    }}))
    .expect("accepted");
    let oauth = spec.oauth.expect("an oauth client");
    assert_eq!(oauth.id.expose(), "client-alpha");
    assert_eq!(
        oauth.secret.as_ref().map(Secret::expose),
        Some("Pa%20ss'%21-9e1c")
    );
    assert_eq!(
        oauth.private_key.as_ref().map(Secret::expose),
        Some("key-beta-material")
    );
    assert!(oauth.machine);
    let secrets: Vec<&str> = spec.secrets.iter().map(Secret::expose).collect();
    assert!(secrets.contains(&"Pa%20ss'%21-9e1c") && secrets.contains(&"key-beta-material"));

    let plain =
        one(json!({"url": "https://h.example/mcp", "oauth": {"clientId": "c"}})).expect("accepted");
    let plain = plain.oauth.expect("a client");
    assert!(!plain.machine && plain.secret.is_none());
    let none = one(json!({"url": "https://h.example/mcp", "oauth": {}})).expect("accepted");
    assert!(none.oauth.is_none());
}

#[test]
fn oauth_refusals_name_the_key() {
    let url = "https://h.example/mcp";
    for (oauth, reason) in [
        (json!("x"), Refusal::OAuthNotAnObject.to_string()),
        (
            json!({"clientSecret": "s3cret-value"}),
            Refusal::OAuthWithoutClientId.to_string(),
        ),
        (
            json!({"grantType": "client_credentials"}),
            Refusal::OAuthWithoutClientId.to_string(),
        ),
        (
            json!({"clientId": "c", "grantType": "password"}),
            Refusal::OAuthGrantType.to_string(),
        ),
        (
            json!({"clientId": 7}),
            "oauth.clientId is not a string".to_owned(),
        ),
        (
            json!({"clientId": "c", "clientSecret": "${env:NOPE}"}),
            "environment variable NOPE is not set (used in oauth.clientSecret)".to_owned(),
        ),
    ] {
        let refused = one(json!({"url": url, "oauth": oauth})).expect_err("refused");
        assert_eq!(refused, reason);
        assert!(!refused.contains("s3cret-value"));
    }
}
