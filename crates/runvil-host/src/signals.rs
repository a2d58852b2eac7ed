//! The signals that stop a command: SIGINT (Ctrl-C), SIGTERM (a supervisor, `kill`) and
//! SIGHUP (a closed terminal). Each cancels what runs the same way: the call in flight is
//! dropped (its server is told) and the Pack is shut down (its sessions are ended); the exit
//! code is 128 + the signal's number, as a shell reports a process the signal killed.

use tokio::signal::unix::{SignalKind, signal};

/// A signal that stopped a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Interrupt,
    Terminate,
    HangUp,
}

impl Stop {
    /// 128 + the signal's number.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Self::HangUp => 128 + 1,
            Self::Interrupt => 128 + 2,
            Self::Terminate => 128 + 15,
        }
    }

    /// What `runvil` says on stderr when it stops.
    pub(crate) fn said(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupted",
            Self::Terminate => "terminated (SIGTERM)",
            Self::HangUp => "hung up (SIGHUP)",
        }
    }
}

/// Resolves with the first of the three signals to arrive. A signal whose handler cannot be
/// installed is never awaited: the others still stop the command.
pub(crate) async fn stopped() -> Stop {
    let mut streams: Vec<(Stop, _)> = [
        (Stop::Interrupt, SignalKind::interrupt()),
        (Stop::Terminate, SignalKind::terminate()),
        (Stop::HangUp, SignalKind::hangup()),
    ]
    .into_iter()
    .filter_map(|(stop, kind)| Some((stop, signal(kind).ok()?)))
    .collect();
    std::future::poll_fn(|cx| {
        for (stop, stream) in &mut streams {
            if stream.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready(*stop);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(Stop::HangUp.exit_code(), 129);
        assert_eq!(Stop::Interrupt.exit_code(), 130);
        assert_eq!(Stop::Terminate.exit_code(), 143);
    }
}
