//! What a supervisor asks of the gateway, without authentication: `GET /healthz` (the process
//! answers) and `GET /readyz` (no server is still starting: `200`, else `503`). `/readyz`
//! counts the servers by state and names none, so it tells an unauthenticated caller nothing
//! about what the gateway reaches.

use std::sync::Arc;

use hyper::StatusCode;
use runvil_plugin::{BackendState, Pack};
use serde_json::json;

use super::answer::{self, Reply};

/// `200` while the process answers.
pub(crate) fn alive() -> Reply {
    answer::text(StatusCode::OK, "ok")
}

/// `200` when no server is loading, else `503`; the counts of ready, loading and error
/// servers.
pub(crate) fn ready(pack: &Arc<dyn Pack>) -> Reply {
    let (mut ready, mut loading, mut error) = (0, 0, 0);
    for backend in pack.status().borrow().iter() {
        match backend.state {
            BackendState::Loading => loading += 1,
            BackendState::Ready { .. } => ready += 1,
            _ => error += 1,
        }
    }
    let status = match loading {
        0 => StatusCode::OK,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    answer::json(
        status,
        &json!({"ready": ready, "loading": loading, "error": error}),
    )
}
