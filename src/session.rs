//! One server's MCP conversation, in whichever era the server speaks: the JSON-RPC requests
//! the Pack makes (paged `tools/list`, `tools/call`) and the duties of each revision on the way.
//!
//! - `era`: which [`Revision`] a server speaks, probed once when it starts, and the state of
//!   its conversation in it.
//! - `modern`: 2026-07-28, each request on its own with `_meta` and mirrored headers.
//! - `legacy`: 2025-11-25 and before, the handshake and the session.
//! - `exchange`: one request and its answer, from a JSON body or an SSE stream.
//! - `listen`: hearing that the server's tools changed, in either era.
//!
//! The era is decided once per started server and kept for the session's life: a failed
//! start probes again on its next attempt, so a server that changed revision is met anew.
//! Results come back as [`Untrusted`], and failures as typed errors ([`SessionError`],
//! [`Trouble`]) whose server-said parts stay [`Untrusted`]: this module moves server data, it
//! never reads it for a model nor makes text of it. The Pack's edge does (`crate::edge`).

mod changes;
mod era;
mod exchange;
mod legacy;
mod listen;
mod modern;
mod outbound;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::runtime::Handle;

use self::era::{Era, Revision};
use self::exchange::Link;

pub(crate) use self::changes::Changes;
pub(crate) use self::listen::{Broke, Declined, End};
use self::modern::Completion;
pub(crate) use self::outbound::{Noticed, Outbound, Report};
use crate::envelope::{TooManyBytes, ToolPages, ToolSet};
use crate::jsonrpc::{CallParams, ListParams, RpcError};
use crate::param_headers::ParamHeaderError;
use crate::policy::MAX_TOOL_PAGES;
use crate::text::Untrusted;
use crate::transport::{Transport, TransportError};
use crate::wire::{Loose, Object};

/// One server's conversation. Requests may run concurrently: each is its own POST.
pub(crate) struct Session {
    link: Link,
    era: Era,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

/// One complete listing of a server's tools.
pub(crate) struct Listed {
    pub(crate) tools: ToolSet,
    pub(crate) hints: CacheHints,
    /// Each accepted tool's definition as the server sent it, when asked for.
    pub(crate) definitions: BTreeMap<String, String>,
}

/// How long a server says its tool list stays fresh (2026-07-28 list results): without a
/// subscription, the first use of the server after it is stale starts a re-list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheHints {
    /// The shortest `ttlMs` of the pages.
    pub(crate) ttl_ms: Option<u64>,
    /// `private` when any page said so, else `public` when one did.
    pub(crate) private: Option<bool>,
}

impl CacheHints {
    fn add_page(&mut self, page: &RawValue) {
        #[derive(serde::Deserialize, Default)]
        struct Hints {
            #[serde(default, rename = "ttlMs")]
            ttl_ms: Loose<u64>,
            #[serde(default, rename = "cacheScope")]
            cache_scope: Loose<String>,
        }
        let hints = serde_json::from_str::<Object<Hints>>(page.get())
            .map_or_else(|_| Hints::default(), |h| h.0);
        if let Some(ttl) = hints.ttl_ms.0 {
            self.ttl_ms = Some(self.ttl_ms.map_or(ttl, |kept| kept.min(ttl)));
        }
        match hints.cache_scope.0.as_deref() {
            Some("private") => self.private = Some(true),
            Some("public") => self.private = Some(self.private.unwrap_or(false)),
            _ => {}
        }
    }
}

impl Session {
    /// Finds the server's era and, for a session-based one, runs the handshake. `tell` hears
    /// the session's [`Trouble`]s, which no caller waits for.
    pub(crate) async fn connect(
        transport: Transport,
        runtime: Handle,
        tell: Tell,
    ) -> Result<Self, SessionError> {
        let link = Link::new(transport, runtime, tell);
        let era = era::detect(&link).await?;
        if let Era::Legacy(legacy) = &era {
            legacy.initialize(&link).await?;
        }
        Ok(Self { link, era })
    }

