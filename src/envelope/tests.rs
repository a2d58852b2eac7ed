//! The envelope's checks, one rule a test.

use serde_json::{Value, json};

use super::*;

pub(super) fn tool(extra: Value) -> Value {
    let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
    for (k, v) in extra.as_object().expect("object") {
        tool[k] = v.clone();
    }
    tool
}

pub(super) fn checked(tools: Vec<Value>) -> ToolSet {
    check_tools(vec![Untrusted::new(json!({ "tools": tools }))])
}

fn reason_for(tool: Value) -> String {
    let set = checked(vec![tool]);
    assert!(set.tools.is_empty(), "accepted");
    set.rejected[0].reason.clone()
}

/// A schema whose JSON nesting depth is exactly `depth`.
fn nested(depth: usize) -> Value {
    let mut schema = json!({"type": "object"});
    for _ in 1..depth {
        schema = json!({ "not": schema });
    }
    schema
}

#[test]
fn cleaning_removes_escapes_controls_and_invisible_characters() {
    let cases = [
        ("plain\ttext\nok", "plain\ttext\nok"),
        ("\u{1b}[31mred\u{1b}[0m", "red"),
        ("\u{1b}]8;;http://evil\u{7}link\u{1b}]8;;\u{1b}\\", "link"),
        ("a\u{1b}]0;title", "a"),
        ("\u{9b}2Jcleared", "cleared"),
        ("bell\u{7}cr\rnul\0del\u{7f}c1\u{85}", "bellcrnuldelc1"),
        ("abc\u{202e}fed\u{2066}x\u{2069}", "abcfedx"),
        ("zero\u{200b}width\u{feff}\u{2060}", "zerowidth"),
        ("tag\u{e0041}\u{e0042}s", "tags"),
    ];
    for (dirty, clean) in cases {
        assert_eq!(clean_text(dirty), clean, "{dirty:?}");
    }
}

#[test]
fn truncation_keeps_the_limit_and_says_how_much_was_cut() {
    assert_eq!(truncate("abc".to_owned(), 3), "abc");
    assert_eq!(
        truncate("abcd".to_owned(), 3),
        "abc\n[... 1 characters cut]"
    );
    assert_eq!(truncate("ééé".to_owned(), 2), "éé\n[... 1 characters cut]");
}

#[test]
fn description_falls_back_to_title_then_annotations_title_then_name() {
    let set = checked(vec![
        json!({"name": "a", "description": "D", "title": "T", "inputSchema": {"type": "object"}}),
        json!({"name": "b", "title": "T", "annotations": {"title": "A"}, "inputSchema": {"type": "object"}}),
        json!({"name": "c", "description": "", "annotations": {"title": "A"}, "inputSchema": {"type": "object"}}),
        json!({"name": "d", "inputSchema": {"type": "object"}}),
    ]);
    let descriptions: Vec<&str> = set.tools.values().map(|t| t.description.as_str()).collect();
    assert_eq!(descriptions, ["D", "T", "A", "d"]);
}

