//! What one identity may ask of the gateway at once and over time, so no client (a runaway
//! script, a stolen key) can crowd out the others: a rate of requests with a burst (a token
//! bucket), a number of requests in flight, and a number of open event streams. Each
//! identity's state is one entry of a table bounded by [`MAX_IDENTITIES`].
//!
//! The table forgets an entry only when forgetting changes nothing: no request of that
//! identity is in flight and its bucket has refilled, so a new entry would be the same. When
//! every entry is busy and the table is full, a new identity is refused until one is not;
//! identities are admitted by the gatekeeper first, so reaching the bound takes that many
//! authenticated clients at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The identities whose state the gateway keeps at once: far more than the people and
/// scripts of a team, and a bound on the memory a flood of identities could take.
pub(crate) const MAX_IDENTITIES: usize = 10_000;

/// The limits of each identity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) rate: u32,
    pub(crate) burst: u32,
    pub(crate) max_requests: u32,
    pub(crate) max_streams: u32,
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Too many requests lately: the next is allowed after this long.
    Rate(Duration),
    /// Too many requests in flight.
    Requests,
    /// Too many event streams open.
    Streams,
    /// The table of identities is full of busy ones.
    Identities,
}

impl Refused {
    /// When to try again, for `Retry-After`, in whole seconds (at least one).
    pub(crate) fn retry_after(self) -> u64 {
        match self {
            Self::Rate(wait) => wait.as_secs_f64().ceil().max(1.0) as u64,
            Self::Requests | Self::Streams | Self::Identities => 1,
        }
    }

    /// What the response says.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Self::Rate(_) => "too many requests from this identity; try again later",
            Self::Requests => "too many requests of this identity are in flight",
            Self::Streams => "too many event streams of this identity are open",
            Self::Identities => "the gateway is serving as many identities as it can",
        }
    }
}

/// One identity's state.
struct Entry {
    bucket: Mutex<Bucket>,
    requests: Arc<Semaphore>,
    streams: Arc<Semaphore>,
}

/// A token bucket: `tokens` as of `at`.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every identity's state.
pub(crate) struct Limits {
    settings: Settings,
    table: Mutex<HashMap<String, Arc<Entry>>>,
}

/// A request let in: its place among its identity's requests in flight, until dropped.
pub(crate) struct Admitted {
    entry: Arc<Entry>,
    _request: OwnedSemaphorePermit,
}

impl Admitted {
    /// A place among the identity's open event streams, until dropped.
    pub(crate) fn stream(&self) -> Result<OwnedSemaphorePermit, Refused> {
        Arc::clone(&self.entry.streams)
            .try_acquire_owned()
            .map_err(|_| Refused::Streams)
    }
}

