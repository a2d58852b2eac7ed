//! Tool parameters mirrored into HTTP headers (`x-mcp-header`, MCP 2026-07-28).
//!
//! It sits at the bottom, beside `wire`, because two layers use it: the envelope declares a
//! tool's headers when it checks the tool, and the session encodes them when it sends a call.
//!
//! A server may mark a property of a tool's `inputSchema` with `x-mcp-header: "Name"`, and a
//! client on Streamable HTTP must then send that argument as `Mcp-Param-Name` on every call,
//! so that gateways can route on it without reading the body. Two moments own it:
//!
//! - Listing: [`ParamHeaders::declare`] reads a schema once. A declaration the specification
//!   rules out (a name that is not an HTTP token, a repeated name, a type other than string,
//!   integer or boolean, an annotation anywhere but on a property reached from the root
//!   through `properties` keys alone) rejects the whole tool, with a reason safe to show.
//! - Calling: [`ParamHeaders::headers`] turns a call's arguments into header values with the
//!   revision's encoding; a value that cannot be sent faithfully refuses the call.
//!
//! Every header value leaves through [`encode`]: a string goes as it is only when each byte is
//! visible ASCII or an inner space, and otherwise as `=?base64?…?=`, so no argument can ever
//! put CR, LF or any other control character on the wire. [`encode_name`] applies the same
//! rule to `Mcp-Name`.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::policy::{MAX_PARAM_HEADER_NAME_BYTES, MAX_PARAM_HEADERS, MAX_SCHEMA_DEPTH};
use crate::text::Untrusted;

/// The schema keyword that marks a mirrored property.
const ANNOTATION: &str = "x-mcp-header";

/// What every mirrored header's name starts with.
pub(crate) const PREFIX: &str = "Mcp-Param-";

/// The markers of an encoded value. A plain value that looks encoded is encoded too, so a
/// server never decodes what the model wrote literally.
const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The largest integer a header may carry: JavaScript's `Number.MAX_SAFE_INTEGER`, 2^53 − 1,
/// beyond which a server in JavaScript would compare a rounded number with the header.
pub(crate) const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Keywords whose value is instance data, not a schema: an `x-mcp-header` key inside an
/// `enum` or a `default` is a value the server chose, not an annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// Keywords whose value maps names to schemas: the names are the server's, not keywords, so a
/// property called `x-mcp-header` is not an annotation.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

pub(crate) const MISPLACED: &str = "an x-mcp-header is allowed only on a property reached from the root \
    through properties keys alone, not on the root, under items, anyOf, oneOf, allOf, not, \
    if, then, else, $defs or any other keyword";

/// Why a declaration rejects its tool ([`ParamHeaders::declare`]) or an argument refuses
/// its call ([`ParamHeaders::headers`]). It holds no value; a header name is the server's
/// (checked to be an HTTP token of bounded length, or not, for the error that says so), so it
/// stays [`Untrusted`] until the Pack's edge shows the error (`crate::edge`).
#[derive(Debug, Clone)]
pub(crate) enum ParamHeaderError {
    /// The schema nests deeper than [`MAX_SCHEMA_DEPTH`].
    TooDeep,
    /// An annotation on the root, or reached through any keyword but `properties`.
    Misplaced,
    NotAString,
    Empty,
    TooLong,
    /// A character no header name may hold.
    NotAToken(char),
    /// A mirrored property whose type is not string, integer or boolean.
    Type {
        name: Untrusted<String>,
        found: Found,
    },
    /// Two declarations of one name, letter case aside.
    Twice(Untrusted<String>),
    TooMany,
    NotAHeaderName(Untrusted<String>),
    /// A call's argument of another JSON type than the declared one.
    Mismatch {
        name: Untrusted<String>,
        wants: Kind,
        got: &'static str,
    },
    /// A call's integer past ±(2^53 − 1).
    OutOfRange(Untrusted<String>),
    /// A value no header may carry (see [`encode`]: it cannot happen).
    NotAHeaderValue,
}

/// What a mirrored property declared instead of one primitive type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    NoType,
    Types,
    /// One of JSON Schema's other type names (`number`, `object`, `array`, `null`).
    Named(&'static str),
    Unknown,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoType => f.write_str("no type"),
            Self::Types => f.write_str("a list of types"),
            Self::Named(t) => write!(f, "type {t}"),
            Self::Unknown => f.write_str("an unknown type"),
        }
    }
}

/// The headers one tool mirrors.
#[derive(Debug, Default)]
pub(crate) struct ParamHeaders {
    declarations: Vec<Declaration>,
}

