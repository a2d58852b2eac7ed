//! JSON with comments, as VS Code writes `mcp.json`: `//` and `/* */` comments, trailing
//! commas and a leading UTF-8 byte-order mark are accepted; everything else is JSON as
//! serde_json reads it. It also owns finding the keys an object holds more than once, which
//! serde_json would drop silently (the last one wins).
//!
//! # Why by hand, and why like this
//!
//! The text is not parsed here: comments, trailing commas and the mark are overwritten with
//! spaces (newlines kept), and serde_json parses what is left. No byte moves, so serde_json's
//! line and column are those of the original file, and its grammar, messages and recursion
//! limit (128 levels) are the ones the rest of the workspace already relies on. Outside a
//! string, a comment or a comma before `}` or `]` is never valid JSON, so erasing them cannot
//! change what a valid file means; a string is skipped whole, escapes included.
//!
//! `jsonc-parser` (MIT, the parser of deno and dprint) was the candidate crate. It was not
//! taken: its defaults also accept JSON5 (single quotes, unquoted keys, hex numbers, missing
//! commas), which would have to be turned off one by one; it does not skip the byte-order
//! mark; its columns count characters where serde_json's count bytes; and its syntax tree
//! would still have to be converted into the `serde_json::Value` the Pack takes, which is
//! more code than the two passes below. `json_comments` erases comments but not trailing
//! commas.
//!
//! Duplicate keys are found while serde_json parses, by building the `Value` with a visitor
//! of our own: serde_json's own `Value` keeps the last silently and says nothing.
//!
//! Hostile input: the caller bounds the size; invalid UTF-8 is an error at its position; any
//! nesting deeper than serde_json's limit is its `recursion limit exceeded` error. Nothing here
//! recurses but serde_json, and no error shows any of the text.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A step from the document's root towards a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// A document and the places where an object holds a key more than once. Its `Debug` shows
/// those places only: the document may hold secrets.
#[derive(PartialEq)]
pub(crate) struct Parsed {
    pub(crate) value: Value,
    /// The path of each key written more than once (once per object and key), ending with
    /// that key; in the order the objects end.
    pub(crate) duplicates: Vec<Vec<Step>>,
}

impl fmt::Debug for Parsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parsed")
            .field("duplicates", &self.duplicates)
            .finish_non_exhaustive()
    }
}

/// Why a text is not JSON, where the original text says it: its line (from 1) and byte
/// column (from 1), the byte-order mark and comments included.
#[derive(Debug, PartialEq)]
pub(crate) struct SyntaxError {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            line,
            column,
            message,
        } = self;
        write!(f, "line {line}, column {column}: {message}")
    }
}

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// A file's bytes with its comments, trailing commas and byte-order mark overwritten with
/// spaces (newlines kept): plain JSON, each byte where it was in the file. No `Debug`: the
/// text may hold secrets.
#[derive(PartialEq)]
pub(crate) struct Blanked {
    pub(crate) text: Vec<u8>,
    /// Where each comment is in the file, in order, its delimiters included.
    pub(crate) comments: Vec<Range<usize>>,
}

/// Blanks a file's bytes; the error of a text that is not UTF-8 or has an unclosed `/*`.
pub(crate) fn blanked(bytes: &[u8]) -> Result<Blanked, SyntaxError> {
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(error_at(bytes, e.valid_up_to(), "the text is not UTF-8"));
    }
    let mut text = bytes.to_vec();
    if text.starts_with(BYTE_ORDER_MARK) {
        blank(&mut text[..BYTE_ORDER_MARK.len()]);
    }
    let mut comments = Vec::new();
    if let Some(open) = blank_comments(&mut text, &mut comments) {
        return Err(error_at(&text, open, "this /* comment is never closed"));
    }
    blank_trailing_commas(&mut text);
    Ok(Blanked { text, comments })
}

/// Parses a file's bytes.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, SyntaxError> {
    let Blanked { text, .. } = blanked(bytes)?;

    let mut duplicates = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(&text);
    let node = Node {
        path: &mut Vec::new(),
        duplicates: &mut duplicates,
    };
    let value = node.deserialize(&mut deserializer).map_err(from_serde)?;
    deserializer.end().map_err(from_serde)?;
    Ok(Parsed { value, duplicates })
}

