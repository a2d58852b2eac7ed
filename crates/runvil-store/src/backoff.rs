//! The wait between attempts to reach the database, which every user of it keeps (the shared
//! connection, the change listener, the Host's audit writer): from [`RECONNECT_FIRST`],
//! doubling up to [`RECONNECT_MAX`].

use std::time::Duration;

/// The wait before the first attempt to connect again after a connection was lost or an
/// attempt failed.
pub const RECONNECT_FIRST: Duration = Duration::from_millis(250);
/// The longest wait between attempts: a database back after an outage is used again within
/// this long.
pub const RECONNECT_MAX: Duration = Duration::from_secs(10);

/// The wait before the next attempt to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff(Duration);

impl Backoff {
    /// The first wait, after the database was reached or before it ever failed.
    pub const FIRST: Self = Self(RECONNECT_FIRST);

    /// The wait now; the next one is twice as long, up to [`RECONNECT_MAX`].
    pub fn wait(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(RECONNECT_MAX);
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_the_first_wait_up_to_the_longest() {
        let mut backoff = Backoff::FIRST;
        let waits: Vec<Duration> = (0..9).map(|_| backoff.wait()).collect();
        let first = RECONNECT_FIRST;
        let want: Vec<Duration> = (0..9)
            .map(|n| (first * (1 << n)).min(RECONNECT_MAX))
            .collect();
        assert_eq!(waits, want);
        assert_eq!(waits[8], RECONNECT_MAX, "capped");
    }
}
