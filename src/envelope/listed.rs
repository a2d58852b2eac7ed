//! One tool as a server lists it: the fields the Pack reads, each kept only when it has the
//! expected type, the rest skipped unread. `tool_pages` reads them, `tool_check` judges them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::{Loose, Object};

/// One tool as a server lists it: the fields the Pack reads, each kept only when it has the
/// expected type. Any other field is skipped unread.
#[derive(Deserialize)]
pub(super) struct ListedTool {
    #[serde(default)]
    pub(super) name: Loose<String>,
    #[serde(default)]
    pub(super) title: Loose<String>,
    #[serde(default)]
    pub(super) description: Loose<String>,
    #[serde(default)]
    pub(super) annotations: Loose<Object<Annotations>>,
    #[serde(default, rename = "inputSchema")]
    pub(super) input_schema: Loose<Value>,
    #[serde(default, rename = "outputSchema")]
    pub(super) output_schema: Loose<Value>,
    #[serde(default)]
    pub(super) execution: Loose<Object<Execution>>,
}

/// A tool's `execution` (2025-11-25): whether it answers calls that are not tasks.
#[derive(Default, Deserialize)]
pub(super) struct Execution {
    #[serde(default, rename = "taskSupport")]
    pub(super) task_support: Loose<String>,
}

/// A tool's `annotations`: its title (the 2025-03-26 revision's only title) and the
/// behaviour hints, untrusted: a model or a Host's approval prompt may weigh them, never
/// trust them.
#[derive(Default, Deserialize)]
pub(super) struct Annotations {
    #[serde(default)]
    pub(super) title: Loose<String>,
    #[serde(default, rename = "readOnlyHint")]
    read_only_hint: Loose<bool>,
    #[serde(default, rename = "destructiveHint")]
    destructive_hint: Loose<bool>,
    #[serde(default, rename = "idempotentHint")]
    idempotent_hint: Loose<bool>,
    #[serde(default, rename = "openWorldHint")]
    open_world_hint: Loose<bool>,
}

impl Annotations {
    /// The hints that were given as booleans; `None` when there are none.
    pub(super) fn hints(&self) -> Option<Hints> {
        let hints = Hints {
            read_only: self.read_only_hint.0,
            destructive: self.destructive_hint.0,
            idempotent: self.idempotent_hint.0,
            open_world: self.open_world_hint.0,
        };
        (hints != Hints::default()).then_some(hints)
    }
}

/// A tool's behaviour hints as the listing shows them: booleans only, nothing else the
/// server put in `annotations`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Hints {
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    destructive: Option<bool>,
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    idempotent: Option<bool>,
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    open_world: Option<bool>,
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    read_only: Option<bool>,
}
