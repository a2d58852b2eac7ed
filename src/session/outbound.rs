//! One request on its way to a server, named once: what the tools ask for reaches the link
//! as an [`Outbound`], whichever era carries it and whatever it adds on the way (an id,
//! `_meta`, the revision's headers).

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::jsonrpc::CallParams;
use crate::text::Untrusted;

/// One progress notice of a request, as the server sent it: only those under the request's
/// token, only while they grow. Its message is the server's words, which the edge shows.
pub(crate) struct Noticed {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<Untrusted<String>>,
}

/// Where a request's progress notices go: the edge, which shows them to the Host.
pub(crate) type Report<'a> = &'a (dyn Fn(Noticed) + Send + Sync);

/// A request: its method and params, the name `Mcp-Name` mirrors, its own headers and where
/// its progress goes.
pub(crate) struct Outbound<'a, P> {
    pub(crate) method: &'static str,
    pub(crate) params: P,
    /// What `Mcp-Name` mirrors at 2026-07-28 (a tool's name for `tools/call`).
    pub(crate) name: Option<&'a str>,
    /// The request's own headers at 2026-07-28 (a tool's `Mcp-Param-*`), already encoded;
    /// the session-based revisions send none.
    pub(crate) headers: &'a [(HeaderName, HeaderValue)],
    /// Where the server's progress reports go; the request asks for them when there is one.
    pub(crate) progress: Option<Report<'a>>,
    /// Another request follows this one (a start-up or listing request): its answer's stream is
    /// read to its end, briefly, before the answer is handed back, so the next request takes
    /// the same connection (`Transport::finish_before_next`).
    pub(crate) followed: bool,
}

impl<'a, P> Outbound<'a, P> {
    /// A request of `method` with `params`, and nothing else.
    pub(crate) fn new(method: &'static str, params: P) -> Self {
        Self {
            method,
            params,
            name: None,
            headers: &[],
            progress: None,
            followed: false,
        }
    }

    /// The same request, which another follows (a start-up or listing request).
    pub(crate) fn followed(self) -> Self {
        Self {
            followed: true,
            ..self
        }
    }

    /// The same request with these headers of its own.
    pub(crate) fn with_headers(self, headers: &'a [(HeaderName, HeaderValue)]) -> Self {
        Self { headers, ..self }
    }

    /// The same request, its progress reported to `progress`.
    pub(crate) fn with_progress(self, progress: Option<Report<'a>>) -> Self {
        Self { progress, ..self }
    }

    /// The same request carrying `params` instead: the era's wrapping of the caller's.
    pub(super) fn carrying<Q>(&self, params: Q) -> Outbound<'a, Q> {
        Outbound {
            method: self.method,
            params,
            name: self.name,
            headers: self.headers,
            progress: self.progress,
            followed: self.followed,
        }
    }
}

impl<'a> Outbound<'a, CallParams<'a>> {
    /// A `tools/call` of the tool `name` with `arguments`, `Mcp-Name` mirroring the name.
    pub(crate) fn tool_call(name: &'a str, arguments: &'a Value) -> Self {
        Self {
            name: Some(name),
            ..Self::new("tools/call", CallParams { name, arguments })
        }
    }
}
