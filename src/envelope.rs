//! The untrusted-data envelope: the only way from a server's bytes to text a model reads.
//!
//! Everything a server sends arrives as `text::Untrusted`, whose contents only this module's
//! checks open. Tool definitions come out as a checked [`ToolSet`] (names checked, descriptions
//! cleaned and capped, schemas bounded), results as cleaned and capped text. Cleaning removes
//! what can deceive a reader without being seen: terminal escape sequences, and the control
//! and invisible characters that `text::chars` finds by their Unicode properties. The envelope
//! does not judge whether a description's words are honest; it guarantees what the model sees
//! is all there is to see, within bounds.
//!
//! One concern a file, in the order server data meets them:
//!
//! - `tool_pages`: reads `tools/list` pages into typed tools, as they arrive; `listed` is one
//!   tool as a server lists it.
//! - `tool_check`: accepts or drops each tool, and checks arguments and structured results
//!   against its schemas (declaring its `x-mcp-header` parameters with the crate's
//!   `param_headers`); `expansion` bounds the schema work.
//! - `result`: converts a `tools/call` result (or a JSON-RPC error) into text for a model.
//! - `off_runtime`: runs the checks of a call where they cannot stall the runtime.

mod expansion;
mod listed;
mod off_runtime;
mod result;
mod tool_check;
mod tool_pages;

pub(crate) use listed::Hints;
pub(crate) use off_runtime::{check_arguments, convert_result};
pub(crate) use result::{Outcome, convert_now, rpc_error_text};
pub(crate) use tool_check::{CheckedTool, Rejected, ToolSet};
pub(crate) use tool_pages::{TooManyBytes, ToolPages};

/// The envelope's measure of a schema's nesting, which `x-mcp-header` declarations share.
#[cfg(test)]
pub(crate) use tool_check::depth;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
