//! Tool checks: what a listed tool must be for a model to see it, and what a model's
//! arguments (or a tool's structured result) must be to pass its schema.
//!
//! A tool is accepted with a name a model can type (bounded, from a small alphabet), a cleaned
//! and capped description and title, and schemas within the policy's bounds on size, depth and
//! expansion; anything else drops the tool with a reason safe to show. Schemas compile on first
//! use, offline and with a regex engine that cannot backtrack, and every check is bounded by
//! [`MAX_VALIDATION_WORK`] so a hostile schema cannot make one call cost the Host seconds.

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::expansion;
use super::listed::{Hints, ListedTool};
use crate::param_headers::ParamHeaders;
use crate::policy::{
    MAX_DESCRIPTION_CHARS, MAX_ERROR_CHARS, MAX_RESULT_CHARS, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH,
    MAX_TITLE_CHARS, MAX_TOOL_NAME_CHARS, MAX_VALIDATION_WORK, MAX_VIOLATION_CHARS,
    MAX_VIOLATIONS_IN_ERROR,
};
use crate::text::Render;
use crate::text::{
    Piece, Scrubber, Shown, clean_value, is_name_char, log_safe, show, show_escaped,
    show_on_one_line, show_owned,
};
use crate::wire::Object;

/// One server's tools after the envelope: what the listing shows and calls dispatch to.
#[derive(Debug, Clone)]
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
    /// Tools held until the user approves them (their definition changed since, or they are
    /// new), by name, with the reason a model reads. Not among `tools`; the listing shows
    /// them first among the rejected.
    pub(crate) held: BTreeMap<String, Rejected>,
}

impl ToolSet {
    /// The set of `tools`, the names rendered once.
    pub(crate) fn new(
        tools: BTreeMap<String, Arc<CheckedTool>>,
        rejected: Vec<Rejected>,
        more_rejected: usize,
        held: BTreeMap<String, Rejected>,
    ) -> Self {
        let names_json = serde_json::value::to_raw_value(&tools.keys().collect::<Vec<_>>())
            .expect("a list of strings serializes");
        Self {
            tools,
            rejected,
            more_rejected,
            names_json,
            held,
        }
    }

    /// The names of the callable tools, in name order, as a Host's status shows them.
    pub(crate) fn names(&self) -> Arc<[String]> {
        self.tools.keys().cloned().collect()
    }
}

/// A tool the envelope let through.
#[derive(Debug)]
pub(crate) struct CheckedTool {
    pub(crate) name: ToolName,
    /// Its description, else a title, else its name: shown (scrubbed, cleaned and capped).
    pub(crate) description: Shown,
    /// Its display name (`title`, else `annotations.title`), shown.
    pub(crate) title: Option<Shown>,
    /// Its behaviour hints, when it gave any.
    pub(crate) hints: Option<Hints>,
    /// The schema as a model sees it: strings cleaned.
    pub(crate) shown_schema: Value,
    /// The output schema as a model sees it, when there is one: strings cleaned.
    pub(crate) shown_output_schema: Option<Value>,
    /// The schema as the server sent it, for validation.
    pub(super) input_schema: Value,
    pub(super) output_schema: Option<Value>,
    /// Each schema's size with its references expanded: what checking one value may cost.
    pub(super) input_expansion: u64,
    pub(super) output_expansion: u64,
    /// The arguments its input schema mirrors into `Mcp-Param-*` headers (`x-mcp-header`).
    pub(crate) param_headers: ParamHeaders,
    /// Compiled on first use: listing 10,000 tools compiles nothing.
    pub(super) input_validator: OnceLock<Option<Validator>>,
    pub(super) output_validator: OnceLock<Option<Validator>>,
    /// The Pack's scrubber, for what its checks and results show of the server's text.
    pub(super) scrubber: Arc<Scrubber>,
}

/// A tool's name as the check accepted it: a non-empty string of at most
/// [`MAX_TOOL_NAME_CHARS`] name characters, holding no configured secret. Made only by the
/// check, so a name anywhere else is one a model can type back and a person can read as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ToolName(String);

