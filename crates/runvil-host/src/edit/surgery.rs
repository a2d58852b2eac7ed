//! Changing one server of an mcp.json in its text, so that everything else stays as written:
//! other entries and fields, their order, the layout, comments and trailing commas.
//!
//! Parsing the file into a `Value` and writing it back would lose the comments (VS Code's
//! files have them), reorder keys and reflow the whole file. So the change is made in the
//! text: the file is blanked as `jsonc` blanks it (comments and trailing commas turned into
//! spaces, every byte in place), the servers object and its members are found in that plain
//! JSON, and bytes are inserted or removed in the original text only between members.
//!
//! Then the outcome is checked, not trusted: it must parse, mean exactly the original with
//! the one change, and hold every comment of the original but those that were inside what
//! was removed, in order. A change that fails the check (a comment where the new member had
//! to go, a layout the rules below did not foresee) is refused, and nothing is written.

use std::fmt;
use std::ops::Range;

use serde_json::{Map, Value};

use crate::discovery::jsonc;

/// The change to make to the servers object. It holds header values, so it has no `Debug`.
#[derive(Clone)]
pub(crate) enum Change<'a> {
    /// Adds the entry `entry` as `name`; with `replace`, replaces a server of that name (the
    /// last, which is the one read, if it is written twice).
    Add {
        name: &'a str,
        entry: &'a Entry,
        replace: bool,
    },
    /// Removes every member `name` (a name written twice is removed twice).
    Remove { name: &'a str },
}

/// A remote server's entry, in the order it is written. Its `Debug` names the headers only:
/// the URL and the values may hold secrets.
#[derive(Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Entry")
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// The entry as the Pack reads it.
    pub(crate) fn as_value(&self) -> Value {
        self.value()
    }

    fn value(&self) -> Value {
        let mut entry = Map::new();
        entry.insert("url".into(), Value::String(self.url.clone()));
        if !self.headers.is_empty() {
            let headers = self
                .headers
                .iter()
                .map(|(name, value)| (name.clone(), Value::String(value.clone())))
                .collect();
            entry.insert("headers".into(), Value::Object(headers));
        }
        Value::Object(entry)
    }

    /// The entry as JSON text: on one line when `layout` is `None`, else laid out with
    /// `indent` as the indentation of its opening line and `unit` as one level more.
    fn render(&self, layout: Option<(&str, &str)>) -> String {
        let string = |text: &str| Value::String(text.to_owned()).to_string();
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(name, value)| format!("{}: {}", string(name), string(value)))
            .collect();
        let Some((indent, unit)) = layout else {
            let mut text = format!("{{\"url\": {}", string(&self.url));
            if !headers.is_empty() {
                text.push_str(&format!(", \"headers\": {{{}}}", headers.join(", ")));
            }
            text.push('}');
            return text;
        };
        let inner = format!("{indent}{unit}");
        let mut text = format!("{{\n{inner}\"url\": {}", string(&self.url));
        if !headers.is_empty() {
            let deeper = format!("{inner}{unit}");
            let lines: Vec<String> = headers.iter().map(|h| format!("{deeper}{h}")).collect();
            text.push_str(&format!(
                ",\n{inner}\"headers\": {{\n{}\n{inner}}}",
                lines.join(",\n")
            ));
        }
        text.push_str(&format!("\n{indent}}}"));
        text
    }
}