/// An error at byte `offset` of `text`, positioned as serde_json positions its own.
fn error_at(text: &[u8], offset: usize, message: &str) -> SyntaxError {
    let before = &text[..offset];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |n| n + 1);
    SyntaxError {
        line: 1 + before.iter().filter(|&&b| b == b'\n').count(),
        column: offset - line_start + 1,
        message: message.to_owned(),
    }
}

fn from_serde(e: serde_json::Error) -> SyntaxError {
    // serde_json has no accessor for the message alone; its text ends with the position.
    let full = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    SyntaxError {
        line: e.line(),
        column: e.column(),
        message: full.strip_suffix(&position).unwrap_or(&full).to_owned(),
    }
}

/// Overwrites with spaces, keeping newlines so that lines stay where they were.
fn blank(bytes: &mut [u8]) {
    for byte in bytes.iter_mut().filter(|b| **b != b'\n') {
        *byte = b' ';
    }
}

/// The index just past the string that opens at `open`, or the end of an unclosed one (which
/// serde_json then reports).
pub(crate) fn string_end(text: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// Blanks every comment outside strings, noting where each was in `comments`; answers where
/// a `/*` that is never closed opens.
fn blank_comments(text: &mut [u8], comments: &mut Vec<Range<usize>>) -> Option<usize> {
    let mut i = 0;
    while i < text.len() {
        match (text[i], text.get(i + 1)) {
            (b'"', _) => i = string_end(text, i),
            (b'/', Some(b'/')) => {
                let end = text[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(text.len(), |n| i + n);
                blank(&mut text[i..end]);
                comments.push(i..end);
                i = end;
            }
            (b'/', Some(b'*')) => {
                let Some(close) = text[i + 2..].windows(2).position(|w| w == b"*/") else {
                    return Some(i);
                };
                let end = i + 2 + close + 2;
                blank(&mut text[i..end]);
                comments.push(i..end);
                i = end;
            }
            _ => i += 1,
        }
    }
    None
}

/// JSON's whitespace, which is not Rust's `is_ascii_whitespace` (that has form feed).
fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Blanks each comma outside strings that only whitespace separates from a `}` or `]`, when
/// it follows a value: `[,]` and `[1,,]` stay errors, as they are in VS Code.
fn blank_trailing_commas(text: &mut [u8]) {
    let mut last = None;
    let mut i = 0;
    while i < text.len() {
        let byte = text[i];
        if byte == b'"' {
            i = string_end(text, i);
            last = Some(b'"');
            continue;
        }
        if byte == b','
            && !matches!(last, None | Some(b'{' | b'[' | b','))
            && matches!(
                text[i + 1..].iter().find(|&&b| !is_space(b)),
                Some(b'}' | b']')
            )
        {
            text[i] = b' ';
        } else if !is_space(byte) {
            last = Some(byte);
        }
        i += 1;
    }
}

/// Builds a `Value` as serde_json's own does, noting keys written twice in an object.
struct Node<'a> {
    /// Where this value is.
    path: &'a mut Vec<Step>,
    duplicates: &'a mut Vec<Vec<Step>>,
}

impl Node<'_> {
    fn child(&mut self) -> Node<'_> {
        Node {
            path: &mut *self.path,
            duplicates: &mut *self.duplicates,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    // serde_json never yields a non-finite number; null is what its own `Value` makes of one.
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(self.child());
            self.path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        // Sorted, and each key once however often it is repeated.
        let mut repeated = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Step::Key(key.clone()));
            let value = map.next_value_seed(self.child());
            self.path.pop();
            let value = value?;
            if object.contains_key(&key) {
                repeated.insert(key.clone());
            }
            object.insert(key, value);
        }
        for key in repeated {
            let mut path = self.path.clone();
            path.push(Step::Key(key));
            self.duplicates.push(path);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn value(text: &str) -> Value {
        parse(text.as_bytes()).expect("parsed").value
    }

    fn error(text: &[u8]) -> String {
        parse(text).expect_err("not JSON").to_string()
    }

    #[test]
    fn comments_trailing_commas_and_the_byte_order_mark_are_accepted() {
        let text = "\u{feff}{\n  // a comment: \"quoted\", /* not a block */\n  \"servers\": {\n    /* a block\n       over lines, with ] and } */\n    \"a\": {\"url\": \"https://x/mcp\", \"args\": [1, 2,],},\n  },\n}\n";
        assert_eq!(
            value(text),
            json!({"servers": {"a": {"url": "https://x/mcp", "args": [1, 2]}}})
        );
        assert_eq!(value("{} // the end, no newline"), json!({}));
        assert_eq!(value("[1 /**/, 2]"), json!([1, 2]));
        assert_eq!(value("[1, // a comma, then a comment\n]"), json!([1]));
    }

    #[test]
    fn the_blanked_text_keeps_every_byte_in_place_and_says_where_comments_were() {
        let text = "{ // one\n  \"a\": [1, /* two */ 2,],\n}";
        let blanked = blanked(text.as_bytes()).expect("blanked");
        assert_eq!(blanked.text.len(), text.len());
        assert_eq!(
            String::from_utf8(blanked.text).expect("UTF-8"),
            "{       \n  \"a\": [1,           2 ] \n}"
        );
        let comments: Vec<&str> = blanked.comments.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(comments, ["// one", "/* two */"]);
    }

    #[test]
    fn strings_are_left_as_they_are() {
        let text = r#"{"u": "https://x/mcp // not a comment", "b": "/* nor this */", "c": "a,]", "d": "\"// still a string\\", "e": "é,}"}"#;
        assert_eq!(
            value(text),
            json!({
                "u": "https://x/mcp // not a comment",
                "b": "/* nor this */",
                "c": "a,]",
                "d": "\"// still a string\\",
                "e": "é,}",
            })
        );
        // A document's Debug shows where keys are written twice, never a value.
        let parsed = parse(br#"{"u": "secret-1", "u": "secret-2"}"#).expect("JSON");
        assert_eq!(
            format!("{parsed:?}"),
            r#"Parsed { duplicates: [[Key("u")]], .. }"#
        );
    }

    #[test]
    fn errors_keep_the_original_line_and_column() {
        // Comments and the byte-order mark count, as they do in the file.
        assert_eq!(
            error("\u{feff}{\n  // one\n  /* two */ \"a\" 1\n}".as_bytes()),
            "line 3, column 17: expected `:`"
        );
        assert_eq!(
            error(b"\xEF\xBB\xBF{\"a\": x}"),
            "line 1, column 10: expected value"
        );
        assert_eq!(
            error(b"{\n  \"a\": 1,\n  /* open"),
            "line 3, column 3: this /* comment is never closed"
        );
        assert_eq!(
            error(b"{\"a\": \"\xFF\"}"),
            "line 1, column 8: the text is not UTF-8"
        );
        assert_eq!(
            error(b"{}\n// c\n{}"),
            "line 3, column 1: trailing characters"
        );
        assert_eq!(error(b""), "line 1, column 0: EOF while parsing a value");
    }

    #[test]
    fn only_a_comma_after_a_value_may_trail() {
        assert_eq!(error(b"[,]"), "line 1, column 2: expected value");
        assert_eq!(error(b"{,}"), "line 1, column 2: key must be a string");
        assert_eq!(error(b"[1,,]"), "line 1, column 4: expected value");
        assert_eq!(value("[[],{},\"\",]"), json!([[], {}, ""]));
    }

    #[test]
    fn nesting_past_serde_json_s_limit_is_an_error_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            error(deep.as_bytes()),
            "line 1, column 128: recursion limit exceeded"
        );
        let fits = format!("{}{}", "[".repeat(127), "]".repeat(127));
        assert!(parse(fits.as_bytes()).is_ok());
    }

    #[test]
    fn keys_written_twice_are_found_once_each_and_the_last_is_kept() {
        let text = r#"{"s": {"a": {"url": "1", "url": "2"}, "b": 1, "a": {"x": [{"k": 1, "k": 2, "k": 3}]}}, "s": {}}"#;
        let parsed = parse(text.as_bytes()).expect("parsed");
        assert_eq!(parsed.value, json!({"s": {}}));
        let key = |k: &str| Step::Key(k.to_owned());
        assert_eq!(
            parsed.duplicates,
            [
                vec![key("s"), key("a"), key("url")],
                vec![key("s"), key("a"), key("x"), Step::Index(0), key("k")],
                vec![key("s"), key("a")],
                vec![key("s")],
            ]
        );
    }

    #[test]
    fn numbers_are_serde_json_s() {
        assert_eq!(
            value("[0, -1, 18446744073709551615, 1.5, -0.0, 1e300]"),
            serde_json::from_str::<Value>("[0, -1, 18446744073709551615, 1.5, -0.0, 1e300]")
                .expect("JSON")
        );
        assert_eq!(error(b"[1e400]"), "line 1, column 6: number out of range");
    }
}
