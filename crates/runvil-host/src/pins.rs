//! Where `runvil` keeps which tool definitions the user trusts, without `--store`: the pin
//! store it lends the Pack, one JSON file of the Pack's key (one per server) to its record,
//! opaque to runvil. With `--store`, the same records under the same keys are the database's
//! (`runvil_store::pins`, chosen in `store`).
//!
//! The file is `$RUNVIL_PINS`, else `pins.json` beside the credentials file at its usual place
//! (`$XDG_STATE_HOME/runvil/pins.json`, else `~/.local/state/runvil/pins.json`). It is a
//! `record_file`, as the credentials file is: created `0600` in a `0700` folder, replaced
//! atomically, refused when other users may read or change it. It is kept as credentials are
//! because it decides what a model may call: a file someone else could change could approve a
//! tool for the user.
//!
//! A file that cannot be used (unreadable, corrupt, loosely permitted) is an error naming it,
//! never "no record": the Pack then trusts no tool of any server rather than every tool
//! afresh, and since each save reads the file first, no save replaces it either. Only an
//! absent file means no record: removing it is how a user starts trusting afresh.
//!
//! Each record is kept with its version, a number that grows by one at each save, written
//! before it (`3 {...}`; a record written before versions were kept is version 0). A save is
//! a compare-and-set on it, under the lock `record_file` takes across processes, so a
//! `runvil trust` beside a running `runvil serve` never loses the other's change. A save that
//! fails is said once on stderr, naming the file and the system's error: the user learns that
//! nothing new is trusted until it can be written.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use runvil_plugin::{PinStore, Saved, StoreError, Stored, Version};

use crate::credentials;
use crate::record_file::{Kind, RecordFile};

/// The file's name in the credentials file's folder.
const FILE_NAME: &str = "pins.json";

/// The variable that names the file instead.
const PLACE_VARIABLE: &str = "RUNVIL_PINS";

/// What is said when no place for the file is known.
pub(crate) const NO_PLACE: &str = "no place for the pins file: set HOME or RUNVIL_PINS";

/// The pins file in the words of its errors: removing it trusts every server's tools afresh,
/// which the error about a corrupt one says before anyone removes it.
const PINS: Kind = Kind {
    noun: "pins file",
    afresh: "runvil writes a new one, trusting each server's tools as they are when it next \
             lists them",
};

/// The pins file.
pub(crate) struct PinFile {
    file: RecordFile,
    /// Whether a failed save is said on stderr (a command that says it in its own words does
    /// not), and the last one said, so each is said once.
    say_failures: bool,
    said: Mutex<Option<String>>,
}

impl PinFile {
    /// The file at its usual place, or `None` when no place is known (no `HOME`).
    pub(crate) fn default_place() -> Option<Self> {
        let path = match std::env::var_os(PLACE_VARIABLE).filter(|v| !v.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => credentials::state_folder()?.join(FILE_NAME),
        };
        Some(Self::at(path))
    }

    fn at(path: PathBuf) -> Self {
        Self {
            file: RecordFile::new(path, PINS),
            say_failures: true,
            said: Mutex::new(None),
        }
    }

    /// The file, with failed saves left to the command to say.
    pub(crate) fn quiet(self) -> Self {
        Self {
            say_failures: false,
            ..self
        }
    }

    /// Says on stderr that a save failed, once for each error in a row.
    fn say_once(&self, error: &str) {
        let mut said = self.said.lock().unwrap_or_else(PoisonError::into_inner);
        if self.say_failures && said.as_deref() != Some(error) {
            eprintln!(
                "runvil: {error}; until it can be written, tools not approved before are held"
            );
            *said = Some(error.to_owned());
        }
    }

    /// Whether the file can be used: absent, or a pins file only the user may use. The error
    /// names the file and says what to do.
    pub(crate) fn check(&self) -> Result<(), String> {
        self.file.read().map(|_| ())
    }

    /// The file: the gateway's audit file is kept beside it.
    pub(crate) fn path(&self) -> &std::path::Path {
        self.file.path()
    }
}

