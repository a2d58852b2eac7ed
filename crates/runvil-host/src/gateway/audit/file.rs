//! The audit file (`--audit FILE`): lines appended with `O_APPEND` by a thread of their own,
//! so a call never waits on the disk, and rotated when the file reaches its cap.
//!
//! [`FileSink::record`] stamps the line's time and puts it on a bounded queue: it never waits,
//! and says `Err` when the queue is full or the writer has stopped (the file could not be
//! written), so the gateway refuses a call it cannot record. The writer appends each line with
//! one `write`, which `O_APPEND` puts at the file's end even with another writer, so a line is
//! never split or interleaved; lines reach the operating system at once and the disk when it
//! writes them (there is no `fsync` per line: that would cost every call a disk's latency).
//!
//! The file is created `0600` (its folder `0700` when runvil makes it) and refused, as
//! runvil's record files are (`record_file`), when other users may read or change it: when its
//! permissions let them, when another user than the one running runvil (or root) owns it or
//! its folder, or when others may write in its folder: the lines name who called what.
//! When a line would take the file past [`MAX_AUDIT_FILE_BYTES`], the file is renamed
//! `FILE.1` (`FILE.1` to `FILE.2`, and so on, the oldest of [`AUDIT_FILES_KEPT`] dropped) and
//! a new one begun; `runvil audit` reads them all, oldest first. One process writes one audit
//! file: two gateways sharing a file would rotate it under each other (the team store of the
//! next issue is for many gateways).

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::SystemTime;

use super::{AuditError, AuditLine, AuditSink};
use crate::file_owner::{self, DIR_MODE, FILE_MODE, OTHERS};
use crate::gateway::GatewayError;

/// The size at which the file is rotated: a few hundred thousand lines.
pub(crate) const MAX_AUDIT_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// The rotated files kept beside the current one (`FILE.1` newest to `FILE.4` oldest).
pub(crate) const AUDIT_FILES_KEPT: u32 = 4;
/// The lines that may wait for the writer: seconds of a busy gateway's calls, a few MiB at
/// most. Past it a call is refused rather than served unrecorded.
pub(crate) const AUDIT_QUEUE_LINES: usize = 4096;

/// The audit file, written by its own thread.
pub(crate) struct FileSink {
    queue: Option<SyncSender<String>>,
    /// The queue's bound, said when it is full.
    bound: usize,
    /// Why the writer stopped, once it has.
    stopped: Arc<Mutex<Option<String>>>,
    writer: Option<JoinHandle<()>>,
}

/// The sizes a sink works within: the constants, smaller in the tests.
#[derive(Clone, Copy)]
struct Limits {
    max_bytes: u64,
    kept: u32,
    queue: usize,
}

const LIMITS: Limits = Limits {
    max_bytes: MAX_AUDIT_FILE_BYTES,
    kept: AUDIT_FILES_KEPT,
    queue: AUDIT_QUEUE_LINES,
};

impl FileSink {
    /// Opens (or creates) the file for appending and starts its writer.
    pub(crate) fn open(path: &Path) -> Result<Self, GatewayError> {
        Self::open_within(path, LIMITS)
    }

    fn open_within(path: &Path, limits: Limits) -> Result<Self, GatewayError> {
        let file = open_append(path)?;
        let size = file
            .metadata()
            .map_err(|e| GatewayError::file(path, e.to_string()))?
            .len();
        let (queue, lines) = sync_channel(limits.queue);
        let stopped = Arc::new(Mutex::new(None));
        let mut writer = Writer {
            path: path.to_owned(),
            file,
            size,
            limits,
        };
        let said = Arc::clone(&stopped);
        let thread = std::thread::Builder::new()
            .name("runvil-audit".into())
            .spawn(move || writer.run(&lines, &said))
            .map_err(|e| GatewayError::file(path, format!("cannot start its writer: {e}")))?;
        Ok(Self {
            queue: Some(queue),
            bound: limits.queue,
            stopped,
            writer: Some(thread),
        })
    }
}

