//! The JSON `get_dynamic_tools` answers, never longer than [`MAX_LISTING_BYTES`].
//!
//! A server decides how many tools it lists and how large each one is, so every answer is
//! built against the cap: what does not fit is left out in name order, counted, and a `note`
//! in the answer says so. One tool at its largest always fits, so asking for a tool by name
//! always shows it. Namespaces, statuses and reasons come from the configuration and the
//! client's own texts, and are always shown.

pub(crate) mod found;

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::connector::{Server, Status};
use crate::envelope::{CheckedTool, Hints, Rejected, ToolSet};
use crate::policy::{
    MAX_DESCRIPTION_CHARS, MAX_LISTING_BYTES, MAX_REJECTED_KEPT, MAX_SCHEMA_BYTES, MAX_TITLE_CHARS,
    MAX_TOOL_NAME_CHARS,
};

// A tool is at most its name, title and description (4 bytes a character, escaped quotes at
// most doubling them), its two schemas, its hints and the JSON around them.
const _: () = assert!(
    MAX_LISTING_BYTES
        > 2 * MAX_SCHEMA_BYTES
            + 8 * (MAX_DESCRIPTION_CHARS + MAX_TITLE_CHARS + MAX_TOOL_NAME_CHARS)
            + 1024
);

/// `get_dynamic_tools {}`: every server with its status and tool names.
#[derive(Serialize)]
struct Listing<'a> {
    servers: Vec<Summary<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// One server in the [`Listing`]. Its tool names are the array rendered when it became
/// ready, so listing 10,000 tools copies text instead of building values.
#[derive(Serialize)]
pub(crate) struct Summary<'a> {
    namespace: &'a str,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(rename = "toolsNotShown", skip_serializing_if = "Option::is_none")]
    tools_not_shown: Option<usize>,
    /// How many of a ready server's tools are held until the user approves them.
    #[serde(skip_serializing_if = "is_zero")]
    held: usize,
}

impl<'a> Summary<'a> {
    pub(crate) fn new(server: &'a Server, status: &'a Status) -> Self {
        let (status, reason, tools, held) = match status {
            Status::Loading => ("loading", None, None, 0),
            Status::Ready(ready) => (
                "ready",
                None,
                Some(&*ready.tools.names_json),
                ready.tools.held.len(),
            ),
            Status::Failed(reason) => ("error", Some(Cow::Borrowed(reason.as_str())), None, 0),
            Status::Refused(refusal) => ("error", Some(Cow::Owned(refusal.to_string())), None, 0),
            Status::Disabled => ("disabled", None, None, 0),
        };
        Self {
            namespace: &server.name,
            status,
            reason,
            tools,
            tools_not_shown: None,
            held,
        }
    }
}

/// `get_dynamic_tools {namespace}` of a ready server. Keys in alphabetical order, as the
/// listing has always shown them.
#[derive(Serialize)]
struct ServerTools<'a> {
    namespace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    /// The revision the server is spoken to in.
    #[serde(rename = "protocolVersion")]
    protocol_version: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    rejected: Vec<&'a Rejected>,
    #[serde(rename = "rejectedNotShown", skip_serializing_if = "is_zero")]
    rejected_not_shown: usize,
    status: &'static str,
    tools: &'a RawValue,
    #[serde(rename = "toolsNotShown", skip_serializing_if = "Option::is_none")]
    tools_not_shown: Option<usize>,
}

/// `get_dynamic_tools {namespace, toolName}`.
#[derive(Serialize)]
struct OneTool<'a> {
    namespace: &'a str,
    tool: ToolView<'a>,
}

/// A tool as a model reads it: what the envelope kept of it, cleaned.
#[derive(Serialize)]
struct ToolView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Hints>,
    description: &'a str,
    #[serde(rename = "inputSchema")]
    input_schema: &'a Value,
    name: &'a str,
    #[serde(rename = "outputSchema", skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
}