/// Why a change was not made.
#[derive(Debug, PartialEq)]
pub(crate) enum Refusal {
    /// The file is not JSON as runvil reads it (its error names the line and column).
    Syntax(String),
    /// `Add` without `replace` of a name the file has.
    Exists,
    /// `Remove` of a name the file does not have; the names it has.
    Missing(Vec<String>),
    /// The servers key holds something other than an object.
    NotAnObject(&'static str),
    /// The change could not be made without disturbing something else; what.
    Unsafe(String),
}

/// The text of `original` (an mcp.json, JSON with comments) with `change` made.
pub(crate) fn apply(original: &str, change: &Change<'_>) -> Result<String, Refusal> {
    let syntax = |e: jsonc::SyntaxError| Refusal::Syntax(e.to_string());
    let before = jsonc::parse(original.as_bytes()).map_err(syntax)?.value;
    let blanked = jsonc::blanked(original.as_bytes()).map_err(syntax)?;
    let file = File {
        text: original,
        plain: &blanked.text,
        comments: &blanked.comments,
    };
    let root_open = skip_space(file.plain, 0);
    if file.plain.get(root_open) != Some(&b'{') {
        return Err(Refusal::Unsafe("the file is not a JSON object".to_owned()));
    }
    let root = file.object(root_open);
    let key = ["mcpServers", "servers"]
        .into_iter()
        .find(|key| root.members.iter().any(|m| m.key == *key));
    let mut edits = Vec::new();
    match (key.and_then(|key| root.last(key)), change) {
        (None, Change::Add { name, entry, .. }) => {
            let servers = |layout: Option<(&str, &str)>| Entry::servers_text(name, entry, layout);
            edits = file.insert(&root, "mcpServers", &servers);
        }
        (None, Change::Remove { .. }) => return Err(Refusal::Missing(Vec::new())),
        (Some(servers), change) => {
            let key = key.unwrap_or("mcpServers");
            if file.plain[servers.value.start] != b'{' {
                return Err(Refusal::NotAnObject(key));
            }
            let object = file.object(servers.value.start);
            match *change {
                Change::Add {
                    name,
                    entry,
                    replace,
                } => match object.last(name) {
                    Some(_) if !replace => return Err(Refusal::Exists),
                    Some(member) => {
                        let layout = file.layout_of(&object, member.start);
                        edits.push(Edit::replace(member.value.clone(), entry.render(layout)));
                    }
                    None => {
                        let render = |layout: Option<(&str, &str)>| entry.render(layout);
                        edits = file.insert(&object, name, &render);
                    }
                },
                Change::Remove { name } => {
                    let found: Vec<usize> = (0..object.members.len())
                        .filter(|&i| object.members[i].key == name)
                        .collect();
                    if found.is_empty() {
                        let names = object.members.iter().map(|m| m.key.clone()).collect();
                        return Err(Refusal::Missing(names));
                    }
                    for index in found {
                        edits.extend(file.remove(&object, index));
                    }
                }
            }
        }
    }
    let changed = splice(original, edits.clone());
    check(&file, &before, key, change, &edits, &changed)?;
    Ok(changed)
}

impl Entry {
    /// A servers object holding only `name`, for a file that has none, laid out as
    /// [`Entry::render`] lays out.
    fn servers_text(name: &str, entry: &Entry, layout: Option<(&str, &str)>) -> String {
        let name = Value::String(name.to_owned()).to_string();
        match layout {
            None => format!("{{{name}: {}}}", entry.render(None)),
            Some((indent, unit)) => {
                let inner = format!("{indent}{unit}");
                let value = entry.render(Some((&inner, unit)));
                format!("{{\n{inner}{name}: {value}\n{indent}}}")
            }
        }
    }
}

/// How a value's text is made for a layout: `None` for one line, else the indentation of its
/// line and one level (see [`Entry::render`]).
type Render<'a> = dyn Fn(Option<(&str, &str)>) -> String + 'a;

/// The indentation of one level when the file shows none to copy.
const DEFAULT_UNIT: &str = "  ";

/// Checks the changed text: it parses, means `before` with the change, and keeps every
/// comment that was not inside a removed span, in order.
fn check(
    file: &File<'_>,
    before: &Value,
    key: Option<&str>,
    change: &Change<'_>,
    edits: &[Edit],
    changed: &str,
) -> Result<(), Refusal> {
    let unsafe_change = |what: &str| Err(Refusal::Unsafe(what.to_owned()));
    let Ok(after) = jsonc::parse(changed.as_bytes()) else {
        return unsafe_change("the changed file would not parse");
    };
    let mut expected = before.clone();
    let servers = expected.as_object_mut().and_then(|root| {
        root.entry(key.unwrap_or("mcpServers"))
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
    });
    let Some(servers) = servers else {
        return unsafe_change("the file is not an object of servers");
    };
    match change {
        Change::Add { name, entry, .. } => {
            servers.insert((*name).to_owned(), entry.value());
        }
        Change::Remove { name } => {
            servers.remove(*name);
        }
    }
    if after.value != expected {
        return unsafe_change("the changed file would mean something else");
    }
    let mut kept = Vec::new();
    for comment in file.comments {
        let inside = edits.iter().any(|e| e.removes(comment));
        let overlaps = edits.iter().any(|e| e.overlaps(comment));
        match (inside, overlaps) {
            (true, _) => {}
            (false, true) => return unsafe_change("a comment is where the change must go"),
            (false, false) => kept.push(&file.text[comment.clone()]),
        }
    }
    let blanked = jsonc::blanked(changed.as_bytes()).map_err(|e| Refusal::Syntax(e.to_string()))?;
    let now: Vec<&str> = blanked
        .comments
        .iter()
        .map(|r| &changed[r.clone()])
        .collect();
    if now != kept {
        return unsafe_change("a comment would change");
    }
    Ok(())
}

/// One member of an object, by byte offsets.
#[derive(Debug)]
struct Member {
    key: String,
    /// Its key's opening quote.
    start: usize,
    value: Range<usize>,
}

/// An object's members, and where its braces are.
#[derive(Debug)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

impl Object {
    /// The last member named `key`: the one a reader keeps.
    fn last(&self, key: &str) -> Option<&Member> {
        self.members.iter().rev().find(|m| m.key == key)
    }
}

/// Bytes replaced at a range of the original text (an entry's, secrets included: no `Debug`).
#[derive(Clone)]
struct Edit {
    at: Range<usize>,
    with: String,
}

impl Edit {
    fn replace(at: Range<usize>, with: String) -> Self {
        Self { at, with }
    }

