//! The servers as the Pack's listing tool shows them, for the callers that still read them
//! there; to be deleted once they subscribe to [`Pack::status`] themselves.
//!
//! Until the Pack fills its status channel (the contract's default is an empty one that never
//! changes), [`wait_for_servers`] feeds [`super::wait`] from the listing instead, so a wait
//! still waits. The Pack's own channel is used as soon as it has one.

use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{BackendState, BackendStatus, Pack, StatusReceiver};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::frame::tools;

/// How often the listing is read while the Pack has no status channel of its own.
const LISTING_POLL: Duration = Duration::from_millis(80);

/// One server as the listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Server {
    pub(crate) namespace: String,
    pub(crate) status: String,
    /// `N tools` when ready, the reason when in error, empty while loading.
    pub(crate) detail: String,
}

/// [`super::wait`] for the servers of `pack` (`only` that one), with no interruption of its
/// own: a caller's `select!` that drops this future still leaves the last frame, saying
/// `still loading when interrupted`.
pub(crate) async fn wait_for_servers(pack: &Arc<dyn Pack>, only: Option<&str>, wait: Duration) {
    super::wait(status(pack).await, only, wait, pending::<()>()).await;
}

/// The Pack's status channel, or, while it is the contract's default (empty, and closed), one
/// fed from the listing until the wait drops it.
async fn status(pack: &Arc<dyn Pack>) -> StatusReceiver {
    let status = pack.status();
    if status.has_changed().is_ok() || !status.borrow().is_empty() {
        return status;
    }
    let (sender, receiver) = watch::channel(listed(pack).await);
    let pack = Arc::clone(pack);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = sender.closed() => return,
                () = tokio::time::sleep(LISTING_POLL) => {}
            }
            let now = listed(&pack).await;
            sender.send_if_modified(|then| {
                let changed = *then != now;
                *then = now;
                changed
            });
        }
    });
    receiver
}

/// Every server of the listing, as the status channel says it.
async fn listed(pack: &Arc<dyn Pack>) -> Vec<BackendStatus> {
    let Ok(text) = pack.call("mcp/get_dynamic_tools", json!({})).await else {
        return Vec::new();
    };
    let listing: Value = serde_json::from_str(&text).unwrap_or_default();
    servers(&listing)
        .map(|(name, status, tools, reason)| BackendStatus {
            name,
            state: match (status.as_str(), tools) {
                ("loading", _) => BackendState::Loading,
                ("ready", Some(tools)) => BackendState::Ready { tools },
                _ => BackendState::Failed(reason),
            },
        })
        .collect()
}

/// The servers of a `get_dynamic_tools {}` answer, in its order.
pub(crate) fn listed_servers(listing: &Value) -> Vec<Server> {
    servers(listing)
        .map(|(namespace, status, count, reason)| Server {
            namespace,
            status,
            detail: count.map_or(reason, tools),
        })
        .collect()
}

/// Each server of a listing: its namespace, status, number of tools (when it lists them) and
/// reason.
fn servers(listing: &Value) -> impl Iterator<Item = (String, String, Option<usize>, String)> + '_ {
    let string = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    listing["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(move |s| {
            let tools = s["tools"].as_array().map(Vec::len);
            (
                string(&s["namespace"]),
                string(&s["status"]),
                tools,
                string(&s["reason"]),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_gives_each_server_s_status_and_detail() {
        let listing = json!({"servers": [
            {"namespace": "a", "status": "ready", "tools": ["x", "y"]},
            {"namespace": "b", "status": "error", "reason": "url is missing"},
            {"namespace": "c", "status": "ready", "tools": ["x"]},
            {"namespace": "d", "status": "loading"},
        ]});
        let server = |namespace: &str, status: &str, detail: &str| Server {
            namespace: namespace.to_owned(),
            status: status.to_owned(),
            detail: detail.to_owned(),
        };
        assert_eq!(
            listed_servers(&listing),
            [
                server("a", "ready", "2 tools"),
                server("b", "error", "url is missing"),
                server("c", "ready", "1 tool"),
                server("d", "loading", ""),
            ]
        );
    }
}
