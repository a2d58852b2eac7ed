//! Waiting for servers to leave `loading`, and showing it on stderr.
//!
//! The wait follows the Pack's status channel: it wakes when a status changes, and ends when
//! the servers waited for are as it wants them ([`Until`]: none loading, or each ready), when
//! its bound passes, or when the Pack reports no more. It never polls. A caller that stops it (a signal, in a `select!`) drops it, and
//! the final frame says so.
//!
//! On a terminal each server gets a line that updates in place, so a person sees which
//! server is slow and why one failed; only then does a timer run, to turn the spinners. When
//! the wait ends a final frame replaces the live one: every server, full reasons, and why the
//! ones still loading were not waited for. Anywhere else (a pipe, a log file, CI, a `dumb`
//! terminal) animation is noise, so one summary line is written when the wait ends:
//! `runvil: 3 servers: 2 ready, 1 error`. Log lines share stderr with the live frame, so they
//! are written through [`LogWriter`], which lifts the frame out of the way first.
//!
//! - `frame`: the text of the frames and of the summary line, as pure functions.
//! - `live`: drawing frames in place, and [`LogWriter`].
//! - `call`: a call's progress, shown the same way while the call runs.

pub(crate) mod call;
mod frame;
mod live;

use std::io::IsTerminal;
use std::time::Duration;

use runvil_plugin::{BackendState, BackendStatus, StatusReceiver};
use tokio::time::MissedTickBehavior;

use crate::policy::STILL_WAITING_AFTER;

pub(crate) use live::LogWriter;

/// How often the spinners turn: an animation only; statuses come from the channel.
const TICK: Duration = Duration::from_millis(80);

/// The `TERM` of a terminal that cannot move its cursor: it gets the summary line.
const DUMB_TERM: &str = "dumb";

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The servers waited for are as the wait wanted them.
    Settled,
    /// The bound passed with some still loading.
    Bound,
    /// The Pack dropped its end of the channel: nothing will change any more.
    Closed,
    /// The caller dropped the wait (a signal).
    Interrupted,
}

/// What a wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// None of the servers is loading: each has ended its first attempt, ready or not.
    Settled,
    /// Each server is ready, or refused or turned off (neither ever starts): a server in
    /// error is waited for through its retries, as a user who gave `--wait` asked.
    Ready,
}

impl Until {
    /// Whether `server` is still waited for.
    fn waits_for(self, server: &BackendStatus) -> bool {
        match self {
            Self::Settled => server.state.is_loading(),
            Self::Ready => !matches!(
                server.state,
                BackendState::Ready { .. } | BackendState::Refused(_) | BackendState::Disabled
            ),
        }
    }
}

/// How a wait ended, and where the servers it waited for stood then.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Waited {
    pub(crate) servers: Vec<BackendStatus>,
    pub(crate) end: End,
}

/// Waits until the servers of `status` (or `only` the one of that name) are as `until` says
/// or `bound` passes, showing each server's status on stderr as it changes; when it ends, the
/// final frame or the summary line is written. Dropped before it ends, it writes them as
/// interrupted.
pub(crate) async fn wait(
    status: StatusReceiver,
    only: Option<&str>,
    bound: Duration,
    until: Until,
) -> Waited {
    let display = if live_terminal() {
        Display::Live(live::Live::start())
    } else {
        Display::Summary
    };
    wait_showing(status, only, bound, until, display).await
}

/// Whether stderr can show a live frame.
fn live_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|term| term != DUMB_TERM)
}

