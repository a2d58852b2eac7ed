//! Pins: which tool definitions the user trusts, so a tool that changes after it was trusted
//! (a "rug pull") or that was never trusted is held until the user approves it.
//!
//! A tool's pin is the SHA-256 of its definition as the server sent it, without its `_meta`,
//! in the RFC 8785 canonical form (serde_json_canonicalizer): every field counts, the name,
//! title, description, both schemas, the annotations (a flipped `readOnlyHint` turns off
//! another client's approval prompt), `execution`, icons and whatever a later revision adds,
//! while the order of tools, of keys and of pages does not. A server's record, kept by the
//! Host's [`PinStore`] under a key made from its namespace and its URL (a hash: the URL may hold
//! a secret), maps each approved tool's name to its pin and, up to
//! [`MAX_PINNED_DEFINITION_BYTES`], its definition, for showing what changed.
//!
//! Trust on first use: the first complete listing of a server without a record pins every
//! tool. From then on each listing is judged against the record: a tool whose pin differs, or
//! that the record has never seen (a rename is a new tool), is held; a tool that is gone
//! leaves the record. A record that cannot be read trusts nothing. What pins cannot catch is
//! a tool hostile from its first listing: the envelope's cleaning and caps still apply to it.

use std::collections::BTreeMap;
use std::sync::Arc;

use aws_lc_rs::digest::{SHA256, digest};
use reqwest::Url;
use runvil_plugin::{FieldChange, Held, HeldTool, PinStore, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::envelope::{CheckedTool, Rejected, Shown, ToolSet, log_safe, show};
use crate::policy::{
    MAX_CHANGE_CHARS, MAX_CHANGES_SHOWN, MAX_ERROR_CHARS, MAX_PINNED_DEFINITION_BYTES,
};
use crate::secret::Scrubber;

/// The record's format; a record of another version is not read as trust.
const RECORD_VERSION: u32 = 1;

/// A tool's definition, canonical, and its pin.
#[derive(Debug, Clone)]
pub(crate) struct Definition {
    /// SHA-256 of `canonical`, in hexadecimal.
    pin: String,
    /// The tool object without its `_meta`, in RFC 8785 form.
    canonical: String,
}

impl Definition {
    /// The definition of the tool a server sent as `raw`; `None` when it is no JSON object
    /// (the envelope rejects such a tool before it could be pinned). The canonical form is
    /// scrubbed before it is hashed or kept: parsed, every escape that could hide a secret's
    /// form is decoded, and the record must hold no secret a server echoed.
    pub(crate) fn of(raw: &str, scrubber: &Scrubber) -> Option<Self> {
        let mut tool: Map<String, Value> = serde_json::from_str(raw).ok()?;
        tool.remove("_meta");
        let canonical = serde_json_canonicalizer::to_string(&tool).ok()?;
        let canonical = scrubber.scrub_owned(canonical);
        let hash = digest(&SHA256, canonical.as_bytes());
        let pin = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        Some(Self { pin, canonical })
    }
}

/// The key of a server's record: its namespace, then a hash of the namespace and of the URL it
/// is reached at (without user name, password, query or fragment, which hold credentials that
/// may change while the server stays the same). A changed URL is a new server; the key names
/// neither the URL nor any part of it.
pub(crate) fn key(namespace: &str, url: &Url) -> String {
    let mut place = url.clone();
    let _ = place.set_username("");
    let _ = place.set_password(None);
    place.set_query(None);
    place.set_fragment(None);
    let mut hashed = namespace.as_bytes().to_vec();
    hashed.push(0);
    hashed.extend_from_slice(place.as_str().as_bytes());
    let hash = digest(&SHA256, &hashed);
    let short: String = hash.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{namespace}#{short}")
}

/// One server's approved tools, as the Host keeps them.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: u32,
    tools: BTreeMap<String, Pinned>,
}

/// One approved tool.
#[derive(Debug, Serialize, Deserialize)]
struct Pinned {
    pin: String,
    /// The approved definition, when it is no larger than [`MAX_PINNED_DEFINITION_BYTES`].
    #[serde(default)]
    definition: Option<Box<RawValue>>,
}

impl Pinned {
    fn of(definition: &Definition) -> Self {
        let kept = (definition.canonical.len() <= MAX_PINNED_DEFINITION_BYTES)
            .then(|| RawValue::from_string(definition.canonical.clone()).ok())
            .flatten();
        Self {
            pin: definition.pin.clone(),
            definition: kept,
        }
    }
}

/// One server's pins: its record in the Host's store, and the tools it holds.
pub(crate) struct Pins {
    namespace: String,
    key: String,
    store: Arc<dyn PinStore>,
    /// What a held tool's reason says the user can do, the Host's words.
    hint: String,
    scrubber: Arc<Scrubber>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    record: Loaded,
    /// The tools held now, by name.
    held: BTreeMap<String, HeldNow>,
}

