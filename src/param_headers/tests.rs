//! `x-mcp-header` declarations and value encoding, one rule a test, with the specification's
//! examples and the conformance suite's tools (`http-custom-headers`,
//! `http-invalid-tool-headers`, suite 0.2.0-alpha.12) as they are served.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::text::Render;
use crate::text::Scrubber;

/// The headers of one call as `(name, value)` texts, sorted.
fn sent(schema: &Value, arguments: &Value) -> Vec<(String, String)> {
    let declared = ParamHeaders::declare(schema).expect("a valid declaration");
    let mut headers: Vec<(String, String)> = declared
        .headers(arguments)
        .expect("arguments that can be sent")
        .into_iter()
        .map(|(name, value)| {
            let value = value.to_str().expect("visible ASCII").to_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    headers.sort();
    headers
}

/// Expected headers, sorted.
fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = expected
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    pairs.sort();
    pairs
}

/// An error as the edge shows it, with no secret to scrub.
fn shown(error: &ParamHeaderError) -> String {
    error.render(&Scrubber::default()).into_string()
}

fn reason(schema: &Value) -> String {
    shown(&ParamHeaders::declare(schema).expect_err("a rejected declaration"))
}

/// A schema with one mirrored property `p` of `type`, named `name`.
fn one(kind: &str, name: &str) -> Value {
    json!({"type": "object", "properties": {"p": {"type": kind, "x-mcp-header": name}}})
}

fn encoded(text: &str) -> String {
    encode(text)
        .expect("encodable")
        .to_str()
        .expect("visible ASCII")
        .to_owned()
}

fn refusal(kind: &str, argument: Value) -> String {
    let declared = ParamHeaders::declare(&one(kind, "P")).expect("valid");
    shown(
        &declared
            .headers(&json!({ "p": argument }))
            .expect_err("refused"),
    )
}

#[test]
fn the_specification_example_mirrors_the_region() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "The region to execute the query in", "x-mcp-header": "Region"},
            "query": {"type": "string", "description": "The SQL query to execute"}
        },
        "required": ["region", "query"]
    });
    let arguments = json!({"region": "us-west1", "query": "SELECT * FROM users"});
    assert_eq!(
        sent(&schema, &arguments),
        pairs(&[("mcp-param-region", "us-west1")])
    );
}