/// [`wait`], showing it on `display`.
async fn wait_showing(
    mut status: StatusReceiver,
    only: Option<&str>,
    bound: Duration,
    until: Until,
    display: Display,
) -> Waited {
    let mut shown = Shown {
        display: Some(display),
        servers: Vec::new(),
        tick: 0,
    };
    // `--wait` is the user's: tokio's sleep takes a wait past the clock's end as none.
    let bound_passed = tokio::time::sleep(bound);
    let mut spinner = tokio::time::interval(TICK);
    spinner.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let live = shown.is_live();
    let mut bound_passed = std::pin::pin!(bound_passed);
    // Off a terminal nothing shows the wait while it lasts: after a while, one line says whom
    // it waits for, unless the bound ends it first.
    let mut still_waiting = (!live && bound > STILL_WAITING_AFTER).then(|| {
        let at = tokio::time::Instant::now() + STILL_WAITING_AFTER;
        Box::pin(tokio::time::sleep_until(at))
    });
    let end = loop {
        shown.servers = asked(&status.borrow_and_update(), only);
        if !shown.servers.iter().any(|s| until.waits_for(s)) {
            break End::Settled;
        }
        shown.draw();
        tokio::select! {
            () = &mut bound_passed => break End::Bound,
            changed = status.changed() => if changed.is_err() {
                break End::Closed;
            },
            _ = spinner.tick(), if live => shown.tick += 1,
            () = async { still_waiting.as_mut().expect("guarded").await }, if still_waiting.is_some() => {
                still_waiting = None;
                let waited: Vec<&BackendStatus> =
                    shown.servers.iter().filter(|s| until.waits_for(s)).collect();
                eprintln!("runvil: {}", frame::still_waiting(&waited, bound));
            }
        }
    };
    // The last word is the channel's, even if it changed since the last frame.
    shown.servers = asked(&status.borrow(), only);
    shown.finish(end);
    Waited {
        servers: std::mem::take(&mut shown.servers),
        end,
    }
}

/// The servers of `all` the wait is for.
fn asked(all: &[BackendStatus], only: Option<&str>) -> Vec<BackendStatus> {
    all.iter()
        .filter(|s| only.is_none_or(|name| s.name == name))
        .cloned()
        .collect()
}

/// Where the wait is shown.
enum Display {
    /// Frames drawn in place on a terminal.
    Live(live::Live),
    /// Nothing until the end, then one line.
    Summary,
}

/// The display of one wait, with what it shows.
struct Shown {
    /// `None` once finished.
    display: Option<Display>,
    servers: Vec<BackendStatus>,
    tick: usize,
}

impl Shown {
    fn is_live(&self) -> bool {
        matches!(self.display, Some(Display::Live(_)))
    }

    fn draw(&self) {
        if let Some(Display::Live(live)) = &self.display {
            let (width, height) = live::size();
            live.draw(&frame::frame(&self.servers, width, height, self.tick));
        }
    }

    fn finish(&mut self, end: End) {
        match self.display.take() {
            Some(Display::Live(live)) => live.finish(&frame::final_frame(&self.servers, end)),
            Some(Display::Summary) => eprintln!("runvil: {}", frame::summary(&self.servers)),
            None => {}
        }
    }
}

