//! The only state one instance of the gateway keeps: the calls it is running, so that the end
//! of a call can be asked for. A 2025-11-25 client asks with `notifications/cancelled` (one
//! call of its session) or `DELETE` (every call of its session); a 2026-07-28 client closes
//! the call's response, which needs no table. Only this process's calls can be found here: a
//! call running on another instance is that instance's to end.
//!
//! An entry lives exactly as long as its call, so the table is bounded by the calls in flight,
//! which the limits bound per identity.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A session's number (see `session::Session`).
type SessionNumber = [u8; 16];

/// The calls in flight of each session.
#[derive(Default)]
pub(crate) struct InFlight {
    calls: Mutex<HashMap<SessionNumber, HashMap<String, CancellationToken>>>,
}

/// A call's place in the table, removed when dropped (when the call ends).
pub(crate) struct Registered {
    table: Arc<InFlight>,
    session: SessionNumber,
    request: String,
}

impl InFlight {
    /// Enters the call of request `id` of `session`, to be ended through `cancel`. A request
    /// id used again while its first call runs names the newer call (the client broke the
    /// rule that ids are unique).
    pub(crate) fn register(
        self: &Arc<Self>,
        session: SessionNumber,
        id: &Value,
        cancel: CancellationToken,
    ) -> Registered {
        let request = key(id);
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls
            .entry(session)
            .or_default()
            .insert(request.clone(), cancel);
        Registered {
            table: Arc::clone(self),
            session,
            request,
        }
    }

    /// Ends the call of request `id` of `session`, if it runs here; says whether it did.
    pub(crate) fn cancel(&self, session: SessionNumber, id: &Value) -> bool {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let call = calls.get(&session).and_then(|calls| calls.get(&key(id)));
        call.inspect(|cancel| cancel.cancel()).is_some()
    }

    /// Ends every call of `session` that runs here; answers how many.
    pub(crate) fn cancel_session(&self, session: SessionNumber) -> usize {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let calls = calls
            .get(&session)
            .map(HashMap::values)
            .into_iter()
            .flatten();
        calls.inspect(|cancel| cancel.cancel()).count()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut calls = self
            .table
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(session) = calls.get_mut(&self.session) {
            session.remove(&self.request);
            if session.is_empty() {
                calls.remove(&self.session);
            }
        }
    }
}

/// A request id as a key: its JSON text, so `1` and `"1"` stay two ids.
fn key(id: &Value) -> String {
    id.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_found_by_its_session_and_id_until_it_ends() {
        let table = Arc::new(InFlight::default());
        let (a, b) = ([1; 16], [2; 16]);
        let (one, two, other) = (
            CancellationToken::new(),
            CancellationToken::new(),
            CancellationToken::new(),
        );
        let first = table.register(a, &json!(1), one.clone());
        let _second = table.register(a, &json!("1"), two.clone());
        let _elsewhere = table.register(b, &json!(1), other.clone());
        assert!(table.cancel(a, &json!(1)));
        assert!(one.is_cancelled() && !two.is_cancelled() && !other.is_cancelled());
        drop(first);
        assert!(!table.cancel(a, &json!(1)), "an ended call is gone");
        assert_eq!(table.cancel_session(a), 1);
        assert!(two.is_cancelled() && !other.is_cancelled());
    }

    #[test]
    fn the_table_empties_as_calls_end() {
        let table = Arc::new(InFlight::default());
        let calls: Vec<Registered> = (0..100)
            .map(|n| table.register([n; 16], &json!(n), CancellationToken::new()))
            .collect();
        drop(calls);
        assert!(table.calls.lock().expect("a lock").is_empty());
    }
}
