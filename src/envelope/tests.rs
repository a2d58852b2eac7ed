//! The envelope's checks, one rule a test.

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, VariationSelector, WhiteSpace,
};
use icu_properties::{CodePointMapData, CodePointSetData};
use serde_json::{Value, json};

use super::tool_check::{violation, within_budget};
use super::*;
use crate::policy::{
    MAX_DESCRIPTION_CHARS, MAX_RESULT_CHARS, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH,
    MAX_TOOL_NAME_CHARS, MAX_VALIDATION_WORK, MAX_VIOLATION_CHARS,
};
use crate::text::Scrubber;
use crate::text::{Untrusted, clean_text, log_safe, truncate};

pub(super) fn tool(extra: Value) -> Value {
    let mut tool = json!({"name": "t", "inputSchema": {"type": "object"}});
    for (k, v) in extra.as_object().expect("object") {
        tool[k] = v.clone();
    }
    tool
}

pub(super) fn checked(tools: Vec<Value>) -> ToolSet {
    check_pages(vec![json!({ "tools": tools })])
}

/// Every page through a [`ToolPages`], as a server's pages arrive.
pub(super) fn check_pages(pages: Vec<Value>) -> ToolSet {
    let mut catalog = ToolPages::default();
    for page in pages {
        let page = serde_json::value::to_raw_value(&page).expect("JSON");
        catalog
            .add_page(&Untrusted::new(page))
            .expect("within the cap");
    }
    catalog.finish()
}

fn reason_for(tool: Value) -> String {
    let set = checked(vec![tool]);
    assert!(set.tools.is_empty(), "accepted");
    set.rejected[0].reason.to_string()
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
        // What a list of examples let through: the soft hyphen, the combining grapheme
        // joiner, Hangul fillers, a Khmer inherent vowel, Mongolian and other variation
        // selectors, line and paragraph separators, interlinear annotations, and an
        // unassigned ignorable code point.
        ("so\u{ad}ft\u{34f}", "soft"),
        ("han\u{115f}\u{1160}\u{3164}\u{ffa0}gul", "hangul"),
        ("km\u{17b4}\u{17b5}er", "kmer"),
        ("mon\u{180b}\u{180f}gol", "mongol"),
        ("vs\u{fe00}\u{fe0f}\u{e0100}\u{e01ef}", "vs"),
        ("line\u{2028}para\u{2029}", "linepara"),
        ("\u{fff9}annotated\u{fffa}ruby\u{fffb}", "annotatedruby"),
        ("un\u{2065}assigned", "unassigned"),
        // Other spaces become ordinary ones.
        (
            "no\u{a0}break\u{3000}ideographic\u{2003}em",
            "no break ideographic em",
        ),
    ];
    for (dirty, clean) in cases {
        assert_eq!(clean_text(dirty), clean, "{dirty:?}");
    }
}

/// The Unicode data's own answer, read as ranges (not by the lookups that cleaning makes):
/// the code points whose General_Category is Cc, Cf, Zl or Zp, or that are
/// Default_Ignorable_Code_Point or Variation_Selector; and the spaces (Zs).
fn hidden_and_spaces() -> (Vec<bool>, Vec<bool>) {
    fn mark(ranges: impl Iterator<Item = std::ops::RangeInclusive<u32>>) -> Vec<bool> {
        let mut set = vec![false; 0x11_0000];
        for code_point in ranges.flatten() {
            set[code_point as usize] = true;
        }
        set
    }
    let category = CodePointMapData::<GeneralCategory>::new();
    let hidden_categories = [
        GeneralCategoryGroup::Control,
        GeneralCategoryGroup::Format,
        GeneralCategoryGroup::LineSeparator,
        GeneralCategoryGroup::ParagraphSeparator,
    ];
    let hidden = mark(
        hidden_categories
            .into_iter()
            .flat_map(|group| category.iter_ranges_for_group(group))
            .chain(CodePointSetData::new::<DefaultIgnorableCodePoint>().iter_ranges())
            .chain(CodePointSetData::new::<VariationSelector>().iter_ranges()),
    );
    let spaces = mark(category.iter_ranges_for_value(GeneralCategory::SpaceSeparator));
    (hidden, spaces)
}

/// Every code point, alone: cleaning removes exactly the hidden ones (but newline and tab),
/// makes every space an ordinary one, keeps the rest, and so keeps no whitespace but space,
/// newline and tab; a log line escapes exactly what cleaning would change.
#[test]
fn every_code_point_is_cleaned_by_its_unicode_properties() {
    let (hidden, spaces) = hidden_and_spaces();
    let white_space = CodePointSetData::new::<WhiteSpace>();
    for c in (0..=0x10_FFFF_u32).filter_map(char::from_u32) {
        let want = match c {
            '\n' | '\t' => Some(c),
            c if hidden[c as usize] => None,
            c if spaces[c as usize] => Some(' '),
            c => Some(c),
        };
        let cleaned = clean_text(&c.to_string());
        assert_eq!(cleaned, want.map(String::from).unwrap_or_default(), "{c:?}");
        if let Some(kept) = want {
            assert!(
                !white_space.contains(kept) || matches!(kept, ' ' | '\n' | '\t'),
                "{c:?}"
            );
        }
        let logged = log_safe(&c.to_string()).to_string();
        let as_is = want == Some(c) && !matches!(c, '\n' | '\t');
        assert_eq!(logged == c.to_string(), as_is, "{c:?} logged as {logged:?}");
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
            "a name with U+001B; a tool name may hold only A-Z, a-z, 0-9, _, - and ."
        )
    );
    assert_eq!(reasons[4], ("", "a tool without a string name"));
    assert_eq!(reasons[5], ("dup", "a second tool with the same name"));
    assert_eq!(reasons[0].1, "a name longer than 128 characters");
    assert!(reasons[0].0.ends_with("characters cut]"));
}

