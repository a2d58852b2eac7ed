//! The words of a refused `x-mcp-header` declaration or argument: a server's header name is
//! shown as what it said, scrubbed, cleaned and cut, within the words of the Pack.

use super::{MAX_SAFE_INTEGER, MISPLACED, PREFIX, ParamHeaderError};
use crate::policy::{
    MAX_ERROR_CHARS, MAX_PARAM_HEADER_NAME_BYTES, MAX_PARAM_HEADERS, MAX_SCHEMA_DEPTH,
};
use crate::text::{Render, Scrubber, Shown, Untrusted, show};

impl Render for ParamHeaderError {
    fn render(&self, scrubber: &Scrubber) -> Shown {
        let name = |name: &Untrusted<String>| name.show(scrubber, MAX_PARAM_HEADER_NAME_BYTES);
        let text = match self {
            Self::TooDeep => {
                format!("the inputSchema is nested deeper than {MAX_SCHEMA_DEPTH} levels")
            }
            Self::Misplaced => MISPLACED.to_owned(),
            Self::NotAString => "an x-mcp-header that is not a string".to_owned(),
            Self::Empty => "an empty x-mcp-header".to_owned(),
            Self::TooLong => {
                format!("an x-mcp-header longer than {MAX_PARAM_HEADER_NAME_BYTES} bytes")
            }
            Self::NotAToken(c) => format!(
                "an x-mcp-header with U+{:04X}; a header name may hold only letters, digits \
                 and !#$%&'*+-.^_`|~",
                u32::from(*c)
            ),
            Self::Type { name: named, found } => format!(
                "x-mcp-header {} is on a property with {found}; only a string, integer or \
                 boolean property may be sent as a header",
                name(named)
            ),
            Self::Twice(named) => format!(
                "x-mcp-header {} is declared twice (header names ignore letter case)",
                name(named)
            ),
            Self::TooMany => format!("more than {MAX_PARAM_HEADERS} x-mcp-header parameters"),
            Self::NotAHeaderName(named) => {
                format!("x-mcp-header {} does not make a header name", name(named))
            }
            Self::Mismatch {
                name: named,
                wants,
                got,
            } => format!(
                "the {PREFIX}{} header needs {} argument, and got {got}",
                name(named),
                wants.word()
            ),
            Self::OutOfRange(named) => format!(
                "the {PREFIX}{} header can carry integers from -{MAX_SAFE_INTEGER} to \
                 {MAX_SAFE_INTEGER} only",
                name(named)
            ),
            Self::NotAHeaderValue => "a value that cannot be a header".to_owned(),
        };
        show(scrubber, &text, MAX_ERROR_CHARS)
    }
}