#[test]
fn the_specification_encoding_table_exactly() {
    assert_eq!(encoded("us-west1"), "us-west1");
    assert_eq!(encoded("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
    assert_eq!(encoded(" padded "), "=?base64?IHBhZGRlZCA=?=");
    assert_eq!(encoded("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
    assert_eq!(
        encoded("=?base64?literal?="),
        "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    );
}

#[test]
fn plain_values_are_visible_ascii_with_inner_spaces_only() {
    assert_eq!(encoded(""), "");
    assert_eq!(encoded("us west 1"), "us west 1");
    assert_eq!(encoded("!~"), "!~");
    assert_eq!(encoded(" us-west1"), "=?base64?IHVzLXdlc3Qx?=");
    assert_eq!(encoded("us-west1 "), "=?base64?dXMtd2VzdDEg?=");
    // A tab anywhere, leading or inner, is encoded.
    assert_eq!(encoded("\tindented"), "=?base64?CWluZGVudGVk?=");
    assert_eq!(encoded("a\tb"), "=?base64?YQli?=");
    assert_eq!(encoded("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?=");
    assert_eq!(encoded("\u{7f}"), "=?base64?fw==?=");
    assert_eq!(encoded("\0"), "=?base64?AA==?=");
}

#[test]
fn only_values_that_look_encoded_are_encoded_for_ambiguity() {
    // Start and end overlap: still the sentinel's shape.
    assert_eq!(encoded("=?base64?="), "=?base64?PT9iYXNlNjQ/PQ==?=");
    assert_eq!(encoded("=?base64??="), "=?base64?PT9iYXNlNjQ/Pz0=?=");
    // The markers are case-sensitive, and both are needed.
    assert_eq!(encoded("=?BASE64?x?="), "=?BASE64?x?=");
    assert_eq!(encoded("=?base64?abc"), "=?base64?abc");
    assert_eq!(encoded("abc?="), "abc?=");
}

#[test]
fn mcp_name_uses_the_same_encoding() {
    let name = |text: &str| {
        encode_name(text)
            .expect("encodable")
            .to_str()
            .expect("ASCII")
            .to_owned()
    };
    assert_eq!(name("execute_sql"), "execute_sql");
    assert_eq!(name("my-hyphenated-tool"), "my-hyphenated-tool");
    assert_eq!(
        name("file:///path/to/file%20name.txt"),
        "file:///path/to/file%20name.txt"
    );
    assert_eq!(name("工具"), "=?base64?5bel5YW3?=");
    assert_eq!(
        name("a\r\nX-Injected: 1"),
        "=?base64?YQ0KWC1JbmplY3RlZDogMQ==?="
    );
}

/// The `test_custom_headers` tool of the `http-custom-headers` scenario.
fn custom_headers_tool() -> Value {
    let string = |name: &str| json!({"type": "string", "x-mcp-header": name});
    json!({
        "type": "object",
        "properties": {
            "region": string("Region"),
            "priority": {"type": "integer", "description": "Integer numeric value", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "empty_val": string("EmptyVal"),
            "method_val": string("Method"),
            "float_val": {"type": "number", "description": "no x-mcp-header annotation"},
            "non_ascii_val": string("NonAscii"),
            "whitespace_val": string("Whitespace"),
            "leading_space_val": string("LeadingSpace"),
            "trailing_space_val": string("TrailingSpace"),
            "internal_space_val": string("InternalSpace"),
            "control_char_val": string("ControlChar"),
            "crlf_val": string("CrLf"),
            "tab_val": string("Tab"),
            "query": {"type": "string", "description": "No x-mcp-header annotation - should not be mirrored"}
        },
        "required": ["region", "priority", "query"]
    })
}

#[test]
#[allow(clippy::approx_constant)] // the suite's own argument, which no header mirrors
fn the_conformance_custom_headers_call_sends_every_header_encoded() {
    let arguments = json!({
        "region": "us-west1", "priority": 42, "verbose": false, "debug": true,
        "empty_val": "", "method_val": "test-method", "float_val": 3.14159,
        "non_ascii_val": "Hello, 世界", "whitespace_val": " padded ",
        "leading_space_val": " us-west1", "trailing_space_val": "us-west1 ",
        "internal_space_val": "us west 1", "control_char_val": "line1\nline2",
        "crlf_val": "line1\r\nline2", "tab_val": "\tindented", "query": "SELECT * FROM users"
    });
    let expected = pairs(&[
        ("mcp-param-region", "us-west1"),
        ("mcp-param-priority", "42"),
        ("mcp-param-verbose", "false"),
        ("mcp-param-debug", "true"),
        ("mcp-param-emptyval", ""),
        ("mcp-param-method", "test-method"),
        ("mcp-param-nonascii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("mcp-param-whitespace", "=?base64?IHBhZGRlZCA=?="),
        ("mcp-param-leadingspace", "=?base64?IHVzLXdlc3Qx?="),
        ("mcp-param-trailingspace", "=?base64?dXMtd2VzdDEg?="),
        ("mcp-param-internalspace", "us west 1"),
        ("mcp-param-controlchar", "=?base64?bGluZTEKbGluZTI=?="),
        ("mcp-param-crlf", "=?base64?bGluZTENCmxpbmUy?="),
        ("mcp-param-tab", "=?base64?CWluZGVudGVk?="),
    ]);
    assert_eq!(sent(&custom_headers_tool(), &arguments), expected);
}

#[test]
fn the_conformance_null_call_omits_the_null_header() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string", "description": "No x-mcp-header annotation"}
        },
        "required": ["region", "priority", "query"]
    });
    let arguments =
        json!({"region": "us-east1", "priority": 1, "verbose": null, "query": "SELECT 1"});
    assert_eq!(
        sent(&schema, &arguments),
        pairs(&[
            ("mcp-param-region", "us-east1"),
            ("mcp-param-priority", "1")
        ])
    );
    assert_eq!(
        sent(&schema, &json!({"query": "SELECT 1"})),
        pairs(&[]),
        "absent arguments send nothing"
    );
}

#[test]
fn the_conformance_valid_tool_is_kept() {
    let schema = json!({
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"]
    });
    assert_eq!(
        sent(&schema, &json!({"region": "eu"})),
        pairs(&[("mcp-param-region", "eu")])
    );
}

#[test]
fn each_conformance_invalid_tool_is_rejected_with_its_reason() {
    let single = |property: Value| json!({"type": "object", "properties": {"value": property}, "required": ["value"]});
    let pair = |a: &str, b: &str| {
        json!({"type": "object", "properties": {
            "field1": {"type": "string", "x-mcp-header": a},
            "field2": {"type": "string", "x-mcp-header": b}
        }})
    };
    let charset = |c: &str| {
        format!(
            "an x-mcp-header with {c}; a header name may hold only letters, digits and \
             !#$%&'*+-.^_`|~"
        )
    };
    let primitive = |name: &str, what: &str| {
        format!(
            "x-mcp-header {name} is on a property with {what}; only a string, integer or \
             boolean property may be sent as a header"
        )
    };
    let cases = [
        (
            "invalid_empty_header",
            single(json!({"type": "string", "x-mcp-header": ""})),
            "an empty x-mcp-header".to_owned(),
        ),
        (
            "invalid_object_header",
            single(json!({"type": "object", "x-mcp-header": "Data"})),
            primitive("Data", "type object"),
        ),
        (
            "invalid_array_header",
            single(json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"})),
            primitive("Items", "type array"),
        ),
        (
            "invalid_null_header",
            single(json!({"type": "null", "x-mcp-header": "Nil"})),
            primitive("Nil", "type null"),
        ),
        (
            "invalid_number_header",
            single(json!({"type": "number", "x-mcp-header": "Score"})),
            primitive("Score", "type number"),
        ),
        (
            "invalid_duplicate_same_case",
            pair("Region", "Region"),
            "x-mcp-header Region is declared twice (header names ignore letter case)".to_owned(),
        ),
        (
            "invalid_duplicate_diff_case",
            pair("MyField", "myfield"),
            "x-mcp-header myfield is declared twice (header names ignore letter case)".to_owned(),
        ),
        (
            "invalid_space_in_name",
            single(json!({"type": "string", "x-mcp-header": "My Region"})),
            charset("U+0020"),
        ),
        (
            "invalid_colon_in_name",
            single(json!({"type": "string", "x-mcp-header": "Region:Primary"})),
            charset("U+003A"),
        ),
        (
            "invalid_non_ascii_name",
            single(json!({"type": "string", "x-mcp-header": "Région"})),
            charset("U+00E9"),
        ),
        (
            "invalid_control_char_name",
            single(json!({"type": "string", "x-mcp-header": "Region\t1"})),
            charset("U+0009"),
        ),
    ];
    for (tool, schema, expected) in cases {
        assert_eq!(reason(&schema), expected, "{tool}");
    }
}

#[test]
fn every_tchar_is_accepted_and_other_characters_are_not() {
    let all = "!#$%&'*+-.^_`|~09AZaz";
    assert_eq!(
        sent(&one("string", all), &json!({"p": "v"})),
        pairs(&[("mcp-param-!#$%&'*+-.^_`|~09azaz", "v")])
    );
    for c in [
        '"', '(', ')', ',', '/', ';', '<', '=', '>', '?', '@', '[', '\\', ']', '{', '}', '\r',
        '\n', '\u{7f}', '\0', '\u{202e}',
    ] {
        let expected = format!(
            "an x-mcp-header with U+{:04X}; a header name may hold only letters, digits and \
             !#$%&'*+-.^_`|~",
            u32::from(c)
        );
        assert_eq!(reason(&one("string", &format!("A{c}"))), expected);
    }
}

#[test]
fn an_annotation_must_be_a_string() {
    for name in [
        json!(1),
        json!(null),
        json!(true),
        json!(["A"]),
        json!({"a": 1}),
    ] {
        let schema = json!({"type": "object", "properties": {"p": {"type": "string", "x-mcp-header": name}}});
        assert_eq!(reason(&schema), "an x-mcp-header that is not a string");
    }
}

#[test]
fn a_property_without_one_primitive_type_is_rejected() {
    let with = |property: Value| json!({"type": "object", "properties": {"p": property}});
    let tail = "; only a string, integer or boolean property may be sent as a header";
    let cases = [
        (json!({"x-mcp-header": "P"}), "no type"),
        (
            json!({"type": ["string", "null"], "x-mcp-header": "P"}),
            "a list of types",
        ),
        (
            json!({"type": "text", "x-mcp-header": "P"}),
            "an unknown type",
        ),
        (json!({"type": 7, "x-mcp-header": "P"}), "an unknown type"),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "null"}], "x-mcp-header": "P"}),
            "no type",
        ),
    ];
    for (property, what) in cases {
        assert_eq!(
            reason(&with(property)),
            format!("x-mcp-header P is on a property with {what}{tail}")
        );
    }
    for kind in ["string", "integer", "boolean"] {
        assert!(ParamHeaders::declare(&one(kind, "P")).is_ok(), "{kind}");
    }
}