/// Names hold only what the MCP specification recommends: every other class of character is
/// refused, naming the first one that is not allowed.
#[test]
fn names_hold_only_the_characters_mcp_recommends() {
    let allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.";
    let refused = [
        ('\u{7}', "U+0007"),      // C0 control
        ('\u{85}', "U+0085"),     // C1 control
        ('\u{200b}', "U+200B"),   // format: zero width
        ('\u{202e}', "U+202E"),   // format: bidirectional
        ('\u{e0041}', "U+E0041"), // format: tag
        ('\u{ad}', "U+00AD"),     // format: soft hyphen
        ('\u{fe0f}', "U+FE0F"),   // variation selector
        ('\u{3164}', "U+3164"),   // default ignorable letter: Hangul filler
        ('\u{2028}', "U+2028"),   // line separator
        (' ', "U+0020"),          // space
        ('\u{a0}', "U+00A0"),     // other space
        ('é', "U+00E9"),          // a letter outside ASCII
        ('\u{430}', "U+0430"),    // a Cyrillic letter that looks like `a`
        ('/', "U+002F"),          // punctuation
        (',', "U+002C"),
        (':', "U+003A"),
    ];
    let mut tools = vec![tool(json!({"name": allowed}))];
    tools.extend(
        refused
            .iter()
            .map(|(c, _)| tool(json!({"name": format!("ok{c}")}))),
    );
    let set = checked(tools);
    assert_eq!(set.tools.keys().collect::<Vec<_>>(), [allowed]);
    let reasons: Vec<&str> = set.rejected.iter().map(|r| r.reason.as_str()).collect();
    let want: Vec<String> = refused
        .iter()
        .map(|(_, code)| {
            format!("a name with {code}; a tool name may hold only A-Z, a-z, 0-9, _, - and .")
        })
        .collect();
    assert_eq!(reasons, want);
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
fn a_null_for_an_optional_parameter_can_be_left_out_and_a_required_one_cannot() {
    let set = checked(vec![tool(json!({"inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "flag": {"type": "boolean"}},
        "required": ["a"],
    }}))]);
    let t = &set.tools["t"];
    assert_eq!(
        t.without_optional_nulls(&json!({"a": 1, "flag": null})),
        Some(json!({"a": 1}))
    );
    assert_eq!(t.without_optional_nulls(&json!({"a": null})), None);
    assert_eq!(
        t.without_optional_nulls(&json!({"a": 1, "flag": true})),
        None
    );
    assert_eq!(t.without_optional_nulls(&json!([null])), None);
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
        Outcome::Text(text) => Ok(text.into_string()),
        Outcome::ToolFailed(text) => Err(text.into_string()),
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
fn a_check_runs_in_place_up_to_the_inline_limit_and_on_the_pool_past_it() {
    use crate::policy::MAX_INLINE_CHECK_WORK;
    use off_runtime::is_small;
    // A value costs the expansion, a string's bytes one each.
    let text = |len: u64| Value::String("x".repeat(usize::try_from(len).expect("len")));
    assert!(is_small(&text(MAX_INLINE_CHECK_WORK - 1), 1));
    assert!(!is_small(&text(MAX_INLINE_CHECK_WORK), 1));
    let nulls = |n: usize| Value::Array(vec![Value::Null; n]);
    let expansion = MAX_INLINE_CHECK_WORK / 16;
    assert!(is_small(&nulls(15), expansion));
    assert!(!is_small(&nulls(16), expansion));
    // Keys are read too.
    let key = "k".repeat(usize::try_from(MAX_INLINE_CHECK_WORK - 2).expect("len"));
    assert!(is_small(&json!({ key.clone(): null }), 1));
    assert!(!is_small(&json!({ key + "k": null }), 1));
}

#[test]
fn a_violation_is_cleaned_and_cut_at_its_cap() {
    assert_eq!(violation(&Scrubber::default(), "", "m"), "/: m");
    assert_eq!(
        violation(
            &Scrubber::default(),
            "/\u{1b}]52;c;eA==\u{7}k\u{202e}",
            "\u{1b}[2Jm"
        ),
        "/k: m"
    );
    let fits = "m".repeat(MAX_VIOLATION_CHARS - 4);
    assert_eq!(
        violation(&Scrubber::default(), "/a", &fits),
        format!("/a: {fits}")
    );
    let over = format!("{fits}m");
    assert_eq!(
        violation(&Scrubber::default(), "/a", &over),
        format!("/a: {fits}\n[... 1 characters cut]")
    );
    // A schema's line break cannot start a line of the error's list: it is escaped, and
    // counts as the two characters shown.
    assert_eq!(
        violation(&Scrubber::default(), "/a\nb", "x\n- /c: forged\tz"),
        "/a\\nb: x\\n- /c: forged\\tz"
    );
    let broken = format!("{}\n", "m".repeat(MAX_VIOLATION_CHARS - 6));
    assert_eq!(
        violation(&Scrubber::default(), "/a", &broken),
        format!("/a: {}\\n", "m".repeat(MAX_VIOLATION_CHARS - 6))
    );
    let past = format!("{broken}m");
    assert_eq!(
        violation(&Scrubber::default(), "/a", &past),
        format!(
            "/a: {}\\n\n[... 1 characters cut]",
            "m".repeat(MAX_VIOLATION_CHARS - 6)
        )
    );
}
