//! The untrusted-data envelope: the only way from a server's bytes to text a model reads.
//!
//! Everything a server sends arrives as [`Untrusted`], whose contents only this module can
//! open. Tool definitions come out as a checked [`ToolSet`] (names checked, descriptions
//! cleaned and capped, schemas bounded), results as cleaned and capped text. Cleaning removes
//! what can deceive a reader without being seen: terminal escape sequences, and the control
//! and invisible characters that [`chars`] finds by their Unicode properties. The envelope
//! does not judge whether a description's words are honest; it guarantees what the model sees
//! is all there is to see, within bounds.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use self::catalog::ListedTool;
use self::param_headers::ParamHeaders;
use crate::policy::{
    MAX_DESCRIPTION_CHARS, MAX_RESULT_CHARS, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, MAX_TITLE_CHARS,
    MAX_TOOL_NAME_CHARS, MAX_VALIDATION_WORK, MAX_VIOLATION_CHARS, MAX_VIOLATIONS_IN_ERROR,
};

// By path, so the fuzz crate, which includes this file by path, finds them too.
#[path = "envelope/catalog.rs"]
mod catalog;
#[path = "envelope/chars.rs"]
mod chars;
#[path = "envelope/expansion.rs"]
mod expansion;
#[path = "envelope/off_runtime.rs"]
mod off_runtime;
#[path = "envelope/param_headers.rs"]
pub(crate) mod param_headers;

pub(crate) use catalog::{Catalog, Hints, Loose, Object};
pub(crate) use off_runtime::{check_arguments, convert_result};

/// Data from a server that no model may see before this module checks it.
#[derive(Debug)]
pub(crate) struct Untrusted<T>(T);

impl<T> Untrusted<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(value)
    }

    /// A look for protocol plumbing (a cursor, a version); nothing read through it may reach
    /// a model or a log line.
    pub(crate) fn peek(&self) -> &T {
        &self.0
    }
}

/// One server's tools after the envelope: what the listing shows and calls dispatch to.
#[derive(Debug)]
pub(crate) struct ToolSet {
    /// Accepted tools by exact name, in name order.
    pub(crate) tools: BTreeMap<String, Arc<CheckedTool>>,
    /// Dropped tools, with a name safe to show and the reason: the first
    /// [`MAX_REJECTED_KEPT`](crate::policy::MAX_REJECTED_KEPT).
    pub(crate) rejected: Vec<Rejected>,
    /// Dropped tools past those kept in `rejected`, only counted.
    pub(crate) more_rejected: usize,
    /// The accepted names as a JSON array, rendered once: the listing of every server shows
    /// them on each call, and 100 servers of 100 tools took milliseconds to build as values.
    pub(crate) names_json: Box<RawValue>,
}

/// A tool the envelope let through.
#[derive(Debug)]
pub(crate) struct CheckedTool {
    pub(crate) name: String,
    pub(crate) description: String,
    /// Its display name (`title`, else `annotations.title`), cleaned and capped.
    pub(crate) title: Option<String>,
    /// Its behaviour hints, when it gave any.
    pub(crate) hints: Option<Hints>,
    /// The schema as a model sees it: strings cleaned.
    pub(crate) shown_schema: Value,
    /// The output schema as a model sees it, when there is one: strings cleaned.
    pub(crate) shown_output_schema: Option<Value>,
    /// The schema as the server sent it, for validation.
    input_schema: Value,
    output_schema: Option<Value>,
    /// Each schema's size with its references expanded: what checking one value may cost.
    input_expansion: u64,
    output_expansion: u64,
    /// The arguments its input schema mirrors into `Mcp-Param-*` headers (`x-mcp-header`).
    pub(crate) param_headers: ParamHeaders,
    /// Compiled on first use: listing 10,000 tools compiles nothing.
    input_validator: OnceLock<Option<Validator>>,
    output_validator: OnceLock<Option<Validator>>,
}

/// A tool the envelope dropped, as the listing shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Rejected {
    pub(crate) name: String,
    pub(crate) reason: String,
}