#[derive(Debug)]
struct Declaration {
    /// `Mcp-Param-{Name}`; HTTP compares names without regard to case, and so do duplicates.
    header: HeaderName,
    /// `{Name}` as the server wrote it, for errors: a checked token, safe to show.
    name: String,
    /// The `properties` keys from the root to the property.
    path: Vec<String>,
    kind: Kind,
}

/// The JSON types a header may mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Integer,
    Boolean,
}

impl Kind {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Self::String => "a string",
            Self::Integer => "an integer",
            Self::Boolean => "a boolean",
        }
    }
}

impl ParamHeaders {
    /// Reads every `x-mcp-header` of a tool's input schema. `Err` is why the tool must be
    /// rejected: a short text naming no property and quoting no server text except header
    /// names already checked to be HTTP tokens.
    pub(crate) fn declare(schema: &Value) -> Result<Self, ParamHeaderError> {
        let mut headers = Self::default();
        headers.visit(schema, Some(&mut Vec::new()), 0)?;
        Ok(headers)
    }

    /// The `Mcp-Param-*` headers of one call, one per declaration. An argument that is
    /// absent or null sends no header. `Err` refuses the call: an argument whose JSON type is
    /// not the declared one, or an integer past ±(2^53 − 1), names the header and never the
    /// value.
    pub(crate) fn headers(
        &self,
        arguments: &Value,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, ParamHeaderError> {
        let mut headers = Vec::with_capacity(self.declarations.len());
        for declaration in &self.declarations {
            let Some(value) = lookup(arguments, &declaration.path) else {
                continue;
            };
            let text = declaration.text(value)?;
            let mut value = encode(&text)?;
            // Arguments are the model's, not configured secrets, but nothing in them needs to
            // appear in a Debug print or an HTTP/2 header table.
            value.set_sensitive(true);
            headers.push((declaration.header.clone(), value));
        }
        Ok(headers)
    }

    /// Walks one node of the schema. `path` is `Some` while the node is reached from the root
    /// through `properties` keys only (the root itself has the empty path), `None` anywhere
    /// else; depth is bounded like the envelope's schemas, whoever calls this.
    fn visit(
        &mut self,
        node: &Value,
        mut path: Option<&mut Vec<String>>,
        depth: usize,
    ) -> Result<(), ParamHeaderError> {
        // The envelope's measure: a container inside `depth` others nests `depth + 1` deep.
        if (node.is_object() || node.is_array()) && depth + 1 > MAX_SCHEMA_DEPTH {
            return Err(ParamHeaderError::TooDeep);
        }
        let map = match node {
            Value::Object(map) => map,
            Value::Array(items) => {
                return items
                    .iter()
                    .try_for_each(|item| self.visit(item, None, depth + 1));
            }
            _ => return Ok(()),
        };
        if let Some(name) = map.get(ANNOTATION) {
            match path.as_deref() {
                Some(keys) if !keys.is_empty() => self.add(name, keys.to_vec(), map)?,
                _ => return Err(ParamHeaderError::Misplaced),
            }
        }
        for (key, child) in map {
            if DATA_KEYWORDS.contains(&key.as_str()) {
                continue;
            }
            match child {
                Value::Object(schemas) if SCHEMA_MAPS.contains(&key.as_str()) => {
                    for (name, schema) in schemas {
                        // Only `properties` of a reachable node keeps the chain unbroken.
                        let reachable = match path.as_deref_mut() {
                            Some(keys) if key == "properties" => Some(keys),
                            _ => None,
                        };
                        match reachable {
                            Some(keys) => {
                                keys.push(name.clone());
                                let result = self.visit(schema, Some(keys), depth + 2);
                                keys.pop();
                                result?;
                            }
                            None => self.visit(schema, None, depth + 2)?,
                        }
                    }
                }
                _ => self.visit(child, None, depth + 1)?,
            }
        }
        Ok(())
    }

    /// Checks one annotation on a reachable property and records it.
    fn add(
        &mut self,
        name: &Value,
        path: Vec<String>,
        property: &Map<String, Value>,
    ) -> Result<(), ParamHeaderError> {
        let Value::String(name) = name else {
            return Err(ParamHeaderError::NotAString);
        };
        if name.is_empty() {
            return Err(ParamHeaderError::Empty);
        }
        if name.len() > MAX_PARAM_HEADER_NAME_BYTES {
            return Err(ParamHeaderError::TooLong);
        }
        if let Some(c) = name.chars().find(|&c| !is_tchar(c)) {
            return Err(ParamHeaderError::NotAToken(c));
        }
        // From here on the name is an HTTP token of bounded length: safe to show.
        let kind = match property.get("type") {
            Some(Value::String(t)) if t == "string" => Kind::String,
            Some(Value::String(t)) if t == "integer" => Kind::Integer,
            Some(Value::String(t)) if t == "boolean" => Kind::Boolean,
            found => {
                let found = match found {
                    None => Found::NoType,
                    Some(Value::Array(_)) => Found::Types,
                    Some(Value::String(t)) => ["number", "object", "array", "null"]
                        .into_iter()
                        .find(|other| other == t)
                        .map_or(Found::Unknown, Found::Named),
                    Some(_) => Found::Unknown,
                };
                let name = Untrusted::new(name.clone());
                return Err(ParamHeaderError::Type { name, found });
            }
        };
        if self
            .declarations
            .iter()
            .any(|d| d.name.eq_ignore_ascii_case(name))
        {
            return Err(ParamHeaderError::Twice(Untrusted::new(name.clone())));
        }
        if self.declarations.len() == MAX_PARAM_HEADERS {
            return Err(ParamHeaderError::TooMany);
        }
        let header = HeaderName::from_bytes(format!("{PREFIX}{name}").as_bytes())
            .map_err(|_| ParamHeaderError::NotAHeaderName(Untrusted::new(name.clone())))?;
        self.declarations.push(Declaration {
            header,
            name: name.clone(),
            path,
            kind,
        });
        Ok(())
    }
}

impl Declaration {
    /// The argument as the text the header carries, before encoding.
    fn text(&self, value: &Value) -> Result<String, ParamHeaderError> {
        let refuse = |got| {
            Err(ParamHeaderError::Mismatch {
                name: Untrusted::new(self.name.clone()),
                wants: self.kind,
                got,
            })
        };
        match (self.kind, value) {
            (Kind::String, Value::String(s)) => Ok(s.clone()),
            (Kind::Boolean, Value::Bool(b)) => Ok(b.to_string()),
            (Kind::Integer, Value::Number(n)) => {
                // 42.0 is the integer 42 to JSON Schema, and to a server comparing numbers.
                let whole = match (n.as_i64(), n.as_u64()) {
                    (Some(i), _) => Some(i128::from(i)),
                    (None, Some(u)) => Some(i128::from(u)),
                    (None, None) => n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i128),
                };
                match whole {
                    None => refuse("a number with a fraction"),
                    Some(i) if i.abs() > i128::from(MAX_SAFE_INTEGER) => Err(
                        ParamHeaderError::OutOfRange(Untrusted::new(self.name.clone())),
                    ),
                    Some(i) => Ok(i.to_string()),
                }
            }
            (_, Value::String(_)) => refuse("a string"),
            (_, Value::Number(_)) => refuse("a number"),
            (_, Value::Bool(_)) => refuse("a boolean"),
            (_, Value::Array(_)) => refuse("an array"),
            (_, Value::Object(_)) => refuse("an object"),
            // lookup() never yields null: a null argument sends no header.
            (_, Value::Null) => refuse("null"),
        }
    }
}

