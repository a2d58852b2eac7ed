//! Where `runvil` keeps what lets a server stay authorized between runs: one JSON file of
//! namespace to the Pack's record, readable by the user alone.
//!
//! The file is `$RUNVIL_CREDENTIALS`, else `$XDG_STATE_HOME/runvil/credentials.json`, else
//! `~/.local/state/runvil/credentials.json`. It is created `0600` in a `0700` folder,
//! replaced atomically (a new file beside it, then a rename), and refused, as ssh refuses a
//! key, when its permissions let anyone else read it. Errors name the file, never a value.
//!
//! The store also keeps a journal of what the Pack did with each key in this process (whether
//! a load found a record, how the last save ended), so `runvil login` says what was kept
//! rather than what it hopes: the Pack decides which tokens it saves, and a save that fails
//! is only a warning to it.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use runvil_plugin::CredentialStore;

/// The file's permissions: the user reads and writes, nobody else.
const FILE_MODE: u32 = 0o600;
/// Its folder's, when runvil makes it.
const DIR_MODE: u32 = 0o700;

/// The credentials file.
pub(crate) struct FileStore {
    path: PathBuf,
    /// Two saves of one process never interleave their read and rename.
    lock: Mutex<()>,
    /// What happened to each key in this process.
    journal: Mutex<BTreeMap<String, Journal>>,
}

/// What happened to one key of the store in this process.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Journal {
    /// Whether a load found a record under the key: `None` if it was never loaded.
    pub(crate) found: Option<bool>,
    /// How the last save under the key ended, with its error (which names the file).
    pub(crate) saved: Option<Result<(), String>>,
}

impl FileStore {
    /// The store at its usual place, or `None` when no place is known (no `HOME`).
    pub(crate) fn default_place() -> Option<Self> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let path = match var("RUNVIL_CREDENTIALS") {
            Some(path) => PathBuf::from(path),
            None => var("XDG_STATE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|home| Path::new(&home).join(".local/state")))?
                .join("runvil/credentials.json"),
        };
        Some(Self::at(path))
    }

    fn at(path: PathBuf) -> Self {
        Self {
            path,
            lock: Mutex::new(()),
            journal: Mutex::new(BTreeMap::new()),
        }
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file can be read and used: absent, or a credentials file only the user
    /// may read. The error says what is wrong and what to do.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.read().map(|_| ())
    }

    /// Whether a record is kept under `key`.
    pub(crate) fn has(&self, key: &str) -> Result<bool, String> {
        self.read().map(|records| records.contains_key(key))
    }

    /// What happened to `key` in this process.
    pub(crate) fn journal(&self, key: &str) -> Journal {
        self.journals().get(key).cloned().unwrap_or_default()
    }

    fn journals(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Journal>> {
        self.journal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every record in the file; an absent file has none.
    fn read(&self) -> Result<BTreeMap<String, String>, String> {
        let shown = self.path.display();
        let metadata = match fs::metadata(&self.path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(format!("cannot read {shown}: {e}")),
        };
        if metadata.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{shown} may be read by other users (its permissions are {:o}); \
                 run `chmod 600 {shown}` or remove it",
                metadata.permissions().mode() & 0o777
            ));
        }
        let text =
            fs::read_to_string(&self.path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        serde_json::from_str(&text).map_err(|_| {
            format!(
                "{shown} is not a runvil credentials file; move it away or remove it, and \
                 runvil writes a new one at the next login"
            )
        })
    }

    /// Replaces the file with `records`, atomically.
    fn write(&self, records: &BTreeMap<String, String>) -> Result<(), String> {
        let shown = self.path.display();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|e| format!("cannot create the folder of {shown}: {e}"))?;
        let temporary = self.path.with_extension("json.new");
        let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
        let _ = fs::remove_file(&temporary);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&temporary)
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("cannot write {shown}: {e}"))?;
        fs::rename(&temporary, &self.path).map_err(|e| format!("cannot write {shown}: {e}"))
    }

    /// Changes the records under the lock.
    fn change(&self, edit: impl FnOnce(&mut BTreeMap<String, String>)) -> Result<(), String> {
        let _held = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut records = self.read()?;
        edit(&mut records);
        self.write(&records)
    }
}

impl CredentialStore for FileStore {
    fn load(&self, key: &str) -> Option<String> {
        let record = match self.read() {
            Ok(mut records) => records.remove(key),
            Err(e) => {
                eprintln!("runvil: {e}");
                None
            }
        };
        self.journals().entry(key.to_owned()).or_default().found = Some(record.is_some());
        record
    }

    fn save(&self, key: &str, value: &str) -> Result<(), String> {
        let saved = self.change(|records| {
            records.insert(key.to_owned(), value.to_owned());
        });
        self.journals().entry(key.to_owned()).or_default().saved = Some(saved.clone());
        saved
    }

    fn delete(&self, key: &str) -> Result<(), String> {
        self.change(|records| {
            records.remove(key);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path) -> FileStore {
        FileStore::at(dir.join("state/runvil/credentials.json"))
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("runvil-credentials-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn records_are_saved_0600_replaced_and_deleted() {
        let dir = scratch("save");
        let store = store(&dir);
        assert_eq!(store.load("a"), None);
        store.save("a", "one").expect("saved");
        store.save("b", "two").expect("saved");
        store.save("a", "three").expect("replaced");
        assert_eq!(store.load("a").as_deref(), Some("three"));
        assert_eq!(store.load("b").as_deref(), Some("two"));
        let mode = fs::metadata(&store.path)
            .expect("file")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, FILE_MODE);
        let folder = store.path.parent().expect("folder");
        assert_eq!(
            fs::metadata(folder).expect("dir").permissions().mode() & 0o777,
            DIR_MODE
        );
        store.delete("a").expect("deleted");
        assert_eq!(store.load("a"), None);
        assert_eq!(store.load("b").as_deref(), Some("two"));
        assert!(!store.path.with_extension("json.new").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_journal_says_what_loads_found_and_how_saves_ended() {
        let dir = scratch("journal");
        let store = store(&dir);
        assert_eq!(store.journal("a"), Journal::default());
        assert_eq!(store.load("a"), None);
        assert_eq!(store.journal("a").found, Some(false));
        store.save("a", "one").expect("saved");
        assert_eq!(store.journal("a").saved, Some(Ok(())));
        assert_eq!(store.load("a").as_deref(), Some("one"));
        assert_eq!(store.journal("a").found, Some(true));
        // A save that cannot write: its error is kept, naming the file.
        fs::create_dir_all(store.path.with_extension("json.new").join("x")).expect("blocker");
        let error = store.save("b", "two").expect_err("cannot write");
        assert_eq!(store.journal("b").saved, Some(Err(error.clone())));
        assert!(error.starts_with("cannot write "), "{error}");
        assert!(error.contains("credentials.json"), "{error}");
        assert_eq!(store.journal("b").found, None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_others_may_read_is_refused_without_showing_a_value() {
        let dir = scratch("wide");
        let store = store(&dir);
        store.save("a", "secret-value-1").expect("saved");
        fs::set_permissions(&store.path, fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(store.load("a"), None);
        let error = store.save("b", "x").expect_err("refused");
        assert!(
            error.contains("may be read by other users (its permissions are 644)"),
            "{error}"
        );
        assert!(!error.contains("secret-value-1"));
        let _ = fs::remove_dir_all(&dir);
    }
}
