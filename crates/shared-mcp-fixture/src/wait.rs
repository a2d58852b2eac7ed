//! The one polling wait of the workspace's tests, for a condition nothing announces: a
//! listing's content, another process's state, a file. What a fixture server records is
//! awaited on its own events instead (`Hostile::until`, the rmcp fixture's `wait_*`). It needs
//! nothing but tokio, so every test crate has it whatever features it asks for.

use std::time::Duration;

/// How often [`wait_until`] looks again: short beside any wait a test allows, long enough
/// that looking costs nothing.
const LOOK_AGAIN: Duration = Duration::from_millis(20);

/// Waits until `done` holds, failing the test with `what` after `within` (a bound on a broken
/// test, not a measure).
///
/// # Panics
///
/// If `done` does not hold within `within`.
pub async fn wait_until(what: &str, within: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(LOOK_AGAIN).await;
    }
}
