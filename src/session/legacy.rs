//! The session-based revisions (2025-11-25, 2025-06-18, 2025-03-26): the `initialize`
//! handshake, the session id on every request, `notifications/cancelled` when a request is
//! abandoned, a new handshake when the server forgets the session, DELETE at the end.

use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::era::Revision;
use super::exchange::Link;
use super::{Outbound, SessionError};
use crate::jsonrpc::{
    CLIENT_INFO, Cancelled, Empty, InitializeParams, Meta, Notification, Params, to_bytes,
};
use crate::policy::{ACCEPTED_PROTOCOL_VERSIONS, FAREWELL_TIMEOUT, PROTOCOL_VERSION};
use crate::text::Untrusted;
use crate::transport::{Outgoing, SessionHeaders, Transport};

/// One session; requests may run concurrently, each its own POST.
#[derive(Default)]
pub(super) struct Legacy {
    state: Mutex<State>,
    /// Held while re-initializing, so concurrent requests that all got 404 start over once.
    restart: tokio::sync::Mutex<()>,
    farewells: Farewells,
}

#[derive(Clone, Default)]
struct State {
    headers: SessionHeaders,
    /// Counts handshakes, so a request knows whether the session changed since it was sent.
    generation: u64,
    /// The server said it tells of changes to its tools (`capabilities.tools.listChanged`).
    tools_change: bool,
}

impl Legacy {
    fn state(&self) -> State {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The session's headers now, and which handshake made them.
    pub(super) fn session(&self) -> (SessionHeaders, u64) {
        let state = self.state();
        (state.headers, state.generation)
    }

    /// Whether the server said it tells of changes to its tools.
    pub(super) fn tells_of_changes(&self) -> bool {
        self.state().tools_change
    }

    /// The version the handshake agreed on.
    pub(super) fn protocol_version(&self) -> &'static str {
        self.state()
            .headers
            .protocol_version
            .unwrap_or(PROTOCOL_VERSION)
    }

    /// Runs the handshake: `initialize`, then `notifications/initialized`.
    pub(super) async fn initialize(&self, link: &Link) -> Result<(), SessionError> {
        let id = link.next_id();
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            capabilities: Empty {},
            client_info: CLIENT_INFO,
        };
        let fresh = Outgoing::default();
        let (result, session_id) = link
            .exchange::<Value, _>(
                id,
                &Outbound::new("initialize", params).followed(),
                &fresh,
                Revision::Legacy,
            )
            .await?;
        let result = result.peek();
        let answered = result.get("protocolVersion").and_then(Value::as_str);
        let tools_change = result
            .pointer("/capabilities/tools/listChanged")
            .and_then(Value::as_bool)
            == Some(true);
        let version = ACCEPTED_PROTOCOL_VERSIONS
            .into_iter()
            .find(|v| Some(*v) == answered)
            .ok_or(SessionError::Version)?;
        let headers = SessionHeaders {
            session_id,
            protocol_version: Some(version),
        };
        let initialized = Notification::new("notifications/initialized");
        link.transport
            .send(to_bytes(&initialized), &headers)
            .await?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.headers = headers;
        state.generation += 1;
        state.tools_change = tools_change;
        Ok(())
    }

    /// Sends a request in the current session and reads its result as `T`. A 404 to a
    /// request that carried a session id means the server forgot the session (so does a 400
    /// or 401 that says so, as some servers answer): it never saw the request, so the client
    /// starts over once and sends it once more.
    pub(super) async fn request<T: DeserializeOwned, P: Serialize>(
        &self,
        link: &Link,
        request: Outbound<'_, P>,
    ) -> Result<Untrusted<T>, SessionError> {
        let mut restarted = false;
        loop {
            let state = self.state();
            let id = link.next_id();
            let meta = Meta {
                progress_token: request.progress.map(|_| id),
                ..Meta::default()
            };
            let sent = request.carrying(Params {
                params: &request.params,
                meta,
            });
            let mut pending = Pending::new(link, &self.farewells, id, &state.headers);
            let outgoing = Outgoing {
                session: state.headers.clone(),
                ..Outgoing::default()
            };
            let answer = link.exchange(id, &sent, &outgoing, Revision::Legacy).await;
            pending.answered();
            match answer {
                Err(SessionError::Transport(ref gone))
                    if gone.says_session_gone()
                        && state.headers.session_id.is_some()
                        && !restarted =>
                {
                    restarted = true;
                    self.restart(link, state.generation).await?;
                }
                answer => return answer.map(|(result, _)| result),
            }
        }
    }

    async fn restart(&self, link: &Link, seen_generation: u64) -> Result<(), SessionError> {
        let _only_one = self.restart.lock().await;
        if self.state().generation != seen_generation {
            return Ok(()); // another request already started a new session
        }
        tracing::debug!("the server forgot the session; initializing again");
        self.initialize(link).await
    }

    /// Ends the session with DELETE, after any cancellation still being sent, each within
    /// the farewell timeout. The session's id is taken, so it is ended once.
    pub(super) async fn close(&self, link: &Link) {
        let headers = std::mem::take(
            &mut self
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .headers,
        );
        if headers.session_id.is_none() {
            return;
        }
        let farewells = std::mem::take(
            &mut *self
                .farewells
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for cancel in farewells {
            let _ = tokio::time::timeout(FAREWELL_TIMEOUT, cancel).await;
        }
        let _ = tokio::time::timeout(FAREWELL_TIMEOUT, link.transport.delete(&headers)).await;
    }
}

/// The `notifications/cancelled` still being sent, so ending the session can wait for them:
/// a DELETE that overtook one would leave the server nothing to cancel against.
type Farewells = Arc<Mutex<Vec<JoinHandle<()>>>>;

/// A request on the wire. Dropped before its answer (the caller gave up, or its deadline
/// passed), it tells the server with `notifications/cancelled`.
struct Pending {
    farewell: Option<(Transport, SessionHeaders, Handle, Farewells, u64)>,
}

impl Pending {
    fn new(link: &Link, farewells: &Farewells, id: u64, headers: &SessionHeaders) -> Self {
        let farewell = (
            link.transport.clone(),
            headers.clone(),
            link.runtime.clone(),
            Arc::clone(farewells),
            id,
        );
        Self {
            farewell: Some(farewell),
        }
    }

    fn answered(&mut self) {
        self.farewell = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some((transport, headers, runtime, farewells, id)) = self.farewell.take() else {
            return;
        };
        let cancelled = Cancelled::new(id, "the client abandoned the request");
        let task = runtime.spawn(async move {
            let sent = transport.send(to_bytes(&cancelled), &headers);
            let _ = tokio::time::timeout(FAREWELL_TIMEOUT, sent).await;
        });
        let mut farewells = farewells.lock().unwrap_or_else(PoisonError::into_inner);
        // Only those still under way are kept, so the list is as long as the cancels in flight.
        farewells.retain(|task| !task.is_finished());
        farewells.push(task);
    }
}