#[derive(Default)]
enum Loaded {
    /// There is none yet: the first complete listing is trusted, and recorded.
    #[default]
    NotYet,
    Record(Record),
    /// It cannot be read: nothing is trusted, for this reason.
    Unreadable(Shown),
}

/// A tool held now.
struct HeldNow {
    why: Held,
    definition: Definition,
    tool: Arc<CheckedTool>,
}

impl std::fmt::Debug for Pins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pins(..)")
    }
}

impl Pins {
    pub(crate) fn new(
        namespace: String,
        url: &Url,
        store: Arc<dyn PinStore>,
        hint: Option<&str>,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        let hint = match hint {
            Some(hint) => hint.replace("{namespace}", &namespace),
            None => "this Host offers no way to approve it".to_owned(),
        };
        Self {
            key: key(&namespace, url),
            namespace,
            store,
            hint,
            scrubber,
            state: tokio::sync::Mutex::default(),
        }
    }

    /// `set`, one complete listing, with the tools the user has not approved as they are now
    /// held; `definitions` are its tools' definitions as sent. The first listing of a server
    /// without a record is trusted, and recorded.
    pub(crate) async fn judge(
        &self,
        set: ToolSet,
        definitions: &BTreeMap<String, String>,
    ) -> ToolSet {
        let mut state = self.state.lock().await;
        // Read anew each time: the user may have approved tools in another process (a
        // `runvil trust` beside a running `runvil serve`) since the last listing.
        state.record = self.load().await;
        let ToolSet {
            mut tools,
            rejected,
            more_rejected,
            ..
        } = set;
        // A tool with no definition to pin (the envelope read it as an object, so none should
        // lack one) is never trusted.
        let mut current = BTreeMap::new();
        let mut unpinnable = Vec::new();
        for name in tools.keys() {
            match (definitions.get(name)).and_then(|raw| Definition::of(raw, &self.scrubber)) {
                Some(definition) => {
                    current.insert(name.clone(), definition);
                }
                None => unpinnable.push(name.clone()),
            }
        }
        for name in &unpinnable {
            tools.remove(name);
        }
        let (mut changed, mut held) = (false, BTreeMap::new());
        match &mut state.record {
            Loaded::NotYet => {
                // Trust on first use.
                let record = Record {
                    version: RECORD_VERSION,
                    tools: current
                        .iter()
                        .map(|(name, d)| (name.clone(), Pinned::of(d)))
                        .collect(),
                };
                state.record = Loaded::Record(record);
                changed = true;
            }
            Loaded::Record(record) => {
                let before = record.tools.len();
                record.tools.retain(|name, _| tools.contains_key(name));
                changed = record.tools.len() != before;
                for (name, definition) in std::mem::take(&mut current) {
                    let why = match record.tools.get(&name) {
                        Some(pinned) if pinned.pin == definition.pin => continue,
                        Some(_) => Held::Changed,
                        None => Held::New,
                    };
                    held.insert(name, (why, definition));
                }
            }
            Loaded::Unreadable(_) => {
                held = std::mem::take(&mut current)
                    .into_iter()
                    .map(|(name, definition)| (name, (Held::Unverified, definition)))
                    .collect();
            }
        }
        let mut reasons = BTreeMap::new();
        state.held.clear();
        for (name, (why, definition)) in held {
            let Some(tool) = tools.remove(&name) else {
                continue;
            };
            let reason = self.reason(why, &state.record);
            reasons.insert(name.clone(), Rejected::new(&self.scrubber, &name, &reason));
            state.held.insert(
                name,
                HeldNow {
                    why,
                    definition,
                    tool,
                },
            );
        }
        if changed
            && let Loaded::Record(record) = &state.record
            && let Err(error) = self.save(record).await
        {
            let error = show(&self.scrubber, &error.reason, MAX_ERROR_CHARS);
            tracing::warn!(server = %log_safe(&self.namespace), error = %error.line(), "the approved tools could not be kept");
        }
        ToolSet::new(tools, rejected, more_rejected, reasons)
    }

    /// Why a tool is held, for a model, with the Host's hint.
    fn reason(&self, why: Held, record: &Loaded) -> String {
        match (why, record) {
            (Held::Changed, _) => format!(
                "its definition changed since it was approved; {}",
                self.hint
            ),
            (Held::Unverified, Loaded::Unreadable(error)) => format!(
                "the record of approved tools cannot be read ({error}), so no tool is trusted; {}",
                self.hint
            ),
            _ => format!(
                "it is new since the tools of {} were approved; {}",
                self.namespace, self.hint
            ),
        }
    }

    /// The tools held now, with what changed in each, field by field.
    pub(crate) async fn held(&self) -> Vec<HeldTool> {
        let state = self.state.lock().await;
        let Loaded::Record(record) = &state.record else {
            return self.all_new(&state);
        };
        state
            .held
            .iter()
            .map(|(name, now)| {
                let before = record.tools.get(name).and_then(|p| p.definition.as_ref());
                self.held_tool(name, now, before.map(|raw| raw.get()))
            })
            .collect()
    }

