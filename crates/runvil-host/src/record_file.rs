//! The one kind of file runvil keeps state in: a JSON object of key to record (opaque text),
//! readable by the user alone. The credentials file (`credentials`) and the pins file (`pins`)
//! are both one; this module owns how such a file is read, refused and replaced, so the two
//! cannot drift apart on a rule that keeps a secret or the user's trust.
//!
//! The file is created `0600` in a `0700` folder (when runvil makes the folder) and replaced
//! atomically: the new text goes to `<name>.new` beside it, is synced, then renamed over the
//! old one, so a reader sees the old file or the new one, never half of one. A change made with
//! [`RecordFile::change_locked`] (the pins file's) is serialized across processes by a lock
//! file beside it; one made with [`RecordFile::change`] only within the process (two runvil
//! processes changing the credentials file at the same instant: the later rename wins).
//!
//! It is refused, as ssh's `StrictModes` refuses a key, when anyone but the user running
//! runvil (and root, who can do anything anyway) could read or change it: a file or folder
//! another user owns (when runvil runs as root, any user but root), a file whose permissions
//! let others read or write it, a folder whose permissions let others write in it (they could
//! replace the file, or remove it, and an absent pins file trusts every tool afresh) unless it
//! is sticky, as `/tmp` is: there others may add files, which the owner check refuses, but
//! neither replace nor remove the user's. It is refused as well when it is not
//! a file (a FIFO would block the read forever) or not a JSON object of strings. A refused
//! file is never replaced: every save reads it first, so a save fails with the same error.
//! Errors name the file and what to do, never a value in it.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::file_owner::{
    DIR_MODE, FILE_MODE, OTHERS, OTHERS_READ, check_folder, folder_of, foreign_owner, running_user,
};
use crate::record_lock;

/// Which of runvil's files one is, in the words of its errors.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    /// What it is called: `credentials file`.
    pub(crate) noun: &'static str,
    /// What happens once a file that is not one is moved away, said after "move it away or
    /// remove it, and": `runvil writes a new one at the next login`.
    pub(crate) afresh: &'static str,
}

/// One file of records.
pub(crate) struct RecordFile {
    path: PathBuf,
    kind: Kind,
    /// Two changes of one process never interleave their read and rename.
    lock: Mutex<()>,
}

