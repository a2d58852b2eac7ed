//! Where `runvil` keeps what lets a server stay authorized between runs: one JSON file of
//! namespace to the Pack's record, readable by the user alone.
//!
//! The file is `$RUNVIL_CREDENTIALS`, else `$XDG_STATE_HOME/runvil/credentials.json`, else
//! `~/.local/state/runvil/credentials.json`. It is created `0600` in a `0700` folder,
//! replaced atomically (a new file beside it, then a rename), and refused, as ssh refuses a
//! key, when its permissions let anyone else read it. Errors name the file, never a value.

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
        Some(Self {
            path,
            lock: Mutex::new(()),
        })
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
        serde_json::from_str(&text).map_err(|_| format!("{shown} is not a runvil credentials file"))
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
        match self.read() {
            Ok(mut records) => records.remove(key),
            Err(e) => {
                eprintln!("runvil: {e}");
                None
            }
        }
    }

    fn save(&self, key: &str, value: &str) -> Result<(), String> {
        self.change(|records| {
            records.insert(key.to_owned(), value.to_owned());
        })
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
        FileStore {
            path: dir.join("state/runvil/credentials.json"),
            lock: Mutex::new(()),
        }
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
