//! `build-xtask conformance-client <server URL>`: the MCP client the conformance suite drives,
//! a Host with the `mcp` Pack, built through `plugin_mcp::install`, and a user of it.
//!
//! The suite runs it with the scenario's name in `MCP_CONFORMANCE_SCENARIO` and, for some
//! scenarios, data in `MCP_CONFORMANCE_CONTEXT`. The client configures the Pack with that one
//! server, waits until it is ready, and then does what a user would do in the scenario: look
//! at the tools, call one, or call several. Those are the only decisions it makes; every
//! protocol decision (the revision, the headers, the retries, which tools to reject) is the
//! Pack's, so a scenario passes only if the Pack does the right thing. The suite also passes
//! the revision it tests in `MCP_CONFORMANCE_PROTOCOL_VERSION`; the client does not read it,
//! because choosing the revision is the Pack's and the Pack has no setting that pins one.
//!
//! It prints what the user saw on stdout (the server's tools, each call's answer) and exits 0,
//! or exits 1 with every failure on stderr. It writes on stderr only when it fails: the
//! harness reads that from the suite's results, because in suite mode the suite ignores the
//! client's exit code.

use std::sync::Arc;
use std::time::Duration;

use super::browser::Browser;
use runvil_plugin::{AUTHORIZER, Authorizer, CLIENT_METADATA_URL, Pack, Services};
use serde_json::{Value, json};
use shared_mcp_fixture::{call, listing, pack_with, ready};

/// The namespace the server is configured under.
const NAMESPACE: &str = "server";
/// How long the server may stay `loading` (the suite kills the client after 30 s).
const READY_WITHIN: Duration = Duration::from_secs(20);

/// What the user does once the server is ready.
#[derive(Debug, PartialEq)]
enum Errand {
    /// Looks at the tools and nothing else.
    Look,
    /// Calls these tools, in order, with these arguments.
    Call(Vec<(String, Value)>),
    /// Calls every tool the Pack lists, filling in each required argument.
    CallEach,
    /// Calls `to` with the input schema the Pack lists for `of`, as `{"schema": ...}`.
    EchoSchema { of: &'static str, to: &'static str },
}

/// What the user does in `scenario`, from its description in the suite. A scenario that lists
/// the calls to make in its context (`toolCalls`: `[{"name", "arguments"}]`) gets those.
fn errand(scenario: &str, context: Option<&Value>) -> Errand {
    let listed = context.and_then(|context| context["toolCalls"].as_array());
    if let Some(calls) = listed {
        let calls = calls.iter().filter_map(|call| {
            let name = call["name"].as_str()?;
            Some((name.to_owned(), call["arguments"].clone()))
        });
        return Errand::Call(calls.collect());
    }
    let one = |tool: &str, arguments: Value| Errand::Call(vec![(tool.to_owned(), arguments)]);
    match scenario {
        "tools_call" => one("add_numbers", json!({"a": 2, "b": 3})),
        "sse-retry" => one("test_reconnection", json!({})),
        "elicitation-sep1034-client-defaults" => one("test_client_elicitation_defaults", json!({})),
        "json-schema-2020-12-preservation" => Errand::EchoSchema {
            of: "json_schema_2020_12_tool",
            to: "json_schema_echo",
        },
        "http-standard-headers" | "http-invalid-tool-headers" | "sep-2322-client-request-state" => {
            Errand::CallEach
        }
        auth if auth.starts_with("auth/") => one("test-tool", json!({})),
        _ => Errand::Look,
    }
}

