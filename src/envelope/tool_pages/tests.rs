//! The catalog's bounds, each at its limit and one past, and how it reads odd pages.

use serde_json::{Value, json};

use super::*;

fn page(page: &Value) -> Untrusted<Box<RawValue>> {
    Untrusted::new(serde_json::value::to_raw_value(page).expect("JSON"))
}

fn raw_page(text: &str) -> Untrusted<Box<RawValue>> {
    Untrusted::new(RawValue::from_string(text.to_owned()).expect("JSON"))
}

/// A page of one tool whose JSON text is exactly `bytes` long, padded with an unused field.
fn page_of(bytes: usize, cursor: &str) -> Untrusted<Box<RawValue>> {
    let mut shape = json!({
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}],
        "nextCursor": cursor,
        "padding": "",
    });
    let base = shape.to_string().len();
    shape["padding"] = "x".repeat(bytes - base).into();
    let page = page(&shape);
    assert_eq!(page.peek().get().len(), bytes);
    page
}

fn checked(pages: &[Untrusted<Box<RawValue>>]) -> ToolSet {
    let mut catalog = ToolPages::default();
    for page in pages {
        catalog.add_page(page).expect("within the cap");
    }
    catalog.finish()
}

fn reasons(set: &ToolSet) -> Vec<(&str, &str)> {
    let reasons = set.rejected.iter();
    reasons
        .map(|r| (r.name.as_str(), r.reason.as_str()))
        .collect()
}

#[test]
fn pages_together_may_reach_the_byte_cap_and_not_pass_it() {
    let half = MAX_TOOLS_LIST_BYTES / 2;
    let rest = MAX_TOOLS_LIST_BYTES - half;
    let mut catalog = ToolPages::default();
    assert_eq!(
        catalog.add_page(&page_of(half, "c")),
        Ok(Some("c".to_owned()))
    );
    assert_eq!(catalog.add_page(&page_of(rest, "")), Ok(None));
    assert_eq!(catalog.finish().tools.len(), 1);

    let mut catalog = ToolPages::default();
    assert_eq!(
        catalog.add_page(&page_of(half, "c")),
        Ok(Some("c".to_owned()))
    );
    assert_eq!(
        catalog
            .add_page(&page_of(rest + 1, ""))
            .map_err(|e| e.to_string()),
        Err("tools/list sent more than 16777216 bytes of tools across its pages".to_owned())
    );
}

#[test]
fn tools_past_the_cap_are_dropped_with_a_reason() {
    let tools: Vec<Value> = (0..=MAX_TOOLS_PER_SERVER)
        .map(|i| json!({"name": format!("t{i:05}"), "inputSchema": {"type": "object"}}))
        .collect();
    let (at_cap, past_cap) = tools.split_at(MAX_TOOLS_PER_SERVER);
    let set = checked(&[page(&json!({ "tools": at_cap }))]);
    assert_eq!(set.tools.len(), MAX_TOOLS_PER_SERVER);
    assert!(set.rejected.is_empty());

    let set = checked(&[
        page(&json!({ "tools": at_cap, "nextCursor": "c" })),
        page(&json!({ "tools": past_cap })),
    ]);
    assert_eq!(set.tools.len(), MAX_TOOLS_PER_SERVER);
    assert_eq!(
        reasons(&set),
        [("t10000", "past the 10000 tools a server may list")]
    );
}

#[test]
fn rejected_tools_are_kept_to_the_cap_and_the_rest_counted() {
    for past in [0, 1] {
        let tools = vec![json!({}); MAX_REJECTED_KEPT + past];
        let set = checked(&[page(&json!({ "tools": tools }))]);
        assert_eq!(set.rejected.len(), MAX_REJECTED_KEPT);
        assert_eq!(set.more_rejected, past);
        assert!(
            reasons(&set)
                .iter()
                .all(|r| *r == ("", "a tool without a string name"))
        );
    }
}

#[test]
fn fields_of_another_type_count_as_absent_and_a_field_given_twice_drops_the_tool() {
    let set = checked(&[raw_page(
        r#"{"tools": [
            {"name": "a", "description": 7, "title": "T", "annotations": [],
             "inputSchema": {"type": "object"}, "outputSchema": null, "extra": {"x": [1]}},
            {"name": "b", "name": "c", "inputSchema": {"type": "object"}},
            [],
            {"name": "d", "annotations": {"title": "A", "readOnlyHint": "yes"},
             "inputSchema": {"type": "object"}}
        ], "nextCursor": 5}"#,
    )]);
    let described: Vec<(&str, &str)> = set
        .tools
        .values()
        .map(|t| (t.name.as_str(), t.description.as_str()))
        .collect();
    assert_eq!(described, [("a", "T"), ("d", "A")]);
    assert_eq!(
        reasons(&set),
        [
            ("", "a tool that gives a field twice"),
            ("", "a tool that is not an object")
        ]
    );
}

#[test]
fn a_page_without_a_tools_array_is_reported_and_its_cursor_still_read() {
    let mut catalog = ToolPages::default();
    let next = catalog.add_page(&page(&json!({"tools": {}, "nextCursor": "c2"})));
    assert_eq!(next, Ok(Some("c2".to_owned())));
    assert_eq!(catalog.add_page(&page(&json!([1, 2]))), Ok(None));
    let set = catalog.finish();
    assert_eq!(
        reasons(&set),
        [
            ("", "a tools/list page has no tools array"),
            ("", "a tools/list page has no tools array")
        ]
    );
}
