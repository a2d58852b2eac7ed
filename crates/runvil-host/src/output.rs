//! How answers are shaped for stdout: pretty-printed JSON for a person at a terminal, and the
//! Pack's text untouched for a pipe, where a program (jq, a script) reads it and any change of
//! layout or key order would be a surprise. `--pretty` and `--compact` override the guess.
//!
//! Pretty-printing only moves whitespace between tokens: every string is printed exactly as
//! the Pack wrote it, escapes included. Decoding them would undo the envelope, since a tool's
//! result may itself be JSON whose `\u` escapes spell a terminal control, a bidirectional
//! override or a secret that the Pack's cleaning and scrubbing never saw as such.

use serde_json::Value;

/// How an answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// JSON objects and arrays are indented, their tokens as they are; any other text is
    /// printed as it is.
    Pretty,
    /// Everything is printed exactly as the Pack answered it.
    Compact,
}

impl Format {
    /// The format the flags ask for, else the one that suits where stdout goes.
    pub(crate) fn choose(pretty: bool, compact: bool, stdout_is_terminal: bool) -> Self {
        match (pretty, compact) {
            (true, _) => Self::Pretty,
            (_, true) => Self::Compact,
            _ if stdout_is_terminal => Self::Pretty,
            _ => Self::Compact,
        }
    }

    /// The text to print for an answer.
    pub(crate) fn render(self, text: &str) -> String {
        if self == Self::Compact {
            return text.to_owned();
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_) | Value::Array(_)) => indent(text),
            _ => text.to_owned(),
        }
    }
}

/// Valid JSON `json` laid out two spaces a level, as serde_json's pretty printer lays it out,
/// with each token copied as it is: only the whitespace between tokens changes.
fn indent(json: &str) -> String {
    let new_line = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0_usize;
    let mut tokens = tokens(json).peekable();
    while let Some(token) = tokens.next() {
        match token {
            "{" | "[" if matches!(tokens.peek(), Some(&("}" | "]"))) => {
                // An empty object or array stays `{}` or `[]`.
                out.push_str(token);
                out.extend(tokens.next());
            }
            "{" | "[" => {
                depth += 1;
                out.push_str(token);
                new_line(&mut out, depth);
            }
            "}" | "]" => {
                depth = depth.saturating_sub(1);
                new_line(&mut out, depth);
                out.push_str(token);
            }
            "," => {
                out.push(',');
                new_line(&mut out, depth);
            }
            ":" => out.push_str(": "),
            string_or_scalar => out.push_str(string_or_scalar),
        }
    }
    out
}

/// The tokens of valid JSON, each exactly as written (a string with its quotes and escapes),
/// without the whitespace between them.
fn tokens(json: &str) -> impl Iterator<Item = &str> {
    let bytes = json.as_bytes();
    let first = move |from: usize, stop: fn(&u8) -> bool| {
        bytes[from..]
            .iter()
            .position(stop)
            .map_or(bytes.len(), |len| from + len)
    };
    let mut at = 0;
    std::iter::from_fn(move || {
        at = first(at, |b| !b" \n\r\t".contains(b));
        let start = at;
        // Outside strings JSON is ASCII, so every token starts and ends on a char boundary.
        at = match bytes.get(at)? {
            b'"' => string_end(bytes, at),
            b'{' | b'}' | b'[' | b']' | b',' | b':' => at + 1,
            // A number, true, false or null runs to the next structural byte or whitespace.
            _ => first(at, |b| b"{}[],:\" \n\r\t".contains(b)),
        };
        Some(&json[start..at])
    })
}

/// The index just past the string that opens with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_terminal_guess() {
        assert_eq!(Format::choose(false, false, true), Format::Pretty);
        assert_eq!(Format::choose(false, false, false), Format::Compact);
        assert_eq!(Format::choose(true, false, false), Format::Pretty);
        assert_eq!(Format::choose(false, true, true), Format::Compact);
    }

    #[test]
    fn only_json_objects_and_arrays_are_reshaped() {
        let json = r#"{"a":[2],"b":1}"#;
        assert_eq!(Format::Compact.render(json), json);
        assert_eq!(
            Format::Pretty.render(json),
            "{\n  \"a\": [\n    2\n  ],\n  \"b\": 1\n}"
        );
        assert_eq!(Format::Pretty.render("5"), "5");
        assert_eq!(Format::Pretty.render("plain text"), "plain text");
    }

    #[test]
    fn the_layout_is_serde_json_s_pretty_one() {
        let json = r#" {"a": [1, -2.5, {}, [], true, null, {"b": "c"}],"d":{"e":[[]]} } "#;
        let value: Value = serde_json::from_str(json).expect("JSON");
        let serde_pretty = serde_json::to_string_pretty(&value).expect("pretty");
        assert_eq!(Format::Pretty.render(json), serde_pretty);
    }

    /// A tool's result that is itself JSON keeps its escapes: a bidirectional override, an
    /// 8-bit CSI, a zero-width space, a tag character and a secret written with an escape
    /// are printed as the escapes the Pack answered with, never as the characters.
    #[test]
    fn strings_are_printed_byte_for_byte_as_the_pack_wrote_them() {
        let escaped = r#""\u202e\u009b\u200b\udb40\udc41""#;
        let secret = r#""\u0063anary-secret-77""#;
        let tricky = r#""a \"quoted\" {[,:]}\\""#;
        let json = format!(r#"{{"a":{escaped},"k":[{secret}],"z":{tricky}}}"#);
        let want = [
            "{".to_owned(),
            format!(r#"  "a": {escaped},"#),
            r#"  "k": ["#.to_owned(),
            format!("    {secret}"),
            "  ],".to_owned(),
            format!(r#"  "z": {tricky}"#),
            "}".to_owned(),
        ]
        .join("\n");
        assert_eq!(Format::Pretty.render(&json), want);
    }
}
