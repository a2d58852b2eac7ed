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
//! [`MAX_PINNED_DEFINITION_BYTES`], its definition, for showing what changed; and each held
//! tool the user was last shown to what they were shown (its review pin, see [`HeldTool::pin`]).
//!
//! Trust on first use: the first complete listing of a server without a record pins every
//! tool, once the record is kept. From then on each listing is judged against the record: a
//! tool whose pin differs, or that the record has never seen (a rename is a new tool), is
//! held; a tool that is gone leaves the record. Nothing is trusted on a record that cannot be
//! read (nor on one that is not this Pack's), nor on a first listing whose record the store
//! refuses to keep: this process keeps
//! judging against it (it is never forgotten because a save failed) and saves it again at each
//! read, but trusts none of its tools until it is kept. What pins cannot catch is a tool
//! hostile from its first listing: the envelope's cleaning and caps still apply to it.
//!
//! Every change of the record is a compare-and-set on the version it was read at: on a
//! conflict (another process changed it meanwhile) the record is read again and the listing
//! judged again, so two processes judging one first listing keep one record, and an approval
//! counts only against the record its user was shown.
//!
//! The record also keeps the user's decisions to turn the server off (it is then not
//! contacted: [`Pins::server_turned_off`] is asked before anything is sent) or some of its tools
//! (absent from every listing, never held, called as tools the server does not have):
//! [`Pins::set_enabled`] makes them, by the same compare-and-set, with no listing needed; a
//! record holding only decisions leaves the next listing to be trusted on first use.
//!
//! When the store does not answer a read again (a database that is away, a file that cannot be
//! read now), the record this process holds stays the one it judges against: the tools it
//! trusted stay callable, a tool new or changed since is held, and a server it holds no record
//! of trusts nothing (every tool held as unverified, with the store's reason) until the store
//! answers again. A record the store answers that is not this Pack's trusts nothing.
//!
//! The record is read again when the server's tools are used, at most once per
//! [`PIN_RECHECK_INTERVAL`] ([`Pins::stale`]), or at the next use once the Host says it changed
//! ([`Pins::forget`]); the last listing is kept, so a changed record is judged without listing
//! again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};

use aws_lc_rs::digest::{SHA256, digest};
use reqwest::Url;
use runvil_plugin::{Held, HeldTool, PinStore, Saved, StoreError, Version};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::envelope::{CheckedTool, Rejected, ToolSet};
use crate::policy::{
    MAX_ERROR_CHARS, MAX_PIN_SAVE_ATTEMPTS, MAX_PINNED_DEFINITION_BYTES, PIN_RECHECK_INTERVAL,
};
use crate::text::{Piece, Scrubber, Shown, log_safe, show};

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
        let pin = sha256_hex(canonical.as_bytes());
        Some(Self { pin, canonical })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    let hash = digest(&SHA256, bytes);
    hash.as_ref().iter().map(|b| format!("{b:02x}")).collect()
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

/// One server's approved tools, as the Host keeps them, with the user's decisions to turn the
/// server or some of its tools off: a user's decision about a server's tools, kept in the one
/// record a Host's store carries for it, so any store carries it unchanged.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    version: u32,
    tools: BTreeMap<String, Pinned>,
    /// The held tools the user was last shown, each with its review pin: what a later
    /// approval in another process is bound to.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    reviewed: BTreeMap<String, String>,
    /// Made by a decision before any listing was judged (the server turned off before it was
    /// ever listed): its next listing is trusted on first use, as if there were no record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unlisted: bool,
    /// The user turned the server off: it is not contacted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    disabled: bool,
    /// The tools the user turned off: absent from every listing, never held, and called as a
    /// tool the server does not have. Kept while the server does not list them, so one that
    /// comes back stays off.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    disabled_tools: BTreeSet<String>,
}

/// One approved tool.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