fn check_tool(tool: ListedTool) -> Result<CheckedTool, Rejected> {
    let Some(name) = tool.name.0 else {
        return Err(reject("", "a tool without a string name"));
    };
    if name.is_empty() {
        return Err(reject(&name, "an empty name"));
    }
    if name.chars().count() > MAX_TOOL_NAME_CHARS {
        return Err(reject(
            &name,
            &format!("a name longer than {MAX_TOOL_NAME_CHARS} characters"),
        ));
    }
    if let Some(c) = name.chars().find(|&c| !chars::is_name_char(c)) {
        return Err(reject(
            &name,
            &format!(
                "a name with U+{:04X}; a tool name may hold only A-Z, a-z, 0-9, _, - and .",
                u32::from(c)
            ),
        ));
    }
    let (hints, annotations_title) = match tool.annotations.0 {
        Some(Object(annotations)) => (annotations.hints(), annotations.title.0),
        None => (None, None),
    };
    let shown = |text: String| Some(clean_owned(text)).filter(|t| !t.trim().is_empty());
    let title = [tool.title.0, annotations_title]
        .into_iter()
        .flatten()
        .find_map(shown);
    let description = tool
        .description
        .0
        .and_then(shown)
        .or_else(|| title.clone())
        .unwrap_or_else(|| name.clone());
    let description = truncate(description, MAX_DESCRIPTION_CHARS);
    let title = title.map(|title| truncate(title, MAX_TITLE_CHARS));
    let input_schema = tool.input_schema.0.unwrap_or(Value::Null);
    let input_expansion =
        check_schema(&input_schema).map_err(|why| reject(&name, &format!("inputSchema {why}")))?;
    let (output_schema, output_expansion) = match tool.output_schema.0 {
        None | Some(Value::Null) => (None, 0),
        Some(schema) => {
            let expansion = check_schema(&schema)
                .map_err(|why| reject(&name, &format!("outputSchema {why}")))?;
            (Some(schema), expansion)
        }
    };
    // A tool whose header declarations are invalid is left out, as the 2026-07-28 transport
    // requires, whatever revision its server speaks: the same tool must not be callable on
    // one server and refused on another.
    let param_headers = ParamHeaders::declare(&input_schema)
        .map_err(|why| reject(&name, &format!("inputSchema {why}")))?;
    Ok(CheckedTool {
        shown_schema: clean_value(&input_schema),
        shown_output_schema: output_schema.as_ref().map(clean_value),
        name,
        description,
        title,
        hints,
        input_schema,
        output_schema,
        input_expansion,
        output_expansion,
        param_headers,
        input_validator: OnceLock::new(),
        output_validator: OnceLock::new(),
    })
}

fn reject(name: &str, reason: &str) -> Rejected {
    let mut shown: String = name.escape_default().to_string();
    if shown.chars().count() > MAX_TOOL_NAME_CHARS {
        shown = truncate(shown, MAX_TOOL_NAME_CHARS);
    }
    Rejected {
        name: shown,
        reason: reason.to_owned(),
    }
}

/// Checks a schema's bounds, and answers its size with its references expanded.
fn check_schema(schema: &Value) -> Result<u64, String> {
    if !schema.is_object() {
        return Err("is not a JSON object".to_owned());
    }
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(format!("is nested deeper than {MAX_SCHEMA_DEPTH} levels"));
    }
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("is larger than {MAX_SCHEMA_BYTES} bytes"));
    }
    expansion::expanded_size(schema).map_err(|why| why.to_string())
}

/// Nesting depth: a scalar is 0, `{}` is 1. serde_json parsed it, so it is at most 128.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Compiles a server's schema without touching the network or the disk, with a regex engine
/// that cannot backtrack; `None` when it does not compile.
fn compile(schema: &Value) -> Option<Validator> {
    let build = || {
        jsonschema::options()
            .offline()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(schema)
    };
    // A compiler bug must not take the Host down with it.
    match catch_unwind(AssertUnwindSafe(build)) {
        Ok(Ok(validator)) => Some(validator),
        // The compiler's message may quote the schema, which is server text: not logged.
        Ok(Err(_)) | Err(_) => None,
    }
}

impl CheckedTool {
    /// Checks a model's arguments against the input schema. A schema that does not compile
    /// checks nothing: the server will judge the arguments itself. Arguments too large to
    /// check within [`MAX_VALIDATION_WORK`] are refused, never sent unchecked.
    /// `arguments` without its top-level nulls at properties the input schema does not list
    /// as required; `None` when it has none.
    pub(crate) fn without_optional_nulls(&self, arguments: &Value) -> Option<Value> {
        let Value::Object(given) = arguments else {
            return None;
        };
        let required = self.input_schema.get("required").and_then(Value::as_array);
        let optional_null = |key: &str, value: &Value| {
            value.is_null() && !required.is_some_and(|r| r.iter().any(|k| k == key))
        };
        let kept: Map<String, Value> = given
            .iter()
            .filter(|(key, value)| !optional_null(key, value))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        (kept.len() < given.len()).then_some(Value::Object(kept))
    }