impl FileSink {
    /// Why the writer stopped, once it has.
    fn stopped(&self) -> Option<String> {
        self.stopped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl AuditSink for FileSink {
    /// A writer that stopped (the file could not be written) keeps no line again.
    fn accepting(&self) -> Result<(), AuditError> {
        match (&self.queue, self.stopped()) {
            (None, _) => Err(AuditError::new("the audit file is closed")),
            (Some(_), Some(why)) => Err(AuditError::new(why)),
            (Some(_), None) => Ok(()),
        }
    }

    fn record(&self, line: AuditLine) -> Result<(), AuditError> {
        let text = line.text(SystemTime::now());
        let Some(queue) = &self.queue else {
            return Err(AuditError::new("the audit file is closed"));
        };
        match queue.try_send(text) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(AuditError::new(format!(
                "{} lines already wait to be written",
                self.bound
            ))),
            Err(TrySendError::Disconnected(_)) => Err(AuditError::new(
                self.stopped()
                    .unwrap_or_else(|| "the writer stopped".into()),
            )),
        }
    }
}

impl Drop for FileSink {
    /// Closes the queue and waits for the writer to write what is on it.
    fn drop(&mut self) {
        self.queue = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// Opens `path` for appending, creating it `0600` (and its folder `0700`), and refuses a file
/// that is no file or that other users may read or change.
fn open_append(path: &Path) -> Result<File, GatewayError> {
    let error = |problem: String| GatewayError::file(path, problem);
    // As runvil's record files: a folder another user owns or may write in could have the
    // trail replaced or removed under the gateway.
    file_owner::check_folder(path, "audit file")
        .map_err(|problem| GatewayError::flag("--audit", problem))?;
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(folder)
            .map_err(|e| error(format!("cannot create its folder: {e}")))?;
    }
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| error(format!("cannot open it to append: {e}")))?;
    // Checked on what was opened, not on the name, so nothing can be swapped in between.
    let metadata = file.metadata().map_err(|e| error(e.to_string()))?;
    if !metadata.is_file() {
        return Err(error("not a file".into()));
    }
    if let Some(owner) = file_owner::foreign_owner(&metadata) {
        return Err(error(format!(
            "another user may change it ({owner}); run `chown {} {}`",
            file_owner::running_user(),
            path.display()
        )));
    }
    let mode = metadata.permissions().mode();
    if mode & OTHERS != 0 {
        return Err(error(format!(
            "other users may read or change it (its permissions are {:o}); run `chmod 600 {}`",
            mode & 0o777,
            path.display()
        )));
    }
    Ok(file)
}

/// The writer thread's state: the open file and how much it holds.
struct Writer {
    path: PathBuf,
    file: File,
    size: u64,
    limits: Limits,
}

impl Writer {
    /// Writes every line the queue brings until it is closed or a write fails; a failure is
    /// said once, in the log and to every later `record`.
    fn run(&mut self, lines: &Receiver<String>, stopped: &Mutex<Option<String>>) {
        while let Ok(line) = lines.recv() {
            if let Err(why) = self.write(line) {
                let lost = lines.try_iter().count();
                tracing::error!(
                    target: "runvil::audit",
                    lost_lines = lost + 1,
                    "the audit file cannot be written: {why}; calls are refused from now on"
                );
                *stopped
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
                return;
            }
        }
    }

    fn write(&mut self, mut line: String) -> Result<(), String> {
        line.push('\n');
        let length = line.len() as u64;
        if self.size > 0 && self.size + length > self.limits.max_bytes {
            self.rotate()?;
        }
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        self.size += length;
        Ok(())
    }

