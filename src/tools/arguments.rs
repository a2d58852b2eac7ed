//! The arguments of the Pack's two tools: the schemas they publish, and the check of a model's
//! arguments against those very schemas, so that what a model is told and what is enforced
//! cannot drift apart.
//!
//! A model reads one error and tries again, so one error is given, the most basic first:
//! arguments that are not an object, then a key the tool does not take, then each property in
//! order (the required ones in their order, then the others by name), then a property that
//! needs another or refuses one. Each text is built from the validation error's kind and
//! path. The one thing a schema cannot say, how a model finds a missing value, is the prose of
//! [`missing_hint`].

use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use runvil_plugin::ToolError;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{CALL_DYNAMIC_TOOL, GET_DYNAMIC_TOOLS, quoted};
use crate::policy::MAX_ERROR_CHARS;
use crate::policy::{MAX_SEARCH_QUERY_CHARS, MAX_SEARCH_RESULTS};
use crate::text::{self, Scrubber, Shown};

/// What `get_dynamic_tools` says of a `toolName` given without its `namespace` (its schema's
/// one `dependentRequired` rule).
const TOOL_NAME_NEEDS_NAMESPACE: &str =
    "toolName needs a namespace: pass both, or call with no arguments to list the namespaces";

/// What `get_dynamic_tools` says of a `query` given with a `toolName` (its schema's one
/// `dependentSchemas` rule): a search finds tools, `toolName` shows one already found.
const QUERY_WITH_TOOL_NAME: &str = "query searches for tools and takes no toolName: pass query \
    (and namespace to search one server), or namespace and toolName to show one tool";

/// `get_dynamic_tools`' arguments, once they passed its schema.
#[derive(Deserialize)]
pub(super) struct ListArguments {
    pub(super) namespace: Option<String>,
    /// Words saying what a tool should do: the listing is then a search.
    pub(super) query: Option<String>,
    #[serde(rename = "toolName")]
    pub(super) tool_name: Option<String>,
}

/// `call_dynamic_tool`'s arguments, once they passed its schema.
#[derive(Deserialize)]
pub(super) struct CallArguments {
    pub(super) namespace: String,
    #[serde(rename = "toolName")]
    pub(super) tool_name: String,
    /// The called tool's own arguments; none is `{}`.
    #[serde(default)]
    pub(super) arguments: Map<String, Value>,
}

/// The two tools' schemas, compiled once per process: they are the same for every Pack, and
/// compiling them took a share of each Pack's start.
pub(super) struct Schemas {
    pub(super) list: Published,
    pub(super) call: Published,
}

impl Schemas {
    /// The one compiled copy, compiled at its first use.
    pub(super) fn shared() -> &'static Self {
        static SCHEMAS: LazyLock<Schemas> = LazyLock::new(Schemas::new);
        &SCHEMAS
    }

    fn new() -> Self {
        let string = |description: &str| json!({"type": "string", "description": description});
        let query = format!(
            "Words saying what a tool should do (\"send an email\", \"take a screenshot\"), or \
             the start of its name: answers the best-matching tools of every ready server (of \
             namespace when given), best first, at most {MAX_SEARCH_RESULTS}, each with a short \
             description. Not with toolName."
        );
        let list = json!({
            "type": "object",
            "properties": {
                "namespace": string("A server's namespace, exactly as listed."),
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_SEARCH_QUERY_CHARS,
                    "description": query,
                },
                "toolName": string("A tool's name, exactly as listed; needs namespace."),
            },
            "dependentRequired": {"toolName": ["namespace"]},
            "dependentSchemas": {"query": {"not": {"required": ["toolName"]}}},
            "additionalProperties": false,
        });
        let call = json!({
            "type": "object",
            "properties": {
                "namespace": string("The server's namespace, exactly as listed."),
                "toolName": string("The tool's name, exactly as listed."),
                "arguments": {"type": "object", "description": "The tool's arguments; {} when omitted."},
            },
            "required": ["namespace", "toolName"],
            "additionalProperties": false,
        });
        Self {
            list: Published::new(GET_DYNAMIC_TOOLS, list),
            call: Published::new(CALL_DYNAMIC_TOOL, call),
        }
    }
}

/// One tool's published input schema, compiled.
pub(super) struct Published {
    tool: &'static str,
    pub(super) schema: Value,
    validator: Validator,
    /// The schema's properties in the order errors about them come.
    properties: Vec<String>,
}