    pub(crate) fn check_arguments(&self, arguments: &Value) -> Result<(), String> {
        let Some(validator) = self
            .input_validator
            .get_or_init(|| compile(&self.input_schema))
        else {
            tracing::debug!(tool = %log_safe(&self.name), "sending arguments unchecked: the input schema did not compile");
            return Ok(());
        };
        if let Err(most) = within_budget(arguments, self.input_expansion) {
            return Err(format!(
                "the arguments are too large to check against the input schema of {}: with its \
                 references expanded it has {} nodes, which allows at most {most} JSON values; \
                 nothing was sent",
                self.name, self.input_expansion
            ));
        }
        let violations: Vec<String> = validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS_IN_ERROR)
            .map(|e| violation(&e.instance_path().to_string(), &e.to_string()))
            .collect();
        if violations.is_empty() {
            return Ok(());
        }
        let text = format!(
            "the arguments do not match the input schema of {}:\n- {}",
            self.name,
            violations.join("\n- ")
        );
        Err(truncate(text, MAX_RESULT_CHARS))
    }

    /// Checks `structuredContent` against the output schema, naming the first failing path.
    /// Content too large to check within [`MAX_VALIDATION_WORK`] fails: it is not shown
    /// unchecked.
    fn check_structured(&self, content: &Value) -> Result<(), String> {
        let Some(schema) = &self.output_schema else {
            return Ok(());
        };
        let Some(validator) = self.output_validator.get_or_init(|| compile(schema)) else {
            return Ok(());
        };
        if let Err(most) = within_budget(content, self.output_expansion) {
            return Err(format!(
                "the result's structuredContent is too large to check against the tool's \
                 outputSchema: with its references expanded it has {} nodes, which allows at \
                 most {most} JSON values; the result is not shown",
                self.output_expansion
            ));
        }
        match validator.iter_errors(content).next() {
            None => Ok(()),
            Some(e) => Err(format!(
                "the result's structuredContent does not match the tool's outputSchema at {}",
                violation(&e.instance_path().to_string(), &e.masked().to_string())
            )),
        }
    }
}

/// The most JSON values a check against a schema of `expansion` nodes may look at, as
/// `Err` when `instance` has more.
fn within_budget(instance: &Value, expansion: u64) -> Result<(), u64> {
    let most = MAX_VALIDATION_WORK / expansion.max(1);
    // Counted without recursion, and only up to the first value past the budget.
    let mut values: u64 = 0;
    let mut pending = vec![instance];
    while let Some(value) = pending.pop() {
        values += 1;
        if values > most {
            return Err(most);
        }
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.values()),
            _ => {}
        }
    }
    Ok(())
}

/// One schema violation as a model reads it. The instance path can hold a server's keys and
/// the message its schema's words, so both are cleaned and capped like a result.
fn violation(pointer: &str, message: &str) -> String {
    let path = if pointer.is_empty() { "/" } else { pointer };
    truncate(
        clean_owned(format!("{path}: {message}")),
        MAX_VIOLATION_CHARS,
    )
}

/// What a `tools/call` result becomes for a model.
pub(crate) enum Outcome {
    /// The tool's text.
    Text(String),
    /// The tool reported an error (`isError`), or its result broke its own schema.
    ToolFailed(String),
}

/// Converts a `tools/call` result: each content block one piece, in order, joined by a blank
/// line; a result with no blocks but `structuredContent` gives that JSON. Calls reach it
/// through [`convert_result`], which runs it off the runtime's workers.
pub(crate) fn convert_now(result: Untrusted<Value>, tool: &CheckedTool) -> Outcome {
    let mut result = result.0;
    let blocks = match result.get_mut("content") {
        Some(Value::Array(blocks)) => std::mem::take(blocks),
        _ => Vec::new(),
    };
    // Each piece is cleaned on its own, so an escape left open in one cannot swallow the next.
    let pieces: Vec<String> = blocks
        .into_iter()
        .map(|block| clean_owned(block_text(block)))
        .collect();
    let structured = result.get("structuredContent");
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if let (false, Some(structured)) = (is_error, structured)
        && let Err(why) = tool.check_structured(structured)
    {
        return Outcome::ToolFailed(why);
    }
    let text = match (pieces.len(), structured) {
        (0, Some(structured)) => clean_owned(structured.to_string()),
        (1, _) => pieces.into_iter().collect(), // the one piece itself, not a copy
        _ => pieces.join("\n\n"),
    };
    let text = truncate(text, MAX_RESULT_CHARS);
    if is_error {
        Outcome::ToolFailed(text)
    } else {
        Outcome::Text(text)
    }
}