impl RecordFile {
    /// The file at `path`, of `kind`.
    pub(crate) fn new(path: PathBuf, kind: Kind) -> Self {
        Self {
            path,
            kind,
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every record in the file; an absent file has none. Anything else that is not a file of
    /// this kind only the user may use is an error that says what is wrong and what to do.
    pub(crate) fn read(&self) -> Result<BTreeMap<String, String>, String> {
        let shown = self.path.display();
        // The folder first: whoever may change it may replace or remove the file.
        self.check_folder()?;
        let metadata = match fs::metadata(&self.path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(format!("cannot read {shown}: {e}")),
        };
        if !metadata.is_file() {
            return Err(format!(
                "{shown} is not a file; move it away, and runvil writes its {} there",
                self.kind.noun
            ));
        }
        if let Some(owner) = foreign_owner(&metadata) {
            return Err(format!(
                "{shown} may be changed by another user ({owner}); run `chown {} {shown}` or \
                 remove it",
                running_user()
            ));
        }
        let mode = metadata.permissions().mode();
        if mode & OTHERS != 0 {
            let may = if mode & OTHERS_READ != 0 {
                "read"
            } else {
                "changed"
            };
            return Err(format!(
                "{shown} may be {may} by other users (its permissions are {:o}); \
                 run `chmod 600 {shown}` or remove it",
                mode & 0o777
            ));
        }
        let text =
            fs::read_to_string(&self.path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        serde_json::from_str(&text).map_err(|_| {
            format!(
                "{shown} is not a runvil {}; move it away or remove it, and {}",
                self.kind.noun, self.kind.afresh
            )
        })
    }

    /// The folder the file is in, as written: `.` for a bare name.
    fn folder(&self) -> &Path {
        folder_of(&self.path)
    }

    /// Refuses a folder that another user owns or may write in; an absent one is made by the
    /// first save, `0700`.
    fn check_folder(&self) -> Result<(), String> {
        check_folder(&self.path, self.kind.noun)
    }

    /// Changes the records under the lock: reads the file (an error leaves it as it is),
    /// edits, and replaces it.
    pub(crate) fn change(
        &self,
        edit: impl FnOnce(&mut BTreeMap<String, String>),
    ) -> Result<(), String> {
        let _held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut records = self.read()?;
        edit(&mut records);
        self.write(&records)
    }

    /// Where the new file is written before it takes the old one's place: beside it, so the
    /// rename stays on one file system (`credentials.json.new`).
    pub(crate) fn temporary(&self) -> PathBuf {
        self.beside(".new")
    }

    /// Changes the records as [`RecordFile::change`] does, under a lock other processes take
    /// too, so that what `edit` decides from the records it reads is what is written: `edit`
    /// answers what to say and whether to write. The lock is [`record_lock`]'s (an exclusive
    /// lock on `<name>.lock` beside the file, created `0600`, the same one the credentials
    /// file's hold takes), held from the read to the rename; a folder where it cannot be
    /// created is an error naming the file.
    pub(crate) fn change_locked<T>(
        &self,
        edit: impl FnOnce(&mut BTreeMap<String, String>) -> (T, bool),
    ) -> Result<T, String> {
        let _held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.make_folder()?;
        // Released when dropped, whatever happens in between.
        let _locked = record_lock::lock(&self.path, record_lock::LOCK_WAIT)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))?;
        let mut records = self.read()?;
        let (answer, write) = edit(&mut records);
        if write {
            self.write(&records)?;
        }
        Ok(answer)
    }

    /// A file beside this one, its name with `suffix` added (`pins.json.lock`).
    fn beside(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    /// The file's folder, made (`0700`) when it is missing.
    fn make_folder(&self) -> Result<&Path, String> {
        let dir = self.folder();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|e| format!("cannot create the folder of {}: {e}", self.path.display()))?;
        Ok(dir)
    }

    /// Replaces the file with `records`, atomically.
    fn write(&self, records: &BTreeMap<String, String>) -> Result<(), String> {
        let shown = self.path.display();
        let dir = self.make_folder()?;
        let temporary = self.temporary();
        let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
        // A file left behind by a write that was stopped between its write and its rename.
        let _ = fs::remove_file(&temporary);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&temporary)
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| fs::rename(&temporary, &self.path));
        if let Err(e) = written {
            // Ours, half written: no later write should find it.
            let _ = fs::remove_file(&temporary);
            return Err(format!("cannot write {shown}: {e}"));
        }
        // The rename itself is kept once the folder is synced; a folder that cannot be opened
        // or synced still has the new file, so this is no error.
        if let Ok(folder) = fs::File::open(dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    const KIND: Kind = Kind {
        noun: "test file",
        afresh: "runvil writes a new one",
    };

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("runvil-record-file-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    fn insert(file: &RecordFile, key: &str, value: &str) -> Result<(), String> {
        file.change(|records| {
            records.insert(key.to_owned(), value.to_owned());
        })
    }

    #[test]
    fn a_file_is_created_0600_in_a_0700_folder_and_replaced_whole() {
        let dir = scratch("create");
        let file = RecordFile::new(dir.join("state/runvil/records.json"), KIND);
        assert_eq!(file.read(), Ok(BTreeMap::new()), "absent: no records");
        insert(&file, "a", "one").expect("saved");
        insert(&file, "b", "two").expect("saved");
        let records = file.read().expect("read");
        assert_eq!(records.get("a").map(String::as_str), Some("one"));
        assert_eq!(records.get("b").map(String::as_str), Some("two"));
        assert_eq!(mode(file.path()), FILE_MODE);
        assert_eq!(mode(file.path().parent().expect("folder")), DIR_MODE);
        let left: Vec<_> = fs::read_dir(file.path().parent().expect("folder"))
            .expect("folder")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["records.json"], "no temporary file is left behind");
        let _ = fs::remove_dir_all(&dir);
    }

