//! The bodies of the fuzz targets (`fuzz/`), one function a target, compiled only under
//! `cfg(fuzzing)` (cargo-fuzz sets it; `fuzz/.cargo/config.toml` sets it for the seeds' test
//! on stable), so that in every normal build `install` stays the only public item. As
//! rustls does: the fuzz crate depends on this crate and drives what is re-exported here,
//! the very code that ships.
//!
//! Each function takes any bytes, must not panic, and asserts the invariants its code
//! promises; libFuzzer reports a failed assertion as a crash like any other panic.

use serde_json::{Value, json};

use crate::config::{self, Entry, Environment};
use crate::envelope::{self, Outcome};
use crate::policy;
use crate::secret::Secret;
use crate::sse;
use crate::text::{self, Scrubber, Untrusted};

/// The value of every variable the fake environment sets, and its home directory: text that
/// no refusal and no Debug may show unless the input itself holds it.
const VALUE: &str = "Zq9-fuzz-value";
const HOME: &str = "/home/Zq9-fuzz-home";

/// Sets every variable whose name starts with an uppercase letter from A to M.
struct FakeEnvironment;

impl Environment for FakeEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        name.starts_with(|c: char| c.is_ascii_uppercase() && c <= 'M')
            .then(|| format!("{VALUE}-{}", name.len()))
    }

    fn home(&self) -> Option<String> {
        Some(HOME.to_owned())
    }
}

/// Configuration: bytes that are JSON become an `mcpServers` object for `config::parse`.
/// No refusal and no accepted entry's Debug shows a value of the environment.
pub fn config(data: &[u8]) {
    let Ok(config) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(entries) = config::parse(&config, &FakeEnvironment) else {
        return;
    };
    // A value the input holds itself may be shown as part of a key.
    let input = String::from_utf8_lossy(data);
    let hidden = |text: &str| {
        for value in [VALUE, HOME] {
            assert!(
                input.contains(value) || !text.contains(value),
                "a value is shown: {text}"
            );
        }
    };
    let mut secrets = Vec::new();
    for (_, entry) in entries {
        match entry {
            Entry::Refused(refusal) => {
                hidden(&refusal.to_string());
                hidden(&format!("{refusal:?}"));
            }
            Entry::Remote(spec) => {
                hidden(&format!("{spec:?}"));
                secrets.extend(spec.secrets);
            }
        }
    }
    // The scrubber takes whatever was configured, and leaves no secret it keeps.
    let scrubber = Scrubber::new(secrets.iter().cloned());
    let scrubbed = scrubber.scrub(&input);
    for secret in secrets.iter().map(Secret::expose) {
        if secret.chars().count() >= policy::MIN_SCRUBBED_SECRET_CHARS {
            assert!(!scrubbed.contains(secret), "a secret survived scrubbing");
        }
    }
}

/// SSE: the first byte picks a cap from 1 to 256 bytes, the next two a split point; the rest
/// is the stream. It parses the same whole and in two chunks, with no event over the cap.
pub fn sse(data: &[u8]) {
    let [cap, hi, lo, stream @ ..] = data else {
        return;
    };
    let limit = usize::from(*cap) + 1;
    let split = usize::from(u16::from_be_bytes([*hi, *lo])) % (stream.len() + 1);
    let (head, tail) = stream.split_at(split);
    let whole = sse::parse_chunks(&[stream], limit);
    let halves = sse::parse_chunks(&[head, tail], limit);
    assert_eq!(whole, halves, "the split at {split} changed the outcome");
    for event in &whole.0 {
        assert!(event.len() <= limit, "an event of {} bytes", event.len());
    }
}

/// JSON-RPC: bytes that are JSON are a message from a server. Its `result` (or the message
/// itself) is checked as a `tools/list` page and converted as a `tools/call` result, for a
/// fixed tool and for every tool the page got accepted; its `error` becomes the text of a
/// JSON-RPC error. Whatever reaches a model is clean.
pub fn jsonrpc(data: &[u8]) {
    let Ok(message) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let result = message.get("result").unwrap_or(&message);
    let fixed = json!({"tools": [{
        "name": "fixed",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    }]});
    let mut catalog = envelope::ToolPages::default();
    for page in [result, &fixed] {
        let Ok(page) = serde_json::value::to_raw_value(page) else {
            return;
        };
        if catalog.add_page(&Untrusted::new(page)).is_err() {
            return;
        }
    }
    let set = catalog.finish();
    for tool in set.tools.values() {
        assert_clean(&tool.name);
        assert_clean(&tool.description);
        assert!(tool.name.chars().count() <= policy::MAX_TOOL_NAME_CHARS);
        let arguments = message.get("params").unwrap_or(&Value::Null);
        if let Err(text) = tool.check_arguments(arguments) {
            assert_clean(&text);
        }
        match envelope::convert_now(Untrusted::new(result.clone()), tool) {
            Outcome::Text(text) | Outcome::ToolFailed(text) => assert_clean(&text),
        }
    }
    for rejected in &set.rejected {
        assert_clean(rejected.name.as_str());
        assert_clean(rejected.reason.as_str());
    }
    if let Some(error) = message.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("");
        let shown =
            envelope::rpc_error_text(code, &Untrusted::new(text.to_owned()), &Scrubber::default());
        assert_clean(shown.as_str());
    }
}