/// The value at the exact path of `properties` keys, if there is one that is not null.
fn lookup<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(arguments, |node, key| node.as_object()?.get(key))
        .filter(|value| !value.is_null())
}

/// The `Mcp-Name` header for a tool name (or a resource URI): the same encoding as a
/// parameter, since names are only recommended to be header-safe.
pub(crate) fn encode_name(name: &str) -> Result<HeaderValue, ParamHeaderError> {
    encode(name)
}

/// A header value for `text`: as it is when that is safe and unambiguous, else the sentinel
/// form with the standard Base64 (padded) of its UTF-8 bytes.
///
/// `Err` cannot happen (both forms hold visible ASCII and inner spaces only, which every
/// header value may hold); the type still keeps any other byte off the wire.
fn encode(text: &str) -> Result<HeaderValue, ParamHeaderError> {
    // A tab, which HTTP allows inside a value, is encoded too: proxies may fold it into a
    // space, and the conformance suite expects any tab encoded. Decoding always restores it.
    let looks_encoded = text.starts_with(SENTINEL_START) && text.ends_with(SENTINEL_END);
    let plain = text.bytes().all(|b| matches!(b, b' '..=b'~'))
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && !looks_encoded;
    let shown = if plain {
        text.to_owned()
    } else {
        format!("{SENTINEL_START}{}{SENTINEL_END}", STANDARD.encode(text))
    };
    HeaderValue::from_str(&shown).map_err(|_| ParamHeaderError::NotAHeaderValue)
}

/// RFC 9110's `tchar`: the characters of an HTTP token such as a header name.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

mod render;

#[cfg(test)]
mod tests;