#[test]
fn nested_properties_are_reachable_and_read_at_their_exact_path() {
    let schema = json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "object",
                "properties": {"limit": {"type": "integer", "x-mcp-header": "Limit"}}
            },
            "limit": {"type": "integer"}
        }
    });
    let limit = |arguments: Value| sent(&schema, &arguments);
    assert_eq!(
        limit(json!({"options": {"limit": 5}, "limit": 9})),
        pairs(&[("mcp-param-limit", "5")])
    );
    assert_eq!(limit(json!({"limit": 9})), pairs(&[]));
    assert_eq!(limit(json!({"options": null})), pairs(&[]));
    assert_eq!(limit(json!({"options": "5"})), pairs(&[]));
    assert_eq!(limit(json!({"options": {"limit": null}})), pairs(&[]));
    assert_eq!(limit(json!("not an object")), pairs(&[]));
}

#[test]
fn an_annotation_anywhere_else_rejects_the_tool() {
    let header = json!({"type": "string", "x-mcp-header": "H"});
    let misplaced = [
        json!({"type": "object", "x-mcp-header": "H"}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": header}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "prefixItems": [header]}}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "contains": header}}}),
        json!({"type": "object", "properties": {"a": {"anyOf": [header]}}}),
        json!({"type": "object", "properties": {"a": {"oneOf": [header]}}}),
        json!({"type": "object", "properties": {"a": {"allOf": [header]}}}),
        json!({"type": "object", "properties": {"a": {"not": header}}}),
        json!({"type": "object", "if": header}),
        json!({"type": "object", "then": {"properties": {"a": header}}}),
        json!({"type": "object", "else": {"properties": {"a": header}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/h"}}, "$defs": {"h": header}}),
        json!({"type": "object", "definitions": {"h": header}}),
        json!({"type": "object", "additionalProperties": header}),
        json!({"type": "object", "patternProperties": {"^a": header}}),
        json!({"type": "object", "dependentSchemas": {"a": {"properties": {"b": header}}}}),
        json!({"type": "object", "unevaluatedProperties": header}),
        json!({"type": "object", "propertyNames": header}),
        json!({"type": "object", "x-vendor": {"deep": [{"x-mcp-header": "H"}]}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": header}}}}}),
    ];
    for schema in misplaced {
        assert_eq!(reason(&schema), MISPLACED, "{schema}");
    }
}

#[test]
fn data_and_names_are_not_annotations() {
    let schema = json!({
        "type": "object",
        "properties": {
            "x-mcp-header": {"type": "string", "default": {"x-mcp-header": "D"}},
            "e": {"enum": [{"x-mcp-header": "E"}], "const": {"x-mcp-header": "C"}, "examples": [{"x-mcp-header": "X"}]}
        },
        "$defs": {"x-mcp-header": {"type": "string"}}
    });
    let declared = ParamHeaders::declare(&schema).expect("no annotation");
    assert!(declared.declarations.is_empty());
}

#[test]
fn names_are_unique_without_regard_to_case_across_nesting() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {"c": {"type": "string", "x-mcp-header": "REGION"}}}
        }
    });
    assert_eq!(
        reason(&schema),
        "x-mcp-header REGION is declared twice (header names ignore letter case)"
    );
}

#[test]
fn a_name_may_be_max_bytes_long_and_no_longer() {
    let at = "N".repeat(MAX_PARAM_HEADER_NAME_BYTES);
    assert_eq!(
        sent(&one("boolean", &at), &json!({"p": true})),
        pairs(&[(&format!("mcp-param-{}", at.to_lowercase()), "true")])
    );
    let past = "N".repeat(MAX_PARAM_HEADER_NAME_BYTES + 1);
    assert_eq!(
        reason(&one("boolean", &past)),
        "an x-mcp-header longer than 64 bytes"
    );
}

#[test]
fn a_tool_may_declare_max_headers_and_no_more() {
    let schema = |count: usize| {
        let properties: Map<String, Value> = (0..count)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "integer", "x-mcp-header": format!("H{i}")}),
                )
            })
            .collect();
        json!({"type": "object", "properties": properties})
    };
    let arguments: Map<String, Value> = (0..MAX_PARAM_HEADERS)
        .map(|i| (format!("p{i}"), json!(i)))
        .collect();
    let headers = sent(&schema(MAX_PARAM_HEADERS), &Value::Object(arguments));
    assert_eq!(headers.len(), MAX_PARAM_HEADERS);
    assert_eq!(
        reason(&schema(MAX_PARAM_HEADERS + 1)),
        "more than 32 x-mcp-header parameters"
    );
}

