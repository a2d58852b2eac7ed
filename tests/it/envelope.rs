//! A server that lists poisoned tools: each is dropped or cleaned exactly as the envelope
//! promises, and the server's other tools keep working.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::hostile::{Hostile, Request, json_reply, mcp, result_for};

fn nested(depth: usize) -> Value {
    let mut schema = json!({"type": "object"});
    for _ in 1..depth {
        schema = json!({ "not": schema });
    }
    schema
}

fn poisoned_tools(ref_url: &str) -> Vec<Value> {
    let object = json!({"type": "object"});
    let tool = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": object});
    vec![
        tool("ansi", "\u{1b}[31mred\u{1b}[0m text\u{1b}[2J"),
        tool(
            "osc",
            "\u{1b}]8;;http://evil.example\u{7}click\u{1b}]8;;\u{1b}\\ here\u{1b}]0;pwned\u{7}",
        ),
        tool("bidi", "safe\u{202e}txt.exe\u{2066}x\u{2069}"),
        tool("zero_width", "in\u{200b}vis\u{200d}ible\u{feff}\u{e0041}"),
        tool("huge", &"x".repeat(2 * 1024 * 1024)),
        json!({"name": "deep", "inputSchema": nested(55)}),
        json!({"name": "big_schema", "inputSchema": {"type": "object", "description": "y".repeat(1024 * 1024)}}),
        json!({"name": "not_object", "inputSchema": "object"}),
        tool("dup", "the first"),
        tool("dup", "the second"),
        tool(&"n".repeat(300), "a long name"),
        json!({"name": "remote_ref", "inputSchema": {"type": "object", "properties": {"a": {"$ref": ref_url}}}}),
        tool("echo", "Echoes text, or the request's headers."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poisoned_tools_are_dropped_or_cleaned_and_the_rest_still_work() {
    let witness = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    witness.set_nonblocking(true).expect("nonblocking");
    let ref_url = format!(
        "http://127.0.0.1:{}/schema.json",
        witness.local_addr().expect("addr").port()
    );
    let tools = poisoned_tools(&ref_url);
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => json_reply(&result_for(r, json!({"tools": tools}))),
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(
        json!({"s": {"url": server.url, "headers": {"Authorization": "Bearer sekrit-token-42"}}}),
    );
    support::wait_for(&pack, "s", "ready", Duration::from_secs(20)).await;

    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    let description = |name: &str| -> String {
        listing["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["description"].as_str().expect("text").to_owned())
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    assert_eq!(description("ansi"), "red text");
    assert_eq!(description("osc"), "click here");
    assert_eq!(description("bidi"), "safetxt.exex");
    assert_eq!(description("zero_width"), "invisible");
    assert_eq!(description("dup"), "the first");
    let huge = description("huge");
    assert_eq!(
        huge,
        format!(
            "{}\n[... {} characters cut]",
            "x".repeat(4096),
            2 * 1024 * 1024 - 4096
        )
    );

    let rejected: Vec<(String, String)> = listing["rejected"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name").to_owned(),
                r["reason"].as_str().expect("reason").to_owned(),
            )
        })
        .collect();
    let long_name = format!("{}\n[... 172 characters cut]", "n".repeat(128));
    assert_eq!(
        rejected,
        [
            (
                "deep".to_owned(),
                "inputSchema is nested deeper than 32 levels".to_owned()
            ),
            (
                "big_schema".to_owned(),
                "inputSchema is larger than 262144 bytes".to_owned()
            ),
            (
                "not_object".to_owned(),
                "inputSchema is not a JSON object".to_owned()
            ),
            (
                "dup".to_owned(),
                "a second tool with the same name".to_owned()
            ),
            (long_name, "a name longer than 128 characters".to_owned()),
            (
                "remote_ref".to_owned(),
                "inputSchema has a reference that does not resolve inside it".to_owned()
            ),
        ]
    );

    // The listing carries no raw escape or invisible character anywhere.
    let text = pack
        .call("mcp/get_dynamic_tools", json!({"namespace": "s"}))
        .await
        .expect("listing");
    assert!(
        !text
            .chars()
            .any(|c| c == '\u{1b}' || c == '\u{202e}' || c == '\u{200b}' || c == '\u{7}')
    );

    // A $ref to a URL is never fetched: its tool is dropped, the witness sees nothing.
    let outcome = support::call(&pack, "s", "remote_ref", json!({"a": 1})).await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert!(witness.accept().is_err(), "the $ref was fetched");

    // The other tools still work, and a server echoing the credential shows only the marker.
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "still here"})).await,
        Ok("still here".to_owned())
    );
    let echoed = support::call(&pack, "s", "echo", json!({}))
        .await
        .expect("headers echoed");
    assert!(
        echoed.contains("authorization") && echoed.contains("[redacted]"),
        "{echoed}"
    );
    assert!(!echoed.contains("sekrit-token-42"), "{echoed}");
    let server_saw = server.calls_of("tools/call");
    assert!(
        server_saw
            .iter()
            .any(|r| r.header("authorization") == Some("Bearer sekrit-token-42"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_and_errors_are_cleaned_and_scrubbed() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/call" => match r.body["params"]["arguments"]["mode"].as_str() {
            Some("error") => json_reply(&json!({"jsonrpc": "2.0", "id": r.body["id"],
                "error": {"code": -32000, "message": "\u{1b}[31mbad\u{1b}[0m token sekrit-token-42"}})),
            Some("is_error") => json_reply(&result_for(r, json!({"isError": true,
                "content": [{"type": "text", "text": "failed\u{202e} for sekrit-token-42"}]}))),
            _ => json_reply(&result_for(r, json!({"content": [{"type": "text", "text": "\u{1b}]0;title\u{7}ok"}]}))),
        },
        _ => mcp(r),
    })
    .await;
    let pack =
        support::pack(json!({"s": {"url": server.url, "headers": {"X-Token": "sekrit-token-42"}}}));
    support::wait_for(&pack, "s", "ready", Duration::from_secs(10)).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({})).await,
        Ok("ok".to_owned())
    );
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"mode": "error"})).await,
        Err(runvil_plugin::ToolError::Backend(
            "the server answered with error -32000: bad token [redacted]".to_owned()
        ))
    );
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"mode": "is_error"})).await,
        Err(runvil_plugin::ToolError::Backend(
            "failed for [redacted]".to_owned()
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_hints_and_output_schemas_are_shown_cleaned_and_capped() {
    let object = json!({"type": "object"});
    let tools = vec![
        json!({
            "name": "full",
            "title": "Full\u{1b}]0;pwned\u{7} tool\u{202e}",
            "description": "Has everything.",
            "annotations": {"title": "ignored: title wins", "readOnlyHint": true,
                            "destructiveHint": false, "idempotentHint": "yes",
                            "openWorldHint": true, "x-vendor": {"nested": 1}},
            "inputSchema": object,
            "outputSchema": {"type": "object", "description": "out\u{1b}[2J\u{200b}put",
                             "properties": {"n": {"type": "number"}}},
        }),
        json!({"name": "annotated_title", "annotations": {"title": "From annotations"},
               "inputSchema": object}),
        json!({"name": "only_bad_hints", "annotations": {"readOnlyHint": 1},
               "inputSchema": object}),
        json!({"name": "at_cap", "title": "t".repeat(256), "inputSchema": object}),
        json!({"name": "past_cap", "title": "t".repeat(257), "inputSchema": object}),
    ];
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => json_reply(&result_for(r, json!({"tools": tools}))),
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", Duration::from_secs(20)).await;
    let one = support::list(&pack, json!({"namespace": "s", "toolName": "full"})).await;
    assert_eq!(
        one["tool"],
        json!({
            "annotations": {"destructiveHint": false, "openWorldHint": true, "readOnlyHint": true},
            "description": "Has everything.",
            "inputSchema": {"type": "object"},
            "name": "full",
            "outputSchema": {"type": "object", "description": "output",
                             "properties": {"n": {"type": "number"}}},
            "title": "Full tool",
        })
    );
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    let tool = |name: &str| {
        listing["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .expect("listed")
    };
    assert_eq!(tool("full"), one["tool"], "the same view in both listings");
    let annotated = tool("annotated_title");
    assert_eq!(annotated["title"], "From annotations");
    assert_eq!(annotated["description"], "From annotations");
    assert!(annotated.get("annotations").is_none());
    assert!(tool("only_bad_hints").get("annotations").is_none());
    assert!(tool("only_bad_hints").get("outputSchema").is_none());
    assert_eq!(tool("at_cap")["title"], "t".repeat(256));
    assert_eq!(
        tool("past_cap")["title"],
        format!("{}\n[... 1 characters cut]", "t".repeat(256))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_answers_only_task_augmented_calls_is_not_listed_as_callable() {
    let server = Hostile::start(|r: &Request| match r.rpc_method() {
        "tools/list" => {
            let tool = |name: &str, support: &str| {
                json!({"name": name, "inputSchema": {"type": "object"},
                       "execution": {"taskSupport": support}})
            };
            let tools = [
                tool("as_task", "required"),
                tool("either", "optional"),
                tool("plain", "forbidden"),
            ];
            json_reply(&result_for(r, json!({"tools": tools})))
        }
        _ => mcp(r),
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let listing = support::wait_for(&pack, "s", "ready", Duration::from_secs(10)).await;
    assert_eq!(listing["tools"], json!(["either", "plain"]));
    let one = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(
        one["rejected"],
        json!([{"name": "as_task", "reason": "its execution.taskSupport is \"required\": it \
            answers only task-augmented calls, which this Pack does not make"}])
    );
}