/// What a content block shows: its text, moved out as results can be megabytes, or a
/// placeholder for what a model cannot read here.
fn block_text(mut block: Value) -> String {
    fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
        v.get(key).and_then(Value::as_str)
    }
    fn take_str(v: &mut Value, key: &str) -> Option<String> {
        match v.get_mut(key).map(Value::take) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }
    let mime = |v: &Value, default: &str| str_of(v, "mimeType").unwrap_or(default).to_owned();
    match block.get("type").and_then(Value::as_str) {
        Some("text") => take_str(&mut block, "text").unwrap_or_default(),
        Some("image") => format!("[image omitted: {}]", mime(&block, "unknown")),
        Some("audio") => format!("[audio omitted: {}]", mime(&block, "unknown")),
        Some("resource_link") => {
            format!("[resource: {}]", str_of(&block, "uri").unwrap_or_default())
        }
        Some("resource") => {
            let mut resource = block
                .get_mut("resource")
                .map(Value::take)
                .unwrap_or_default();
            take_str(&mut resource, "text").unwrap_or_else(|| {
                let mime = mime(&resource, "application/octet-stream");
                format!("[resource omitted: {mime}]")
            })
        }
        Some(other) => format!("[{} omitted]", other.escape_default()),
        None => "[content omitted]".to_owned(),
    }
}

/// The text of a JSON-RPC error a server answered with.
pub(crate) fn rpc_error_text(code: i64, message: Untrusted<String>) -> String {
    let message = truncate(clean_text(&message.0), MAX_DESCRIPTION_CHARS);
    format!("the server answered with error {code}: {message}")
}

/// Cuts `text` to `max` characters, saying how many were cut.
pub(crate) fn truncate(text: String, max: usize) -> String {
    // No more bytes than the limit means no more characters: nothing to count.
    if text.len() <= max {
        return text;
    }
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let cut = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    format!("{}\n[... {} characters cut]", &text[..cut], total - max)
}

/// Removes terminal escape sequences (CSI, OSC, DCS and the rest, 7- and 8-bit), control
/// characters other than newline and tab, and invisible characters, and makes every other
/// space an ordinary one (see [`chars`]).
pub(crate) fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        // Results are mostly runs of plain text: copy each run whole.
        let plain = plain_len(rest.as_bytes());
        out.push_str(&rest[..plain]);
        let mut tail = rest[plain..].chars();
        let Some(c) = tail.next() else { break };
        match c {
            '\u{1B}' => match tail.next() {
                Some('[') => skip_csi(&mut tail),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut tail),
                _ => {} // a two-character escape
            },
            '\u{9B}' => skip_csi(&mut tail),
            '\u{9D}' | '\u{90}' | '\u{98}' | '\u{9E}' | '\u{9F}' => skip_string(&mut tail),
            c => out.extend(chars::shown(c)),
        }
        rest = tail.as_str();
    }
    out
}

/// [`clean_text`] of an owned text, which comes back as it is (not copied) when there is
/// nothing to remove.
fn clean_owned(text: String) -> String {
    if plain_len(text.as_bytes()) == text.len() {
        return text;
    }
    clean_text(&text)
}

/// How many leading bytes are printable ASCII, newline or tab: text that needs no decision.
fn plain_len(bytes: &[u8]) -> usize {
    // Blocks are tested without an early exit, which compiles to SIMD; a search byte by byte
    // made cleaning a 1 MiB result cost milliseconds.
    const BLOCK: usize = 32;
    let is_plain = |b: u8| matches!(b, b' '..=b'~' | b'\n' | b'\t');
    let whole = bytes
        .chunks_exact(BLOCK)
        .take_while(|block| block.iter().fold(true, |all, &b| all & is_plain(b)))
        .count()
        * BLOCK;
    let tail = &bytes[whole..];
    whole
        + tail
            .iter()
            .position(|&b| !is_plain(b))
            .unwrap_or(tail.len())
}

fn skip_csi(chars: &mut std::str::Chars<'_>) {
    // Parameters and intermediates up to a final byte in 0x40..=0x7E.
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7E}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut std::str::Chars<'_>) {
    // Up to BEL, ST (ESC \) or the 8-bit ST; an unterminated one runs to the end.
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9C}' => break,
            '\u{1B}' if chars.as_str().starts_with('\\') => {
                chars.next();
                break;
            }
            _ => {}
        }
    }
}

/// Text for a log line: every character that cleaning would change escaped, newlines
/// included. tracing writes field values as they are, so a server could otherwise move the
/// cursor, retitle the terminal, forge a line in the Host's logs or hide text in it.
pub(crate) fn log_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !c.is_control() && chars::shown(c) == Some(c) {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

/// A copy of a schema with every key and string cleaned, for a model to read.
fn clean_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clean_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(clean_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (clean_text(k), clean_value(v)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
