//! What one caller sees of the Pack: the contract's [`View`], which a Host serving many
//! callers (a team gateway) passes with each call. What the view hides is, for that call, a
//! namespace or a tool the Pack does not have: the listings leave it out, and the errors that
//! name namespaces or tools are written from what is visible, so a hidden tool and one that
//! does not exist read alike, byte for byte.
//!
//! Without a view (every Host with one user) everything is visible and nothing is copied.

use std::sync::Arc;

use runvil_plugin::View;

use crate::connector::{Server, Status};
use crate::envelope::ToolSet;

/// One call's view of the Pack.
#[derive(Clone, Copy)]
pub(crate) struct Seen<'a>(pub(crate) Option<&'a dyn View>);

impl Seen<'_> {
    /// Whether the caller may know `server` at all.
    pub(crate) fn server(self, server: &Server) -> bool {
        self.0.is_none_or(|view| view.backend(&server.name))
    }

    /// Whether the caller may see and call `tool` of `server`.
    pub(crate) fn tool(self, server: &Server, tool: &str) -> bool {
        self.0.is_none_or(|view| view.tool(&server.name, tool))
    }

    /// `server`'s status as the caller sees it: a ready server's tools without the tools
    /// the caller may not see, whether accepted, held or rejected.
    pub(crate) fn status(self, server: &Server) -> Status {
        let status = server.status();
        let (Some(_), Status::Ready(ready)) = (self.0, &status) else {
            return status;
        };
        let mut ready = ready.clone();
        ready.tools = Arc::new(self.visible(server, &ready.tools));
        Status::Ready(ready)
    }

    /// The part of `set` the caller may see. The dropped tools past those kept by name are
    /// only counted in `set`; with no names to ask the view about they are not counted here,
    /// since a count would tell of tools the caller may not know.
    fn visible(self, server: &Server, set: &ToolSet) -> ToolSet {
        let shows = |name: &str| self.tool(server, name);
        let tools = set.tools.iter().filter(|(name, _)| shows(name));
        let held = set.held.iter().filter(|(name, _)| shows(name));
        let rejected = set.rejected.iter().filter(|r| shows(r.name.as_str()));
        ToolSet::new(
            tools
                .map(|(name, tool)| (name.clone(), Arc::clone(tool)))
                .collect(),
            rejected.cloned().collect(),
            0,
            held.map(|(name, r)| (name.clone(), r.clone())).collect(),
        )
    }
}
