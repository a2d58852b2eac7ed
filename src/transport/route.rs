//! Which connection a POST to one server takes: pooled keep-alive, or a new one.
//!
//! Requests reuse pooled keep-alive connections: on loopback a new connection per call costs
//! about 1.5x the latency and more than half the throughput (`cargo run --release -p bench`,
//! BENCHMARKS.md). But a server that leaves Nagle's algorithm on
//! (rmcp's default under `axum::serve`, and many others) writes an SSE answer in two pieces,
//! the headers with a priming event and then the message. On a connection that just carried
//! a request and an answer, Linux delays the client's ACK of the first piece (delayed ACK in
//! "pingpong" mode) and Nagle holds the second piece until that ACK: about 40 ms per call
//! (44 ms where it was measured). A new connection starts in quick-ACK mode and does not
//! stall. reqwest offers no hook to set `TCP_QUICKACK` on its sockets, so each server gets a
//! [`Route`]: its SSE answers are timed, and a server whose answers on reused connections keep
//! stalling while answers on new connections do not is sent every later request on a new
//! connection.
//!
//! The client that opens a new connection per request belongs to the Pack ([`Clients`]), like
//! the pooled one: nothing here outlives a Pack, so one Pack (or test) cannot leave state
//! behind for the next.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use reqwest::Client;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::TransportError;
use crate::http::{client_builder, describe};
use crate::policy::MAX_DRAINING_STREAMS;

/// An answer whose first event comes this long after its headers, on a reused connection,
/// may have met the delayed-ACK stall (Linux delays an ACK by 40 ms at least, 200 ms at
/// most; other systems up to 500 ms). Shorter is a normal answer; longer is a slow tool.
const STALL_MIN: Duration = Duration::from_millis(30);
const STALL_MAX: Duration = Duration::from_millis(500);
/// A stall counts as evidence when the next answer, on a new connection, takes at most this
/// fraction of the stalled answer's time: the stall was the connection's, not the server's.
const PROBE_FRACTION: u32 = 4;
/// Stalls in a row, each confirmed by a quick answer on a new connection, that move a server
/// to a new connection per request. Two, so one slow answer followed by a fast one cannot.
const STALLS_TO_SWITCH: u8 = 2;
/// At most 2^10 stalls pass between two probes of a server that probes showed to be slow.
const MAX_PROBE_BACKOFF: u8 = 10;

/// The HTTP clients of one Pack, shared by every server's transport: the pooled one (one
/// connection pool for the Pack) and, built on first need, one that keeps no idle connection
/// for servers that stall on reused ones; and the bound on the answered streams read to their
/// end in the background. Cloning shares them.
#[derive(Clone)]
pub(crate) struct Clients {
    pooled: Client,
    /// Built lazily because building a client reads the trust store, and most servers never
    /// need it; `None` inside when it could not be built.
    fresh: Arc<OnceLock<Option<Client>>>,
    /// One permit per answered stream being read to its end ([`MAX_DRAINING_STREAMS`]).
    draining: Arc<Semaphore>,
}

impl Clients {
    /// The Pack's clients; the pooled one is built now.
    pub(crate) fn build() -> Result<Self, TransportError> {
        let pooled = client_builder()
            .build()
            .map_err(|e| TransportError::Send(describe(e)))?;
        Ok(Self {
            pooled,
            fresh: Arc::default(),
            draining: Arc::new(Semaphore::new(MAX_DRAINING_STREAMS)),
        })
    }

    /// Leave to read one more answered stream to its end, or `None` when
    /// [`MAX_DRAINING_STREAMS`] are.
    pub(super) fn draining(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.draining).try_acquire_owned().ok()
    }

    /// The client of every request that does not choose: resumptions, farewells, and the
    /// authorization requests.
    pub(super) fn pooled(&self) -> &Client {
        &self.pooled
    }

    /// The client a POST routed `via` goes out on.
    pub(super) fn of(&self, via: Via) -> &Client {
        match via {
            Via::Pooled => &self.pooled,
            // Without a second client (it could not be built), pooling stays: slower on a
            // stalling server, never wrong.
            Via::Probe(_) | Via::Fresh => self.fresh().unwrap_or(&self.pooled),
        }
    }

    fn fresh(&self) -> Option<&Client> {
        self.fresh
            .get_or_init(|| client_builder().pool_max_idle_per_host(0).build().ok())
            .as_ref()
    }
}

/// Which connection a POST takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// A pooled keep-alive connection (the default).
    Pooled,
    /// A new connection, to test whether a stall of this long (request to first event) on a
    /// pooled one was the connection's doing.
    Probe(Duration),
    /// A new connection, for a server that stalls on reused ones.
    Fresh,
}

/// One server's choice between pooled and new connections, learned from its SSE answers.
#[derive(Default)]
pub(super) struct Route {
    state: Mutex<RouteState>,
}