    /// `FILE.N-1` becomes `FILE.N` down to `FILE` becoming `FILE.1`, then a new `FILE`.
    fn rotate(&mut self) -> Result<(), String> {
        for n in (1..self.limits.kept).rev() {
            match fs::rename(rotated(&self.path, n), rotated(&self.path, n + 1)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(format!("cannot rotate {}: {e}", self.path.display()));
                }
                _ => {}
            }
        }
        let first = if self.limits.kept > 0 {
            fs::rename(&self.path, rotated(&self.path, 1))
        } else {
            fs::remove_file(&self.path)
        };
        first.map_err(|e| format!("cannot rotate {}: {e}", self.path.display()))?;
        self.file = open_append(&self.path).map_err(|e| e.to_string())?;
        self.size = 0;
        Ok(())
    }
}

/// The `n`th rotated file of `path`: `audit.jsonl.2`.
pub(crate) fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{n}"));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::Outcome;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("runvil-audit-file-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn line(tool: &str) -> AuditLine {
        AuditLine {
            identity: Some("key:ci".into()),
            namespace: Some("docs".into()),
            tool: Some(tool.into()),
            args_sha256: Some(crate::gateway::args_sha256(None)),
            outcome: Outcome::Ok,
            duration_ms: Some(3),
            result_bytes: Some(10),
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn lines_are_appended_to_a_0600_file_in_a_0700_folder_and_kept_on_drop() {
        let dir = scratch("append");
        let path = dir.join("state/audit.jsonl");
        let sink = FileSink::open(&path).expect("opened");
        for n in 0..100 {
            sink.record(line(&format!("t{n}"))).expect("kept");
        }
        drop(sink);
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().expect("folder")), 0o700);
        let text = fs::read_to_string(&path).expect("the file");
        let tools: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<super::super::Written>(l).expect("a line"))
            .map(|w| w.tool.expect("a tool"))
            .collect();
        let want: Vec<String> = (0..100).map(|n| format!("t{n}")).collect();
        assert_eq!(tools, want, "every line, in order");

        // Opened again, it appends.
        let sink = FileSink::open(&path).expect("opened");
        sink.record(line("again")).expect("kept");
        drop(sink);
        let text = fs::read_to_string(&path).expect("the file");
        assert_eq!(text.lines().count(), 101);
        assert!(
            text.lines()
                .last()
                .expect("a line")
                .contains(r#""tool":"again""#)
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_others_may_read_or_that_is_no_file_is_refused() {
        let dir = scratch("refused");
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("audit.jsonl");
        fs::write(&path, "").expect("written");
        for bits in [0o644, 0o620, 0o604] {
            fs::set_permissions(&path, fs::Permissions::from_mode(bits)).expect("chmod");
            let error = FileSink::open(&path).err().expect("refused").to_string();
            assert_eq!(
                error,
                format!(
                    "{0}: other users may read or change it (its permissions are {bits:o}); run \
                     `chmod 600 {0}`",
                    path.display()
                )
            );
        }
        let folder = dir.join("a-folder");
        fs::create_dir(&folder).expect("a folder");
        let error = FileSink::open(&folder).err().expect("refused").to_string();
        assert!(
            error.starts_with(&format!("{}: cannot open it to append", folder.display())),
            "{error}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// A file or folder another user owns is refused, as a record file is; only root may
    /// give a file away, so elsewhere this says in one line that it is skipped (CI runs as
    /// root: there a skip is a failure).
    #[test]
    fn a_file_or_folder_another_user_owns_is_refused() {
        const ANOTHER_USER: u32 = 65_534;
        if !rustix::process::geteuid().is_root() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "a_file_or_folder_another_user_owns_is_refused must run as root under CI=true"
            );
            // Straight to stderr: the harness hides `eprintln!` of a passing test, and a skip
            // nobody sees would read as a pass.
            let _ = writeln!(
                std::io::stderr(),
                "skipped a_file_or_folder_another_user_owns_is_refused: it needs root"
            );
            return;
        }
        let dir = scratch("owner");
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("audit.jsonl");
        drop(FileSink::open(&path).expect("opened"));
        std::os::unix::fs::chown(&path, Some(ANOTHER_USER), None).expect("chown");
        let error = FileSink::open(&path).err().expect("refused").to_string();
        assert_eq!(
            error,
            format!(
                "{0}: another user may change it (its owner is user {ANOTHER_USER}, and runvil \
                 runs as user 0); run `chown 0 {0}`",
                path.display()
            )
        );
        std::os::unix::fs::chown(&path, Some(0), None).expect("chown back");
        std::os::unix::fs::chown(&dir, Some(ANOTHER_USER), None).expect("chown");
        let error = FileSink::open(&path).err().expect("refused").to_string();
        assert!(
            error.starts_with(&format!(
                "--audit: {}, the folder of {}, may be changed by another user",
                dir.display(),
                path.display()
            )),
            "{error}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// A file is rotated when a line would take it past the cap: at the cap it is kept whole.
    #[test]
    fn the_file_rotates_past_its_cap_keeping_its_rotated_files() {
        let dir = scratch("rotate");
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("audit.jsonl");
        let one = format!("{}\n", line("t0").text(SystemTime::UNIX_EPOCH)).len() as u64;
        let limits = Limits {
            max_bytes: 3 * one,
            kept: 2,
            queue: 16,
        };
        let sink = FileSink::open_within(&path, limits).expect("opened");
        for n in 0..3 {
            sink.record(line(&format!("t{n}"))).expect("kept");
        }
        drop(sink);
        assert_eq!(
            fs::metadata(&path).expect("file").len(),
            3 * one,
            "at the cap"
        );
        assert!(!rotated(&path, 1).exists());

        let sink = FileSink::open_within(&path, limits).expect("opened");
        for n in 3..10 {
            sink.record(line(&format!("t{n}"))).expect("kept");
        }
        drop(sink);
        let tools = |path: &Path| -> Vec<String> {
            fs::read_to_string(path)
                .expect("a file")
                .lines()
                .map(|l| serde_json::from_str::<super::super::Written>(l).expect("line"))
                .map(|w| w.tool.expect("tool"))
                .collect()
        };
        assert_eq!(tools(&path), ["t9"]);
        assert_eq!(tools(&rotated(&path, 1)), ["t6", "t7", "t8"]);
        assert_eq!(
            tools(&rotated(&path, 2)),
            ["t3", "t4", "t5"],
            "the oldest kept"
        );
        assert!(!rotated(&path, 3).exists(), "t0 to t2 were dropped");
        assert_eq!(mode(&path), 0o600);
        let _ = fs::remove_dir_all(&dir);
    }

    /// `record` never waits: a full queue and a stopped writer are errors saying why.
    #[test]
    fn a_line_that_cannot_be_kept_is_an_error() {
        let (queue, lines) = sync_channel(2);
        let sink = FileSink {
            queue: Some(queue),
            bound: 2,
            stopped: Arc::new(Mutex::new(None)),
            writer: None,
        };
        assert_eq!(sink.accepting(), Ok(()));
        sink.record(line("a")).expect("queued");
        sink.record(line("b"))
            .expect("queued, the queue's last place");
        assert_eq!(
            sink.record(line("c")).err().map(|e| e.to_string()),
            Some("the audit line cannot be kept: 2 lines already wait to be written".into())
        );
        drop(lines);
        *sink.stopped.lock().expect("lock") =
            Some("cannot write /x/audit.jsonl: No space left".into());
        assert_eq!(
            sink.record(line("d")).err().map(|e| e.to_string()),
            Some(
                "the audit line cannot be kept: cannot write /x/audit.jsonl: No space left".into()
            )
        );
        assert_eq!(
            sink.accepting().err().map(|e| e.to_string()),
            Some(
                "the audit line cannot be kept: cannot write /x/audit.jsonl: No space left".into()
            ),
            "a stopped writer takes no call"
        );
    }
}
