//! One server's `tools/list` pages, read and checked as they arrive.
//!
//! A page is parsed into the few fields the Pack reads; everything else a server sends is
//! skipped as it is parsed, so padding costs the time to read it but no memory. Each tool is
//! checked the moment it is read and only what passes is kept, within the policy's bounds on
//! the bytes of all pages, the tools kept and the rejected entries kept.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::listed::ListedTool;
use super::tool_check::{check_tool, reject};
use super::{CheckedTool, Rejected, ToolSet};
use crate::policy::{MAX_REJECTED_KEPT, MAX_TOOLS_LIST_BYTES, MAX_TOOLS_PER_SERVER};
use crate::text::{Scrubber, Untrusted};
use crate::wire::{Loose, Object};

/// A listing whose pages together passed [`MAX_TOOLS_LIST_BYTES`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooManyBytes;

impl fmt::Display for TooManyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tools/list sent more than {MAX_TOOLS_LIST_BYTES} bytes of tools across its pages"
        )
    }
}

/// The tools of one server so far, page after page.
#[derive(Debug, Default)]
pub(crate) struct ToolPages {
    /// Scrubs what the tools show of the server's text, before it is cleaned and cut.
    scrubber: Arc<Scrubber>,
    tools: BTreeMap<String, Arc<CheckedTool>>,
    rejected: Vec<Rejected>,
    /// Dropped tools past [`MAX_REJECTED_KEPT`]: counted, not kept.
    more_rejected: usize,
    /// The JSON text of every page read, for [`MAX_TOOLS_LIST_BYTES`].
    bytes: usize,
    /// Each accepted tool's definition as the server sent it, when its pins are checked.
    definitions: Option<BTreeMap<String, String>>,
}

impl ToolPages {
    pub(crate) fn new(scrubber: Arc<Scrubber>) -> Self {
        Self {
            scrubber,
            ..Self::default()
        }
    }

    /// Keeps each accepted tool's definition as the server sent it, for
    /// [`ToolPages::take_definitions`]: what its pin is computed from.
    pub(crate) fn keeping_definitions(mut self) -> Self {
        self.definitions = Some(BTreeMap::new());
        self
    }

    /// The definitions kept (see [`ToolPages::keeping_definitions`]), by tool name.
    pub(crate) fn take_definitions(&mut self) -> BTreeMap<String, String> {
        self.definitions.take().unwrap_or_default()
    }

    /// Checks one page's tools and returns its `nextCursor`; an error when the pages
    /// together pass [`MAX_TOOLS_LIST_BYTES`].
    pub(crate) fn add_page(
        &mut self,
        page: &Untrusted<Box<RawValue>>,
    ) -> Result<Option<String>, TooManyBytes> {
        let page = page.for_check().get();
        self.bytes = self.bytes.saturating_add(page.len());
        if self.bytes > MAX_TOOLS_LIST_BYTES {
            return Err(TooManyBytes);
        }
        // Only a page that is not an object (or gives a field twice) fails: every field read
        // accepts any JSON.
        let page = serde_json::from_str::<Object<Page<'_>>>(page)
            .map_or_else(|_| Page::default(), |p| p.0);
        let listed = page.tools.is_some_and(|tools| {
            let mut tools = serde_json::Deserializer::from_str(tools.get());
            tools.deserialize_seq(EachTool(self)).is_ok()
        });
        if !listed {
            let dropped = reject(&self.scrubber, "", "a tools/list page has no tools array");
            self.reject(dropped);
        }
        // An empty cursor is how some servers say "no more"; it cannot mean a page.
        Ok(page.next_cursor.0.filter(|cursor| !cursor.is_empty()))
    }

    /// The checked tools, with the accepted names rendered once for the listing.
    pub(crate) fn finish(self) -> ToolSet {
        ToolSet::new(
            self.tools,
            self.rejected,
            self.more_rejected,
            BTreeMap::new(),
        )
    }

    fn add_tool(&mut self, raw: &RawValue) {
        let tool = match serde_json::from_str::<Object<ListedTool>>(raw.get()) {
            Ok(Object(tool)) => tool,
            Err(_) if raw.get().starts_with('{') => {
                return self.reject(reject(
                    &self.scrubber,
                    "",
                    "a tool that gives a field twice",
                ));
            }
            Err(_) => {
                return self.reject(reject(&self.scrubber, "", "a tool that is not an object"));
            }
        };
        if self.tools.len() >= MAX_TOOLS_PER_SERVER {
            let name = tool.name.0.unwrap_or_default();
            let reason = format!("past the {MAX_TOOLS_PER_SERVER} tools a server may list");
            return self.reject(reject(&self.scrubber, &name, &reason));
        }
        match check_tool(tool, &self.scrubber) {
            Ok(tool) if self.tools.contains_key(tool.name.as_str()) => {
                let dropped = reject(
                    &self.scrubber,
                    &tool.name,
                    "a second tool with the same name",
                );
                self.reject(dropped);
            }
            Ok(tool) => {
                if let Some(definitions) = &mut self.definitions {
                    definitions.insert(tool.name.to_string(), raw.get().to_owned());
                }
                self.tools.insert(tool.name.to_string(), Arc::new(tool));
            }
            Err(dropped) => self.reject(dropped),
        }
    }

    fn reject(&mut self, dropped: Rejected) {
        if self.rejected.len() < MAX_REJECTED_KEPT {
            self.rejected.push(dropped);
        } else {
            self.more_rejected += 1;
        }
    }
}

/// The fields of a `tools/list` result the Pack reads. The tools stay raw text here, to be
/// read one at a time by [`EachTool`].
#[derive(Default, Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    tools: Option<&'a RawValue>,
    #[serde(default, rename = "nextCursor")]
    next_cursor: Loose<String>,
}

/// Reads a `tools` array one tool at a time, checking each before the next is read.
struct EachTool<'c>(&'c mut ToolPages);

impl<'de> Visitor<'de> for EachTool<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut tools: A) -> Result<(), A::Error> {
        while let Some(tool) = tools.next_element::<&RawValue>()? {
            self.0.add_tool(tool);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
