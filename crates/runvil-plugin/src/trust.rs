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
pub trait PinStore: Send + Sync {
    /// The record saved under `key`; `Ok(None)` when there is none. An `Err` (the store
    /// cannot be read, or is not what the Host wrote) is not "no record": a Pack must then
    /// trust nothing, rather than trust everything afresh.
    fn load(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Saves `record` under `key`, replacing what was there.
    fn save(&self, key: &str, record: &str) -> Result<(), StoreError>;
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
    /// no value before).
    pub changes: Vec<FieldChange>,
    /// Fields that changed past those in `changes`, only counted.
    pub more_changes: usize,
    /// The definition the user is shown, identified: [`Pack::approve`](crate::Pack::approve)
    /// approves a tool only while its definition is still this one.
    pub pin: String,
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
}

/// One field of a tool's definition as it was approved and as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldChange {
    /// Where in the definition, as a path of keys (`description`,
    /// `inputSchema.properties.query.description`, `annotations.readOnlyHint`).
    pub field: String,
    /// The approved value, or `None` when the field is new.
    pub before: Option<String>,
    /// The value now, or `None` when the field is gone.
    pub after: Option<String>,
}

impl HeldTool {
    /// A held tool.
    pub fn new(name: String, why: Held, changes: Vec<FieldChange>, pin: String) -> Self {
        Self {
            name,
            why,
            changes,
            more_changes: 0,
            pin,
        }
    }
}

impl FieldChange {
    /// A change of `field` from `before` to `after`.
    pub fn new(field: String, before: Option<String>, after: Option<String>) -> Self {
        Self {
            field,
            before,
            after,
        }
    }
}