impl ToolName {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tool the envelope dropped, as the listing shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Rejected {
    pub(crate) name: Shown,
    pub(crate) reason: Shown,
}

/// Accepts `tool` or says why not. What of it is shown (description, title, a rejected name)
/// is scrubbed by `scrubber` before it is cleaned and cut.
pub(super) fn check_tool(
    tool: ListedTool,
    scrubber: &Arc<Scrubber>,
) -> Result<CheckedTool, Rejected> {
    let reject = |name: &str, reason: &str| reject(scrubber, name, reason);
    let name = checked_name(tool.name.0, scrubber)?;
    // Such a tool answers only task-augmented calls (2025-11-25, Tasks), which this Pack does
    // not make: listed as callable, every call of it would fail.
    if let Some(Object(execution)) = &tool.execution.0
        && execution.task_support.0.as_deref() == Some("required")
    {
        return Err(reject(
            &name,
            "its execution.taskSupport is \"required\": it answers only task-augmented calls, \
             which this Pack does not make",
        ));
    }
    let (hints, annotations_title) = match tool.annotations.0 {
        Some(Object(annotations)) => (annotations.hints(), annotations.title.0),
        None => (None, None),
    };
    let (title, description) = shown_texts(
        scrubber,
        &name,
        tool.description.0,
        [tool.title.0, annotations_title],
    );
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
    let param_headers = ParamHeaders::declare(&input_schema).map_err(|why| {
        let why = why.render(scrubber);
        let reason = Shown::concat(
            [Piece::Ours("inputSchema "), Piece::Shown(&why)],
            MAX_ERROR_CHARS,
        );
        Rejected::shown(scrubber, &name, reason)
    })?;
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
        scrubber: Arc::clone(scrubber),
    })
}

/// The tool's name, if it is one a listing and a call can carry: a non-empty string of at most
/// [`MAX_TOOL_NAME_CHARS`] name characters, holding no configured secret.
fn checked_name(name: Option<String>, scrubber: &Scrubber) -> Result<ToolName, Rejected> {
    let reject = |name: &str, reason: &str| reject(scrubber, name, reason);
    let Some(name) = name else {
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
    if let Some(c) = name.chars().find(|&c| !is_name_char(c)) {
        return Err(reject(
            &name,
            &format!(
                "a name with U+{:04X}; a tool name may hold only A-Z, a-z, 0-9, _, - and .",
                u32::from(c)
            ),
        ));
    }
    // Names go out unshown (the Host's status, its trust prompts), so one that holds a secret
    // a server echoed is refused here, where it is accepted.
    if scrubber.scrub(&name) != name.as_str() {
        return Err(reject(&name, "a name that holds a configured secret"));
    }
    Ok(ToolName(name))
}

/// The title and the description as shown: the first of the titles (`title`, then the
/// annotations'), and the description, else a title, else the name. A text empty once
/// cleaned counts as absent; each is scrubbed before it is cut.
fn shown_texts(
    scrubber: &Scrubber,
    name: &str,
    description: Option<String>,
    titles: [Option<String>; 2],
) -> (Option<Shown>, Shown) {
    let shown = |text: String, max: usize| {
        Some(show_owned(scrubber, text, max)).filter(|t| !t.trim().is_empty())
    };
    let titles = titles.into_iter().flatten();
    let title = titles.clone().find_map(|t| shown(t, MAX_TITLE_CHARS));
    let description = description
        .and_then(|d| shown(d, MAX_DESCRIPTION_CHARS))
        .or_else(|| {
            titles
                .into_iter()
                .find_map(|t| shown(t, MAX_DESCRIPTION_CHARS))
        })
        .unwrap_or_else(|| show(scrubber, name, MAX_DESCRIPTION_CHARS));
    (title, description)
}

/// A dropped tool: its name escaped (so a reader tells it from every other) and cut, and the
/// reason, which may quote the tool's schema; both scrubbed first.
pub(super) fn reject(scrubber: &Scrubber, name: &str, reason: &str) -> Rejected {
    Rejected::new(scrubber, name, reason)
}

impl Rejected {
    /// A tool not shown as callable, for `reason` (see [`reject`]).
    pub(crate) fn new(scrubber: &Scrubber, name: &str, reason: &str) -> Self {
        Self {
            name: show_escaped(scrubber, name, MAX_TOOL_NAME_CHARS),
            reason: show(scrubber, reason, MAX_ERROR_CHARS),
        }
    }

    /// A tool not shown as callable, or held until the user approves it, for `reason`, shown
    /// already.
    pub(crate) fn shown(scrubber: &Scrubber, name: &str, reason: Shown) -> Self {
        Self {
            name: show_escaped(scrubber, name, MAX_TOOL_NAME_CHARS),
            reason,
        }
    }
}

/// Why a schema is refused: each kind with its limit, in the Pack's own words.
#[derive(Debug)]
enum SchemaError {
    NotAnObject,
    TooDeep,
    TooLarge,
    Expansion(expansion::TooMuch),
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("is not a JSON object"),
            Self::TooDeep => write!(f, "is nested deeper than {MAX_SCHEMA_DEPTH} levels"),
            Self::TooLarge => write!(f, "is larger than {MAX_SCHEMA_BYTES} bytes"),
            Self::Expansion(why) => why.fmt(f),
        }
    }
}

