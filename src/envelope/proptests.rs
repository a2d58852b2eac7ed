//! Properties of result conversion and tool checking over generated server data: nothing
//! panics, no control, escape or invisible character reaches a model, and a result's pieces
//! come out in order, joined by a blank line.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::tests;
use super::*;
use crate::policy::MAX_TOOL_NAME_CHARS;
use crate::text::{Untrusted, chars, clean_text};
use std::sync::Arc;

/// Text made to be hostile: any character, plus escape sequences, C0 and C1 controls,
/// bidirectional overrides, zero-width and other invisible characters, and unusual spaces.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => any::<char>().prop_map(String::from),
        2 => "[a-z ]{1,4}",
        1 => prop::sample::select(vec![
            "\u{1b}[31m", "\u{1b}[", "\u{1b}]0;title\u{7}", "\u{1b}]8;;http://x\u{1b}\\",
            "\u{1b}P", "\u{1b}", "\u{9b}2J", "\u{9d}", "\u{9c}", "\u{90}", "\u{85}", "\u{7f}",
            "\0", "\r", "\n", "\t", "\u{7}", "\u{8}", "\u{202e}", "\u{2066}", "\u{200b}",
            "\u{feff}", "\u{e0041}", "\u{61c}", "\u{180e}", "\n\n", "\u{ad}", "\u{34f}",
            "\u{3164}", "\u{fe0f}", "\u{e0100}", "\u{2028}", "\u{2029}", "\u{fff9}", "\u{2065}",
            "\u{a0}", "\u{3000}", "\u{1680}",
        ])
        .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..10).prop_map(|pieces| pieces.concat())
}

/// Any JSON, small, with hostile strings.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        hostile_text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(hostile_text(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// Every kind of content block, each field sometimes missing or of the wrong type, with
/// `text` as the generator of every string.
fn block_with(text: BoxedStrategy<String>) -> impl Strategy<Value = Value> {
    let maybe = |s: BoxedStrategy<String>| prop::option::of(s.prop_map(Value::from));
    let with = |mut block: Value, key: &str, value: Option<Value>| {
        if let Some(value) = value {
            block[key] = value;
        }
        block
    };
    let t = text.clone();
    let text_block = text.prop_map(|text| json!({"type": "text", "text": text}));
    let media = (
        prop::sample::select(vec!["image", "audio"]),
        maybe(t.clone()),
    )
        .prop_map(move |(kind, mime)| {
            with(json!({"type": kind, "data": "AA=="}), "mimeType", mime)
        });
    let resource_text = (t.clone(), t.clone()).prop_map(
        |(uri, text)| json!({"type": "resource", "resource": {"uri": uri, "text": text}}),
    );
    let resource_blob = (t.clone(), maybe(t.clone())).prop_map(move |(uri, mime)| {
        let resource = with(json!({"uri": uri, "blob": "AA=="}), "mimeType", mime);
        json!({"type": "resource", "resource": resource})
    });
    let link = (t.clone(), t.clone())
        .prop_map(|(uri, name)| json!({"type": "resource_link", "uri": uri, "name": name}));
    let unknown = t.prop_map(|kind| json!({"type": kind, "text": "hidden"}));
    prop_oneof![
        4 => text_block,
        1 => media,
        1 => resource_text,
        1 => resource_blob,
        1 => link,
        1 => unknown,
    ]
}

fn any_block() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => block_with(hostile_text().boxed()),
        1 => any_json(),
        1 => (any_json(), any_json()).prop_map(|(kind, rest)| json!({"type": kind, "resource": rest, "text": rest})),
    ]
}

/// A `tools/call` result: blocks, sometimes `isError`, sometimes `structuredContent`, and
/// sometimes not a result at all.
fn any_result() -> impl Strategy<Value = Value> {
    let shaped = (
        prop::collection::vec(any_block(), 0..6),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            any_json(),
            hostile_text().prop_map(|n| json!({"n": n}))
        ]),
    )
        .prop_map(|(blocks, is_error, structured)| {
            let mut result = json!({ "content": blocks });
            if let Some(is_error) = is_error {
                result["isError"] = Value::from(is_error);
            }
            if let Some(structured) = structured {
                result["structuredContent"] = structured;
            }
            result
        });
    prop_oneof![4 => shaped, 1 => any_json()]
}

/// The tool every result is converted for, with or without an output schema.
fn tool(output_schema: bool) -> Arc<CheckedTool> {
    let extra = match output_schema {
        true => {
            json!({"outputSchema": {"type": "object", "properties": {"n": {"type": "string"}}}})
        }
        false => json!({}),
    };
    let set = tests::checked(vec![tests::tool(extra)]);
    Arc::clone(set.tools.get("t").expect("the tool is valid"))
}

fn text_of(outcome: Outcome) -> String {
    match outcome {
        Outcome::Text(text) | Outcome::ToolFailed(text) => text.into_string(),
    }
}

/// Only characters that cleaning keeps as they are: no control but newline and tab, nothing
/// invisible, no space but the ordinary one.
fn assert_clean(text: &str) -> Result<(), TestCaseError> {
    let bad = text.chars().find(|&c| chars::shown(c) != Some(c));
    prop_assert!(bad.is_none(), "{:?} in {:?}", bad, text);
    Ok(())
}

/// Text that cleaning leaves as it is.
fn plain_text() -> impl Strategy<Value = String> {
    let kept = any::<char>().prop_filter("kept as it is", |&c| chars::shown(c) == Some(c));
    prop::collection::vec(kept, 0..12).prop_map(String::from_iter)
}

