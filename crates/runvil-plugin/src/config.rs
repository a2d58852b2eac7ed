//! A Pack's part of the Host's configuration, as the registry keeps it until the Pack is built.
//!
//! A configuration may hold secrets written into it as they are (a header's token, a key in a
//! URL), so this type never shows a value: its `Debug` names only the keys of its top-level
//! object. It is handed to the Pack's factory once ([`crate::Packs::construct`]), which reads
//! what it needs and drops it; every string in it, keys included, is wiped when it is dropped
//! (zeroize), wherever that happens, so no copy the contract made outlives its use.

use std::fmt;

use serde_json::Value;
use zeroize::Zeroize;

/// A Pack's configuration: a JSON value that shows none of its values and is wiped when
/// dropped.
pub struct Config(Value);

impl Config {
    /// Takes `value` in.
    pub fn new(value: Value) -> Self {
        Self(value)
    }

    /// The value, to read. A factory reads what it needs of it and keeps none of it.
    pub fn value(&self) -> &Value {
        &self.0
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Value::Object(object) => f
                .debug_tuple("Config")
                .field(&object.keys().collect::<Vec<_>>())
                .finish(),
            Value::Null => f.write_str("Config(null)"),
            _ => f.write_str("Config(..)"),
        }
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Wipes every string of `value`, its objects' keys included, leaving a value with no text:
/// each string empty, each object emptied. Without recursion, so no nesting depth can exhaust
/// the stack.
fn wipe(value: &mut Value) {
    let mut pending = vec![std::mem::take(value)];
    while let Some(mut value) = pending.pop() {
        match &mut value {
            Value::String(text) => text.zeroize(),
            Value::Array(items) => pending.append(items),
            Value::Object(object) => {
                for (mut key, item) in std::mem::take(object) {
                    key.zeroize();
                    pending.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A value nested deeper than any stack could drop by recursion.
    fn deep_value() -> Value {
        let mut deep = json!("hunter2");
        for _ in 0..100_000 {
            // Built by hand: `json!` would serialize the inner value, recursively.
            let object = serde_json::Map::from_iter([("k".to_owned(), deep)]);
            deep = Value::Array(vec![Value::Object(object)]);
        }
        deep
    }

    #[test]
    fn debug_names_top_level_keys_and_no_value() {
        let config = Config::new(json!({
            "docs": {"url": "https://h/mcp?key=hunter2", "headers": {"A": "Bearer hunter2"}},
            "other": "hunter2",
        }));
        assert_eq!(format!("{config:?}"), r#"Config(["docs", "other"])"#);
        assert_eq!(format!("{:?}", Config::new(json!("hunter2"))), "Config(..)");
        assert_eq!(format!("{:?}", Config::new(Value::Null)), "Config(null)");
        assert_eq!(config.value()["other"], "hunter2");
    }

    /// The wipe takes the value apart (what it wiped cannot be seen without `unsafe`), at any
    /// depth: a recursive walk, or the value's own drop, would overflow the stack here.
    #[test]
    fn wiping_takes_a_value_apart_at_any_depth() {
        let mut value = json!({"a": ["hunter2", {"hunter2": 1}]});
        value["b"] = deep_value();
        wipe(&mut value);
        assert_eq!(value, Value::Null, "what was there is taken out and wiped");
        drop(Config::new(deep_value()));
    }
}