impl Record {
    /// Trust on first use: every tool of `listing`, as it is, with the user's decisions of
    /// `decided` (a record made before any listing), if any.
    fn first_use(listing: &Listing, decided: Option<Record>) -> Self {
        let decided = decided.unwrap_or_else(Self::unlisted);
        Self {
            tools: (listing.definitions.iter())
                .map(|(name, d)| (name.clone(), Pinned::of(d)))
                .collect(),
            unlisted: false,
            ..decided
        }
    }

    /// A record of no listing, to keep a decision in.
    fn unlisted() -> Self {
        Self {
            version: RECORD_VERSION,
            tools: BTreeMap::new(),
            reviewed: BTreeMap::new(),
            unlisted: true,
            disabled: false,
            disabled_tools: BTreeSet::new(),
        }
    }

    /// Whether the user turned the tool `name` off, alone or with its server.
    fn turned_off(&self, name: &str) -> bool {
        self.disabled || self.disabled_tools.contains(name)
    }

    /// Turns the server (`tool: None`) or one of its tools on or off; whether that changed it.
    fn decide(&mut self, tool: Option<&str>, enabled: bool) -> bool {
        match tool {
            None => std::mem::replace(&mut self.disabled, !enabled) == enabled,
            Some(tool) if enabled => self.disabled_tools.remove(tool),
            Some(tool) => self.disabled_tools.insert(tool.to_owned()),
        }
    }

    /// Keeps only what `listing` still lists; whether anything left.
    fn prune(&mut self, listing: &Listing) -> bool {
        let before = (self.tools.len(), self.reviewed.len());
        self.tools
            .retain(|name, _| listing.definitions.contains_key(name));
        self.reviewed
            .retain(|name, _| listing.definitions.contains_key(name));
        before != (self.tools.len(), self.reviewed.len())
    }
}

/// A complete listing as it was judged: every tool the envelope accepted, with its definition.
struct Listing {
    tools: BTreeMap<String, Arc<CheckedTool>>,
    definitions: BTreeMap<String, Definition>,
    rejected: Vec<Rejected>,
    more_rejected: usize,
}

/// The record as this process has it.
#[derive(Default)]
enum Loaded {
    /// Not read yet: no listing was judged.
    #[default]
    NotRead,
    /// As the store keeps it, at this version.
    Kept { record: Record, version: Version },
    /// As this process judged it, which the store refused to keep: based on the version `read`
    /// (`None`: there was no record, so this is trust on first use, which counts only once
    /// kept), refused for `why`.
    Unkept {
        record: Record,
        read: Option<Version>,
        why: Shown,
    },
    /// It cannot be read (or kept changing): nothing is trusted, for this reason.
    Unreadable(Shown),
}

impl Loaded {
    /// The record a change starts from, and the version it was read at.
    fn to_change(&self) -> Result<(Record, Option<Version>), StoreError> {
        match self {
            Self::Kept { record, version } => Ok((record.clone(), Some(*version))),
            Self::Unkept { record, read, .. } => Ok((record.clone(), *read)),
            Self::Unreadable(why) => Err(why.clone().leave(StoreError::new)),
            Self::NotRead => {
                Err(Shown::ours("the server's tools were not listed yet").leave(StoreError::new))
            }
        }
    }

    /// The record's review of `name`, if any.
    fn reviewed(&self, name: &str) -> Option<&String> {
        self.record().and_then(|record| record.reviewed.get(name))
    }

    /// The record, when this process has one.
    fn record(&self) -> Option<&Record> {
        match self {
            Self::Kept { record, .. } | Self::Unkept { record, .. } => Some(record),
            _ => None,
        }
    }

    /// Whether the user turned the tool `name` off, as far as this process knows.
    fn turned_off(&self, name: &str) -> bool {
        self.record().is_some_and(|record| record.turned_off(name))
    }
}