impl Drop for Shown {
    /// A wait dropped before it ended was cut short by its caller (a `select!` on Ctrl-C): the
    /// servers still loading are said to be, instead of vanishing with the live frame.
    fn drop(&mut self) {
        self.finish(End::Interrupted);
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::watch;

    use super::*;
    use tokio::time::Instant;

    fn server(name: &str, state: BackendState) -> BackendStatus {
        BackendStatus::new(name, state)
    }

    fn loading(name: &str) -> BackendStatus {
        server(name, BackendState::Loading)
    }

    fn ready(name: &str, tools: usize) -> BackendStatus {
        let tools = (0..tools).map(|n| format!("t{n}")).collect();
        server(name, BackendState::Ready { tools })
    }

    const LONG: Duration = Duration::from_secs(3600);

    /// [`wait`] with the summary display, whose one line the test harness captures.
    async fn run_wait(
        status: StatusReceiver,
        only: Option<&str>,
        bound: Duration,
    ) -> (Waited, Duration) {
        run_wait_until(status, only, bound, Until::Settled).await
    }

    async fn run_wait_until(
        status: StatusReceiver,
        only: Option<&str>,
        bound: Duration,
        until: Until,
    ) -> (Waited, Duration) {
        let start = Instant::now();
        let waited = wait_showing(status, only, bound, until, Display::Summary).await;
        (waited, start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_when_none_of_the_servers_is_loading() {
        let (sender, status) = watch::channel(vec![loading("a"), loading("b")]);
        let changes = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sender.send_replace(vec![ready("a", 2), loading("b")]);
            tokio::time::sleep(Duration::from_secs(1)).await;
            sender.send_replace(vec![
                ready("a", 2),
                server("b", BackendState::Failed("no".into())),
            ]);
            // Kept open: the wait must end on the statuses, not on a closed channel.
            tokio::time::sleep(LONG).await;
            drop(sender);
        });
        let (waited, elapsed) = run_wait(status, None, LONG).await;
        assert_eq!(waited.end, End::Settled);
        assert_eq!(
            waited.servers,
            [
                ready("a", 2),
                server("b", BackendState::Failed("no".into()))
            ]
        );
        assert_eq!(
            elapsed,
            Duration::from_secs(2),
            "woken by the change, not a poll"
        );
        changes.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_server_asked_for_is_waited_for() {
        let (sender, status) = watch::channel(vec![loading("a"), loading("b")]);
        let changes = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sender.send_replace(vec![loading("a"), ready("b", 1)]);
            tokio::time::sleep(LONG).await;
            drop(sender);
        });
        let (waited, elapsed) = run_wait(status, Some("b"), LONG).await;
        assert_eq!(
            waited,
            Waited {
                servers: vec![ready("b", 1)],
                end: End::Settled
            }
        );
        assert_eq!(elapsed, Duration::from_secs(1));
        changes.abort();

        let (_sender, status) = watch::channel(vec![loading("a")]);
        let (waited, _) = run_wait(status, Some("z"), LONG).await;
        assert_eq!(
            waited,
            Waited {
                servers: vec![],
                end: End::Settled
            },
            "no such server: nothing to wait for"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_until_ready_waits_through_errors_but_not_for_a_refused_entry() {
        let failed = || server("a", BackendState::Failed("down".into()));
        let (sender, status) = watch::channel(vec![loading("a")]);
        let changes = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            sender.send_replace(vec![failed()]);
            tokio::time::sleep(Duration::from_secs(2)).await;
            sender.send_replace(vec![ready("a", 1)]);
            tokio::time::sleep(LONG).await;
            drop(sender);
        });
        let (waited, elapsed) = run_wait_until(status, Some("a"), LONG, Until::Ready).await;
        assert_eq!(waited.servers, [ready("a", 1)]);
        assert_eq!(elapsed, Duration::from_secs(3), "through the error");
        changes.abort();

        let (_sender, status) = watch::channel(vec![failed()]);
        let bound = Duration::from_secs(4);
        let (waited, elapsed) = run_wait_until(status, Some("a"), bound, Until::Ready).await;
        assert_eq!((waited.end, elapsed), (End::Bound, bound));
        let (_sender, status) = watch::channel(vec![failed()]);
        let (waited, _) = run_wait_until(status, Some("a"), bound, Until::Settled).await;
        assert_eq!(waited.end, End::Settled, "an error has left loading");

        let refused = server("a", BackendState::Refused("url is missing".into()));
        let (_sender, status) = watch::channel(vec![refused]);
        let (waited, elapsed) = run_wait_until(status, Some("a"), LONG, Until::Ready).await;
        assert_eq!((waited.end, elapsed), (End::Settled, Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_ends_at_its_bound() {
        let (_sender, status) = watch::channel(vec![loading("a"), ready("b", 1)]);
        let (waited, elapsed) = run_wait(status, None, Duration::from_secs(5)).await;
        assert_eq!(
            waited,
            Waited {
                servers: vec![loading("a"), ready("b", 1)],
                end: End::Bound
            }
        );
        assert_eq!(elapsed, Duration::from_secs(5));

        let (_sender, status) = watch::channel(vec![loading("a")]);
        let waited = tokio::time::timeout(LONG, run_wait(status, None, Duration::MAX)).await;
        assert!(waited.is_err(), "the longest bound overflows nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_channel_ends_the_wait() {
        let (sender, status) = watch::channel(vec![loading("a")]);
        drop(sender);
        let (waited, elapsed) = run_wait(status, None, LONG).await;
        assert_eq!(
            waited,
            Waited {
                servers: vec![loading("a")],
                end: End::Closed
            }
        );
        assert_eq!(elapsed, Duration::ZERO);
    }
}