    /// What the server said of its tools changing: notices from any of its streams.
    pub(crate) fn changes(&self) -> &Changes {
        &self.link.changes
    }

    /// Listens for the server's notices that its tools changed, for as long as it offers a
    /// way (see `listen`); each is taken by [`Session::changes`]. Returns when there is no
    /// more to listen to.
    pub(crate) async fn listen(&self) {
        match &self.era {
            Era::Modern(modern) => listen::modern(&self.link, modern).await,
            Era::Legacy(legacy) => listen::legacy(&self.link, legacy).await,
        }
    }

    /// The revision the server is spoken to in.
    pub(crate) fn protocol_version(&self) -> &'static str {
        match &self.era {
            Era::Modern(modern) => modern.protocol_version(),
            Era::Legacy(legacy) => legacy.protocol_version(),
        }
    }

    /// Every tool the server lists, page after page, each page checked by `catalog` before
    /// the next is asked for, so only checked tools are held; with the pages' caching hints,
    /// and each tool's definition as sent when the catalog keeps them (for its pin).
    pub(crate) async fn list_tools(&self, mut catalog: ToolPages) -> Result<Listed, SessionError> {
        let mut hints = CacheHints::default();
        let mut cursors = HashSet::new();
        let mut cursor = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = ListParams {
                cursor: cursor.as_deref(),
            };
            // Kept as text: the catalog reads only the fields it needs out of it. Followed: by
            // the next page, or by the first call once the server is ready.
            let listing = Outbound::new("tools/list", params).followed();
            let page = self.request::<Box<RawValue>, _>(listing).await?;
            if self.era.revision() == Revision::Modern {
                hints.add_page(page.peek());
            }
            let next = catalog
                .add_page(&page)
                .map_err(|e| SessionError::Protocol(Broken::Listing(e)))?;
            let Some(next) = next else {
                let definitions = catalog.take_definitions();
                return Ok(Listed {
                    tools: catalog.finish(),
                    hints,
                    definitions,
                });
            };
            if !cursors.insert(next.clone()) {
                return Err(SessionError::Protocol(Broken::RepeatedCursor));
            }
            cursor = Some(next);
        }
        Err(SessionError::Protocol(Broken::TooManyPages))
    }

    /// Calls a tool by its exact name ([`Outbound::tool_call`]).
    pub(crate) async fn call_tool(
        &self,
        call: Outbound<'_, CallParams<'_>>,
    ) -> Result<Untrusted<Value>, SessionError> {
        self.request(call).await
    }

    /// Ends the session: DELETE for a session-based server, nothing for a modern one. Once:
    /// a second close has nothing left to end.
    pub(crate) async fn close(&self) {
        if let Era::Legacy(legacy) = &self.era {
            legacy.close(&self.link).await;
        }
    }

    async fn request<T: Completion, P: Serialize>(
        &self,
        request: Outbound<'_, P>,
    ) -> Result<Untrusted<T>, SessionError> {
        // Boxed: a request's future is large (a POST and the reading of its answer), and each
        // caller above would carry it inline and move it at each of its awaits; one box is
        // one copy.
        match &self.era {
            Era::Modern(modern) => Box::pin(modern.request(&self.link, request)).await,
            Era::Legacy(legacy) => Box::pin(legacy.request(&self.link, request)).await,
        }
    }
}