#[test]
fn a_schema_is_walked_as_deep_as_the_envelope_allows_and_no_deeper() {
    // `{"properties": {"p": {"x": [[...]]}}}`: the arrays hold the depth.
    let schema = |depth: usize| {
        let mut node = json!([]);
        for _ in 0..depth - 4 {
            node = json!([node]);
        }
        json!({"properties": {"p": {"type": "string", "x-mcp-header": "P", "x": node}}})
    };
    assert_eq!(
        crate::envelope::depth(&schema(MAX_SCHEMA_DEPTH)),
        MAX_SCHEMA_DEPTH
    );
    assert!(ParamHeaders::declare(&schema(MAX_SCHEMA_DEPTH)).is_ok());
    assert_eq!(
        reason(&schema(MAX_SCHEMA_DEPTH + 1)),
        "the inputSchema is nested deeper than 32 levels"
    );
}

#[test]
fn integers_are_decimal_within_the_javascript_safe_range() {
    let integer = |value: Value| sent(&one("integer", "N"), &json!({ "p": value }));
    for (value, text) in [
        (json!(42), "42"),
        (json!(-7), "-7"),
        (json!(0), "0"),
        (json!(42.0), "42"),
        (json!(-0.0), "0"),
        (json!(9_007_199_254_740_991_i64), "9007199254740991"),
        (json!(-9_007_199_254_740_991_i64), "-9007199254740991"),
    ] {
        assert_eq!(integer(value), pairs(&[("mcp-param-n", text)]));
    }
    let range = "the Mcp-Param-P header can carry integers from -9007199254740991 to \
                 9007199254740991 only";
    for value in [
        json!(9_007_199_254_740_992_i64),
        json!(-9_007_199_254_740_992_i64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e300),
    ] {
        assert_eq!(refusal("integer", value), range);
    }
    assert_eq!(
        refusal("integer", json!(3.5)),
        "the Mcp-Param-P header needs an integer argument, and got a number with a fraction"
    );
}

