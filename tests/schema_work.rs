//! A server's schemas cannot make the client work without bound, and what a schema check
//! says passes the envelope: reference bombs are dropped at listing, a check past the work
//! budget fails closed, violation texts are cleaned and capped, and a dropped call never
//! starts its check. This file is its own test binary, so it can own the log subscriber.

use shared_mcp_fixture::test_support as support;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::ToolError;
use serde_json::{Map, Value, json};
use support::hostile::{Hostile, Request, json_reply, mcp, result_for};

const QUICK: Duration = Duration::from_secs(20);

/// `levels` definitions, each `allOf` of two references to the next: 2^levels leaves in
/// a schema of a few kilobytes.
fn bomb(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({"allOf": [next, next]}));
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"type": "object", "$defs": defs, "properties": {"a": {"$ref": "#/$defs/d0"}}})
}

/// A root whose `$ref` starts a chain of `refs` references: `refs + 2` levels deep with its
/// references expanded (root, `$defs`, then one level a reference).
fn chain(refs: usize) -> Value {
    let mut defs = Map::new();
    for i in 1..refs {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert(format!("d{refs}"), json!({"type": "object"}));
    json!({"$ref": "#/$defs/d1", "$defs": defs})
}

/// A schema of 262144 nodes with its references expanded (`MAX_SCHEMA_EXPANSION`, in a few
/// kilobytes): 256 references to a definition of 1002 nodes, padded to the exact size.
fn at_the_expansion_limit() -> Value {
    let refs = vec![json!({"$ref": "#/$defs/a"}); 256];
    json!({
        "$defs": {"a": {"enum": vec![0; 1000]}},
        "allOf": refs,
        "const": vec![0; 4114],
    })
}

/// An object of `values` JSON values: itself and `values - 1` properties.
fn object_of(values: usize) -> Value {
    (1..values)
        .map(|i| (format!("p{i}"), json!(i)))
        .collect::<Map<String, Value>>()
        .into()
}

/// A server that lists `tools` beside the well-behaved `echo`, and answers `tools/call` of
/// anything but `echo` with `result`.
async fn server(tools: Vec<Value>, result: Value) -> Hostile {
    Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => {
            let mut all = tools.clone();
            all.push(json!({"name": "echo", "inputSchema": {"type": "object"}}));
            json_reply(&result_for(r, json!({"tools": all})))
        }
        "tools/call" if r.body["params"]["name"] != "echo" => {
            json_reply(&result_for(r, result.clone()))
        }
        _ => mcp(r),
    })
    .await
}

