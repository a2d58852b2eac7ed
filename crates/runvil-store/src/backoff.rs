//! The wait between attempts to reach the database, which the shared connection and the
//! change listener both keep: from [`RECONNECT_FIRST`], doubling up to [`RECONNECT_MAX`].

use std::time::Duration;

use crate::database::{RECONNECT_FIRST, RECONNECT_MAX};

/// The wait before the next attempt to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff(Duration);

impl Backoff {
    /// The first wait, after the database was reached or before it ever failed.
    pub(crate) const FIRST: Self = Self(RECONNECT_FIRST);

    /// The wait now; the next one is twice as long, up to [`RECONNECT_MAX`].
    pub(crate) fn next(&mut self) -> Duration {
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
        let waits: Vec<Duration> = (0..9).map(|_| backoff.next()).collect();
        let first = RECONNECT_FIRST;
        let want: Vec<Duration> = (0..9)
            .map(|n| (first * (1 << n)).min(RECONNECT_MAX))
            .collect();
        assert_eq!(waits, want);
        assert_eq!(waits[8], RECONNECT_MAX, "capped");
    }
}