#[test]
fn booleans_are_lowercase_words() {
    assert_eq!(
        sent(&one("boolean", "B"), &json!({"p": true})),
        pairs(&[("mcp-param-b", "true")])
    );
    assert_eq!(
        sent(&one("boolean", "B"), &json!({"p": false})),
        pairs(&[("mcp-param-b", "false")])
    );
}

#[test]
fn a_value_of_another_type_refuses_the_call() {
    let cases = [
        ("string", json!(1), "a string", "a number"),
        ("string", json!(true), "a string", "a boolean"),
        ("string", json!(["a"]), "a string", "an array"),
        ("string", json!({"a": 1}), "a string", "an object"),
        ("integer", json!("42"), "an integer", "a string"),
        ("integer", json!(false), "an integer", "a boolean"),
        ("boolean", json!("true"), "a boolean", "a string"),
        ("boolean", json!(1), "a boolean", "a number"),
    ];
    for (kind, value, wanted, got) in cases {
        assert_eq!(
            refusal(kind, value),
            format!("the Mcp-Param-P header needs {wanted} argument, and got {got}")
        );
    }
}

#[test]
fn parameter_values_are_marked_sensitive() {
    let declared = ParamHeaders::declare(&one("string", "P")).expect("valid");
    let headers = declared.headers(&json!({"p": "v"})).expect("sendable");
    assert!(headers[0].1.is_sensitive());
}

