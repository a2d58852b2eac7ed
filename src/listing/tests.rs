//! The listing's caps, each at its limit and one past.

use serde_json::{Value, json};

use super::*;
use crate::envelope::ToolPages;
use crate::text::Untrusted;

fn tool_set(tools: &[Value]) -> ToolSet {
    let page = serde_json::value::to_raw_value(&json!({ "tools": tools })).expect("JSON");
    let mut catalog = ToolPages::default();
    catalog.add_page(&Untrusted::new(page)).expect("within");
    catalog.finish()
}

fn tool(name: &str, padding: usize) -> Value {
    let schema = json!({"type": "object", "description": "x".repeat(padding)});
    json!({"name": name, "description": "d", "inputSchema": schema})
}

/// Nine large tools whose whole one-server answer is `bytes` long.
fn nine_tools_in(bytes: usize) -> ToolSet {
    let mut tools: Vec<Value> = (0..9).map(|i| tool(&format!("t{i}"), 230_000)).collect();
    let short = bytes - one_server("s", &tool_set(&tools), "2025-11-25").len();
    tools[8] = tool("t8", 230_000 + short);
    tool_set(&tools)
}

fn decode(text: &str) -> Value {
    serde_json::from_str(text).expect("the answer is JSON")
}

#[test]
fn one_server_shows_every_tool_up_to_the_cap_and_says_what_it_left_out_past_it() {
    let at_cap = one_server("s", &nine_tools_in(MAX_LISTING_BYTES), "2025-11-25");
    assert_eq!(at_cap.len(), MAX_LISTING_BYTES);
    let shown = decode(&at_cap);
    assert_eq!(shown["tools"].as_array().map(Vec::len), Some(9));
    assert!(shown.get("note").is_none() && shown.get("toolsNotShown").is_none());

    let past_cap = one_server("s", &nine_tools_in(MAX_LISTING_BYTES + 1), "2025-11-25");
    assert!(past_cap.len() <= MAX_LISTING_BYTES, "{}", past_cap.len());
    let shown = decode(&past_cap);
    assert_eq!(shown["tools"].as_array().map(Vec::len), Some(8));
    assert_eq!(shown["toolsNotShown"], 1);
    assert_eq!(
        shown["note"],
        "this answer is capped at 2097152 bytes: it shows the tools in name order while they \
         fit, and toolsNotShown counts the rest. get_dynamic_tools with namespace and toolName \
         shows any one tool; with no arguments it lists the names."
    );
}

#[test]
fn one_server_lists_the_rejected_it_kept_and_counts_the_rest() {
    let at_cap = decode(&one_server(
        "s",
        &tool_set(&vec![json!({}); 100]),
        "2025-11-25",
    ));
    assert_eq!(at_cap["rejected"].as_array().map(Vec::len), Some(100));
    assert!(at_cap.get("rejectedNotShown").is_none());
    let past_cap = decode(&one_server(
        "s",
        &tool_set(&vec![json!({}); 101]),
        "2025-11-25",
    ));
    assert_eq!(past_cap["rejected"].as_array().map(Vec::len), Some(100));
    assert_eq!(past_cap["rejectedNotShown"], 1);
    assert_eq!(
        past_cap["rejected"][99],
        json!({"name": "", "reason": "a tool without a string name"})
    );
}

/// Two ready servers: `few` with three names, `many` with enough to make the whole answer
/// `bytes` long.
fn every_server_in(bytes: usize) -> String {
    let few = RawValue::from_string(r#"["x","y","z"]"#.to_owned()).expect("JSON");
    let summary = |namespace, names| Summary {
        namespace,
        status: "ready",
        reason: None,
        tools: Some(names),
        tools_not_shown: None,
        held: 0,
    };
    let names = |last: usize| {
        let mut names: Vec<String> = (0..20_000).map(|i| format!("{i:0100}")).collect();
        names.push("n".repeat(last));
        serde_json::value::to_raw_value(&names).expect("JSON")
    };
    let base = names(0);
    let whole = every_server(vec![summary("few", &few), summary("many", &base)]);
    let many = names(bytes - whole.len());
    every_server(vec![summary("few", &few), summary("many", &many)])
}

#[test]
fn every_server_shows_every_name_up_to_the_cap_and_shares_the_room_past_it() {
    let at_cap = every_server_in(MAX_LISTING_BYTES);
    assert_eq!(at_cap.len(), MAX_LISTING_BYTES);
    let shown = decode(&at_cap);
    assert_eq!(
        shown["servers"][1]["tools"].as_array().map(Vec::len),
        Some(20_001)
    );
    assert!(shown.get("note").is_none());

    let past_cap = every_server_in(MAX_LISTING_BYTES + 1);
    assert!(past_cap.len() <= MAX_LISTING_BYTES, "{}", past_cap.len());
    let shown = decode(&past_cap);
    assert_eq!(shown["servers"][0]["tools"], json!(["x", "y", "z"]));
    assert!(shown["servers"][0].get("toolsNotShown").is_none());
    let many = &shown["servers"][1];
    let listed = many["tools"].as_array().map_or(0, Vec::len);
    assert_eq!(
        listed + many["toolsNotShown"].as_u64().unwrap_or(0) as usize,
        20_001
    );
    assert!(listed >= 20_000 - 40, "{listed}");
    assert_eq!(
        shown["note"],
        "this answer is capped at 2097152 bytes: a server whose tool names do not all fit \
         shows the first ones in name order, and toolsNotShown counts the rest. \
         get_dynamic_tools with a namespace lists that server's tools."
    );
}

#[test]
fn room_is_shared_evenly_and_what_one_does_not_need_goes_to_the_others() {
    assert_eq!(shares(&[10, 100, 1000], 300), [10, 100, 190]);
    assert_eq!(shares(&[10, 200, 1000], 300), [10, 145, 145]);
    assert_eq!(shares(&[5, 5], 100), [5, 5]);
    assert_eq!(shares(&[50, 50], 0), [0, 0]);
    assert_eq!(fitting([3, 3, 3].into_iter(), 7), 2);
    assert_eq!(fitting([3, 3, 3].into_iter(), 6), 1);
}