#[derive(Default)]
struct RouteState {
    /// Every request takes a new connection; once set, for the life of the transport.
    fresh: bool,
    /// A pooled answer stalled this long; the next POST probes a new connection.
    stalled: Option<Duration>,
    /// Stalls in a row confirmed by a probe.
    confirmed: u8,
    /// Probes that found the server slow, not the connection. Each doubles the stalls let
    /// pass before the next probe (up to [`MAX_PROBE_BACKOFF`]), so a server whose tools
    /// take 30 to 500 ms is seldom sent a new connection (costly over TLS) for nothing.
    refuted: u8,
    /// Stalls still to let pass before the next probe.
    skip: u32,
}

impl Route {
    fn state(&self) -> MutexGuard<'_, RouteState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn choose(&self) -> Via {
        let mut state = self.state();
        if state.fresh {
            return Via::Fresh;
        }
        // Taken by one request; if it never reports, the next stall asks again.
        match state.stalled.take() {
            Some(stalled) => Via::Probe(stalled),
            None => Via::Pooled,
        }
    }

    /// Learns from one SSE answer: `gap` from its headers to its first event, `total` from
    /// the request to its first event.
    pub(super) fn observe(&self, via: Via, gap: Duration, total: Duration) {
        let mut state = self.state();
        let stalled = (STALL_MIN..=STALL_MAX).contains(&gap);
        match via {
            Via::Pooled if stalled && state.skip > 0 => state.skip -= 1,
            Via::Pooled if stalled => state.stalled = Some(total),
            Via::Pooled => {
                // A reused connection answered without stalling: keep pooling.
                state.stalled = None;
                state.confirmed = 0;
            }
            Via::Probe(before) if !stalled && total <= before / PROBE_FRACTION => {
                state.confirmed = state.confirmed.saturating_add(1);
                if state.confirmed >= STALLS_TO_SWITCH {
                    state.fresh = true;
                    tracing::debug!(
                        "the server stalls on reused connections (Nagle with delayed ACK): \
                         a new connection per request from now on"
                    );
                }
            }
            Via::Probe(_) => {
                state.confirmed = 0;
                state.refuted = state.refuted.saturating_add(1).min(MAX_PROBE_BACKOFF);
                state.skip = 1 << state.refuted;
            }
            Via::Fresh => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_draining_streams_are_read_on_at_once() {
        let clients = Clients::build().expect("the client builds");
        let permits: Vec<_> = (0..MAX_DRAINING_STREAMS)
            .map_while(|_| clients.draining())
            .collect();
        assert_eq!(permits.len(), MAX_DRAINING_STREAMS);
        assert!(clients.draining().is_none(), "one past the bound");
        drop(permits);
        assert!(
            clients.draining().is_some(),
            "a stream read to its end makes room"
        );
    }

    const QUICK: Duration = Duration::from_micros(400);
    const STALL: Duration = Duration::from_millis(42);

    /// One pooled answer that stalled, then the probe it asks for, answered quickly.
    fn stall_then_quick_probe(route: &Route) {
        assert_eq!(route.choose(), Via::Pooled);
        route.observe(Via::Pooled, STALL, STALL + QUICK);
        let probe = route.choose();
        assert_eq!(probe, Via::Probe(STALL + QUICK));
        route.observe(probe, QUICK / 2, QUICK);
    }

    #[test]
    fn a_server_that_stalls_only_on_reused_connections_gets_new_ones() {
        let route = Route::default();
        stall_then_quick_probe(&route);
        stall_then_quick_probe(&route);
        assert_eq!(route.choose(), Via::Fresh);
        route.observe(Via::Fresh, QUICK, QUICK);
        assert_eq!(route.choose(), Via::Fresh);
    }

    #[test]
    fn an_answer_without_a_stall_in_between_keeps_pooling() {
        let route = Route::default();
        stall_then_quick_probe(&route);
        route.observe(Via::Pooled, QUICK, QUICK);
        stall_then_quick_probe(&route);
        assert_eq!(route.choose(), Via::Pooled);
    }

    #[test]
    fn a_probe_as_slow_as_the_stall_means_a_slow_server_not_a_stall() {
        let route = Route::default();
        stall_then_quick_probe(&route);
        route.observe(Via::Pooled, STALL, STALL);
        let probe = route.choose();
        route.observe(probe, STALL, STALL);
        assert_eq!(route.choose(), Via::Pooled);
    }

    #[test]
    fn a_server_found_slow_is_probed_less_and_less() {
        let route = Route::default();
        for skipped in [2, 4, 8] {
            route.observe(Via::Pooled, STALL, STALL);
            let probe = route.choose();
            assert!(matches!(probe, Via::Probe(_)));
            route.observe(probe, STALL, STALL);
            for _ in 0..skipped {
                route.observe(Via::Pooled, STALL, STALL);
                assert_eq!(route.choose(), Via::Pooled);
            }
        }
    }

    #[test]
    fn a_slow_tool_is_not_a_stall() {
        let route = Route::default();
        let slow = Duration::from_secs(2);
        route.observe(Via::Pooled, slow, slow);
        assert_eq!(route.choose(), Via::Pooled);
    }

    #[test]
    fn only_one_request_probes_a_stall() {
        let route = Route::default();
        route.observe(Via::Pooled, STALL, STALL);
        assert!(matches!(route.choose(), Via::Probe(_)));
        assert_eq!(route.choose(), Via::Pooled);
    }
}