/// The bytes every encoded value is made of: visible ASCII and the space.
fn allowed(byte: u8) -> bool {
    (0x20..=0x7e).contains(&byte)
}

/// Text built from the pieces that decide the encoding: the sentinel's markers, spaces, tabs,
/// CR and LF, other controls, DEL and non-ASCII.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "=?base64?",
        "?=",
        " ",
        "\t",
        "\r\n",
        "\n",
        "\0",
        "\u{7f}",
        "\u{85}",
        "é",
        "a",
        "Z",
        "~",
    ]);
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn every_string_encodes_to_safe_bytes_and_decodes_back(text in any::<String>()) {
        let value = encode(&text).expect("encodable");
        let bytes = value.as_bytes();
        prop_assert!(bytes.iter().all(|&b| allowed(b)), "{bytes:?}");
        prop_assert!(!bytes.starts_with(b" ") && !bytes.ends_with(b" "));
        let shown = value.to_str().expect("ASCII");
        let decoded = match shown
            .strip_prefix(SENTINEL_START)
            .and_then(|rest| rest.strip_suffix(SENTINEL_END))
        {
            Some(b64) => String::from_utf8(STANDARD.decode(b64).expect("base64")).expect("UTF-8"),
            None => shown.to_owned(),
        };
        prop_assert_eq!(decoded, text);
    }

    #[test]
    fn hostile_pieces_never_reach_the_wire_raw(text in hostile_text()) {
        let value = encode(&text).expect("encodable");
        prop_assert!(value.as_bytes().iter().all(|&b| allowed(b)));
        let sent_as_is = value.as_bytes() == text.as_bytes();
        let must_encode = text.bytes().any(|b| !allowed(b))
            || text.starts_with(' ')
            || text.ends_with(' ')
            || (text.starts_with(SENTINEL_START) && text.ends_with(SENTINEL_END));
        prop_assert_eq!(sent_as_is, !must_encode);
    }

    #[test]
    fn safe_integers_round_trip(n in -MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER) {
        let headers = sent(&one("integer", "N"), &json!({ "p": n }));
        prop_assert_eq!(headers[0].1.parse::<i64>().expect("decimal"), n);
    }
}