    fn all_new(&self, state: &State) -> Vec<HeldTool> {
        state
            .held
            .iter()
            .map(|(name, now)| self.held_tool(name, now, None))
            .collect()
    }

    fn held_tool(&self, name: &str, now: &HeldNow, before: Option<&str>) -> HeldTool {
        let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
        let before = before.map_or(Value::Object(Map::new()), parse);
        let after = parse(&now.definition.canonical);
        let mut changes = Vec::new();
        let mut more = 0;
        diff("", &before, &after, &mut |change| {
            if changes.len() < MAX_CHANGES_SHOWN {
                changes.push(self.shown_change(change));
            } else {
                more += 1;
            }
        });
        let mut tool = HeldTool::new(
            name.to_owned(),
            now.why,
            changes,
            now.definition.pin.clone(),
        );
        tool.more_changes = more;
        tool
    }

    fn shown_change(&self, (field, before, after): RawChange<'_>) -> FieldChange {
        let text = |value: &Value| {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            show(&self.scrubber, &text, MAX_CHANGE_CHARS).into_string()
        };
        let field = show(&self.scrubber, &field, MAX_CHANGE_CHARS).into_string();
        FieldChange::new(field, before.map(text), after.map(text))
    }

    /// Approves `tools` as they were shown (their pins): each is recorded and kept, and
    /// answered with its checked tool to be made callable. A tool whose definition changed
    /// since it was shown, or that is no longer held, is not approved.
    pub(crate) async fn approve(
        &self,
        tools: &[HeldTool],
    ) -> Result<Vec<Arc<CheckedTool>>, StoreError> {
        let mut state = self.state.lock().await;
        let approved: Vec<String> = tools
            .iter()
            .filter(|t| {
                state
                    .held
                    .get(&t.name)
                    .is_some_and(|now| now.definition.pin == t.pin)
            })
            .map(|t| t.name.clone())
            .collect();
        if approved.is_empty() {
            return Ok(Vec::new());
        }
        // Approvals add to the record as it is now, which another process may have changed.
        state.record = self.load().await;
        let mut record = match &state.record {
            Loaded::Record(record) => Record {
                version: RECORD_VERSION,
                tools: record
                    .tools
                    .iter()
                    .map(|(name, pinned)| {
                        let copy = Pinned {
                            pin: pinned.pin.clone(),
                            definition: pinned.definition.clone(),
                        };
                        (name.clone(), copy)
                    })
                    .collect(),
            },
            // A record that could not be read is replaced only by the user's approval, and
            // holds what the user approved.
            Loaded::NotYet | Loaded::Unreadable(_) => Record {
                version: RECORD_VERSION,
                tools: BTreeMap::new(),
            },
        };
        for name in &approved {
            if let Some(now) = state.held.get(name) {
                record
                    .tools
                    .insert(name.clone(), Pinned::of(&now.definition));
            }
        }
        self.save(&record).await?;
        state.record = Loaded::Record(record);
        Ok(approved
            .iter()
            .filter_map(|name| state.held.remove(name))
            .map(|now| now.tool)
            .collect())
    }

    async fn load(&self) -> Loaded {
        let (store, key) = (Arc::clone(&self.store), self.key.clone());
        let loaded = tokio::task::spawn_blocking(move || store.load(&key)).await;
        let text = match loaded {
            Ok(Ok(None)) => return Loaded::NotYet,
            Ok(Ok(Some(text))) => text,
            Ok(Err(error)) => {
                return Loaded::Unreadable(show(&self.scrubber, &error.reason, MAX_ERROR_CHARS));
            }
            Err(_) => {
                let reason = "the Host's store failed";
                return Loaded::Unreadable(show(&self.scrubber, reason, MAX_ERROR_CHARS));
            }
        };
        match serde_json::from_str::<Record>(&text) {
            Ok(record) if record.version == RECORD_VERSION => Loaded::Record(record),
            _ => {
                let reason = "the Host's store holds no record of this Pack's for the server";
                Loaded::Unreadable(show(&self.scrubber, reason, MAX_ERROR_CHARS))
            }
        }
    }

    async fn save(&self, record: &Record) -> Result<(), StoreError> {
        let text = serde_json::to_string(record)
            .map_err(|_| StoreError::new("the record of approved tools cannot be written"))?;
        let (store, key) = (Arc::clone(&self.store), self.key.clone());
        tokio::task::spawn_blocking(move || store.save(&key, &text))
            .await
            .unwrap_or_else(|_| Err(StoreError::new("the Host's store failed")))
    }
}

/// A field that differs: its path, and its value before and after.
type RawChange<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// Every field that differs between `before` and `after`, by path: objects are compared key by
/// key (in key order), anything else as a whole.
fn diff<'a>(
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
                let field = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
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

#[cfg(test)]
mod tests;