/// A tool held now.
#[derive(PartialEq, Eq)]
struct HeldNow {
    why: Held,
    /// The approved pin it is compared with (a changed tool's).
    before: Option<String>,
    /// Its review pin: what the user is shown of it, identified.
    review: String,
}

impl HeldNow {
    fn new(why: Held, before: Option<String>, definition: &Definition) -> Self {
        let tag = match why {
            Held::Changed => "changed",
            Held::New => "new",
            Held::Unkept => "unkept",
            _ => "unverified",
        };
        let shown = format!(
            "{tag}\n{}\n{}",
            before.as_deref().unwrap_or("-"),
            definition.pin
        );
        Self {
            why,
            before,
            review: sha256_hex(shown.as_bytes()),
        }
    }
}

#[derive(Default)]
struct State {
    listing: Option<Listing>,
    record: Loaded,
    /// The tools held now, by name.
    held: BTreeMap<String, HeldNow>,
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
    /// When the record was last read, in milliseconds after `epoch`; [`NEVER`]: to be read at
    /// the next use. Read without a lock on every use.
    read_at: AtomicU64,
    /// How many times the Host said the record changed: a read that began before the last
    /// such word does not count as a read of the record now. Set, with `read_at`, under it.
    changes: std::sync::Mutex<u64>,
    epoch: Instant,
    /// Whether a read in the background is under way.
    reading: AtomicBool,
}