    fn insert(at: usize, with: String) -> Self {
        Self { at: at..at, with }
    }

    fn delete(at: Range<usize>) -> Self {
        Self {
            at,
            with: String::new(),
        }
    }

    /// Whether `span` is wholly inside what this edit removes.
    fn removes(&self, span: &Range<usize>) -> bool {
        !self.at.is_empty() && self.at.start <= span.start && span.end <= self.at.end
    }

    /// Whether this edit touches `span` at all: removes part of it, or inserts inside it.
    fn overlaps(&self, span: &Range<usize>) -> bool {
        if self.at.is_empty() {
            span.start < self.at.start && self.at.start < span.end
        } else {
            self.at.start < span.end && span.start < self.at.end
        }
    }
}

/// `text` with `edits` (which do not overlap) made.
fn splice(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| (e.at.start, e.at.end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for edit in edits {
        let start = edit.at.start.max(at);
        out.push_str(&text[at..start]);
        out.push_str(&edit.with);
        at = edit.at.end.max(start);
    }
    out.push_str(&text[at..]);
    out
}

/// The file: its text, the same bytes blanked, and where its comments are.
struct File<'a> {
    text: &'a str,
    plain: &'a [u8],
    comments: &'a [Range<usize>],
}

impl File<'_> {
    /// The object whose `{` is at `open`, in valid JSON.
    fn object(&self, open: usize) -> Object {
        let plain = self.plain;
        let mut members = Vec::new();
        let mut at = skip_space(plain, open + 1);
        while plain.get(at) == Some(&b'"') {
            let key_end = jsonc::string_end(plain, at);
            let key = serde_json::from_slice(&plain[at..key_end]).unwrap_or_default();
            let colon = skip_space(plain, key_end);
            let value_start = skip_space(plain, colon + 1);
            let value_end = value_end(plain, value_start);
            members.push(Member {
                key,
                start: at,
                value: value_start..value_end,
            });
            at = skip_space(plain, value_end);
            if plain.get(at) == Some(&b',') {
                at = skip_space(plain, at + 1);
            }
        }
        Object {
            open,
            close: at,
            members,
        }
    }

    /// Whether byte `at` is inside a comment.
    fn in_comment(&self, at: usize) -> bool {
        self.comments.iter().any(|c| c.contains(&at))
    }

    /// The first comma of the original text in `range` that is not in a comment: the comma
    /// after a value (a trailing one is blanked in `plain`, not in the text).
    fn comma_in(&self, range: Range<usize>) -> Option<usize> {
        range
            .into_iter()
            .find(|&i| self.text.as_bytes()[i] == b',' && !self.in_comment(i))
    }

