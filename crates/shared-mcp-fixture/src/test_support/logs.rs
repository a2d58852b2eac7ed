//! The log lines of a test binary, for tests that assert what the Pack logs (or never logs).
//! The global subscriber can be installed once per process, so a binary that uses this owns
//! it: the first call installs it with that binary's filter, later calls share it.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Every line written so far.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Every line so far, as text.
    ///
    /// # Panics
    ///
    /// If a writer panicked while it held the lines.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("log")).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's log lines, captured without colour through the `EnvFilter` directives
/// `filter` (such as `trace` or `plugin_mcp=debug`), from every crate, thread and task.
pub fn capture(filter: &str) -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .init();
        captured
    })
}