    /// The old file stays whole until the new one takes its place: a write that fails leaves
    /// it, and a file replaced is a new inode (a reader holding the old one reads the old
    /// text), not the old one rewritten in place.
    #[test]
    fn a_write_replaces_the_file_atomically_or_leaves_it_as_it_was() {
        let dir = scratch("atomic");
        let file = RecordFile::new(dir.join("records.json"), KIND);
        insert(&file, "a", "one").expect("saved");
        let old = fs::File::open(file.path()).expect("open the old file");
        insert(&file, "a", "two").expect("replaced");
        let still = std::io::read_to_string(old).expect("the old file");
        assert!(still.contains("\"one\""), "{still}");
        assert!(file.read().expect("read")["a"] == "two");

        // A directory where the new file would go: the write fails and the file stays.
        let before = fs::read(file.path()).expect("bytes");
        fs::create_dir_all(file.temporary().join("x")).expect("blocker");
        let error = insert(&file, "a", "three").expect_err("cannot write");
        assert!(error.starts_with("cannot write "), "{error}");
        assert!(error.contains("records.json"), "{error}");
        assert_eq!(fs::read(file.path()).expect("bytes"), before);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_others_may_read_or_change_is_refused_and_left_as_it_is() {
        let dir = scratch("wide");
        let file = RecordFile::new(dir.join("records.json"), KIND);
        insert(&file, "a", "secret-value-1").expect("saved");
        let before = fs::read(file.path()).expect("bytes");
        for (bits, may) in [(0o644, "read"), (0o604, "read"), (0o620, "changed")] {
            fs::set_permissions(file.path(), fs::Permissions::from_mode(bits)).expect("chmod");
            let shown = file.path().display();
            let want = format!(
                "{shown} may be {may} by other users (its permissions are {bits:o}); run \
                 `chmod 600 {shown}` or remove it"
            );
            assert_eq!(file.read(), Err(want.clone()));
            assert_eq!(insert(&file, "b", "x"), Err(want));
            assert_eq!(fs::read(file.path()).expect("bytes"), before);
            assert_eq!(mode(file.path()), bits, "its mode is left as it was");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// A user who is not the one running the tests (`nobody` on most systems).
    const ANOTHER_USER: u32 = 65_534;

    /// Whether this process may give a file to another user, which only root may; otherwise
    /// says in one line why `test` is skipped. CI runs as root: there a skip is a failure.
    fn may_give_away(test: &str) -> bool {
        if rustix::process::geteuid().is_root() {
            return true;
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test} must run as root under CI=true"
        );
        // Straight to stderr: the harness hides `eprintln!` of a passing test, and a skip
        // nobody sees would read as a pass.
        let _ = writeln!(
            std::io::stderr(),
            "skipped {test}: giving a file to another user needs root"
        );
        false
    }

    #[test]
    fn a_file_or_folder_another_user_owns_is_refused_and_left_as_it_is() {
        if !may_give_away("a_file_or_folder_another_user_owns_is_refused_and_left_as_it_is") {
            return;
        }
        let dir = scratch("owner");
        let file = RecordFile::new(dir.join("records.json"), KIND);
        insert(&file, "a", "secret-value-1").expect("saved");
        let before = fs::read(file.path()).expect("bytes");
        let (shown, folder) = (file.path().display(), dir.display());

        // A 0600 file of another user's.
        std::os::unix::fs::chown(file.path(), Some(ANOTHER_USER), None).expect("chown");
        let theirs = format!(
            "{shown} may be changed by another user (its owner is user {ANOTHER_USER}, and \
             runvil runs as user 0); run `chown 0 {shown}` or remove it"
        );
        assert_eq!(mode(file.path()), FILE_MODE);
        assert_eq!(file.read(), Err(theirs.clone()));
        assert_eq!(insert(&file, "b", "x"), Err(theirs));
        assert_eq!(fs::read(file.path()).expect("bytes"), before);
        let owner = fs::metadata(file.path()).expect("metadata").uid();
        assert_eq!(owner, ANOTHER_USER, "its owner is left as it was");
        std::os::unix::fs::chown(file.path(), Some(0), None).expect("chown back");
        assert!(file.read().is_ok());

        // A folder of another user's, with the file in it or not.
        let elsewhere = "or keep the test file in a folder of your own";
        std::os::unix::fs::chown(&dir, Some(ANOTHER_USER), None).expect("chown");
        let theirs = format!(
            "{folder}, the folder of {shown}, may be changed by another user (its owner is user \
             {ANOTHER_USER}, and runvil runs as user 0); run `chown 0 {folder}` {elsewhere}"
        );
        assert_eq!(file.read(), Err(theirs.clone()));
        assert_eq!(insert(&file, "b", "x"), Err(theirs.clone()));
        assert_eq!(fs::read(file.path()).expect("bytes"), before);
        fs::remove_file(file.path()).expect("removed");
        assert_eq!(
            file.read(),
            Err(theirs.clone()),
            "no file is no record here"
        );
        assert_eq!(insert(&file, "b", "x"), Err(theirs));
        assert!(!file.path().exists(), "nothing was written there");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_others_may_write_in_is_refused() {
        let dir = scratch("open-folder");
        let file = RecordFile::new(dir.join("records.json"), KIND);
        insert(&file, "a", "one").expect("saved");
        let before = fs::read(file.path()).expect("bytes");
        let (shown, folder) = (file.path().display(), dir.display());
        for bits in [0o770, 0o702, 0o777] {
            fs::set_permissions(&dir, fs::Permissions::from_mode(bits)).expect("chmod");
            let want = format!(
                "{folder}, the folder of {shown}, may be changed by other users (its permissions \
                 are {bits:o}); run `chmod 700 {folder}` or keep the test file in a folder of \
                 your own"
            );
            assert_eq!(file.read(), Err(want.clone()));
            assert_eq!(insert(&file, "b", "x"), Err(want));
            assert_eq!(fs::read(file.path()).expect("bytes"), before);
        }
        // Others may read and enter it, as a home folder often lets them, or write in it when
        // it is sticky, as `/tmp` is: the file is still the user's alone.
        for bits in [0o755, 0o1777] {
            fs::set_permissions(&dir, fs::Permissions::from_mode(bits)).expect("chmod");
            assert!(file.read().is_ok(), "{bits:o}");
            insert(&file, "b", "two").expect("saved");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_is_not_one_of_records_is_refused_and_left_as_it_is() {
        let dir = scratch("corrupt");
        let path = dir.join("records.json");
        let file = RecordFile::new(path.clone(), KIND);
        fs::create_dir_all(&dir).expect("dir");
        let shown = path.display();
        let not_ours = format!(
            "{shown} is not a runvil test file; move it away or remove it, and runvil writes a \
             new one"
        );
        for text in ["not json", "[1]", r#"{"a": 1}"#, r#"{"a": "se"#] {
            fs::write(&path, text).expect("written");
            fs::set_permissions(&path, fs::Permissions::from_mode(FILE_MODE)).expect("chmod");
            assert_eq!(file.read(), Err(not_ours.clone()), "{text}");
            assert_eq!(insert(&file, "b", "x"), Err(not_ours.clone()), "{text}");
            assert_eq!(fs::read_to_string(&path).expect("text"), text);
        }
        // A folder at its place is no file; neither is it replaced.
        fs::remove_file(&path).expect("removed");
        fs::create_dir(&path).expect("a folder");
        let error = file.read().expect_err("a folder");
        assert_eq!(
            error,
            format!("{shown} is not a file; move it away, and runvil writes its test file there")
        );
        assert!(insert(&file, "b", "x").is_err());
        assert!(path.is_dir());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_new_file_is_written_beside_the_file_whatever_its_name() {
        let file = RecordFile::new(PathBuf::from("/state/pins.json"), KIND);
        assert_eq!(file.temporary(), PathBuf::from("/state/pins.json.new"));
        let file = RecordFile::new(PathBuf::from("pins"), KIND);
        assert_eq!(file.temporary(), PathBuf::from("pins.new"));
        // A name without `.json` is written and read as well.
        let bare = scratch("bare");
        fs::create_dir_all(&bare).expect("dir");
        let file = RecordFile::new(bare.join("plain"), KIND);
        insert(&file, "a", "one").expect("saved");
        assert_eq!(file.read().expect("read")["a"], "one");
        let _ = fs::remove_dir_all(&bare);
    }
}
