//! How answers are shaped for stdout: pretty-printed JSON for a person at a terminal, and the
//! Pack's text untouched for a pipe, where a program (jq, a script) reads it and any change of
//! layout or key order would be a surprise. `--pretty` and `--compact` override the guess.

use serde_json::Value;

/// How an answer is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// JSON objects and arrays are indented; any other text is printed as it is.
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
            Ok(value @ (Value::Object(_) | Value::Array(_))) => {
                serde_json::to_string_pretty(&value).unwrap_or_else(|_| text.to_owned())
            }
            _ => text.to_owned(),
        }
    }
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
}