/// The subcommand's entry point: `Ok(false)` (every failure on stderr) if the user could not
/// do the errand.
pub(crate) fn command(args: &[String]) -> Result<bool, String> {
    let Some(url) = args.last() else {
        return Err(
            "usage: conformance-client <server URL>  (scenario in MCP_CONFORMANCE_SCENARIO)"
                .to_owned(),
        );
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").ok();
    let context = context
        .map(|text| serde_json::from_str::<Value>(&text))
        .transpose();
    let context =
        context.map_err(|error| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {error}"))?;
    let errand = errand(&scenario, context.as_ref());
    let servers = json!({ NAMESPACE: entry(url, &scenario, context.as_ref()) });
    let runtime = tokio::runtime::Runtime::new();
    let runtime = runtime.map_err(|error| format!("cannot build the tokio runtime: {error}"))?;
    // The Pack is lent this runtime, as a Host lends its own.
    let _entered = runtime.enter();
    let failures = match pack_with(servers, services()) {
        Ok(pack) => runtime.block_on(async {
            let failures = run(&pack, errand).await;
            // Ends the session (a DELETE) and completes once it has been sent.
            pack.shutdown().await;
            failures
        }),
        Err(error) => vec![error.to_string()],
    };
    for failure in &failures {
        eprintln!("{failure}");
    }
    Ok(failures.is_empty())
}

/// The URL at which this Host publishes its OAuth Client ID Metadata Document, in the suite's
/// world (the suite's authorization servers that accept such documents expect this one).
const CLIENT_METADATA_DOCUMENT: &str = "https://conformance-test.local/client-metadata.json";

/// The server's entry, as a user would write it: the URL, and the OAuth client the user
/// registered beforehand when the scenario's context gives one (its secret or private key).
/// In the client credentials scenarios that client is a machine's, and the user says so.
fn entry(url: &str, scenario: &str, context: Option<&Value>) -> Value {
    let mut entry = json!({ "url": url });
    let Some(context) = context else {
        return entry;
    };
    if let Some(id) = context["client_id"].as_str() {
        entry["oauth"] = json!({ "clientId": id });
        if let Some(secret) = context["client_secret"].as_str() {
            entry["oauth"]["clientSecret"] = json!(secret);
        }
        if let Some(key) = context["private_key_pem"].as_str() {
            entry["oauth"]["privateKey"] = json!(key);
        }
        if scenario.starts_with("auth/client-credentials") {
            entry["oauth"]["grantType"] = json!("client_credentials");
        }
    }
    entry
}

/// What this Host lends the Pack beyond its runtime: a browser for authorizations, and the
/// URL of its client metadata document.
fn services() -> Services {
    let mut services = Services::new();
    match Browser::new() {
        Ok(browser) => {
            let browser: Arc<dyn Authorizer> = Arc::new(browser);
            services.insert(AUTHORIZER, browser);
        }
        Err(error) => eprintln!("{error}"),
    }
    services.insert(CLIENT_METADATA_URL, CLIENT_METADATA_DOCUMENT.to_owned());
    services
}

/// Waits for the server, shows its tools and runs the errand; every failure, in order. A
/// failed call does not stop the others, as a user would try the next one.
async fn run(pack: &Arc<dyn Pack>, errand: Errand) -> Vec<String> {
    let listed = match ready(pack, NAMESPACE, READY_WITHIN).await {
        Ok(_) => listing(pack, json!({ "namespace": NAMESPACE })).await,
        Err(reason) => Err(reason),
    };
    let listed = match listed {
        Ok(listed) => listed,
        Err(reason) => return vec![reason],
    };
    println!("{listed}");
    let tools = listed["tools"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let calls = match errand {
        Errand::Look => Vec::new(),
        Errand::Call(calls) => calls,
        Errand::CallEach => tools
            .iter()
            .filter_map(|tool| {
                let name = tool["name"].as_str()?;
                Some((name.to_owned(), arguments_for(&tool["inputSchema"])))
            })
            .collect(),
        Errand::EchoSchema { of, to } => match tools.iter().find(|tool| tool["name"] == of) {
            Some(tool) => vec![(to.to_owned(), json!({"schema": tool["inputSchema"]}))],
            None => return vec![format!("the Pack lists no tool `{of}`: {listed}")],
        },
    };
    let mut failures = Vec::new();
    for (tool, arguments) in calls {
        match call(pack, NAMESPACE, &tool, arguments).await {
            Ok(text) => println!("{tool}: {text}"),
            Err(error) => failures.push(format!("{tool}: {error}")),
        }
    }
    failures
}

/// The arguments a user fills in for a tool with this input schema: each required property,
/// with a value of its declared type.
fn arguments_for(schema: &Value) -> Value {
    let required = schema["required"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let arguments = required.iter().filter_map(Value::as_str).map(|name| {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            Some("null") => Value::Null,
            _ => json!("example"),
        };
        (name.to_owned(), value)
    });
    Value::Object(arguments.collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_s_calls_come_first_then_the_scenario_s_errand() {
        let context = json!({"name": "x", "toolCalls": [
            {"name": "a", "arguments": {"k": 1}},
            {"name": "b", "arguments": {}},
            {"arguments": {}}
        ]});
        assert_eq!(
            errand("tools_call", Some(&context)),
            Errand::Call(vec![
                ("a".to_owned(), json!({"k": 1})),
                ("b".to_owned(), json!({}))
            ])
        );
        assert_eq!(
            errand("tools_call", Some(&json!({"name": "tools_call"}))),
            Errand::Call(vec![("add_numbers".to_owned(), json!({"a": 2, "b": 3}))])
        );
        assert_eq!(
            errand("auth/scope-step-up", None),
            Errand::Call(vec![("test-tool".to_owned(), json!({}))])
        );
        assert_eq!(errand("http-invalid-tool-headers", None), Errand::CallEach);
        assert_eq!(errand("initialize", None), Errand::Look);
        assert_eq!(errand("", None), Errand::Look);
    }

    #[test]
    fn fills_in_each_required_argument_with_its_type() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"},
            "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array"},
            "z": {"type": "null"}, "u": {}, "optional": {"type": "string"}
        }, "required": ["s", "i", "n", "b", "o", "a", "z", "u", "missing"]});
        assert_eq!(
            arguments_for(&schema),
            json!({"s": "example", "i": 1, "n": 1, "b": true, "o": {}, "a": [], "z": null,
                   "u": "example", "missing": "example"})
        );
        assert_eq!(arguments_for(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn the_entry_carries_the_client_the_user_registered() {
        assert_eq!(entry("u", "initialize", None), json!({"url": "u"}));
        let public = json!({"client_id": "c"});
        let entry_for = |scenario| entry("u", scenario, Some(&public));
        assert_eq!(
            entry_for("auth/pre-registration"),
            json!({"url": "u", "oauth": {"clientId": "c"}})
        );
        let machine = json!({"client_id": "c", "client_secret": "s", "private_key_pem": "k"});
        assert_eq!(
            entry("u", "auth/client-credentials-jwt", Some(&machine)),
            json!({"url": "u", "oauth": {"clientId": "c", "clientSecret": "s", "privateKey": "k",
                   "grantType": "client_credentials"}})
        );
    }
}
