//! The one polling wait of the workspace's tests, for a condition nothing announces: a
//! listing's content, another process's state, a file. What a fixture server records is
//! awaited on its own events instead (`Hostile::until`, the rmcp fixture's `wait_*`). It needs
//! nothing but tokio, so every test crate has it whatever features it asks for. Beside it,
//! the one way a test lets time pass that the Pack keeps on tokio's clock (a token's expiry,
//! a listing's freshness): moving the clock on, not waiting it out.

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

/// Moves tokio's clock on by `by` at once, then lets it run on from there: a deadline of the
/// Pack's (a token's refresh, a listing's `ttlMs`) passes without the test waiting for it.
///
/// # Panics
///
/// On a multi-thread runtime, which tokio does not let a test pause.
pub async fn skip_clock(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}