#[test]
fn names_are_checked_and_duplicates_dropped() {
    let at_limit = "n".repeat(MAX_TOOL_NAME_CHARS);
    let past_limit = "n".repeat(MAX_TOOL_NAME_CHARS + 1);
    let set = checked(vec![
        tool(json!({"name": at_limit})),
        tool(json!({"name": past_limit})),
        tool(json!({"name": ""})),
        tool(json!({"name": "bad\u{1b}[2J"})),
        tool(json!({"name": "zw\u{200b}"})),
        tool(json!({"name": 7})),
        tool(json!({"name": "dup", "description": "first"})),
        tool(json!({"name": "dup", "description": "second"})),
    ]);
    assert_eq!(
        set.tools.keys().collect::<Vec<_>>(),
        [&"dup".to_owned(), &at_limit]
    );
    assert_eq!(set.tools["dup"].description, "first");
    let reasons: Vec<(&str, &str)> = set
        .rejected
        .iter()
        .map(|r| (r.name.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(reasons[1], ("", "an empty name"));
    assert_eq!(
        reasons[2],
        (
            "bad\\u{1b}[2J",
            "a name with control or invisible characters"
        )
    );
    assert_eq!(reasons[4], ("", "a tool without a string name"));
    assert_eq!(reasons[5], ("dup", "a second tool with the same name"));
    assert_eq!(reasons[0].1, "a name longer than 128 characters");
    assert!(reasons[0].0.ends_with("characters cut]"));
}

#[test]
fn descriptions_are_cleaned_and_capped() {
    let set = checked(vec![tool(
        json!({"description": format!("\u{1b}[8m{}", "x".repeat(MAX_DESCRIPTION_CHARS + 10))}),
    )]);
    let description = &set.tools["t"].description;
    assert!(description.starts_with("xxx"));
    assert!(description.ends_with("\n[... 10 characters cut]"));
}

#[test]
fn schemas_must_be_bounded_objects() {
    assert_eq!(
        reason_for(tool(json!({"inputSchema": "object"}))),
        "inputSchema is not a JSON object"
    );
    assert_eq!(
        reason_for(json!({"name": "t"})),
        "inputSchema is not a JSON object"
    );
    assert!(
        checked(vec![tool(json!({"inputSchema": nested(MAX_SCHEMA_DEPTH)}))])
            .rejected
            .is_empty()
    );
    assert_eq!(
        reason_for(tool(json!({"inputSchema": nested(MAX_SCHEMA_DEPTH + 1)}))),
        "inputSchema is nested deeper than 32 levels"
    );
    let big = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
    assert_eq!(
        reason_for(tool(json!({"inputSchema": big}))),
        "inputSchema is larger than 262144 bytes"
    );
    assert_eq!(
        reason_for(tool(json!({"outputSchema": [1]}))),
        "outputSchema is not a JSON object"
    );
}

#[test]
fn arguments_are_checked_against_the_input_schema() {
    let set = checked(vec![tool(json!({"inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }}))]);
    let t = &set.tools["t"];
    assert_eq!(t.check_arguments(&json!({"a": 1, "b": 2})), Ok(()));
    let error = t
        .check_arguments(&json!({"a": "one"}))
        .expect_err("invalid");
    assert!(
        error.starts_with("the arguments do not match the input schema of t:"),
        "{error}"
    );
    assert!(error.contains("/a: "), "{error}");
    assert!(error.contains("\"b\" is a required property"), "{error}");
}

#[test]
fn a_schema_that_does_not_compile_checks_nothing_and_fetches_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!(
        "http://127.0.0.1:{}/schema.json",
        listener.local_addr().expect("addr").port()
    );
    let set = checked(vec![
        tool(json!({"name": "remote", "inputSchema": {"type": "object", "$ref": url}})),
        tool(json!({"name": "file", "inputSchema": {"$ref": "file:///etc/passwd"}})),
        tool(json!({"name": "typo", "inputSchema": {"type": "strng"}})),
        tool(
            json!({"name": "regex", "inputSchema": {"type": "object", "properties": {"p": {"type": "string", "pattern": "(a+)+$"}}}}),
        ),
    ]);
    // A reference outside the schema cannot be measured, so its tool is refused.
    let refused: Vec<(&str, &str)> = set
        .rejected
        .iter()
        .map(|r| (r.name.as_str(), r.reason.as_str()))
        .collect();
    let unresolved = "inputSchema has a reference that does not resolve inside it";
    assert_eq!(refused, [("remote", unresolved), ("file", unresolved)]);
    assert_eq!(
        set.tools["typo"].check_arguments(&json!({"any": 1})),
        Ok(())
    );
    let regex = &set.tools["regex"];
    let evil = format!("{}!", "a".repeat(50_000));
    assert!(regex.check_arguments(&json!({"p": evil})).is_err());
    assert!(listener.accept().is_err(), "a $ref was fetched");
}

fn convert(result: Value) -> Result<String, String> {
    let set = checked(vec![tool(
        json!({"outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
    )]);
    match convert_now(Untrusted::new(result), &set.tools["t"]) {
        Outcome::Text(text) => Ok(text),
        Outcome::ToolFailed(text) => Err(text),
    }
}

#[test]
fn results_become_text_piece_by_piece() {
    let result = json!({"content": [
        {"type": "text", "text": "one"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "embedded"}},
        {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA==", "mimeType": "application/pdf"}},
        {"type": "resource", "resource": {"uri": "file:///c", "blob": "AA=="}},
        {"type": "resource_link", "uri": "https://x/y", "name": "y"},
        {"type": "text", "text": "\u{1b}[31mlast\u{1b}[0m"},
    ]});
    assert_eq!(
        convert(result),
        Ok(
            "one\n\n[image omitted: image/png]\n\n[audio omitted: audio/wav]\n\nembedded\n\n\
            [resource omitted: application/pdf]\n\n[resource omitted: application/octet-stream]\n\n\
            [resource: https://x/y]\n\nlast"
                .to_owned()
        )
    );
}

#[test]
fn structured_content_errors_and_limits() {
    assert_eq!(
        convert(json!({"content": [], "structuredContent": {"n": 1}})),
        Ok("{\"n\":1}".to_owned())
    );
    assert_eq!(
        convert(json!({"structuredContent": {"n": 1}})),
        Ok("{\"n\":1}".to_owned())
    );
    assert_eq!(
        convert(
            json!({"content": [{"type": "text", "text": "{\"n\":1}"}], "structuredContent": {"n": 1}})
        ),
        Ok("{\"n\":1}".to_owned())
    );
    let mismatch = convert(json!({"structuredContent": {"n": "x"}})).expect_err("mismatch");
    assert!(
        mismatch.starts_with(
            "the result's structuredContent does not match the tool's outputSchema at /n:"
        ),
        "{mismatch}"
    );
    assert_eq!(
        convert(json!({"content": [{"type": "text", "text": "boom"}], "isError": true})),
        Err("boom".to_owned())
    );
    assert_eq!(convert(json!({})), Ok(String::new()));
    let long =
        convert(json!({"content": [{"type": "text", "text": "y".repeat(MAX_RESULT_CHARS + 1)}]}))
            .expect("text");
    assert!(long.ends_with("\n[... 1 characters cut]"));
}

#[test]
fn the_work_budget_holds_at_the_limit_and_refuses_one_past() {
    let four_values = json!({"a": 1, "b": [2]});
    assert_eq!(within_budget(&four_values, MAX_VALIDATION_WORK / 4), Ok(()));
    assert_eq!(within_budget(&four_values, MAX_VALIDATION_WORK / 3), Err(3));
}

#[test]
fn a_violation_is_cleaned_and_cut_at_its_cap() {
    assert_eq!(violation("", "m"), "/: m");
    assert_eq!(
        violation("/\u{1b}]52;c;eA==\u{7}k\u{202e}", "\u{1b}[2Jm"),
        "/k: m"
    );
    let fits = "m".repeat(MAX_VIOLATION_CHARS - 4);
    assert_eq!(violation("/a", &fits), format!("/a: {fits}"));
    let over = format!("{fits}m");
    assert_eq!(
        violation("/a", &over),
        format!("/a: {fits}\n[... 1 characters cut]")
    );
}
