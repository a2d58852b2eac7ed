//! `get_dynamic_tools {query}` through the contract: the best-matching tools of every ready
//! server, best first, with short descriptions; the usage errors a model can read.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Pack, ToolError};
use serde_json::{Value, json};
use support::changing::{Changing, Era, tool};
use support::hostile::Hostile;

/// Generous: a local server is ready in milliseconds.
const READY: Duration = Duration::from_secs(10);

/// A server listing `tools`.
async fn serving(tools: Value) -> Hostile {
    Hostile::start(Changing::new(tools).handler(Era::Legacy)).await
}

/// A Pack over a mail server, a file server and a refused entry, once both servers are ready.
async fn mail_and_files(mail: &Hostile, files: &Hostile) -> Arc<dyn Pack> {
    let pack = support::pack(json!({
        "mail": {"url": mail.url},
        "files": {"url": files.url},
        "local": {"command": "mail-server"},
    }));
    support::wait_for(&pack, "mail", "ready", READY).await;
    support::wait_for(&pack, "files", "ready", READY).await;
    pack
}

fn result(namespace: &str, name: &str, description: &str) -> Value {
    json!({"namespace": namespace, "name": name, "description": description})
}

async fn invalid(pack: &Arc<dyn Pack>, args: Value) -> String {
    match pack.call("mcp/get_dynamic_tools", args).await {
        Err(ToolError::Invalid(message)) => message,
        other => panic!("expected an invalid error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_answers_the_best_matching_tools_of_the_ready_servers() {
    let mail = serving(json!([
        tool("send_email", "Sends an email\n\nto one   recipient."),
        tool("read_email", "Reads one email."),
        tool("list_labels", "Lists the labels."),
    ]))
    .await;
    let long = format!("Writes a file. {}", "Then more. ".repeat(40));
    let files = serving(json!([
        tool("write_file", &long),
        tool("send_file", "Sends a file.")
    ]))
    .await;
    let pack = mail_and_files(&mail, &files).await;

    // The two that match one word each score the same: the namespace decides.
    let answer = support::list(&pack, json!({"query": "send an email"})).await;
    assert_eq!(
        answer,
        json!({"query": "send an email", "results": [
            result("mail", "send_email", "Sends an email to one recipient."),
            result("files", "send_file", "Sends a file."),
            result("mail", "read_email", "Reads one email."),
        ], "notSearched": ["local"]})
    );
    // Within one server; a description past its cap is cut and says so.
    let answer = support::list(&pack, json!({"namespace": "files", "query": "write"})).await;
    let cut = format!("{}…", &long[..199]);
    assert_eq!(
        answer,
        json!({"query": "write", "results": [result("files", "write_file", &cut)]})
    );
    // A name's start finds it first, whatever the words say.
    let answer = support::list(&pack, json!({"query": "list_"})).await;
    assert_eq!(answer["results"][0]["name"], "list_labels");
    // Nothing matches: an empty list, not an error.
    let answer = support::list(&pack, json!({"query": "quantum teleportation"})).await;
    assert_eq!(
        answer,
        json!({"query": "quantum teleportation", "results": [], "notSearched": ["local"]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_with_a_tool_name_or_past_its_length_is_a_usage_error() {
    let mail = serving(json!([tool("send_email", "Sends an email.")])).await;
    let files = serving(json!([tool("write_file", "Writes a file.")])).await;
    let pack = mail_and_files(&mail, &files).await;
    let refused = invalid(
        &pack,
        json!({"namespace": "mail", "toolName": "send_email", "query": "send"}),
    )
    .await;
    assert_eq!(
        refused,
        "query searches for tools and takes no toolName: pass query (and namespace to search \
         one server), or namespace and toolName to show one tool"
    );
    let at_limit = "e".repeat(256);
    let answer = support::list(&pack, json!({"query": at_limit})).await;
    assert_eq!(answer["results"], json!([]));
    let refused = invalid(&pack, json!({"query": "e".repeat(257)})).await;
    assert_eq!(refused, "query must be at most 256 characters");
    assert_eq!(
        invalid(&pack, json!({"query": ""})).await,
        "query must not be empty"
    );
    assert_eq!(
        invalid(&pack, json!({"query": 3})).await,
        "query must be a string"
    );
    let refused = invalid(&pack, json!({"namespace": "nope", "query": "send"})).await;
    assert_eq!(
        refused,
        "unknown namespace \"nope\"; the namespaces are: files, local, mail"
    );
}

/// `count` tools that all match "match", the later ones better (each says it once more).
fn matching(count: usize) -> Value {
    let tools: Vec<Value> = (0..count)
        .map(|i| {
            tool(
                &format!("t{i:02}"),
                &format!("{}.", "match ".repeat(1 + i % 2)),
            )
        })
        .collect();
    Value::Array(tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_answers_at_most_twenty_tools() {
    let at_limit = serving(matching(20)).await;
    let past = serving(matching(21)).await;
    let pack = support::pack(json!({
        "at": {"url": at_limit.url},
        "past": {"url": past.url},
    }));
    support::wait_for(&pack, "at", "ready", READY).await;
    support::wait_for(&pack, "past", "ready", READY).await;
    let names = |answer: &Value| -> Vec<String> {
        let results = answer["results"].as_array().expect("results");
        results
            .iter()
            .map(|r| r["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    let answer = support::list(&pack, json!({"namespace": "at", "query": "match"})).await;
    assert_eq!(names(&answer).len(), 20);
    // One past it: the twenty best, those saying it twice first; t20 (once) is left out.
    let answer = support::list(&pack, json!({"namespace": "past", "query": "match"})).await;
    let mut expected: Vec<String> = (1..20).step_by(2).map(|i| format!("t{i:02}")).collect();
    expected.extend((0..20).step_by(2).map(|i| format!("t{i:02}")));
    assert_eq!(names(&answer), expected);
}