/// Schema checking: bytes that are JSON values in a row. The first is a `tools/list` page
/// for `envelope::ToolPages`; each later one is a model's arguments, checked against the
/// input schema of every tool the page got accepted. Whatever the set shows a model, and
/// every argument error, is clean.
pub fn tools(data: &[u8]) {
    let mut values = json_values(data);
    let Some(page) = values.next() else {
        return;
    };
    let Some(set) = check_page(&page) else {
        return;
    };
    let arguments: Vec<Value> = values.collect();
    for tool in set.tools.values() {
        assert_clean(&tool.name);
        assert!(tool.name.chars().count() <= policy::MAX_TOOL_NAME_CHARS);
        assert_clean(&tool.description);
        assert_within(&tool.description, policy::MAX_DESCRIPTION_CHARS);
        assert_clean_value(&tool.shown_schema);
        for arguments in &arguments {
            if let Err(text) = tool.check_arguments(arguments) {
                assert_clean(&text);
            }
        }
    }
    for rejected in &set.rejected {
        assert_clean(rejected.name.as_str());
        assert_clean(rejected.reason.as_str());
    }
}

/// Result conversion: bytes that are two JSON values in a row, a tool's `outputSchema` and
/// a `tools/call` result, for `envelope::convert_now` (the conversion `convert_result` runs
/// off the runtime). A schema the envelope refuses
/// leaves nothing to convert against. The outcome, error or not, is clean and within the
/// result cap.
pub fn result(data: &[u8]) {
    let mut values = json_values(data);
    let (Some(schema), Some(result)) = (values.next(), values.next()) else {
        return;
    };
    let page = json!({"tools": [{
        "name": "fuzzed",
        "inputSchema": {"type": "object"},
        "outputSchema": schema,
    }]});
    let Some(set) = check_page(&page) else {
        return;
    };
    let Some(tool) = set.tools.get("fuzzed") else {
        return;
    };
    match envelope::convert_now(Untrusted::new(result), tool) {
        Outcome::Text(text) | Outcome::ToolFailed(text) => {
            assert_clean(&text);
            assert_within(&text, policy::MAX_RESULT_CHARS);
        }
    }
}

/// One `tools/list` page through the catalog, as the session hands it over; `None` when it
/// passes the catalog's byte cap.
fn check_page(page: &Value) -> Option<envelope::ToolSet> {
    let page = serde_json::value::to_raw_value(page).ok()?;
    let mut catalog = envelope::ToolPages::default();
    catalog.add_page(&Untrusted::new(page)).ok()?;
    Some(catalog.finish())
}

/// The JSON values at the start of `data`, one after the other, up to the first that is not.
fn json_values(data: &[u8]) -> impl Iterator<Item = Value> + '_ {
    serde_json::Deserializer::from_slice(data)
        .into_iter::<Value>()
        .map_while(Result::ok)
}

/// At most `max` characters, not counting the note that says how many were cut.
fn assert_within(text: &str, max: usize) {
    let kept = match text.rsplit_once("\n[... ") {
        Some((kept, note)) if note.ends_with(" characters cut]") => kept,
        _ => text,
    };
    let chars = kept.chars().count();
    assert!(chars <= max, "{chars} characters, over the cap of {max}");
}

/// Every key and string of a JSON value is clean.
fn assert_clean_value(value: &Value) {
    match value {
        Value::String(text) => assert_clean(text),
        Value::Array(items) => items.iter().for_each(assert_clean_value),
        Value::Object(map) => map.iter().for_each(|(key, value)| {
            assert_clean(key);
            assert_clean_value(value);
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// No control character but newline and tab, and nothing invisible, can reach a model.
fn assert_clean(text: &str) {
    let bad = text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || text::show(&Scrubber::default(), &c.to_string(), usize::MAX)
                .as_str()
                .is_empty()
    });
    assert!(bad.is_none(), "{bad:?} in {text:?}");
}
