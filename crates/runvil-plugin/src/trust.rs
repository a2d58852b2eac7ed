//! What a Host lends a Pack that pins its backends' tools, and what it sees of the tools a
//! Pack holds: the user's trust, kept between runs.
//!
//! A Pack that lists tools from backends it does not control (for `plugin_mcp`, remote MCP
//! servers) can remember each tool's definition as the user first trusted it, and hold any
//! tool whose definition later changes, or that was never seen, until the user approves it
//! (a "rug pull": a tool that turns hostile after it was trusted). The Pack decides what a
//! definition is and how it is compared; the Host keeps the Pack's records, opaque text under
//! a key the Pack chooses, through the [`PinStore`] it lends under [`PIN_STORE`], and brings
//! the user through approvals: [`Pack::held`](crate::Pack::held) lists what is held and why,
//! field by field, and [`Pack::approve`](crate::Pack::approve) approves what the user saw.
//! Without a store a Pack holds nothing.

use std::sync::Arc;

use crate::services::Service;
use crate::store::StoreError;

/// Where a Host keeps a Pack's records of trusted tools, as opaque text under a key the Pack
/// chooses (one per backend). A Host keeps them as it keeps credentials: they decide what a
/// model may call.
///
/// Each record has a [`Version`], and a save is a compare-and-set: it names the version it
/// read (or none, when there was no record) and is refused with [`Saved::Conflict`] when the
/// record changed meanwhile. Several processes (two `runvil` commands, gateway instances on one
/// database) may judge and approve one backend's tools at once; a Pack that meets a conflict
/// reads the record again and judges again, so no approval is lost and none applies to a
/// record its user did not see.
pub trait PinStore: Send + Sync {
    /// The record saved under `key`, with its version; `Ok(None)` when there is none. An `Err`
    /// (the store cannot be reached or read now, or is not what the Host wrote) is not "no
    /// record": a Pack must then trust nothing new, rather than trust everything afresh; it
    /// may go on judging against the record it last read, so a store that is away for a while
    /// takes no trusted tool from its users.
    fn load(&self, key: &str) -> Result<Option<Stored>, StoreError>;
    /// Saves `record` under `key` if the record there is still the one of version `read`
    /// (`None`: there was none), answering its new version; else answers
    /// [`Saved::Conflict`] and changes nothing. An `Err` means nothing was kept.
    fn save(&self, key: &str, record: &str, read: Option<Version>) -> Result<Saved, StoreError>;
}

/// A record as a [`PinStore`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The Pack's text.
    pub record: String,
    /// Which state of the record this is.
    pub version: Version,
}

/// Which state of a record a [`PinStore`] answered: a number the store chooses, which changes
/// whenever the record does and is only ever compared for equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version(pub u64);

/// What became of a [`PinStore::save`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// The record was kept, and has this version now.
    Kept(Version),
    /// The record is no longer the one the save was based on: nothing was changed.
    Conflict,
}

/// The Host's [`PinStore`]. Without one, a Pack holds no tool back.
pub const PIN_STORE: Service<Arc<dyn PinStore>> = Service::new("pin-store");

/// How a user of this Host reviews and approves held tools, for the reason a held tool shows a
/// model. `{namespace}` is replaced by the backend's name, as in `the user can review it with
/// \`runvil trust {namespace}\``.
pub const TRUST_HINT: Service<String> = Service::new("trust-hint");

/// A tool a Pack holds until the user approves it. Its texts are the Pack's, cleaned for a
/// person to read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldTool {
    /// The tool's name, as its backend lists it.
    pub name: String,
    /// Why it is held.
    pub why: Held,
    /// What changed since it was approved, field by field (for a new tool, every field, with
    /// no value before): first every field a model reads, whatever their number.
    pub changes: Vec<FieldChange>,
    /// Fields that changed past those in `changes`, only counted.
    pub more_changes: usize,
    /// What the user is shown, identified (in hexadecimal): the definition now, and the
    /// approved one it is compared with. [`Pack::approve`](crate::Pack::approve) approves a
    /// tool only while this is still what it would show.
    pub pin: String,
    /// Whether the user was shown exactly this (`pin`) before: the last review
    /// [`Pack::reviewed`](crate::Pack::reviewed) recorded of the tool was of it.
    pub reviewed: bool,
}

/// Why a tool is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Held {
    /// Its definition changed since the user approved it.
    Changed,
    /// It was never approved (a new tool; a renamed one is new too).
    New,
    /// The Pack's record of what was approved cannot be read, so nothing is trusted.
    Unverified,
    /// The Pack's record of what was approved cannot be kept (the store refuses to save it),
    /// so nothing is trusted on first use: trust counts once it is kept.
    Unkept,
}

/// One field of a tool's definition as it was approved and as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldChange {
    /// Where in the definition, as a path of keys (`description`,
    /// `inputSchema.properties.query.description`, `annotations.readOnlyHint`); a key that is
    /// not a plain word is written as a quoted string in brackets (`a["b.c"]`), so no path
    /// can pass for another.
    pub field: String,
    /// The approved value, or `None` when the field is new.
    pub before: Option<String>,
    /// The value now, or `None` when the field is gone.
    pub after: Option<String>,
    /// Where `before` and `after` lie in the whole values, when these are too long to show
    /// whole; `None` when they are whole.
    pub excerpt: Option<Excerpt>,
}

/// Which part of two long values a [`FieldChange`] shows: the same characters of both, around
/// the first one where they differ, so two different values never show the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Excerpt {
    /// The character (counted from 0) where the whole values first differ; 0 for a value
    /// added or removed.
    pub differs_at: usize,
    /// The character where both shown parts start.
    pub from: usize,
    /// How many characters the whole value had before (0 when it is new).
    pub before_chars: usize,
    /// How many it has now (0 when it is gone).
    pub after_chars: usize,
}

impl HeldTool {
    /// A held tool, not reviewed before.
    pub fn new(name: String, why: Held, changes: Vec<FieldChange>, pin: String) -> Self {
        Self {
            name,
            why,
            changes,
            more_changes: 0,
            pin,
            reviewed: false,
        }
    }
}

impl FieldChange {
    /// A change of `field` from `before` to `after`, shown whole.
    pub fn new(field: String, before: Option<String>, after: Option<String>) -> Self {
        Self {
            field,
            before,
            after,
            excerpt: None,
        }
    }
}

impl Excerpt {
    /// The part from character `from` of two values of `before_chars` and `after_chars`
    /// characters that first differ at `differs_at`.
    pub fn new(differs_at: usize, from: usize, before_chars: usize, after_chars: usize) -> Self {
        Self {
            differs_at,
            from,
            before_chars,
            after_chars,
        }
    }
}