async fn ready_pack(server: &Hostile) -> Arc<dyn runvil_plugin::Pack> {
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", QUICK).await;
    pack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_bombs_are_dropped_at_listing_and_the_other_tools_work() {
    let object = json!({"type": "object"});
    let tools = vec![
        json!({"name": "in_bomb", "inputSchema": bomb(40)}),
        json!({"name": "out_bomb", "inputSchema": object, "outputSchema": bomb(40)}),
        json!({"name": "deepest", "inputSchema": chain(126)}),
        json!({"name": "too_deep", "inputSchema": chain(127)}),
        json!({"name": "at_limit", "inputSchema": at_the_expansion_limit()}),
    ];
    let server = server(tools, json!({"content": []})).await;
    let pack = ready_pack(&server).await;

    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(
        listing["rejected"],
        json!([
            {"name": "in_bomb", "reason": "inputSchema expands through its references to more than 262144 nodes"},
            {"name": "out_bomb", "reason": "outputSchema expands through its references to more than 262144 nodes"},
            {"name": "too_deep", "reason": "inputSchema is nested deeper than 128 levels through its references"},
        ])
    );
    let names = support::tool_names(&listing);
    assert_eq!(names, ["at_limit", "deepest", "echo"]);
    assert_eq!(
        support::call(&pack, "s", "in_bomb", json!({"a": "x"})).await,
        Err(ToolError::Invalid(
            "s has no tool \"in_bomb\"; its tools are: at_limit, deepest, echo".to_owned()
        ))
    );
    assert_eq!(
        support::call(&pack, "s", "echo", json!({"text": "still here"})).await,
        Ok("still here".to_owned())
    );
    assert!(
        server
            .calls_of("tools/call")
            .iter()
            .all(|r| r.body["params"]["name"] == "echo")
    );
    // The deepest accepted schema checks arguments like any other, and the call goes out.
    assert_eq!(
        support::call(&pack, "s", "deepest", json!({"x": 1})).await,
        Ok(String::new())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_past_the_work_budget_fails_closed() {
    // 33554432 units of work (MAX_VALIDATION_WORK) over 262144 nodes allow 128 values.
    let schema = at_the_expansion_limit();
    let tools = vec![
        json!({"name": "wide_in", "inputSchema": schema}),
        json!({"name": "wide_out", "inputSchema": {"type": "object"}, "outputSchema": schema}),
    ];
    let server = server(
        tools,
        json!({"content": [], "structuredContent": object_of(129)}),
    )
    .await;
    let pack = ready_pack(&server).await;

    let at_budget = support::call(&pack, "s", "wide_in", object_of(128)).await;
    let Err(ToolError::Invalid(checked)) = at_budget else {
        panic!("{at_budget:?}");
    };
    assert!(
        checked.starts_with("the arguments do not match the input schema of wide_in:\n- /: "),
        "{checked}"
    );
    assert_eq!(
        support::call(&pack, "s", "wide_in", object_of(129)).await,
        Err(ToolError::Invalid(
            "the arguments are too large to check against the input schema of wide_in: with \
             its references expanded it has 262144 nodes, which allows at most 128 JSON values; \
             nothing was sent"
                .to_owned()
        ))
    );
    assert!(
        server.calls_of("tools/call").is_empty(),
        "unchecked arguments were sent"
    );

    assert_eq!(
        support::call(&pack, "s", "wide_out", json!({})).await,
        Err(ToolError::Backend(
            "the result's structuredContent is too large to check against the tool's \
             outputSchema: with its references expanded it has 262144 nodes, which allows at \
             most 128 JSON values; the result is not shown"
                .to_owned()
        ))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn violation_texts_are_cleaned_and_capped() {
    let hostile_key =
        "\u{1b}]52;c;ZXZpbA==\u{7}copied\u{1b}[2Jcleared\u{202e}reversed\u{e0041}\u{e0042}tagged";
    let huge_key = "k".repeat(15 * 1024 * 1024);
    let long_const = "c".repeat(100_000);
    let integers = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    let tools = vec![
        json!({"name": "shaped", "inputSchema": {"type": "object"}, "outputSchema": integers}),
        json!({"name": "picky", "inputSchema": {"type": "object", "properties": {"p": {"const": long_const}}}}),
    ];
    let result = json!({"content": [], "structuredContent": {hostile_key: "x"}});
    let key_bytes = huge_key.len();
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => json_reply(&result_for(r, json!({"tools": tools}))),
        "tools/call" => match r.body["params"]["arguments"]["huge"].as_bool() {
            Some(true) => json_reply(&result_for(
                r,
                json!({"content": [], "structuredContent": {huge_key.as_str(): "x"}}),
            )),
            _ => json_reply(&result_for(r, result.clone())),
        },
        _ => mcp(r),
    })
    .await;
    let pack = ready_pack(&server).await;

    assert_eq!(
        support::call(&pack, "s", "shaped", json!({})).await,
        Err(ToolError::Backend(
            "the result's structuredContent does not match the tool's outputSchema at \
             /copiedclearedreversedtagged: value is not of type \"integer\""
                .to_owned()
        ))
    );

    // A 15 MB key: one violation is at most 1024 characters (MAX_VIOLATION_CHARS).
    let Err(ToolError::Backend(cut)) =
        support::call(&pack, "s", "shaped", json!({"huge": true})).await
    else {
        panic!("the huge key is not an error");
    };
    let shown = format!("/{}", "k".repeat(1023));
    let total = 1 + key_bytes + ": value is not of type \"integer\"".len();
    assert_eq!(
        cut,
        format!(
            "the result's structuredContent does not match the tool's outputSchema at \
             {shown}\n[... {} characters cut]",
            total - 1024
        )
    );

    // An input violation quoting a schema's 100 KB string is cut the same way.
    let Err(ToolError::Invalid(quoted)) =
        support::call(&pack, "s", "picky", json!({"p": "none"})).await
    else {
        panic!("the enum is not enforced");
    };
    let violation = quoted
        .strip_prefix("the arguments do not match the input schema of picky:\n- ")
        .expect("the error's start");
    let message = format!("/p: \"{}\" was expected", "c".repeat(100_000));
    assert_eq!(
        violation,
        format!(
            "{}\n[... {} characters cut]",
            &message[..1024],
            message.len() - 1024
        )
    );
}

#[test]
fn a_dropped_call_never_starts_its_check() {
    // Every debug line of the Pack in this test binary.
    let logs = support::logs::capture("plugin_mcp=debug");
    // One blocking thread, which the test holds: the call's first check compiles the schema
    // there, so it can only wait in line.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let server = Hostile::start(mcp).await;
        let pack = ready_pack(&server).await;
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = tokio::task::spawn_blocking(move || held.recv());

        let call = support::call(&pack, "s", "echo", json!({"text": "never sent"}));
        let waited = tokio::time::timeout(Duration::from_millis(200), call).await;
        assert!(
            waited.is_err(),
            "the call finished beside a held pool: {waited:?}"
        );
        // The timeout dropped the call with its check still in line; now let the line move.
        release.send(()).expect("release");
        holder.await.expect("holder").expect("released");

        let dropped = "a check was not started: its call was dropped tool=echo";
        support::wait_until(
            "the dropped call's check to be skipped",
            QUICK,
            async || logs.text().contains(dropped),
        )
        .await;
        assert!(
            server.calls_of("tools/call").is_empty(),
            "a dropped call was sent"
        );
    });
}