impl Limits {
    pub(crate) fn new(settings: Settings) -> Self {
        Self {
            settings,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// Lets a request of `identity` (its label) in, or says why not.
    pub(crate) fn admit(&self, identity: &str) -> Result<Admitted, Refused> {
        let entry = self.entry(identity)?;
        let request = Arc::clone(&entry.requests)
            .try_acquire_owned()
            .map_err(|_| Refused::Requests)?;
        self.take_token(&entry)?;
        Ok(Admitted {
            entry,
            _request: request,
        })
    }

    /// How many identities have state now.
    #[cfg(test)]
    fn identities(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn entry(&self, identity: &str) -> Result<Arc<Entry>, Refused> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = table.get(identity) {
            return Ok(Arc::clone(entry));
        }
        if table.len() >= MAX_IDENTITIES {
            let now = Instant::now();
            table.retain(|_, entry| !self.at_rest(entry, now));
            if table.len() >= MAX_IDENTITIES {
                return Err(Refused::Identities);
            }
        }
        let entry = Arc::new(Entry {
            bucket: Mutex::new(Bucket {
                tokens: f64::from(self.settings.burst),
                at: Instant::now(),
            }),
            requests: Arc::new(Semaphore::new(self.settings.max_requests as usize)),
            streams: Arc::new(Semaphore::new(self.settings.max_streams as usize)),
        });
        table.insert(identity.to_owned(), Arc::clone(&entry));
        Ok(entry)
    }

    /// Whether forgetting `entry` changes nothing: no request holds it (the table's is the
    /// only reference) and its bucket is full again.
    fn at_rest(&self, entry: &Arc<Entry>, now: Instant) -> bool {
        let mut bucket = entry.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::strong_count(entry) == 1
            && self.refill(&mut bucket, now) >= f64::from(self.settings.burst)
    }

    /// The bucket's tokens at `now`, brought up to date.
    fn refill(&self, bucket: &mut Bucket, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        let (rate, burst) = (
            f64::from(self.settings.rate),
            f64::from(self.settings.burst),
        );
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.at = now;
        bucket.tokens
    }

    fn take_token(&self, entry: &Entry) -> Result<(), Refused> {
        let mut bucket = entry.bucket.lock().unwrap_or_else(PoisonError::into_inner);
        let tokens = self.refill(&mut bucket, Instant::now());
        if tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let rate = f64::from(self.settings.rate.max(1));
        Err(Refused::Rate(Duration::from_secs_f64(
            (1.0 - tokens) / rate,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{DEFAULT_BURST, DEFAULT_MAX_REQUESTS, DEFAULT_MAX_STREAMS, DEFAULT_RATE};

    const SETTINGS: Settings = Settings {
        rate: DEFAULT_RATE,
        burst: DEFAULT_BURST,
        max_requests: 1000,
        max_streams: DEFAULT_MAX_STREAMS,
    };

    #[tokio::test(start_paused = true)]
    async fn the_burst_passes_one_more_waits_for_the_rate_and_others_are_unaffected() {
        let limits = Limits::new(SETTINGS);
        for n in 0..DEFAULT_BURST {
            assert!(limits.admit("key:a").is_ok(), "request {n}");
        }
        let refused = limits.admit("key:a").err().expect("one past the burst");
        let waited = |r| matches!(r, Refused::Rate(w) if w.as_secs_f64() > 0.049 && w.as_secs_f64() <= 0.050);
        assert!(waited(refused), "{refused:?}");
        assert_eq!(refused.retry_after(), 1);
        assert!(
            limits.admit("key:b").is_ok(),
            "another identity is unaffected"
        );
        // One request's worth of time (1/20 s) later, one more passes, and only one.
        tokio::time::advance(Duration::from_millis(50)).await;
        assert!(limits.admit("key:a").is_ok());
        assert!(limits.admit("key:a").is_err());
        // After a pause, the whole burst again, never more.
        tokio::time::advance(Duration::from_secs(60)).await;
        for _ in 0..DEFAULT_BURST {
            assert!(limits.admit("key:a").is_ok());
        }
        assert!(limits.admit("key:a").is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn requests_and_streams_in_flight_are_bounded_each_at_its_limit() {
        let limits = Limits::new(Settings {
            max_requests: DEFAULT_MAX_REQUESTS,
            ..SETTINGS
        });
        let held: Vec<Admitted> = (0..DEFAULT_MAX_REQUESTS)
            .map(|_| limits.admit("alice").expect("within the limit"))
            .collect();
        assert_eq!(limits.admit("alice").err(), Some(Refused::Requests));
        assert!(limits.admit("bob").is_ok());
        let streams: Vec<OwnedSemaphorePermit> = (0..DEFAULT_MAX_STREAMS)
            .map(|_| held[0].stream().expect("within the limit"))
            .collect();
        assert_eq!(held[1].stream().err(), Some(Refused::Streams));
        drop(streams);
        assert!(held[1].stream().is_ok());
        drop(held);
        assert!(limits.admit("alice").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_holds_at_most_max_identities_forgetting_only_those_at_rest() {
        let limits = Limits::new(Settings {
            rate: 1,
            burst: 1,
            ..SETTINGS
        });
        // Every identity holds a request: none may be forgotten.
        let held: Vec<Admitted> = (0..MAX_IDENTITIES)
            .map(|n| limits.admit(&format!("key:{n}")).expect("room"))
            .collect();
        assert_eq!(limits.identities(), MAX_IDENTITIES);
        assert_eq!(limits.admit("key:new").err(), Some(Refused::Identities));
        // Requests done but buckets not yet refilled: still nothing to forget.
        drop(held);
        assert_eq!(limits.admit("key:new").err(), Some(Refused::Identities));
        // Refilled: the idle ones are forgotten and the new identity gets its place.
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(limits.admit("key:new").is_ok());
        assert_eq!(limits.identities(), 1);
    }
}