/// Why a request got no usable answer. What the server said stays [`Untrusted`]; the edge
/// shows it (`crate::edge`).
#[derive(Debug)]
pub(crate) enum SessionError {
    /// The message did not get through, or its answer could not be read.
    Transport(TransportError),
    /// The server answered with a JSON-RPC error.
    Rpc {
        code: i64,
        message: Untrusted<String>,
        /// The versions an unsupported-version error lists; only compared, never shown.
        supported: Vec<String>,
        /// Whether the code is one only a 2026-07-28 server sends.
        modern: bool,
    },
    /// A 2026-07-28 result asking for input the client cannot give: the kinds it asked for.
    InputRequired(Vec<&'static str>),
    /// The server answered with a protocol version the client does not speak.
    Version,
    /// The answer broke the protocol.
    Protocol(Broken),
}

/// How an answer broke the protocol.
#[derive(Debug)]
pub(crate) enum Broken {
    /// A request answered with no body.
    NoBody,
    /// An answer that is not JSON.
    NotJson,
    /// A body that holds no answer to the request.
    NotTheAnswer,
    /// A response with neither result nor error.
    NeitherResultNorError,
    /// A 2026-07-28 stream that ended before the answer (it cannot be resumed).
    StreamEnded,
    /// A stream that ended before the answer with no event id to resume from.
    NoEventId,
    /// A stream resumed [`crate::policy::MAX_IDLE_RESUMPTIONS`] times without a new event.
    IdleResumptions,
    /// A 2026-07-28 `resultType` that is neither `complete` nor `input_required`.
    ResultType,
    /// `tools/list` pages larger together than the policy allows.
    Listing(TooManyBytes),
    /// `tools/list` gave a cursor it gave before.
    RepeatedCursor,
    /// `tools/list` gave more than [`MAX_TOOL_PAGES`] pages.
    TooManyPages,
    /// A tool's name that `Mcp-Name` cannot carry.
    Name(ParamHeaderError),
}

impl SessionError {
    fn rpc(error: RpcError) -> Self {
        let (supported, modern) = (error.supported_versions(), error.is_modern());
        Self::Rpc {
            code: error.code(),
            message: Untrusted::new(error.into_message()),
            supported,
            modern,
        }
    }
}

impl From<TransportError> for SessionError {
    fn from(e: TransportError) -> Self {
        Self::Transport(e)
    }
}

/// What a session meets that no caller waits for, handed to its [`Tell`]: the edge logs it.
pub(crate) enum Trouble {
    /// A server's request could not be answered.
    Unanswered(TransportError),
    /// The standalone stream for notices (2025-11-25) could not be opened.
    Unheard(TransportError),
    /// A subscription to notices (2026-07-28) ended.
    Subscription(End),
}

/// Where a session's [`Trouble`]s go.
pub(crate) type Tell = Arc<dyn Fn(Trouble) + Send + Sync>;

/// Cheap to clone and share between the connector and calls.
pub(crate) type SharedSession = Arc<Session>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, F: Future>(_: impl Fn(A, B) -> F) -> usize {
        size_of::<F>()
    }

    #[test]
    fn a_call_s_future_holds_its_request_boxed() {
        // Inline, a request's future (a POST and the reading of its answer: 15 KiB in a
        // release build before the rare paths in it were boxed too) doubled at each caller
        // above, to 125 KiB a call, copied at each await: a sixth of a small call's instructions.
        let call = |session: &'static Session, call: Outbound<'static, CallParams<'static>>| {
            session.call_tool(call)
        };
        let size = future_size(call);
        assert!(size <= 256, "{size} bytes");
    }

    fn hints(pages: &[&str]) -> CacheHints {
        let mut hints = CacheHints::default();
        for page in pages {
            let page = RawValue::from_string((*page).to_owned()).expect("JSON");
            hints.add_page(&page);
        }
        hints
    }

    #[test]
    fn keeps_the_shortest_ttl_and_the_narrowest_scope_of_the_pages() {
        let two = hints(&[
            r#"{"tools":[],"ttlMs":60000,"cacheScope":"public"}"#,
            r#"{"tools":[],"ttlMs":5000,"cacheScope":"private"}"#,
        ]);
        assert_eq!(
            two,
            CacheHints {
                ttl_ms: Some(5000),
                private: Some(true)
            }
        );
        let public = hints(&[r#"{"ttlMs":0,"cacheScope":"public"}"#]);
        assert_eq!((public.ttl_ms, public.private), (Some(0), Some(false)));
        let odd = hints(&[r#"{"ttlMs":-1,"cacheScope":"shared"}"#, "[]"]);
        assert_eq!(odd, CacheHints::default());
    }
}