    /// The start of the line that holds byte `at`.
    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |n| n + 1)
    }

    /// The indentation before byte `at`, if only spaces and tabs precede it on its line.
    fn indentation(&self, at: usize) -> Option<&str> {
        let before = &self.text[self.line_start(at)..at];
        before
            .bytes()
            .all(|b| b == b' ' || b == b'\t')
            .then_some(before)
    }

    /// How a value written at the member of `object` that starts at `start` is laid out:
    /// `None` (one line) when the member does not start its own line.
    fn layout_of(&self, object: &Object, start: usize) -> Option<(&str, &str)> {
        let indent = self.indentation(start)?;
        let outer = self.line_indentation(object.open);
        let unit = indent.strip_prefix(outer).filter(|u| !u.is_empty());
        Some((indent, unit.unwrap_or(DEFAULT_UNIT)))
    }

    /// The edits that add the member `"name": value` at the end of `object`, `render` giving
    /// the value's text for a layout (see [`Entry::render`]).
    fn insert(&self, object: &Object, name: &str, render: &Render<'_>) -> Vec<Edit> {
        let key = Value::String(name.to_owned()).to_string();
        let Some(last) = object.members.last() else {
            return self.insert_first(object, &key, render);
        };
        let trailing = self.comma_in(last.value.end..object.close);
        let Some((indent, unit)) = self.layout_of(object, last.start) else {
            let value = render(None);
            return vec![Edit::insert(last.value.end, format!(", {key}: {value}"))];
        };
        let value = render(Some((indent, unit)));
        let between = &self.text[last.value.end..object.close];
        // After the rest of the last member's line (a comment there stays with it).
        let line_end = between
            .find('\n')
            .map(|n| last.value.end + n)
            .filter(|&n| !self.in_comment(n));
        let at = line_end.unwrap_or(trailing.map_or(last.value.end, |c| c + 1));
        let mut edits = Vec::new();
        // Before the member, should both go at one place: the comma follows the value.
        if trailing.is_none() {
            edits.push(Edit::insert(last.value.end, ",".to_owned()));
        }
        let comma = if trailing.is_some() { "," } else { "" };
        edits.push(Edit::insert(at, format!("\n{indent}{key}: {value}{comma}")));
        if !between.contains('\n') {
            // The object closed on the last member's line: now it closes on its own.
            let outer = self.line_indentation(object.open);
            edits.push(Edit::insert(object.close, format!("\n{outer}")));
        }
        edits
    }

    /// The edits that add the first member of an empty object, on a line of its own.
    fn insert_first(&self, object: &Object, key: &str, render: &Render<'_>) -> Vec<Edit> {
        let outer = self.line_indentation(object.open);
        let unit = if outer.starts_with('\t') {
            "\t"
        } else {
            DEFAULT_UNIT
        };
        let indent = format!("{outer}{unit}");
        let value = render(Some((&indent, unit)));
        let mut edits = vec![Edit::insert(
            object.open + 1,
            format!("\n{indent}{key}: {value}"),
        )];
        if !self.text[object.open..object.close].contains('\n') {
            edits.push(Edit::insert(object.close, format!("\n{outer}")));
        }
        edits
    }

    /// The indentation of the line that holds byte `at`, whatever follows it.
    fn line_indentation(&self, at: usize) -> &str {
        let line = &self.text[self.line_start(at)..at];
        let end = line
            .find(|c: char| c != ' ' && c != '\t')
            .unwrap_or(line.len());
        &line[..end]
    }

    /// The edits that remove member `index` of `object`, with its line when it had one.
    fn remove(&self, object: &Object, index: usize) -> Vec<Edit> {
        let member = &object.members[index];
        let own_line = self.indentation(member.start).is_some();
        let start = if own_line {
            self.line_start(member.start)
        } else {
            member.start
        };
        let next = object.members.get(index + 1);
        let until = next.map_or(object.close, |n| n.start);
        let comma = self.comma_in(member.value.end..until);
        match (next, comma) {
            // Not the last: up to its comma, and the rest of its line when that is empty.
            (Some(_), Some(comma)) => {
                let mut end = comma + 1;
                let rest = &self.text[end..until];
                if let Some(newline) = rest.find('\n').filter(|_| own_line)
                    && rest[..newline].trim().is_empty()
                {
                    end += newline + 1;
                }
                vec![Edit::delete(start..end)]
            }
            // The last, with a trailing comma: the one before keeps its comma, now trailing.
            (None, Some(comma)) => vec![Edit::delete(self.line_or(start, own_line)..comma + 1)],
            // The last without one: the comma before it goes too.
            (None, None) => {
                let mut edits = vec![Edit::delete(
                    self.line_or(start, own_line)..member.value.end,
                )];
                if let Some(previous) = index.checked_sub(1).map(|i| &object.members[i])
                    && let Some(comma) = self.comma_in(previous.value.end..member.start)
                {
                    edits.push(Edit::delete(comma..comma + 1));
                }
                edits
            }
            // A member followed by another has a comma: valid JSON was parsed.
            (Some(_), None) => vec![Edit::delete(start..until)],
        }
    }

    /// `start`, or the newline before it when the member had its own line, so that removing
    /// it leaves no empty line.
    fn line_or(&self, start: usize, own_line: bool) -> usize {
        if own_line && start > 0 && !self.in_comment(start - 1) {
            start - 1
        } else {
            start
        }
    }
}