impl<'a> ToolView<'a> {
    fn of(tool: &'a CheckedTool) -> Self {
        Self {
            annotations: tool.hints.as_ref(),
            description: &tool.description,
            input_schema: &tool.shown_schema,
            name: &tool.name,
            output_schema: tool.shown_output_schema.as_ref(),
            title: tool.title.as_deref(),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn empty_array() -> Box<RawValue> {
    RawValue::from_string("[]".to_owned()).expect("[] is JSON")
}

/// A listing's text.
pub(crate) fn to_json(listing: &impl Serialize) -> String {
    serde_json::to_string(listing)
        .expect("a listing is strings, values and JSON rendered before, with string keys")
}

/// The answer with no arguments. When every name does not fit, each ready server keeps the
/// first of its names that fit in its share of the room (see [`shares`]).
pub(crate) fn every_server(servers: Vec<Summary<'_>>) -> String {
    let mut listing = Listing {
        servers,
        note: None,
    };
    let whole = to_json(&listing);
    if whole.len() <= MAX_LISTING_BYTES {
        return whole;
    }
    let names: Vec<Option<&RawValue>> = listing
        .servers
        .iter_mut()
        .map(|server| server.tools.take())
        .collect();
    let note = format!(
        "this answer is capped at {MAX_LISTING_BYTES} bytes: a server whose tool names do not \
         all fit shows the first ones in name order, and toolsNotShown counts the rest. \
         get_dynamic_tools with a namespace lists that server's tools."
    );
    // The frame: every ready server with no names and the largest count, and the note.
    let empty = empty_array();
    let frame = listing
        .servers
        .iter()
        .zip(&names)
        .map(|(server, names)| Summary {
            tools: names.map(|_| &*empty),
            tools_not_shown: names.map(|_| usize::MAX),
            reason: server.reason.clone(),
            ..*server
        });
    let frame = Listing {
        servers: frame.collect(),
        note: Some(note.clone()),
    };
    let room = MAX_LISTING_BYTES.saturating_sub(to_json(&frame).len());
    let items: Vec<Vec<&RawValue>> = names
        .iter()
        .map(|n| n.and_then(|n| serde_json::from_str(n.get()).ok()))
        .map(Option::unwrap_or_default)
        .collect();
    let wants: Vec<usize> = items.iter().map(|items| content_len(items)).collect();
    let cut: Vec<(Box<RawValue>, usize)> = items
        .iter()
        .zip(shares(&wants, room))
        .map(|(items, share)| {
            let shown = fitting(items.iter().map(|i| i.get().len()), share);
            let array = array(items[..shown].iter().map(|i| i.get()));
            (array, items.len() - shown)
        })
        .collect();
    let servers = listing.servers.iter().zip(&names).zip(&cut);
    let servers = servers.map(|((server, names), (array, left_out))| Summary {
        tools: names.map(|_| &**array),
        tools_not_shown: (names.is_some() && *left_out > 0).then_some(*left_out),
        reason: server.reason.clone(),
        ..*server
    });
    to_json(&Listing {
        servers: servers.collect(),
        note: Some(note),
    })
}

/// The answer for one ready server: its tools in name order, then the tools it holds and the
/// ones the envelope rejected (at most [`MAX_REJECTED_KEPT`] of them, the rest counted). When
/// the whole answer does not fit, the tools that fit come first and the note says so.
pub(crate) fn one_server(namespace: &str, set: &ToolSet, protocol_version: &str) -> String {
    let empty = empty_array();
    let everything = set.held.values().chain(&set.rejected);
    let rejected: Vec<&Rejected> = everything.clone().take(MAX_REJECTED_KEPT).collect();
    let not_shown = everything.count() - rejected.len() + set.more_rejected;
    let mut listing = ServerTools {
        namespace,
        note: None,
        protocol_version,
        rejected,
        rejected_not_shown: not_shown,
        status: "ready",
        tools: &empty,
        tools_not_shown: None,
    };
    // Tools are rendered only until the room for all of them runs out.
    let whole_room = MAX_LISTING_BYTES.saturating_sub(to_json(&listing).len());
    let mut used = 0;
    let rendered: Vec<String> = set
        .tools
        .values()
        .map(|tool| to_json(&ToolView::of(tool)))
        .take_while(|tool| {
            let fits = used <= whole_room;
            used += tool.len() + usize::from(used > 0);
            fits
        })
        .collect();
    let shown = if used <= whole_room {
        rendered.len()
    } else {
        listing.note = Some(format!(
            "this answer is capped at {MAX_LISTING_BYTES} bytes: it shows the tools in name \
             order while they fit, and toolsNotShown counts the rest. get_dynamic_tools with \
             namespace and toolName shows any one tool; with no arguments it lists the names."
        ));
        listing.tools_not_shown = Some(usize::MAX);
        let room = MAX_LISTING_BYTES.saturating_sub(to_json(&listing).len());
        let shown = fitting(rendered.iter().map(String::len), room);
        listing.tools_not_shown = Some(set.tools.len() - shown);
        shown
    };
    let tools = array(rendered[..shown].iter().map(String::as_str));
    listing.tools = &tools;
    to_json(&listing)
}

/// The answer for one tool, which always fits.
pub(crate) fn one_tool(namespace: &str, tool: &CheckedTool) -> String {
    to_json(&OneTool {
        namespace,
        tool: ToolView::of(tool),
    })
}

/// The bytes between the brackets of an array of `items`.
fn content_len(items: &[&RawValue]) -> usize {
    let commas = items.len().saturating_sub(1);
    items.iter().map(|i| i.get().len()).sum::<usize>() + commas
}

/// How many leading items of these lengths fit, with commas between, in `room` bytes.
fn fitting(lengths: impl Iterator<Item = usize>, room: usize) -> usize {
    let mut used = 0;
    lengths
        .take_while(|len| {
            used += len + usize::from(used > 0);
            used <= room
        })
        .count()
}

/// An array of JSON texts rendered before.
fn array<'t>(items: impl Iterator<Item = &'t str>) -> Box<RawValue> {
    let items: Vec<&str> = items.collect();
    RawValue::from_string(format!("[{}]", items.join(",")))
        .expect("JSON texts rendered before, joined by commas in brackets, are a JSON array")
}

/// Splits `room` between wants: each gets an equal share of what is left, and one that
/// needs less leaves the rest to the others, so a server with few tools is never cut
/// because another has many.
fn shares(wants: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..wants.len()).collect();
    order.sort_by_key(|&i| wants[i]);
    let mut left = room;
    let mut shares = vec![0; wants.len()];
    for (served, &i) in order.iter().enumerate() {
        let share = (left / (order.len() - served)).min(wants[i]);
        shares[i] = share;
        left -= share;
    }
    shares
}

#[cfg(test)]
mod tests;
