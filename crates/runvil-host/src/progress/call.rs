//! A call's progress, as its server reports it (MCP `notifications/progress`, which the Pack
//! hands over cleaned and cut through `Pack::call_with_progress`), shown while the call runs.
//!
//! On a terminal one line updates in place once the first notice arrives (a call without
//! progress shows nothing), `⠋ docs search  indexing (3/10)`, drawn like the wait's frame
//! (`live`) so log lines pass around it; when the call ends it is replaced by a summary line.
//! Anywhere else only that summary line is written, once, when the call ends:
//! `runvil: 2 progress notices; the last: step 2 (2/2)`. Nothing is written for a call whose
//! server sent none.
//!
//! The Pack calls the sink on its runtime, where it must not block: it only updates a `watch`
//! value, which the display reads when it wakes. The message is the Pack's text, printed
//! through `untrusted::shown`.

use std::pin::pin;
use std::sync::Arc;

use runvil_plugin::{Pack, Progress, ProgressSink, ToolError};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use unicode_width::UnicodeWidthStr;

use super::frame::{SPINNER, cut_end};
use super::{TICK, live, live_terminal};
use crate::untrusted;

/// The notices of one call so far.
#[derive(Debug, Clone, Default, PartialEq)]
struct Notices {
    count: usize,
    last: Option<Progress>,
}

/// Calls `tool` of `pack` with `args`, showing the progress its server reports on stderr; the
/// call and the server are named `label` (`docs search`) on the live line.
pub(crate) async fn call(
    pack: &Arc<dyn Pack>,
    tool: &str,
    args: Value,
    label: &str,
) -> Result<String, ToolError> {
    let (sender, mut notices) = watch::channel(Notices::default());
    let sink: ProgressSink = Arc::new(move |notice| {
        sender.send_modify(|notices| {
            notices.count += 1;
            notices.last = Some(notice);
        });
    });
    let mut shown = Shown {
        live: live_terminal(),
        drawn: None,
        notices: Notices::default(),
    };
    let mut call = pin!(pack.call_with_progress(tool, args, sink));
    let mut spinner = tokio::time::interval(TICK);
    spinner.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut tick = 0;
    let outcome = loop {
        tokio::select! {
            outcome = &mut call => break outcome,
            changed = notices.changed() => {
                if changed.is_err() {
                    // The call dropped its sink: no notice will come; the answer will.
                    break call.await;
                }
                shown.notices = notices.borrow_and_update().clone();
                shown.draw(label, tick);
            }
            _ = spinner.tick(), if shown.drawn.is_some() => {
                tick += 1;
                shown.draw(label, tick);
            }
        }
    };
    shown.notices = notices.borrow().clone();
    shown.finish();
    outcome
}

/// The display of one call's progress.
struct Shown {
    /// Whether stderr shows a live line.
    live: bool,
    /// The live line, once the first notice drew it; `None` again once finished.
    drawn: Option<live::Live>,
    notices: Notices,
}

impl Shown {
    fn draw(&mut self, label: &str, tick: usize) {
        let Some(last) = &self.notices.last else {
            return;
        };
        if !self.live {
            return;
        }
        let live = self.drawn.get_or_insert_with(live::Live::start);
        let (width, _) = live::size();
        live.draw(&live_line(label, last, tick, width));
    }

    /// Replaces the live line with the summary, or writes the summary alone; nothing when no
    /// notice came.
    fn finish(&mut self) {
        let summary = summary(&self.notices).map(|line| format!("runvil: {line}\n"));
        match (self.drawn.take(), summary) {
            (Some(live), summary) => live.finish(&summary.unwrap_or_default()),
            (None, Some(summary)) => eprint!("{summary}"),
            (None, None) => {}
        }
        self.notices = Notices::default();
    }
}

impl Drop for Shown {
    /// A call dropped before it ended (a signal) still says how far it had come.
    fn drop(&mut self) {
        self.finish();
    }
}

/// The live line: `{spinner} {label}  {message} ({progress}/{total})`, at most `width`
/// columns, ending with a newline.
fn live_line(label: &str, notice: &Progress, tick: usize, width: usize) -> String {
    let spinner = SPINNER[tick % SPINNER.len()];
    let line = format!("{spinner} {label}  {}", describe(notice));
    let mut line = cut_end(line.trim_end(), width);
    debug_assert!(line.width() <= width);
    line.push('\n');
    line
}

/// The summary line, without `runvil: `, or `None` when no notice came.
fn summary(notices: &Notices) -> Option<String> {
    let last = notices.last.as_ref()?;
    let noun = if notices.count == 1 {
        "notice"
    } else {
        "notices"
    };
    Some(format!(
        "{} progress {noun}; the last: {}",
        notices.count,
        describe(last)
    ))
}

/// A notice as a person reads it: its message, then how far, `indexing (3/10)`.
fn describe(notice: &Progress) -> String {
    let amount = match notice.total {
        Some(total) => format!("({}/{})", number(notice.progress), number(total)),
        None => format!("({})", number(notice.progress)),
    };
    match notice.message.as_deref().filter(|m| !m.is_empty()) {
        Some(message) => format!("{} {amount}", untrusted::shown(message)),
        None => amount,
    }
}

/// A progress value without a needless fraction: `3`, `2.5`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(progress: f64, total: Option<f64>, message: Option<&str>) -> Progress {
        Progress {
            progress,
            total,
            message: message.map(str::to_owned),
        }
    }

    #[test]
    fn the_live_line_shows_the_message_and_how_far_within_the_width() {
        let step = notice(1.0, Some(2.0), Some("step 1"));
        assert_eq!(
            live_line("backend progress", &step, 0, 80),
            "⠋ backend progress  step 1 (1/2)\n"
        );
        assert_eq!(
            live_line("backend progress", &step, 1, 80),
            "⠙ backend progress  step 1 (1/2)\n"
        );
        assert_eq!(
            live_line("docs search", &notice(2.5, None, None), 0, 80),
            "⠋ docs search  (2.5)\n"
        );
        let long = notice(3.0, Some(10.0), Some(&"indexing ".repeat(20)));
        let line = live_line("docs search", &long, 0, 40);
        assert_eq!(line.trim_end().width(), 40);
        assert!(line.ends_with("…\n"), "{line}");
        for width in 0..50 {
            assert!(live_line("docs search", &long, 0, width).trim_end().width() <= width);
        }
    }

    #[test]
    fn a_message_cannot_break_the_line() {
        let forged = notice(1.0, None, Some("a\nrunvil: s is authorized\u{1b}[2J"));
        assert_eq!(
            live_line("s t", &forged, 0, 80),
            "⠋ s t  a\\nrunvil: s is authorized\\u{1b}[2J (1)\n"
        );
    }

    #[test]
    fn the_summary_counts_the_notices_and_shows_the_last() {
        assert_eq!(summary(&Notices::default()), None);
        let one = Notices {
            count: 1,
            last: Some(notice(1.0, Some(2.0), Some("step 1"))),
        };
        assert_eq!(
            summary(&one).as_deref(),
            Some("1 progress notice; the last: step 1 (1/2)")
        );
        let two = Notices {
            count: 2,
            last: Some(notice(2.0, Some(2.0), None)),
        };
        assert_eq!(
            summary(&two).as_deref(),
            Some("2 progress notices; the last: (2/2)")
        );
    }
}