/// The cleaning rules as a state machine, one char at a time: the reference that
/// [`clean_text`], which copies runs of plain text whole, must agree with.
fn clean_reference(text: &str) -> String {
    #[derive(Clone, Copy)]
    enum State {
        Text,
        Escape,
        Csi,
        String,
        StringEscape,
    }
    let in_string = |c: char| match c {
        '\u{7}' | '\u{9c}' => State::Text,
        '\u{1b}' => State::StringEscape,
        _ => State::String,
    };
    let mut out = String::new();
    let mut state = State::Text;
    for c in text.chars() {
        state = match (state, c) {
            (State::Text, '\u{1b}') => State::Escape,
            (State::Text, '\u{9b}') => State::Csi,
            (State::Text, '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}') => State::String,
            (State::Text, c) => {
                out.extend(chars::shown(c));
                State::Text
            }
            (State::Escape, '[') => State::Csi,
            (State::Escape, ']' | 'P' | 'X' | '^' | '_') => State::String,
            (State::Escape, _) | (State::Csi, '\u{40}'..='\u{7e}') => State::Text,
            (State::Csi, _) => State::Csi,
            (State::StringEscape, '\\') => State::Text,
            (State::String | State::StringEscape, c) => in_string(c),
        };
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Cleaning agrees with the char-by-char reference, on hostile text between runs of
    /// plain text long enough to take the fast path's whole blocks.
    #[test]
    fn cleaning_matches_the_reference(
        pieces in prop::collection::vec(prop_oneof![hostile_text(), "[ -~\n\t]{0,80}"], 0..8),
    ) {
        let text = pieces.concat();
        prop_assert_eq!(clean_text(&text), clean_reference(&text));
    }

    /// Any result converts without panicking, to text with no escape, no control character
    /// but newline and tab, and no invisible character.
    #[test]
    fn converted_results_are_clean(result in any_result(), schema in any::<bool>()) {
        let tool = tool(schema);
        assert_clean(&text_of(convert_now(Untrusted::new(result), &tool)))?;
    }

    /// Text blocks without control or invisible characters come out exactly, joined by a
    /// blank line, in order.
    #[test]
    fn plain_texts_come_out_joined(texts in prop::collection::vec(plain_text(), 1..8)) {
        let blocks: Vec<Value> = texts.iter().map(|t| json!({"type": "text", "text": t})).collect();
        let got = text_of(convert_now(Untrusted::new(json!({ "content": blocks })), &tool(false)));
        prop_assert_eq!(got, texts.join("\n\n"));
    }

    /// Blocks of every kind give one piece each, in order: cut at the blank lines, the
    /// output has a piece a block, a text block's piece is its cleaned text, and every other
    /// kind's piece says what was omitted.
    #[test]
    fn pieces_come_out_one_a_block_in_order(
        blocks in prop::collection::vec(block_with("[^\n\u{1b}\u{80}-\u{9f}]{0,8}".boxed()), 1..8),
    ) {
        let result = json!({ "content": blocks });
        let got = text_of(convert_now(Untrusted::new(result), &tool(false)));
        let pieces: Vec<&str> = got.split("\n\n").collect();
        prop_assert_eq!(pieces.len(), blocks.len(), "{:?}", got);
        for (piece, block) in pieces.iter().zip(&blocks) {
            let kind = block["type"].as_str().unwrap_or_default();
            let want_start = match kind {
                "text" => {
                    prop_assert_eq!(*piece, clean_text(block["text"].as_str().unwrap_or_default()));
                    continue;
                }
                "resource" if block["resource"].get("text").is_some() => {
                    let text = block["resource"]["text"].as_str().unwrap_or_default();
                    prop_assert_eq!(*piece, clean_text(text));
                    continue;
                }
                "image" => "[image omitted: ".to_owned(),
                "audio" => "[audio omitted: ".to_owned(),
                "resource" => "[resource omitted: ".to_owned(),
                "resource_link" => "[resource: ".to_owned(),
                other => format!("[{}", clean_text(&other.escape_default().to_string())),
            };
            prop_assert!(piece.starts_with(&want_start), "{:?} for {}", piece, block);
            prop_assert!(piece.ends_with(']'), "{:?} for {}", piece, block);
        }
    }

    /// Any `tools/list` pages check without panicking; an accepted tool has a name within
    /// the limit and of the allowed characters, and a clean description.
    #[test]
    fn any_tool_pages_check_cleanly(
        pages in prop::collection::vec(
            prop_oneof![
                any_json(),
                prop::collection::vec(
                    (hostile_text(), any_json(), any_json()).prop_map(|(name, description, schema)| {
                        json!({"name": name, "description": description, "inputSchema": schema})
                    }),
                    0..4,
                )
                .prop_map(|tools| json!({ "tools": tools })),
            ],
            0..3,
        ),
    ) {
        let set = tests::check_pages(pages);
        for (name, tool) in &set.tools {
            prop_assert!(!name.is_empty() && name.chars().count() <= MAX_TOOL_NAME_CHARS);
            prop_assert!(name.chars().all(chars::is_name_char), "{:?}", name);
            assert_clean(&tool.description)?;
        }
        for rejected in &set.rejected {
            assert_clean(rejected.name.as_str())?;
        }
    }
}

/// One block's unterminated escape must not hide or merge the blocks after it: each piece
/// is cleaned before the join, so an OSC or CSI opened in one block ends with it.
#[test]
fn an_escape_in_one_block_leaves_the_next_blocks_alone() {
    for opener in ["\u{9d}", "\u{1b}]", "\u{1b}[", "\u{1b}"] {
        let blocks = json!([
            {"type": "text", "text": format!("a{opener}")},
            {"type": "text", "text": "b"},
        ]);
        let got = text_of(convert_now(
            Untrusted::new(json!({ "content": blocks })),
            &tool(false),
        ));
        assert_eq!(got, "a\n\nb", "{opener:?}");
    }
}