impl Published {
    fn new(tool: &'static str, schema: Value) -> Self {
        let validator = jsonschema::options()
            .offline()
            .build(&schema)
            .expect("the Pack's own schemas are valid JSON Schema");
        let names = |key: &str| -> Vec<String> {
            match schema.get(key) {
                Some(Value::Array(names)) => names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
                Some(Value::Object(properties)) => properties.keys().cloned().collect(),
                _ => Vec::new(),
            }
        };
        // Required first, as the schema lists them; then the rest by name, whatever order
        // serde_json keeps object keys in.
        let mut properties = names("required");
        let mut optional: Vec<String> = names("properties")
            .into_iter()
            .filter(|name| !properties.contains(name))
            .collect();
        optional.sort();
        properties.extend(optional);
        Self {
            tool,
            schema,
            validator,
            properties,
        }
    }

    /// `args` checked against the schema and read as `T`. Null is no arguments, and a null
    /// property is a property left out: models write both for "nothing".
    pub(super) fn parse<T: DeserializeOwned>(
        &self,
        args: Value,
        scrubber: &Scrubber,
    ) -> Result<T, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            Value::Object(mut args) => {
                args.retain(|key, value| !(value.is_null() && self.properties.contains(key)));
                Value::Object(args)
            }
            other => other,
        };
        let first = self
            .validator
            .iter_errors(&args)
            .map(|error| self.explain(&error, scrubber))
            .min_by_key(|(rank, _)| *rank);
        if let Some((_, text)) = first {
            return Err(text.leave(ToolError::Invalid));
        }
        // The schema admits only what the type reads; were they ever to differ, the model's
        // input is refused as any invalid input is, never a panic on its path.
        serde_json::from_value(args).map_err(|e| {
            let text = format!("the arguments of {} cannot be read: {e}", self.tool);
            text::show(scrubber, &text, MAX_ERROR_CHARS).leave(ToolError::Invalid)
        })
    }

    /// A validation error as a model reads it, with its rank: the lowest is reported. An
    /// unknown key is the model's own text, quoted once and composed with the rest.
    fn explain(&self, error: &ValidationError<'_>, scrubber: &Scrubber) -> (usize, Shown) {
        if let ValidationErrorKind::AdditionalProperties { unexpected } = error.kind() {
            let key = unexpected.first().map_or("", String::as_str);
            let takes = format!("; {} takes {}", self.tool, self.properties.join(", "));
            let (typed, takes) = (
                quoted(key, scrubber),
                text::show(scrubber, &takes, MAX_ERROR_CHARS),
            );
            let pieces = ["unknown argument ".into(), (&typed).into(), (&takes).into()];
            return (1, Shown::concat(pieces, MAX_ERROR_CHARS));
        }
        let (rank, words) = self.words(error);
        (rank, text::show(scrubber, &words, MAX_ERROR_CHARS))
    }

    /// A validation error but an unknown key in the Pack's words, with its rank.
    fn words(&self, error: &ValidationError<'_>) -> (usize, String) {
        let at = error.instance_path().as_str();
        let rank_of = |property: &str| {
            let index = self.properties.iter().position(|p| p == property);
            2 + index.unwrap_or(self.properties.len())
        };
        match error.kind() {
            ValidationErrorKind::Type { .. } if at.is_empty() => {
                (0, "the arguments must be a JSON object".to_owned())
            }
            ValidationErrorKind::Type { kind } => {
                let property = at.trim_start_matches('/');
                (
                    rank_of(property),
                    format!("{property} must be {}", a_type(kind)),
                )
            }
            ValidationErrorKind::Required { property } => {
                let property = property.as_str().unwrap_or_default();
                // A `dependentRequired` error: a property given without one it needs. Only
                // `get_dynamic_tools` has one (`toolName` needs `namespace`), and with no
                // arguments it lists the namespaces.
                if error.schema_path().as_str().contains("dependentRequired") {
                    return (
                        2 + self.properties.len(),
                        TOOL_NAME_NEEDS_NAMESPACE.to_owned(),
                    );
                }
                let text = format!("{property} is required: {}", missing_hint(property));
                (rank_of(property), text)
            }
            ValidationErrorKind::MinLength { .. } => {
                let property = at.trim_start_matches('/');
                (rank_of(property), format!("{property} must not be empty"))
            }
            ValidationErrorKind::MaxLength { limit } => {
                let property = at.trim_start_matches('/');
                let text = format!("{property} must be at most {limit} characters");
                (rank_of(property), text)
            }
            // The `dependentSchemas` rule: only `get_dynamic_tools` has one (`query` refuses
            // `toolName`).
            ValidationErrorKind::Not { .. } => {
                (2 + self.properties.len(), QUERY_WITH_TOOL_NAME.to_owned())
            }
            // The Pack's schemas use no other keyword; the validator's own words, just in case.
            _ => (usize::MAX, error.to_string()),
        }
    }
}