impl PinStore for PinFile {
    fn load(&self, key: &str) -> Result<Option<Stored>, StoreError> {
        let records = self.file.read().map_err(StoreError::new)?;
        Ok(records.get(key).map(|value| stored(value)))
    }

    fn save(&self, key: &str, record: &str, read: Option<Version>) -> Result<Saved, StoreError> {
        let saved = self.file.change_locked(|records| {
            let now = records.get(key).map(|value| stored(value).version);
            if now != read {
                return (Saved::Conflict, false);
            }
            let version = Version(now.map_or(1, |Version(n)| n.wrapping_add(1)));
            records.insert(key.to_owned(), format!("{} {record}", version.0));
            (Saved::Kept(version), true)
        });
        match saved {
            Ok(saved) => {
                *self.said.lock().unwrap_or_else(PoisonError::into_inner) = None;
                Ok(saved)
            }
            Err(error) => {
                self.say_once(&error);
                Err(StoreError::new(error))
            }
        }
    }
}

/// A record as the file keeps it: its version, a space, then the Pack's text; the Pack's text
/// alone (a JSON object, never digits and a space) is a record from before versions, 0.
fn stored(value: &str) -> Stored {
    let versioned = value
        .split_once(' ')
        .and_then(|(version, record)| Some((version.parse().ok()?, record)));
    match versioned {
        Some((version, record)) => Stored {
            record: record.to_owned(),
            version: Version(version),
        },
        None => Stored {
            record: value.to_owned(),
            version: Version(0),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::*;
    use crate::file_owner::{DIR_MODE, FILE_MODE};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("runvil-pins-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    fn kept(record: &str, version: u64) -> Option<Stored> {
        Some(Stored {
            record: record.to_owned(),
            version: Version(version),
        })
    }

    #[test]
    fn records_are_kept_per_key_in_a_0600_file_an_absent_one_holding_none() {
        let dir = scratch("keep");
        let pins = PinFile::at(dir.join("runvil/pins.json"));
        assert_eq!(pins.load("s#00"), Ok(None));
        assert_eq!(pins.check(), Ok(()));
        let record = r#"{"version":1,"tools":{"echo":{"pin":"ab"}}}"#;
        assert_eq!(pins.save("s#00", record, None), Ok(Saved::Kept(Version(1))));
        assert_eq!(
            pins.save("t#11", "other", None),
            Ok(Saved::Kept(Version(1)))
        );
        let replaced = pins.save("t#11", "replaced", Some(Version(1)));
        assert_eq!(replaced, Ok(Saved::Kept(Version(2))));
        assert_eq!(pins.load("s#00"), Ok(kept(record, 1)));
        assert_eq!(pins.load("t#11"), Ok(kept("replaced", 2)));
        assert_eq!(pins.load("u#22"), Ok(None));
        assert_eq!(mode(&dir.join("runvil/pins.json")), FILE_MODE);
        assert_eq!(mode(&dir.join("runvil")), DIR_MODE);
        assert_eq!(mode(&dir.join("runvil/pins.json.lock")), FILE_MODE);
        let _ = fs::remove_dir_all(&dir);
    }

    /// A save names the version it read: one of a record that changed since (or that
    /// appeared, or went) is a conflict and changes nothing. A record from before versions is
    /// version 0.
    #[test]
    fn a_save_based_on_another_version_is_a_conflict_and_changes_nothing() {
        let dir = scratch("conflict");
        let path = dir.join("pins.json");
        let (one, two) = (PinFile::at(path.clone()), PinFile::at(path.clone()));
        // Both read no record; the first to save wins.
        assert_eq!(one.save("s#00", "first", None), Ok(Saved::Kept(Version(1))));
        assert_eq!(two.save("s#00", "second", None), Ok(Saved::Conflict));
        assert_eq!(two.load("s#00"), Ok(kept("first", 1)));
        assert_eq!(
            two.save("s#00", "second", Some(Version(1))),
            Ok(Saved::Kept(Version(2)))
        );
        assert_eq!(
            one.save("s#00", "third", Some(Version(1))),
            Ok(Saved::Conflict)
        );
        assert_eq!(one.save("t#11", "x", Some(Version(1))), Ok(Saved::Conflict));
        assert_eq!(one.load("s#00"), Ok(kept("second", 2)));
        assert_eq!(one.load("t#11"), Ok(None));

        let old = r#"{"version":1,"tools":{"echo":{"pin":"ab","definition":{"description":"Echoes text."}}}}"#;
        fs::write(&path, serde_json::json!({ "s#00": old }).to_string()).expect("written");
        assert_eq!(one.load("s#00"), Ok(kept(old, 0)));
        assert_eq!(
            one.save("s#00", "new", Some(Version(0))),
            Ok(Saved::Kept(Version(1)))
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// Saves of many threads, each through a file of its own (so only the lock across
    /// processes keeps them apart), each reading and incrementing one counter until its save
    /// is kept: none is lost.
    #[test]
    fn compare_and_set_under_the_lock_loses_no_change_of_another_process() {
        const WRITERS: usize = 8;
        const EACH: usize = 10;
        let dir = scratch("lock");
        let path = dir.join("pins.json");
        std::thread::scope(|scope| {
            for _ in 0..WRITERS {
                let pins = PinFile::at(path.clone());
                scope.spawn(move || {
                    for _ in 0..EACH {
                        loop {
                            let now = pins.load("n#00").expect("read");
                            let count: usize = now
                                .as_ref()
                                .map_or(0, |s| s.record.parse().expect("a count"));
                            let read = now.map(|s| s.version);
                            match pins.save("n#00", &(count + 1).to_string(), read) {
                                Ok(Saved::Kept(_)) => break,
                                Ok(Saved::Conflict) => {}
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                });
            }
        });
        let total = PinFile::at(path)
            .load("n#00")
            .expect("read")
            .expect("a record");
        assert_eq!(total.record, (WRITERS * EACH).to_string());
        assert_eq!(total.version, Version((WRITERS * EACH) as u64));
        let _ = fs::remove_dir_all(&dir);
    }

    /// A file runvil cannot use is the Pack's error naming it, for load and save alike, so the
    /// Pack trusts nothing and nothing replaces the file.
    #[test]
    fn a_corrupt_or_shared_file_is_an_error_naming_it_never_no_record() {
        let dir = scratch("refused");
        let path = dir.join("pins.json");
        let pins = PinFile::at(path.clone());
        let shown = path.display().to_string();
        fs::create_dir_all(&dir).expect("dir");

        fs::write(&path, "{not json").expect("written");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        let corrupt = format!(
            "{shown} is not a runvil pins file; move it away or remove it, and runvil writes a \
             new one, trusting each server's tools as they are when it next lists them"
        );
        assert_eq!(pins.load("s#00"), Err(StoreError::new(&corrupt)));
        assert_eq!(
            pins.save("s#00", "{}", None),
            Err(StoreError::new(&corrupt))
        );
        assert_eq!(pins.check(), Err(corrupt));
        assert_eq!(fs::read_to_string(&path).expect("text"), "{not json");

        pins_with_mode(&path, 0o644);
        let wide = format!(
            "{shown} may be read by other users (its permissions are 644); run `chmod 600 \
             {shown}` or remove it"
        );
        assert_eq!(pins.load("s#00"), Err(StoreError::new(&wide)));
        assert_eq!(pins.save("s#00", "{}", None), Err(StoreError::new(&wide)));
        assert_eq!(mode(&path), 0o644, "left as it was");
        assert_eq!(
            fs::read_to_string(&path).expect("text"),
            r#"{"s#00": "kept"}"#
        );
        let _ = fs::remove_dir_all(&dir);
    }

    fn pins_with_mode(path: &Path, bits: u32) {
        fs::write(path, r#"{"s#00": "kept"}"#).expect("written");
        fs::set_permissions(path, fs::Permissions::from_mode(bits)).expect("chmod");
    }
}