/// [`Pins::read_at`] of a record to be read at the next use.
const NEVER: u64 = u64::MAX;

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
            read_at: AtomicU64::new(NEVER),
            changes: std::sync::Mutex::new(0),
            epoch: Instant::now(),
            reading: AtomicBool::new(false),
        }
    }

    /// `set`, one complete listing, with the tools the user has not approved as they are now
    /// held; `definitions` are its tools' definitions as sent. The first listing of a server
    /// without a record is trusted once its record is kept.
    pub(crate) async fn judge(
        &self,
        set: ToolSet,
        definitions: &BTreeMap<String, String>,
    ) -> ToolSet {
        let ToolSet {
            mut tools,
            rejected,
            more_rejected,
            ..
        } = set;
        // A tool with no definition to pin (the envelope read it as an object, so none should
        // lack one) is never trusted.
        let mut pinned = BTreeMap::new();
        tools.retain(|name, _| {
            let definition = definitions.get(name);
            match definition.and_then(|raw| Definition::of(raw, &self.scrubber)) {
                Some(definition) => pinned.insert(name.clone(), definition).is_none(),
                None => false,
            }
        });
        let mut state = self.state.lock().await;
        state.listing = Some(Listing {
            tools,
            definitions: pinned,
            rejected,
            more_rejected,
        });
        self.settle(&mut state).await;
        self.tool_set(&state)
    }

    /// Whether the record is due to be read again: [`PIN_RECHECK_INTERVAL`] passed since it
    /// was, or the Host said it changed.
    pub(crate) fn stale(&self) -> bool {
        match self.read_at.load(Ordering::Acquire) {
            NEVER => true,
            at => self.now_ms() >= at.saturating_add(PIN_RECHECK_INTERVAL.as_millis() as u64),
        }
    }

    /// Whether the Host said the record changed since it was last read (or it never was).
    pub(crate) fn forgotten(&self) -> bool {
        self.read_at.load(Ordering::Acquire) == NEVER
    }

    /// The record changed elsewhere: it is read again at the next use, even if a read under
    /// way now ends after this.
    pub(crate) fn forget(&self) {
        let mut changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        *changes += 1;
        self.read_at.store(NEVER, Ordering::Release);
    }

    /// How many times the Host said the record changed, when a read begins.
    fn changes_now(&self) -> u64 {
        *self.changes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The read that began when [`Pins::changes_now`] said `changes` is done: it counts as the
    /// last unless the Host said the record changed since it began.
    fn read_done(&self, changes: u64) {
        let now = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        if *now == changes {
            self.read_at.store(self.now_ms(), Ordering::Release);
        }
    }

    /// Claims the one read in the background: `false` when one is under way.
    pub(crate) fn begin_reading(&self) -> bool {
        !self.reading.swap(true, Ordering::AcqRel)
    }

    /// Ends the read [`Pins::begin_reading`] claimed.
    pub(crate) fn end_reading(&self) {
        self.reading.store(false, Ordering::Release);
    }

    /// Reads the record again and judges the last listing against it: the tool set to show
    /// when what is held changed, else `None`.
    pub(crate) async fn refresh(&self) -> Option<ToolSet> {
        let mut state = self.state.lock().await;
        state.listing.as_ref()?;
        let before = self.snapshot(&state);
        self.settle(&mut state).await;
        (self.snapshot(&state) != before).then(|| self.tool_set(&state))
    }

    /// What is held, and why, in a form to compare.
    fn snapshot(&self, state: &State) -> Vec<(String, String, Shown)> {
        (state.held.iter())
            .map(|(name, now)| {
                let reason = self.reason(now.why, &state.record);
                (name.clone(), now.review.clone(), reason)
            })
            .collect()
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// Reads the record, makes of it what the listing says (trust on first use, tools gone
    /// leave it) and keeps that, then decides what is held. A conflict reads and judges again.
    async fn settle(&self, state: &mut State) {
        let State {
            listing, record, ..
        } = &mut *state;
        let Some(listing) = listing else { return };
        let changes = self.changes_now();
        *record = self.reconcile(listing, std::mem::take(record)).await;
        self.read_done(changes);
        self.hold(state);
    }

    /// What the record is once `listing` was judged against it, given what this process had.
    async fn reconcile(&self, listing: &Listing, mut had: Loaded) -> Loaded {
        for _ in 0..MAX_PIN_SAVE_ATTEMPTS {
            let stored = match self.load(&had).await {
                Ok(stored) => stored,
                // The store did not answer (a database away, a file that cannot be read now):
                // the record this process holds stays what it judges against, so the tools
                // trusted before stay trusted and nothing new is; without one, nothing is.
                Err(Unread::Unanswered(why)) => {
                    return match had {
                        Loaded::Kept { .. } | Loaded::Unkept { .. } => {
                            tracing::debug!(server = %log_safe(&self.namespace), error = %why.line(), "the record of approved tools could not be read again; the one held stays");
                            had
                        }
                        Loaded::NotRead | Loaded::Unreadable(_) => Loaded::Unreadable(why),
                    };
                }
                Err(Unread::NotOurs(why)) => return Loaded::Unreadable(why),
            };
            let read = stored.as_ref().map(|(_, version)| *version);
            let refused_before = match &had {
                Loaded::Unkept { why, .. } => Some(why.clone()),
                _ => None,
            };
            // What this process would have the record be: its own change the store refused,
            // while the record is still the one it was based on; else the record; else the
            // first listing.
            let (mut record, from_store) = match had {
                Loaded::Unkept {
                    record,
                    read: based_on,
                    ..
                } if based_on == read => (record, false),
                _ => match stored {
                    // Only decisions so far: this listing is the first.
                    Some((record, _)) if record.unlisted => {
                        (Record::first_use(listing, Some(record)), false)
                    }
                    Some((record, _)) => (record, true),
                    None => (Record::first_use(listing, None), false),
                },
            };
            let pruned = record.prune(listing);
            let version = match (read, from_store && !pruned) {
                (Some(version), true) => version,
                _ => match self.save(&record, read).await {
                    Ok(Saved::Kept(version)) => version,
                    Ok(Saved::Conflict) => {
                        had = Loaded::NotRead;
                        continue;
                    }
                    Err(why) => {
                        // Once per reason: the record is saved again at each read.
                        if refused_before.as_ref() != Some(&why) {
                            tracing::warn!(server = %log_safe(&self.namespace), error = %why.line(), "the approved tools could not be kept");
                        }
                        return Loaded::Unkept { record, read, why };
                    }
                },
            };
            return Loaded::Kept { record, version };
        }
        Loaded::Unreadable(kept_changing())
    }

    /// Decides which tools of the listing are held, and why.
    fn hold(&self, state: &mut State) {
        let Some(listing) = &state.listing else {
            return;
        };
        let record = match &state.record {
            Loaded::Kept { record, .. }
            | Loaded::Unkept {
                record,
                read: Some(_),
                ..
            } => Some(record),
            _ => None,
        };
        let unjudged = match &state.record {
            Loaded::Unkept { read: None, .. } => Held::Unkept,
            _ => Held::Unverified,
        };
        // A tool turned off is not listed at all, so never held.
        state.held = (listing.definitions.iter())
            .filter(|(name, _)| !state.record.turned_off(name))
            .filter_map(|(name, definition)| {
                let (why, before) = match record.map(|r| r.tools.get(name)) {
                    None => (unjudged, None),
                    Some(Some(pinned)) if pinned.pin == definition.pin => return None,
                    Some(Some(pinned)) => (Held::Changed, Some(pinned.pin.clone())),
                    Some(None) => (Held::New, None),
                };
                Some((name.clone(), HeldNow::new(why, before, definition)))
            })
            .collect();
    }

    /// The tools to show: the listing's, but those held, which are listed with their reason.
    fn tool_set(&self, state: &State) -> ToolSet {
        let Some(listing) = &state.listing else {
            return ToolSet::new(BTreeMap::new(), Vec::new(), 0, BTreeMap::new());
        };
        let mut tools = listing.tools.clone();
        tools.retain(|name, _| !state.record.turned_off(name));
        let mut reasons = BTreeMap::new();
        for (name, now) in &state.held {
            tools.remove(name);
            let reason = self.reason(now.why, &state.record);
            reasons.insert(name.clone(), Rejected::shown(&self.scrubber, name, reason));
        }
        // Nor is one the envelope dropped listed under `rejected` (a valid name is shown as
        // it is).
        let mut rejected = listing.rejected.clone();
        rejected.retain(|dropped| !state.record.turned_off(dropped.name.as_str()));
        ToolSet::new(tools, rejected, listing.more_rejected, reasons)
    }

    /// Why a tool is held, for a model, with the Host's hint: the store's error in it as it
    /// was shown, composed, not shown again.
    fn reason(&self, why: Held, record: &Loaded) -> Shown {
        let hint = show(&self.scrubber, &self.hint, MAX_ERROR_CHARS);
        let reason = |pieces: &[Piece<'_>]| {
            let pieces = pieces.iter().copied().chain([(&hint).into()]);
            Shown::concat(pieces, MAX_ERROR_CHARS)
        };
        match (why, record) {
            (Held::Changed, _) => {
                reason(&["its definition changed since it was approved; ".into()])
            }
            (Held::Unverified, Loaded::Unreadable(error)) => reason(&[
                "the record of approved tools cannot be read (".into(),
                error.into(),
                "), so no tool is trusted; ".into(),
            ]),
            (Held::Unkept, Loaded::Unkept { why: error, .. }) => reason(&[
                "the record of approved tools cannot be kept (".into(),
                error.into(),
                "), so no tool is trusted until it can be; ".into(),
            ]),
            _ => {
                let namespace = show(&self.scrubber, &self.namespace, MAX_ERROR_CHARS);
                reason(&[
                    "it is new since the tools of ".into(),
                    (&namespace).into(),
                    " were approved; ".into(),
                ])
            }
        }
    }

    /// The tools held now, with what changed in each, field by field.
    pub(crate) async fn held(&self) -> Vec<HeldTool> {
        let state = self.state.lock().await;
        let Some(listing) = &state.listing else {
            return Vec::new();
        };
        let approved = state.record.record();
        (state.held.iter())
            .filter_map(|(name, now)| {
                let definition = listing.definitions.get(name)?;
                let before = (now.before.as_ref())
                    .and(approved)
                    .and_then(|record| record.tools.get(name))
                    .and_then(|pinned| pinned.definition.as_ref());
                let before = before.map(|raw| raw.get());
                let (changes, more) =
                    review::changes(&self.scrubber, before, &definition.canonical);
                let mut tool = HeldTool::new(name.clone(), now.why, changes, now.review.clone());
                tool.more_changes = more;
                tool.reviewed = state.record.reviewed(name) == Some(&now.review);
                Some(tool)
            })
            .collect()
    }

    /// Records that the user was shown `tools` as they are (their review pins). A tool that
    /// changed since it was shown is left as it was.
    pub(crate) async fn reviewed(&self, tools: &[HeldTool]) -> Result<(), StoreError> {
        self.change(|state, record| {
            let mut changed = false;
            for tool in tools {
                let shown = state.held.get(&tool.name);
                if shown.is_some_and(|now| now.review == tool.pin)
                    && record.reviewed.get(&tool.name) != Some(&tool.pin)
                {
                    record.reviewed.insert(tool.name.clone(), tool.pin.clone());
                    changed = true;
                }
            }
            changed.then_some(())
        })
        .await
        .map(|_| ())
    }

    /// Approves `tools` as they were shown (their review pins): each is recorded and kept,
    /// and the tool set to show is answered with the names approved. A tool whose definition,
    /// or the approved one it was compared with, changed since it was shown, or that is no
    /// longer held, is not approved.
    pub(crate) async fn approve(
        &self,
        tools: &[HeldTool],
    ) -> Result<(Vec<String>, ToolSet), StoreError> {
        let approved = self
            .change(|state, record| {
                let listing = state.listing.as_ref()?;
                let approved: Vec<String> = tools
                    .iter()
                    .filter(|t| {
                        state
                            .held
                            .get(&t.name)
                            .is_some_and(|now| now.review == t.pin)
                    })
                    .map(|t| t.name.clone())
                    .collect();
                for name in &approved {
                    let definition = listing.definitions.get(name)?;
                    record.tools.insert(name.clone(), Pinned::of(definition));
                    record.reviewed.remove(name);
                }
                (!approved.is_empty()).then_some(approved)
            })
            .await?;
        let state = self.state.lock().await;
        Ok((approved.unwrap_or_default(), self.tool_set(&state)))
    }

    /// Whether the record in the store says the user turned the server off. A record that
    /// cannot be read says nothing of it: the server is started, and its listing judged (held
    /// whole) as any other.
    pub(crate) async fn server_turned_off(&self) -> bool {
        matches!(self.load(&Loaded::NotRead).await, Ok(Some((record, _))) if record.disabled)
    }

    /// Turns the server (`tool: None`) or one of its tools on or off in the record, as the
    /// user decided: no listing is needed, the record is made if there is none. Answers
    /// whether that changed the record, and, when a listing was judged, the tool set to show
    /// now.
    pub(crate) async fn set_enabled(
        &self,
        tool: Option<&str>,
        enabled: bool,
    ) -> Result<(bool, Option<ToolSet>), StoreError> {
        let mut state = self.state.lock().await;
        for _ in 0..MAX_PIN_SAVE_ATTEMPTS {
            let (mut record, read) = match self.load(&state.record).await {
                Ok(Some((record, version))) => (record, Some(version)),
                Ok(None) => (Record::unlisted(), None),
                Err(unread) => return Err(unread.why().leave(StoreError::new)),
            };
            if !record.decide(tool, enabled) {
                return Ok((false, None));
            }
            match self.save(&record, read).await {
                Ok(Saved::Kept(version)) => {
                    state.record = Loaded::Kept { record, version };
                    // With a listing, judged again (a record of decisions only becomes its
                    // first use), so what it holds and shows follows the decision.
                    self.settle(&mut state).await;
                    let shown = state.listing.is_some().then(|| self.tool_set(&state));
                    return Ok((true, shown));
                }
                Ok(Saved::Conflict) => {}
                Err(why) => return Err(why.leave(StoreError::new)),
            }
        }
        Err(kept_changing().leave(StoreError::new))
    }

    /// Reads and judges the record, then changes it with `edit` (which answers `None` when
    /// there is nothing to change) and keeps it; on a conflict, all of it again.
    async fn change<T>(
        &self,
        mut edit: impl FnMut(&State, &mut Record) -> Option<T>,
    ) -> Result<Option<T>, StoreError> {
        let mut state = self.state.lock().await;
        for _ in 0..MAX_PIN_SAVE_ATTEMPTS {
            self.settle(&mut state).await;
            let (mut record, read) = state.record.to_change()?;
            let Some(answer) = edit(&state, &mut record) else {
                return Ok(None);
            };
            match self.save(&record, read).await {
                Ok(Saved::Kept(version)) => {
                    state.record = Loaded::Kept { record, version };
                    self.hold(&mut state);
                    return Ok(Some(answer));
                }
                Ok(Saved::Conflict) => {}
                Err(why) => return Err(why.leave(StoreError::new)),
            }
        }
        Err(kept_changing().leave(StoreError::new))
    }

    /// The record in the store and its version, `None` when there is none. A record whose
    /// version is the one `had` holds is not read again.
    async fn load(&self, had: &Loaded) -> Result<Option<(Record, Version)>, Unread> {
        let (store, key) = (Arc::clone(&self.store), self.key.clone());
        let loaded = tokio::task::spawn_blocking(move || store.load(&key)).await;
        let stored = match loaded {
            Ok(Ok(None)) => return Ok(None),
            Ok(Ok(Some(stored))) => stored,
            Ok(Err(error)) => {
                let why = show(&self.scrubber, &error.reason, MAX_ERROR_CHARS);
                return Err(Unread::Unanswered(why));
            }
            Err(_) => return Err(Unread::Unanswered(Shown::ours("the Host's store failed"))),
        };
        if let Loaded::Kept { record, version } = had
            && *version == stored.version
        {
            return Ok(Some((record.clone(), *version)));
        }
        match serde_json::from_str::<Record>(&stored.record) {
            Ok(record) if record.version == RECORD_VERSION => Ok(Some((record, stored.version))),
            _ => Err(Unread::NotOurs(Shown::ours(
                "the Host's store holds no record of this Pack's for the server",
            ))),
        }
    }

    async fn save(&self, record: &Record, read: Option<Version>) -> Result<Saved, Shown> {
        let text = serde_json::to_string(record)
            .map_err(|_| Shown::ours("the record of approved tools cannot be written"))?;
        let (store, key) = (Arc::clone(&self.store), self.key.clone());
        match tokio::task::spawn_blocking(move || store.save(&key, &text, read)).await {
            Ok(Ok(saved)) => Ok(saved),
            Ok(Err(error)) => Err(show(&self.scrubber, &error.reason, MAX_ERROR_CHARS)),
            Err(_) => Err(Shown::ours("the Host's store failed")),
        }
    }
}

/// Why a record was not read.
enum Unread {
    /// The store did not answer: it cannot be reached or read now.
    Unanswered(Shown),
    /// It answered with a record that is not one of this Pack's.
    NotOurs(Shown),
}

impl Unread {
    fn why(self) -> Shown {
        match self {
            Self::Unanswered(why) | Self::NotOurs(why) => why,
        }
    }
}

/// Why nothing is trusted when other processes changed the record at every try.
fn kept_changing() -> Shown {
    Shown::ours("it kept changing while it was read and written, by other processes")
}

mod review;

#[cfg(test)]
mod tests;
