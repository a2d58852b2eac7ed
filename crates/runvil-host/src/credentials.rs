//! Where `runvil` keeps what lets a server stay authorized between runs: one JSON file of
//! namespace to the Pack's record, readable by the user alone.
//!
//! The file is `$RUNVIL_CREDENTIALS`, else `$XDG_STATE_HOME/runvil/credentials.json`, else
//! `~/.local/state/runvil/credentials.json`: a `record_file`, so it is created `0600` in a
//! `0700` folder, replaced atomically, and refused, as ssh refuses a key, when anyone else
//! could read or change it (its permissions, its owner, its folder's). Errors name the file,
//! never a value.
//!
//! A refresh holds the file's lock across processes (`record_lock`), so two runvil processes
//! that need new tokens at once redeem the refresh token once.
//!
//! `runvil login` keeps a journal of what the Pack did with each key in this process
//! ([`Journaled`], over this file or the PostgreSQL store: whether a load found a record, how
//! the last save ended), so it says what was kept rather than what it hopes: the Pack decides
//! which tokens it saves, and a save that fails is only a warning to it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use runvil_plugin::{CredentialHold, CredentialStore, StoreError};

use crate::record_file::{Kind, RecordFile};
use crate::record_lock;

/// The credentials file in the words of its errors.
const CREDENTIALS: Kind = Kind {
    noun: "credentials file",
    afresh: "runvil writes a new one at the next login",
};

/// The credentials file.
pub(crate) struct FileStore {
    file: RecordFile,
}

/// A credential store, with a journal of what happened to each key in this process.
pub(crate) struct Journaled {
    store: Arc<dyn CredentialStore>,
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
        let path = match var("RUNVIL_CREDENTIALS") {
            Some(path) => PathBuf::from(path),
            None => state_folder()?.join("credentials.json"),
        };
        Some(Self::at(path))
    }

    fn at(path: PathBuf) -> Self {
        Self {
            file: RecordFile::new(path, CREDENTIALS),
        }
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        self.file.path()
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

    fn read(&self) -> Result<BTreeMap<String, String>, String> {
        self.file.read()
    }

    fn change(&self, edit: impl FnOnce(&mut BTreeMap<String, String>)) -> Result<(), String> {
        self.file.change(edit)
    }
}

impl CredentialStore for FileStore {
    fn load(&self, key: &str) -> Option<String> {
        match self.read() {
            Ok(mut records) => records.remove(key),
            Err(e) => {
                eprintln!("runvil: {e}");
                None
            }
        }
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.change(|records| {
            records.insert(key.to_owned(), value.to_owned());
        })
        .map_err(StoreError::new)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.change(|records| {
            records.remove(key);
        })
        .map_err(StoreError::new)
    }

    /// The file's lock across processes (`record_lock`), for a refresh.
    fn hold(&self, key: &str) -> Result<Option<Box<dyn CredentialHold>>, StoreError> {
        let path = self.path().to_path_buf();
        let lock = record_lock::lock(&path, record_lock::LOCK_WAIT).map_err(StoreError::new)?;
        Ok(Some(Box::new(FileHold {
            file: RecordFile::new(path, CREDENTIALS),
            key: key.to_owned(),
            _lock: lock,
        })))
    }
}

/// One key of the credentials file, held by this process until dropped.
struct FileHold {
    file: RecordFile,
    key: String,
    _lock: std::fs::File,
}

impl CredentialHold for FileHold {
    fn load(&mut self) -> Result<Option<String>, StoreError> {
        let mut records = self.file.read().map_err(StoreError::new)?;
        Ok(records.remove(&self.key))
    }

    fn save(self: Box<Self>, value: &str) -> Result<(), StoreError> {
        self.file
            .change(|records| {
                records.insert(self.key.clone(), value.to_owned());
            })
            .map_err(StoreError::new)
    }
}

impl Journaled {
    /// `store`, journaled.
    pub(crate) fn new(store: Arc<dyn CredentialStore>) -> Self {
        Self {
            store,
            journal: Mutex::new(BTreeMap::new()),
        }
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
}

impl CredentialStore for Journaled {
    fn load(&self, key: &str) -> Option<String> {
        let record = self.store.load(key);
        self.journals().entry(key.to_owned()).or_default().found = Some(record.is_some());
        record
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let saved = self.store.save(key, value);
        let kept = saved.clone().map_err(|e| e.reason);
        self.journals().entry(key.to_owned()).or_default().saved = Some(kept);
        saved
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.store.delete(key)
    }

    fn hold(&self, key: &str) -> Result<Option<Box<dyn CredentialHold>>, StoreError> {
        self.store.hold(key)
    }
}

/// An environment variable runvil reads a place from; an empty one is none.
fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// The folder where runvil keeps its state by default: `$XDG_STATE_HOME/runvil`, else
/// `~/.local/state/runvil`; `None` without either variable.
pub(crate) fn state_folder() -> Option<PathBuf> {
    let state = var("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".local/state")))?;
    Some(state.join("runvil"))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::file_owner::{DIR_MODE, FILE_MODE};

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
        let mode = fs::metadata(store.path())
            .expect("file")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, FILE_MODE);
        let folder = store.path().parent().expect("folder");
        assert_eq!(
            fs::metadata(folder).expect("dir").permissions().mode() & 0o777,
            DIR_MODE
        );
        store.delete("a").expect("deleted");
        assert_eq!(store.load("a"), None);
        assert_eq!(store.load("b").as_deref(), Some("two"));
        assert!(!store.file.temporary().exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_journal_says_what_loads_found_and_how_saves_ended() {
        let dir = scratch("journal");
        let file = Arc::new(store(&dir));
        let temporary = file.file.temporary();
        let store = Journaled::new(file);
        assert_eq!(store.journal("a"), Journal::default());
        assert_eq!(store.load("a"), None);
        assert_eq!(store.journal("a").found, Some(false));
        store.save("a", "one").expect("saved");
        assert_eq!(store.journal("a").saved, Some(Ok(())));
        assert_eq!(store.load("a").as_deref(), Some("one"));
        assert_eq!(store.journal("a").found, Some(true));
        // A save that cannot write: its error is kept, naming the file.
        fs::create_dir_all(temporary.join("x")).expect("blocker");
        let error = store.save("b", "two").expect_err("cannot write").reason;
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
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(store.load("a"), None);
        let error = store.save("b", "x").expect_err("refused").reason;
        assert!(
            error.contains("may be read by other users (its permissions are 644)"),
            "{error}"
        );
        assert!(!error.contains("secret-value-1"));
        let _ = fs::remove_dir_all(&dir);
    }
}
