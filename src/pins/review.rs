//! What a held tool shows its reviewer: every field of its definition that changed since it
//! was approved, by path, with its value before and after.
//!
//! The fields a model reads come first, all of them whatever their number (a definition's
//! size bounds them); the others follow up to [`MAX_CHANGES_SHOWN`], the rest counted. A value
//! longer than [`MAX_CHANGE_CHARS`] shows the same part of both sides, from
//! [`CHANGE_CONTEXT_CHARS`] before their first difference, with where it lies ([`Excerpt`]).
//! Two values that differ never show the same, nor two paths: a difference only in characters
//! that cleaning removes is shown escaped, a changed type as JSON, and a key that is not a
//! plain word quoted and escaped. Every value is scrubbed whole before any part of it is cut.

use runvil_plugin::{Excerpt, FieldChange};
use serde_json::{Map, Value};

use crate::policy::{CHANGE_CONTEXT_CHARS, MAX_CHANGE_CHARS, MAX_CHANGES_SHOWN};
use crate::text::{Escape, Scrubber, Shown, show, show_escaped};

/// The fields of a tool a model reads: a review shows all their changes, before any other.
const MODEL_FIELDS: [&str; 7] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
];

/// The most one character of a value grows when it is escaped (`\u{10ffff}`).
const MAX_ESCAPE_GROWTH: usize = 10;

/// What changed from the approved definition `before` (canonical JSON; `None` for a tool
/// never approved) to `after`: the changes shown, and how many more were only counted.
pub(super) fn changes(
    scrubber: &Scrubber,
    before: Option<&str>,
    after: &str,
) -> (Vec<FieldChange>, usize) {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
    let before = before.map_or(Value::Object(Map::new()), parse);
    let after = parse(after);
    let mut found = Vec::new();
    diff("", &before, &after, &mut |change| found.push(change));
    // The fields a model reads first (in key order, as the others), all of them; the
    // others while there is room.
    found.sort_by_key(|(field, _, _)| !reaches_model(field));
    let model = found
        .iter()
        .take_while(|(field, _, _)| reaches_model(field))
        .count();
    let shown = model.max(MAX_CHANGES_SHOWN).min(found.len());
    let more = found.len() - shown;
    let changes = found
        .into_iter()
        .take(shown)
        .map(|change| shown_change(scrubber, change))
        .collect();
    (changes, more)
}

/// One change as the review shows it: a long value as the same part of both sides, around
/// their first difference; two values that differ never show the same (a difference in
/// characters cleaning removes is shown escaped), but for a secret the scrubber hid, which
/// no model sees either.
pub(super) fn shown_change(
    scrubber: &Scrubber,
    (field, before, after): RawChange<'_>,
) -> FieldChange {
    // A type that changed (`"5"` to `5`) shows both sides as JSON.
    let as_json = [before, after]
        .into_iter()
        .flatten()
        .any(|value| !value.is_string());
    let text = |value: &Value| {
        let text = match value {
            Value::String(s) if !as_json => s.clone(),
            other => other.to_string(),
        };
        scrubber.scrub_owned(text)
    };
    let (before, after) = (before.map(text), after.map(text));
    let chars = |text: &Option<String>| text.as_ref().map_or(0, |t| t.chars().count());
    let (before_chars, after_chars) = (chars(&before), chars(&after));
    let field = show(scrubber, &field, MAX_CHANGE_CHARS);
    if before_chars <= MAX_CHANGE_CHARS && after_chars <= MAX_CHANGE_CHARS {
        let (before, after) = distinct(scrubber, before, after);
        return field_change(field, before, after);
    }
    let differs_at = match (&before, &after) {
        (Some(b), Some(a)) => (b.chars().zip(a.chars()))
            .position(|(b, a)| b != a)
            .unwrap_or(before_chars.min(after_chars)),
        _ => 0,
    };
    let from = differs_at.saturating_sub(CHANGE_CONTEXT_CHARS);
    let window = |text: String| text.chars().skip(from).take(MAX_CHANGE_CHARS).collect();
    let (before, after) = distinct(scrubber, before.map(window), after.map(window));
    let mut change = field_change(field, before, after);
    change.excerpt = Some(Excerpt::new(differs_at, from, before_chars, after_chars));
    change
}

/// `before` and `after` (scrubbed, at most [`MAX_CHANGE_CHARS`]) cleaned for a person; when
/// cleaning makes two different texts one, both escaped instead.
fn distinct(
    scrubber: &Scrubber,
    before: Option<String>,
    after: Option<String>,
) -> (Option<Shown>, Option<Shown>) {
    let cleaned =
        |text: &Option<String>| (text.as_ref()).map(|t| show(scrubber, t, MAX_CHANGE_CHARS));
    let (shown_before, shown_after) = (cleaned(&before), cleaned(&after));
    if shown_before != shown_after || before == after {
        return (shown_before, shown_after);
    }
    let escaped = |text: Option<String>| {
        let max = MAX_CHANGE_CHARS * MAX_ESCAPE_GROWTH;
        text.map(|t| show_escaped(scrubber, &t, max))
    };
    (escaped(before), escaped(after))
}

/// The change as the contract carries it, every text of it shown.
fn field_change(field: Shown, before: Option<Shown>, after: Option<Shown>) -> FieldChange {
    let text = |shown: Option<Shown>| shown.map(|s| s.leave(String::from));
    field.leave(|field| FieldChange::new(field, text(before), text(after)))
}

/// Whether a changed field is one a model reads: its top-level field is among
/// [`MODEL_FIELDS`].
pub(super) fn reaches_model(field: &str) -> bool {
    MODEL_FIELDS.iter().any(|model| {
        field
            .strip_prefix(model)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    })
}

/// A field that differs: its path, and its value before and after.
pub(super) type RawChange<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// Every field that differs between `before` and `after`, by path: objects are compared key by
/// key (in key order), anything else (an array too) as a whole.
pub(super) fn diff<'a>(
    path: &str,
    before: &'a Value,
    after: &'a Value,
    found: &mut impl FnMut(RawChange<'a>),
) {
    match (before, after) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort_unstable();
            keys.dedup();
            for key in keys {
                let field = path_with(path, key);
                match (old.get(key), new.get(key)) {
                    (Some(o), Some(n)) => diff(&field, o, n, found),
                    (o, n) => found((field, o, n)),
                }
            }
        }
        (old, new) if old == new => {}
        (old, new) => found((path.to_owned(), Some(old), Some(new))),
    }
}

/// `path` with `key` after it: `.key` for a word of letters, digits, `_`, `-` and `$`, else
/// `["key"]` escaped, so that a key holding a dot or an invisible character cannot pass for
/// another path.
pub(super) fn path_with(path: &str, key: &str) -> String {
    let word = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$'));
    match (word, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[\"{}\"]", Escape::ascii(key)),
    }
}
