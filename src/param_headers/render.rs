//! The words of a refused `x-mcp-header` declaration or argument: a server's header name is
//! shown as what it said, scrubbed, cleaned and cut, within the words of the Pack.

use super::{MAX_SAFE_INTEGER, MISPLACED, PREFIX, ParamHeaderError};
use crate::policy::{
    MAX_ERROR_CHARS, MAX_PARAM_HEADER_NAME_BYTES, MAX_PARAM_HEADERS, MAX_SCHEMA_DEPTH,
};
use crate::text::{Piece, Render, Scrubber, Shown, Untrusted, show};

impl Render for ParamHeaderError {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        // A server's name is shown once and composed with the Pack's words around it.
        let name = |name: &Untrusted<String>| name.show(scrubber, MAX_PARAM_HEADER_NAME_BYTES);
        let composed =
            |pieces: &[Piece<'_>]| Shown::concat(pieces.iter().copied(), MAX_ERROR_CHARS);
        let ours = |text: String| show(scrubber, &text, MAX_ERROR_CHARS);
        match self {
            Self::TooDeep => ours(format!(
                "the inputSchema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
            )),
            Self::Misplaced => Shown::ours(MISPLACED),
            Self::NotAString => Shown::ours("an x-mcp-header that is not a string"),
            Self::Empty => Shown::ours("an empty x-mcp-header"),
            Self::TooLong => ours(format!(
                "an x-mcp-header longer than {MAX_PARAM_HEADER_NAME_BYTES} bytes"
            )),
            Self::NotAToken(c) => ours(format!(
                "an x-mcp-header with U+{:04X}; a header name may hold only letters, digits \
                 and !#$%&'*+-.^_`|~",
                u32::from(*c)
            )),
            Self::Type { name: named, found } => composed(&[
                "x-mcp-header ".into(),
                (&name(named)).into(),
                " is on a property with ".into(),
                (&ours(found.to_string())).into(),
                "; only a string, integer or boolean property may be sent as a header".into(),
            ]),
            Self::Twice(named) => composed(&[
                "x-mcp-header ".into(),
                (&name(named)).into(),
                " is declared twice (header names ignore letter case)".into(),
            ]),
            Self::TooMany => ours(format!(
                "more than {MAX_PARAM_HEADERS} x-mcp-header parameters"
            )),
            Self::NotAHeaderName(named) => composed(&[
                "x-mcp-header ".into(),
                (&name(named)).into(),
                " does not make a header name".into(),
            ]),
            Self::Mismatch {
                name: named,
                wants,
                got,
            } => composed(&[
                "the ".into(),
                PREFIX.into(),
                (&name(named)).into(),
                " header needs ".into(),
                wants.word().into(),
                " argument, and got ".into(),
                (*got).into(),
            ]),
            Self::OutOfRange(named) => composed(&[
                "the ".into(),
                PREFIX.into(),
                (&name(named)).into(),
                " header can carry integers from -".into(),
                MAX_SAFE_INTEGER.into(),
                " to ".into(),
                MAX_SAFE_INTEGER.into(),
                " only".into(),
            ]),
            Self::NotAHeaderValue => Shown::ours("a value that cannot be a header"),
        }
    }
}
