//! What one server's tools may cost: the bytes of all its pages, the tools and rejected
//! entries kept, and the length of every text a model reads (listings and errors), each
//! bounded by the policy and each cut or refusal said in the text itself.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::hostile::{Hostile, Request, Script, http, mcp, raw_result_reply};

/// Big pages take a moment to build and parse; this bounds the wait, not the client.
const SETTLE: Duration = Duration::from_secs(60);

/// The policy's caps, as the texts a model reads state them.
const MAX_TOOLS_LIST_BYTES: usize = 16 * 1024 * 1024;
const MAX_LISTING_BYTES: usize = 2 * 1024 * 1024;
const MAX_ERROR_CHARS: usize = 64 * 1024;

/// A server whose `tools/list` results are these JSON texts, written as they are: the
/// cursor a page names is the index of the next one.
async fn paging(results: Vec<String>) -> Hostile {
    let results = Arc::new(results);
    Hostile::start(move |r: &Request| {
        if r.rpc_method() != "tools/list" {
            return mcp(r);
        }
        let page = r.body["params"]["cursor"].as_str().unwrap_or("0");
        let result = &results[page.parse::<usize>().expect("a cursor this server sent")];
        raw_result_reply(r, result)
    })
    .await
}

/// A `tools/list` result with `tools`, pointing at page `next`, padded with an unused string
/// to exactly `bytes` bytes of JSON.
fn result_of(tools: &[Value], next: Option<usize>, bytes: usize) -> String {
    let cursor = next.map_or(String::new(), |n| format!(r#","nextCursor":"{n}""#));
    let tools = serde_json::to_string(tools).expect("JSON");
    let frame = format!(r#"{{"tools":{tools}{cursor},"padding":""}}"#);
    let padding = "x".repeat(bytes - frame.len());
    format!(r#"{{"tools":{tools}{cursor},"padding":"{padding}"}}"#)
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

async fn listing_text(pack: &Arc<dyn runvil_plugin::Pack>, args: Value) -> String {
    let text = pack.call("mcp/get_dynamic_tools", args).await;
    text.expect("the listing answers")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_may_reach_the_byte_cap_across_pages_and_a_byte_more_fails_the_start() {
    let half = MAX_TOOLS_LIST_BYTES / 2;
    let rest = MAX_TOOLS_LIST_BYTES - half;
    let at_cap = paging(vec![
        result_of(&[tool("a")], Some(1), half),
        result_of(&[tool("b")], None, rest),
    ])
    .await;
    let past_cap = paging(vec![
        result_of(&[tool("a")], Some(1), half),
        result_of(&[tool("b")], None, rest + 1),
    ])
    .await;
    let pack = support::pack(json!({"at": {"url": at_cap.url}, "past": {"url": past_cap.url}}));
    let at = support::wait_for(&pack, "at", "ready", SETTLE).await;
    assert_eq!(at["tools"], json!(["a", "b"]));
    let past = support::settled(&pack, "past", SETTLE).await;
    assert_eq!(
        past,
        json!({"namespace": "past", "status": "error",
               "reason": "tools/list sent more than 16777216 bytes of tools across its pages"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_a_million_empty_tools_keeps_a_hundred_rejected_and_counts_the_rest() {
    let empties = vec!["{}"; 1_000_000].join(",");
    let server = paging(vec![format!(r#"{{"tools":[{empties}]}}"#)]).await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "ready", SETTLE).await;
    assert_eq!(entry["tools"], json!([]));
    let text = listing_text(&pack, json!({"namespace": "s"})).await;
    assert!(text.len() < 16 * 1024, "{} bytes", text.len());
    let listing: Value = serde_json::from_str(&text).expect("JSON");
    let one = json!({"name": "", "reason": "a tool without a string name"});
    assert_eq!(listing["rejected"], Value::Array(vec![one; 100]));
    assert_eq!(listing["rejectedNotShown"], 999_900);
    assert_eq!(listing["tools"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_and_one_tools_keep_ten_thousand_and_drop_the_last_with_a_reason() {
    let tools: Vec<Value> = (0..10_001).map(|i| tool(&format!("t{i:05}"))).collect();
    let tools = serde_json::to_string(&tools).expect("JSON");
    let server = paging(vec![format!(r#"{{"tools":{tools}}}"#)]).await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "ready", SETTLE).await;
    assert_eq!(entry["tools"].as_array().map(Vec::len), Some(10_000));
    assert_eq!(entry["tools"][9_999], "t09999");
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(
        listing["rejected"],
        json!([{"name": "t10000", "reason": "past the 10000 tools a server may list"}])
    );
}

/// A tool at its largest: a name of 128 characters, a description past its cap and a schema
/// just under its own.
fn largest_tool(name: &str) -> Value {
    let schema_text = "\"".repeat(100_000) + &"x".repeat(40_000);
    json!({
        "name": format!("{name}{}", "n".repeat(128 - name.len())),
        "description": "\"".repeat(5_000),
        "inputSchema": {"type": "object", "description": schema_text},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_listing_text_stays_within_its_cap_and_says_what_it_left_out() {
    // Ten tools at their largest are more than one answer holds.
    let big: Vec<Value> = (0..10).map(|i| largest_tool(&format!("big{i}"))).collect();
    let big = paging(vec![format!(
        r#"{{"tools":{}}}"#,
        serde_json::to_string(&big).expect("JSON")
    )])
    .await;
    // Two servers of 10,000 long names are more names than one answer holds.
    let names = |prefix: &str| -> Vec<Value> {
        let long = "n".repeat(120);
        (0..10_000)
            .map(|i| tool(&format!("{prefix}{i:05}{long}")))
            .collect()
    };
    let many_a = paging(vec![json!({"tools": names("a")}).to_string()]).await;
    let many_b = paging(vec![json!({"tools": names("b")}).to_string()]).await;
    let pack = support::pack(json!({
        "big": {"url": big.url}, "many_a": {"url": many_a.url}, "many_b": {"url": many_b.url},
    }));
    for namespace in ["big", "many_a", "many_b"] {
        support::wait_for(&pack, namespace, "ready", SETTLE).await;
    }

    let text = listing_text(&pack, json!({})).await;
    assert!(text.len() <= MAX_LISTING_BYTES, "{} bytes", text.len());
    let every: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        every["note"],
        "this answer is capped at 2097152 bytes: a server whose tool names do not all fit \
         shows the first ones in name order, and toolsNotShown counts the rest. \
         get_dynamic_tools with a namespace lists that server's tools."
    );
    let servers = every["servers"].as_array().expect("servers");
    assert_eq!(servers[0]["tools"].as_array().map(Vec::len), Some(10));
    assert!(servers[0].get("toolsNotShown").is_none());
    for server in &servers[1..] {
        let shown = server["tools"].as_array().map_or(0, Vec::len);
        assert!(shown > 7_000, "{server:.80}");
        assert_eq!(
            shown as u64 + server["toolsNotShown"].as_u64().expect("count"),
            10_000
        );
    }

    let text = listing_text(&pack, json!({"namespace": "big"})).await;
    assert!(text.len() <= MAX_LISTING_BYTES, "{} bytes", text.len());
    let one: Value = serde_json::from_str(&text).expect("JSON");
    let shown = one["tools"].as_array().map_or(0, Vec::len);
    assert!((1..10).contains(&shown), "{shown}");
    assert_eq!(one["toolsNotShown"], 10 - shown);
    assert_eq!(
        one["note"],
        "this answer is capped at 2097152 bytes: it shows the tools in name order while they \
         fit, and toolsNotShown counts the rest. get_dynamic_tools with namespace and toolName \
         shows any one tool; with no arguments it lists the names."
    );

    let last = format!("big9{}", "n".repeat(124));
    let text = listing_text(&pack, json!({"namespace": "big", "toolName": last})).await;
    assert!(text.len() <= MAX_LISTING_BYTES, "{} bytes", text.len());
    let tool: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(tool["tool"]["name"], last);
    let description = tool["tool"]["description"].as_str().expect("text");
    assert_eq!(
        description,
        format!("{}\n[... 904 characters cut]", "\"".repeat(4096))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_text_may_reach_its_cap_and_is_cut_past_it() {
    let server = Hostile::start(mcp).await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    let frame = r#"s has no tool ""; its tools are: echo"#.len();
    let at_cap = "x".repeat(MAX_ERROR_CHARS - frame);
    let error = support::call(&pack, "s", &at_cap, json!({})).await;
    let error = error.expect_err("no such tool");
    assert_eq!(
        error.message(),
        format!(r#"s has no tool "{at_cap}"; its tools are: echo"#)
    );
    let past_cap = "x".repeat(MAX_ERROR_CHARS - frame + 1);
    let error = support::call(&pack, "s", &past_cap, json!({})).await;
    let error = error.expect_err("no such tool");
    assert_eq!(
        error.message(),
        format!("s has no tool \"{past_cap}\"; its tools are: ech\n[... 1 characters cut]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_failure_s_reason_is_cut_at_the_error_cap() {
    // A content type as long as HTTP lets a server send: quoted in the reason, which is
    // shown in the listing and logged.
    let kind = format!("text/{}", "x".repeat(MAX_ERROR_CHARS));
    let server = Hostile::start(move |_: &Request| {
        Script::raw(http("200 OK", &[("content-type", &kind)], b"{}"))
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "error", SETTLE).await;
    let reason = entry["reason"].as_str().expect("a reason");
    let (kept, note) = reason.rsplit_once("\n[... ").expect("cut with a note");
    assert_eq!(kept.chars().count(), MAX_ERROR_CHARS);
    assert!(note.ends_with(" characters cut]"), "{note}");
}
