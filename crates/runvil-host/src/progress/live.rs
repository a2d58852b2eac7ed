//! Drawing frames in place on a terminal's stderr, and writing log lines around them.
//!
//! A frame is redrawn by moving the cursor back up over the previous one and clearing to the
//! end of the screen (plain ANSI, so any terminal that is not `dumb` follows). That only works
//! while nothing else moves the cursor, and log lines share stderr: so the frame on screen is
//! kept in one place per process, and every write, a frame's or a log line's, happens under
//! its lock. A log line lifts the frame, is written, and the frame is drawn again below it.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The frame on the terminal now, while one is live: stderr is one per process.
static ON_SCREEN: Mutex<Option<String>> = Mutex::new(None);

/// The live display while it runs; dropping it leaves the last frame on the terminal as it
/// is, and log lines go straight to stderr again.
pub(super) struct Live(());

impl Live {
    /// Starts drawing on stderr, which the caller found to be a terminal.
    pub(super) fn start() -> Self {
        *on_screen() = Some(String::new());
        Self(())
    }

    /// Replaces the frame on the terminal with `frame`, whose lines must not wrap.
    pub(super) fn draw(&self, frame: &str) {
        let mut shown = on_screen();
        let previous = shown.get_or_insert_default();
        write(&format!("{}{frame}", lift(previous)));
        frame.clone_into(previous);
    }

    /// Replaces the frame with `last`, the one left on the terminal: its lines may wrap, as
    /// nothing is drawn over it.
    pub(super) fn finish(self, last: &str) {
        let mut shown = on_screen();
        let previous = shown.take().unwrap_or_default();
        write(&format!("{}{last}", lift(&previous)));
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        *on_screen() = None;
    }
}

/// The terminal's width and height, read at each frame so a resize is followed; a
/// terminal that does not say gets 80 by 24.
pub(super) fn size() -> (usize, usize) {
    let (rows, columns) = console::Term::stderr().size();
    (usize::from(columns), usize::from(rows))
}

/// Writes log lines to stderr around the live frame instead of through it. One writer per
/// log event: its text is written whole when the writer is dropped (or flushed), so the frame
/// is lifted and drawn again once per event, never in the middle of a line.
#[derive(Default)]
pub(crate) struct LogWriter {
    text: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.text.is_empty() {
            return Ok(());
        }
        let shown = on_screen();
        let mut stderr = std::io::stderr().lock();
        let result = match shown.as_deref() {
            None => stderr.write_all(&self.text),
            Some(frame) => {
                let mut out = lift(frame).into_bytes();
                out.extend_from_slice(&self.text);
                // The frame starts on a line of its own.
                if !self.text.ends_with(b"\n") {
                    out.push(b'\n');
                }
                out.extend_from_slice(frame.as_bytes());
                stderr.write_all(&out)
            }
        };
        self.text.clear();
        result.and_then(|()| stderr.flush())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // A log line that cannot be written has nowhere to be reported.
        let _ = self.flush();
    }
}

/// The frame on the screen; a panic while it was held left a frame text, still usable.
fn on_screen() -> MutexGuard<'static, Option<String>> {
    ON_SCREEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The escape codes that take the cursor back to the first line of `frame` (which ends with
/// a newline, so the cursor is at the start of the line below it) and clear from there down.
fn lift(frame: &str) -> String {
    match frame.matches('\n').count() {
        // `ESC[0A` moves up one line on most terminals, not zero.
        0 => String::new(),
        lines => format!("\r\x1b[{lines}A\x1b[J"),
    }
}

/// Writes to stderr in one call, so nothing else on stderr lands inside a frame.
fn write(text: &str) {
    let mut stderr = std::io::stderr().lock();
    // A terminal that cannot be written to has nothing to show; the wait goes on.
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifting_a_frame_climbs_its_lines_and_clears_below() {
        assert_eq!(lift(""), "");
        assert_eq!(lift("✓ a  ready, 1 tool\n"), "\r\x1b[1A\x1b[J");
        assert_eq!(lift("a\nb\nc\n"), "\r\x1b[3A\x1b[J");
    }
}
