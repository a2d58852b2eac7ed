//! The lock across processes around a record of a `record_file`, which the credentials file
//! lends the Pack as its hold around a refresh: an advisory lock (`flock`, through
//! `std::fs::File::lock`) on `<name>.lock` beside the file. The lock file holds nothing and is
//! never replaced, unlike the record file itself, whose atomic rename would leave a lock on
//! the old inode. The system releases the lock when the process ends, however it ends.
//!
//! A wait for another process's lock is bounded ([`LOCK_WAIT`]): the lock is taken on a
//! thread of its own, which gives up the lock at once if it gets it after the wait ran out.
//! A blocking lock rather than a loop of tries keeps the waiter in the kernel's queue (fair to
//! it, and seen in `/proc/locks`, which the test of two refreshes at once waits on). A lock file
//! another user owns is refused, as the record file would be: they could hold it for ever.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::file_owner::{self, DIR_MODE, FILE_MODE};

/// The longest a process waits for another's lock (its refresh) to end.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The lock file of the record file at `path`: `credentials.json.lock`.
pub(crate) fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

/// The lock of the record file at `path`, held until dropped; waits up to `wait` for another
/// holder. The error names the file.
pub(crate) fn lock(path: &Path, wait: Duration) -> Result<File, String> {
    let at = lock_path(path);
    let shown = at.display().to_string();
    if let Some(dir) = at.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|e| format!("cannot create the folder of {shown}: {e}"))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(&at)
        .map_err(|e| format!("cannot lock {shown}: {e}"))?;
    let metadata = file
        .metadata()
        .map_err(|e| format!("cannot lock {shown}: {e}"))?;
    if let Some(owner) = file_owner::foreign_owner(&metadata) {
        return Err(format!(
            "{shown} may be held for ever by another user ({owner}); run `chown {} {shown}` or \
             remove it",
            file_owner::running_user()
        ));
    }
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(TryLockError::WouldBlock) => {}
        Err(TryLockError::Error(e)) => return Err(format!("cannot lock {shown}: {e}")),
    }
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let locked = file.lock().map(|()| file);
        // After the wait ran out nobody receives it: the file is dropped, and the lock with it.
        let _ = sender.send(locked);
    });
    match receiver.recv_timeout(wait) {
        Ok(Ok(file)) => Ok(file),
        Ok(Err(e)) => Err(format!("cannot lock {shown}: {e}")),
        Err(_) => Err(format!(
            "{shown} was held by another runvil for longer than {} s",
            wait.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_the_next_waits_and_a_bounded_wait_ends() {
        let dir = std::env::temp_dir().join(format!("runvil-lock-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("state/credentials.json");
        let held = lock(&path, LOCK_WAIT).expect("locked");
        assert_eq!(lock_path(&path), dir.join("state/credentials.json.lock"));
        // Another open file (another process, to flock) cannot have it meanwhile.
        let other = File::open(lock_path(&path)).expect("open");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        let error = lock(&path, Duration::ZERO).expect_err("held");
        assert!(
            error.ends_with("credentials.json.lock was held by another runvil for longer than 0 s"),
            "{error}"
        );
        let waiter = std::thread::spawn(move || lock(&path, LOCK_WAIT).map(|_| ()));
        drop(held);
        assert_eq!(
            waiter.join().expect("joined"),
            Ok(()),
            "the next holder got it"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lock_file_another_user_owns_is_refused() {
        const ANOTHER_USER: u32 = 65_534;
        if !rustix::process::geteuid().is_root() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "a_lock_file_another_user_owns_is_refused must run as root under CI=true"
            );
            // Straight to stderr: the harness hides `eprintln!` of a passing test.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"skipped a_lock_file_another_user_owns_is_refused: it needs root\n",
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("runvil-lock-owner-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("credentials.json");
        drop(lock(&path, LOCK_WAIT).expect("locked"));
        let at = lock_path(&path);
        std::os::unix::fs::chown(&at, Some(ANOTHER_USER), None).expect("chown");
        let error = lock(&path, LOCK_WAIT).expect_err("refused");
        assert_eq!(
            error,
            format!(
                "{0} may be held for ever by another user (its owner is user {ANOTHER_USER}, and \
                 runvil runs as user 0); run `chown 0 {0}` or remove it",
                at.display()
            )
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