/// "a string", "an object": a type as an error names it.
fn a_type(kind: &TypeKind) -> String {
    let name = match kind {
        TypeKind::Single(single) => single.to_string(),
        TypeKind::Multiple(set) => {
            let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
            return format!("one of {}", names.join(", "));
        }
    };
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {name}")
}

/// Where a model finds a required value it left out.
fn missing_hint(property: &str) -> &'static str {
    match property {
        "namespace" => "the server's name, as get_dynamic_tools lists it",
        "toolName" => "the tool's name, as get_dynamic_tools lists it",
        _ => "see get_dynamic_tools",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(args: Value) -> Result<ListArguments, String> {
        let scrubber = Scrubber::default();
        Schemas::new()
            .list
            .parse(args, &scrubber)
            .map_err(|e| e.to_string())
    }

    fn call(args: Value) -> Result<CallArguments, String> {
        let scrubber = Scrubber::default();
        Schemas::new()
            .call
            .parse(args, &scrubber)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn each_mistake_gets_its_text_the_most_basic_first() {
        let cases = [
            (json!([1]), "the arguments must be a JSON object"),
            (
                json!({"x": 1, "namespace": 5}),
                "unknown argument \"x\"; call_dynamic_tool takes namespace, toolName, arguments",
            ),
            (
                json!({"namespace": 5, "arguments": [1]}),
                "namespace must be a string",
            ),
            (
                json!({"toolName": "t"}),
                "namespace is required: the server's name, as get_dynamic_tools lists it",
            ),
            (
                json!({"namespace": "n", "toolName": 1}),
                "toolName must be a string",
            ),
            (
                json!({"namespace": "n"}),
                "toolName is required: the tool's name, as get_dynamic_tools lists it",
            ),
            (
                json!({"namespace": "n", "toolName": "t", "arguments": [1]}),
                "arguments must be an object",
            ),
        ];
        for (args, want) in cases {
            let got = call(args.clone()).err().unwrap_or_default();
            assert!(got.ends_with(want), "{args}: {got}");
        }
        let got = list(json!({"toolName": "t"})).err().unwrap_or_default();
        assert!(
            got.ends_with("toolName needs a namespace: pass both, or call with no arguments to list the namespaces"),
            "{got}"
        );
        let got = list(json!({"toolName": 1})).err().unwrap_or_default();
        assert!(got.ends_with("toolName must be a string"), "{got}");
        let got = list(json!({"arguments": {}})).err().unwrap_or_default();
        assert!(
            got.ends_with(
                "unknown argument \"arguments\"; get_dynamic_tools takes namespace, query, toolName"
            ),
            "{got}"
        );
    }

    #[test]
    fn null_is_nothing_given() {
        let listed = list(Value::Null);
        assert!(listed.is_ok_and(|a| a.namespace.is_none() && a.tool_name.is_none()));
        let called = call(json!({"namespace": "n", "toolName": "t", "arguments": null}));
        assert!(called.is_ok_and(|a| a.arguments.is_empty() && a.namespace == "n"));
        let got = call(json!({"namespace": null, "toolName": "t"}))
            .err()
            .unwrap_or_default();
        assert!(got.contains("namespace is required"), "{got}");
        // A null at a key the tool does not take is still a key it does not take.
        let got = list(json!({"other": null})).err().unwrap_or_default();
        assert!(got.contains("unknown argument \"other\""), "{got}");
    }

    #[test]
    fn an_unknown_key_is_scrubbed_before_it_is_quoted() {
        let scrubber = Scrubber::new([crate::secret::Secret::new("s3cr3t-canary".to_owned())]);
        let refused = Schemas::new()
            .call
            .parse::<CallArguments>(json!({"s3cr3t-canary": 1}), &scrubber);
        let text = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("[redacted]") && !text.contains("s3cr3t"),
            "{text}"
        );
    }
}
