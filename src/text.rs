//! Text and its taint: the bottom of the Pack, under `http`, `jsonrpc` and `transport`, which
//! hold what a server said as [`Untrusted`] until a scrubber's holder shows it.
//!
//! One concern a file:
//!
//! - `untrusted`: the taint type, [`Untrusted`]: server data no model may see before the
//!   envelope checks it.
//! - `scrubber`: the [`Scrubber`], which replaces every form of every secret with the marker.
//! - `chars`: which characters show, by their Unicode properties.
//! - `clean`: cleans text (escape sequences, hidden characters) and cuts it to a bound; a
//!   log line's text is escaped instead, by the contract's [`Escape`] with cleaning's rule.
//! - `render`: [`Render`], how a typed error below the Pack's edge becomes a [`Shown`].
//! - `shown`: [`Shown`], the one type of text that may leave the Pack, made only by scrubbing,
//!   then cleaning, then cutting.
//!
//! What a server said becomes a [`Shown`] where a scrubber is held: the Pack's edge (the tools,
//! the connector's states, the pins' reasons), the authorization, the envelope's checks (the
//! tool pages, the tool check, the result) and the log sink.

pub(crate) mod chars;
mod clean;
mod render;
mod scrubber;
mod shown;
mod untrusted;

pub(crate) use chars::is_name_char;
pub(crate) use clean::{clean_value, log_safe};
pub(crate) use render::Render;
/// The one escaper of text written on a line a person reads, the Host's too.
pub(crate) use runvil_plugin::Escape;
pub(crate) use scrubber::Scrubber;
pub(crate) use shown::{
    Piece, Shown, show, show_escaped, show_joined, show_listing, show_on_one_line, show_owned,
};
pub(crate) use untrusted::Untrusted;

/// The cleaning itself, which the envelope's tests hold to its rules character by character.
#[cfg(test)]
pub(crate) use clean::{clean_text, truncate};