/// Checks a schema's bounds, and answers its size with its references expanded.
fn check_schema(schema: &Value) -> Result<u64, SchemaError> {
    if !schema.is_object() {
        return Err(SchemaError::NotAnObject);
    }
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(SchemaError::TooDeep);
    }
    let size = serde_json::to_vec(schema)
        .expect("a JSON value, whose keys are strings, serializes")
        .len();
    if size > MAX_SCHEMA_BYTES {
        return Err(SchemaError::TooLarge);
    }
    expansion::expanded_size(schema).map_err(SchemaError::Expansion)
}

/// Nesting depth: a scalar is 0, `{}` is 1. serde_json parsed it, so it is at most 128.
pub(crate) fn depth(value: &Value) -> usize {
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

    /// Checks a model's arguments against the input schema. A schema that does not compile
    /// checks nothing: the server will judge the arguments itself. Arguments too large to
    /// check within [`MAX_VALIDATION_WORK`] are refused, never sent unchecked.
    pub(crate) fn check_arguments(&self, arguments: &Value) -> Result<(), Shown> {
        let Some(validator) = self
            .input_validator
            .get_or_init(|| compile(&self.input_schema))
        else {
            tracing::debug!(tool = %log_safe(&self.name), "sending arguments unchecked: the input schema did not compile");
            return Ok(());
        };
        if let Err(most) = within_budget(arguments, self.input_expansion) {
            return Err(self.shown([
                "the arguments are too large to check against the input schema of ".into(),
                (&self.shown_name()).into(),
                ": with its references expanded it has ".into(),
                self.input_expansion.into(),
                " nodes, which allows at most ".into(),
                most.into(),
                " JSON values; nothing was sent".into(),
            ]));
        }
        let violations: Vec<Shown> = validator
            .iter_errors(arguments)
            .take(MAX_VIOLATIONS_IN_ERROR)
            .map(|e| {
                violation(
                    &self.scrubber,
                    &e.instance_path().to_string(),
                    &e.to_string(),
                )
            })
            .collect();
        if violations.is_empty() {
            return Ok(());
        }
        let name = self.shown_name();
        let head = [
            "the arguments do not match the input schema of ".into(),
            (&name).into(),
            ":".into(),
        ];
        let list = violations
            .iter()
            .flat_map(|v| [Piece::Ours("\n- "), v.into()]);
        Err(self.shown(head.into_iter().chain(list)))
    }

    /// An error text of this tool's: its name and the Pack's words around what a check found
    /// (each violation shown already), cut as a result is.
    fn shown<'a>(&self, pieces: impl IntoIterator<Item = Piece<'a>>) -> Shown {
        Shown::concat(pieces, MAX_RESULT_CHARS)
    }

    /// The tool's name as a piece of an error's text.
    fn shown_name(&self) -> Shown {
        show(&self.scrubber, &self.name, MAX_TOOL_NAME_CHARS)
    }

    /// Checks `structuredContent` against the output schema, naming the first failing path.
    /// Content too large to check within [`MAX_VALIDATION_WORK`] fails: it is not shown
    /// unchecked.
    pub(super) fn check_structured(&self, content: &Value) -> Result<(), Shown> {
        let Some(schema) = &self.output_schema else {
            return Ok(());
        };
        let Some(validator) = self.output_validator.get_or_init(|| compile(schema)) else {
            return Ok(());
        };
        if let Err(most) = within_budget(content, self.output_expansion) {
            return Err(self.shown([
                "the result's structuredContent is too large to check against the tool's \
                 outputSchema: with its references expanded it has "
                    .into(),
                self.output_expansion.into(),
                " nodes, which allows at most ".into(),
                most.into(),
                " JSON values; the result is not shown".into(),
            ]));
        }
        match validator.iter_errors(content).next() {
            None => Ok(()),
            Some(e) => {
                let path = e.instance_path().to_string();
                let at = violation(&self.scrubber, &path, &e.masked().to_string());
                Err(self.shown([
                    "the result's structuredContent does not match the tool's outputSchema at "
                        .into(),
                    (&at).into(),
                ]))
            }
        }
    }
}

/// The most JSON values a check against a schema of `expansion` nodes may look at, as
/// `Err` when `instance` has more.
pub(super) fn within_budget(instance: &Value, expansion: u64) -> Result<(), u64> {
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
/// the message its schema's words, so both are cleaned and capped like a result, and written on
/// one line: an error's list of violations has one per line, and a line break a server wrote
/// into its schema must not make one up (a Host prints that list as lines).
pub(super) fn violation(scrubber: &Scrubber, pointer: &str, message: &str) -> Shown {
    let path = if pointer.is_empty() { "/" } else { pointer };
    let text = format!("{path}: {message}");
    show_on_one_line(scrubber, text, MAX_VIOLATION_CHARS)
}