/// The index of the first byte from `at` that is not JSON whitespace (a blanked comment is).
fn skip_space(plain: &[u8], mut at: usize) -> usize {
    while plain
        .get(at)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// The index just past the JSON value that starts at `start`, in valid JSON.
fn value_end(plain: &[u8], start: usize) -> usize {
    match plain.get(start) {
        Some(b'"') => jsonc::string_end(plain, start),
        Some(b'{' | b'[') => {
            let mut depth = 0_usize;
            let mut at = start;
            while let Some(&byte) = plain.get(at) {
                match byte {
                    b'"' => {
                        at = jsonc::string_end(plain, at);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return at + 1;
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
            plain.len()
        }
        _ => {
            let mut at = start;
            while plain.get(at).is_some_and(|b| !b",}] \t\r\n".contains(b)) {
                at += 1;
            }
            at
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, headers: &[(&str, &str)]) -> Entry {
        Entry {
            url: url.to_owned(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn add(text: &str, name: &str, entry: &Entry) -> Result<String, Refusal> {
        apply(
            text,
            &Change::Add {
                name,
                entry,
                replace: false,
            },
        )
    }

    fn remove(text: &str, name: &str) -> Result<String, Refusal> {
        apply(text, &Change::Remove { name })
    }

    const VS_CODE: &str = "{
  // The servers of this workspace.
  \"servers\": {
    \"web\": {
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\", // the old one
    },
    /* the second */
    \"docs\": { \"url\": \"https://docs.example/mcp\" }, // trailing
  },
  \"inputs\": [],
}
";

    #[test]
    fn an_entry_is_added_after_the_others_keeping_comments_commas_and_layout() {
        let new = entry(
            "https://new.example/mcp",
            &[("Authorization", "Bearer ${env:T}")],
        );
        assert_eq!(
            add(VS_CODE, "new", &new).expect("added"),
            "{
  // The servers of this workspace.
  \"servers\": {
    \"web\": {
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\", // the old one
    },
    /* the second */
    \"docs\": { \"url\": \"https://docs.example/mcp\" }, // trailing
    \"new\": {
      \"url\": \"https://new.example/mcp\",
      \"headers\": {
        \"Authorization\": \"Bearer ${env:T}\"
      }
    },
  },
  \"inputs\": [],
}
"
        );
        let plain = "{\n    \"mcpServers\": {\n        \"a\": {\"url\": \"x\"}\n    }\n}\n";
        assert_eq!(
            add(plain, "b", &entry("y", &[])).expect("added"),
            "{\n    \"mcpServers\": {\n        \"a\": {\"url\": \"x\"},\n        \"b\": {\n            \"url\": \"y\"\n        }\n    }\n}\n"
        );
    }

    #[test]
    fn compact_empty_and_missing_servers_objects_get_the_entry() {
        let e = entry("u", &[]);
        assert_eq!(
            add(r#"{"mcpServers": {"a": {"url": "x"}}}"#, "b", &e).expect("added"),
            r#"{"mcpServers": {"a": {"url": "x"}, "b": {"url": "u"}}}"#
        );
        assert_eq!(
            add("{\"mcpServers\": {}}\n", "b", &e).expect("added"),
            "{\"mcpServers\": {\n  \"b\": {\n    \"url\": \"u\"\n  }\n}}\n"
        );
        assert_eq!(
            add("{\n  \"other\": 1\n}\n", "b", &e).expect("added"),
            "{\n  \"other\": 1,\n  \"mcpServers\": {\n    \"b\": {\n      \"url\": \"u\"\n    }\n  }\n}\n"
        );
        assert_eq!(
            add("{}", "b", &e).expect("added"),
            "{\n  \"mcpServers\": {\n    \"b\": {\n      \"url\": \"u\"\n    }\n  }\n}"
        );
    }

    #[test]
    fn an_existing_name_is_refused_unless_replaced() {
        let e = entry("https://other/mcp", &[]);
        assert_eq!(add(VS_CODE, "docs", &e), Err(Refusal::Exists));
        let replaced = apply(
            VS_CODE,
            &Change::Add {
                name: "web",
                entry: &e,
                replace: true,
            },
        )
        .expect("replaced");
        assert!(
            replaced.contains(
                "    \"web\": {\n      \"url\": \"https://other/mcp\"\n    },\n    /* the second */"
            ),
            "{replaced}"
        );
        assert!(
            !replaced.contains("the old one"),
            "its comment went with it"
        );
    }

    #[test]
    fn a_removed_entry_takes_its_lines_and_leaves_the_rest_as_written() {
        assert_eq!(
            remove(VS_CODE, "web").expect("removed"),
            "{
  // The servers of this workspace.
  \"servers\": {
    /* the second */
    \"docs\": { \"url\": \"https://docs.example/mcp\" }, // trailing
  },
  \"inputs\": [],
}
"
        );
        assert_eq!(
            remove(VS_CODE, "docs").expect("removed"),
            "{
  // The servers of this workspace.
  \"servers\": {
    \"web\": {
      \"type\": \"http\",
      \"url\": \"https://example.com/mcp\", // the old one
    },
    /* the second */ // trailing
  },
  \"inputs\": [],
}
"
        );
        let plain = "{\n  \"mcpServers\": {\n    \"a\": {\"url\": \"x\"},\n    \"b\": {\"url\": \"y\"}\n  }\n}\n";
        assert_eq!(
            remove(plain, "b").expect("removed"),
            "{\n  \"mcpServers\": {\n    \"a\": {\"url\": \"x\"}\n  }\n}\n"
        );
        assert_eq!(
            remove(plain, "a").expect("removed"),
            "{\n  \"mcpServers\": {\n    \"b\": {\"url\": \"y\"}\n  }\n}\n"
        );
        assert_eq!(
            remove(r#"{"mcpServers": {"a": 1, "b": 2, "a": 3}}"#, "a").expect("removed"),
            r#"{"mcpServers": { "b": 2 }}"#
        );
        assert_eq!(
            remove(plain, "c"),
            Err(Refusal::Missing(vec!["a".to_owned(), "b".to_owned()]))
        );
    }

    #[test]
    fn what_cannot_be_changed_safely_is_refused() {
        let e = entry("u", &[]);
        assert_eq!(
            add(r#"{"mcpServers": [1]}"#, "b", &e),
            Err(Refusal::NotAnObject("mcpServers"))
        );
        assert!(matches!(
            add("{\"mcpServers\": {", "b", &e),
            Err(Refusal::Syntax(_))
        ));
        // The end of the last member's line is inside a block comment: the new member goes
        // right after the value, and the comment after it.
        let hemmed = "{\"mcpServers\": {\n  \"a\": 1 /* a\n  comment */\n}}";
        assert_eq!(
            add(hemmed, "b", &e).expect("added"),
            "{\"mcpServers\": {\n  \"a\": 1,\n  \"b\": {\n    \"url\": \"u\"\n  } /* a\n  comment */\n}}"
        );
        // A comment between the separator and the member removed with it would go with it;
        // one on the line before is kept.
        let noted = "{\"mcpServers\": {\n  \"a\": 1, // about a\n  \"b\": 2\n}}";
        assert_eq!(
            remove(noted, "b").expect("removed"),
            "{\"mcpServers\": {\n  \"a\": 1 // about a\n}}"
        );
    }
}
