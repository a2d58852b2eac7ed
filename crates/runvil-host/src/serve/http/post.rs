//! A POST of the MCP endpoint once `endpoint` has let it in and read it: who sent it, what it
//! accepts, its message and headers, and the headers of the revisions. The revisions that
//! answer it (`legacy`, `modern`, `call`) read it here, so none imports the endpoint that
//! hands it over.

use hyper::header::HeaderMap;

use super::limits::Admitted;
use super::rpc::Message;
use super::session::SESSION_REVISIONS;
use crate::gateway::Identity;

/// The header of a 2025-11-25 session.
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
/// The header that names a request's protocol revision.
pub(crate) const VERSION_HEADER: &str = "mcp-protocol-version";

/// What a client accepts in an answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepts {
    pub(crate) json: bool,
    pub(crate) events: bool,
}

/// A POST of the MCP endpoint, read.
pub(crate) struct Post {
    pub(crate) identity: Identity,
    pub(crate) admitted: Admitted,
    pub(crate) message: Message,
    pub(crate) accepts: Accepts,
    pub(crate) headers: HeaderMap,
}

/// `header` as text, when it is there and is visible ASCII.
pub(crate) fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// Whether `version` is a revision of the session era.
pub(crate) fn is_session_revision(version: &str) -> bool {
    SESSION_REVISIONS.contains(&version)
}
