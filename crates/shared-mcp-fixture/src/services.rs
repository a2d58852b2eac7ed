//! Throwaway servers from the distribution's packages, for the tests of runvil's shared state:
//! a PostgreSQL cluster (`postgres.rs`) and an nginx load balancer (`balancer.rs`), each
//! started in a temporary folder on a free loopback port and stopped and removed when dropped
//! (also when the test panics).
//!
//! They are Debian's packages, which `.ci/run` installs: on a machine without one, a test that
//! needs it prints one line naming what is missing and passes by returning early ([`absent`]);
//! under `CI=true` a missing one fails the test instead, so CI can never pass by skipping.
//!
//! Neither server runs as root: PostgreSQL refuses to, and a test has no business running a
//! network server with root's rights. When the tests run as root (containers, CI), the servers
//! run as the distribution's `postgres` user (else `nobody`), which is given their folder.

pub mod balancer;
pub mod postgres;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use balancer::Balancer;
pub use postgres::Postgres;

/// Says that a test cannot run for want of `what` (one line), or fails it under `CI=true`,
/// where `.ci/run` has installed everything the tests need.
///
/// # Panics
///
/// Under `CI=true`.
pub fn absent(what: &str) {
    let line = format!("skipped: {what} (.ci/run installs it from Debian's packages)");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{line}");
    // Straight to stderr: the test harness captures `print!` and `eprint!` of a passing test,
    // and a skip nobody sees would read as a pass.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The user the servers run as: `None` to run as this process does (not root), else the uid
/// and gid of the distribution's `postgres` user, or of `nobody`.
fn unprivileged() -> Option<(u32, u32)> {
    let me = fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or(0);
    if me != 0 {
        return None;
    }
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    ["postgres", "nobody"].iter().find_map(|name| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                [user, _, uid, gid, ..] if user == name => {
                    Some((uid.parse().ok()?, gid.parse().ok()?))
                }
                _ => None,
            }
        })
    })
}

/// A folder of the system's temp dir for one server, owned by the user it runs as, removed
/// when dropped.
struct Folder {
    path: PathBuf,
    runs_as: Option<(u32, u32)>,
}

impl Folder {
    fn new(kind: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        // The system's temp dir, not cargo's: every folder above it must be one the server's
        // user may pass through, which a checkout under /root is not.
        let path = std::env::temp_dir().join(format!("{kind}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("a temporary folder");
        let folder = Self {
            path,
            runs_as: unprivileged(),
        };
        folder.give(&folder.path);
        folder
    }

    /// Gives `path` to the user the server runs as.
    fn give(&self, path: &Path) {
        if let Some((uid, gid)) = self.runs_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
        }
    }

    /// `program` to run as the server's user.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        if let Some((uid, gid)) = self.runs_as {
            // std drops root's supplementary groups too when it changes the user.
            command.uid(uid).gid(gid);
        }
        command.current_dir(&self.path);
        command
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A port on 127.0.0.1 that was free a moment ago (the OS gave it and took it back).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Runs `command` to its end, answering its output, or panics with what it printed.
fn run(mut command: Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}): {}{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}
