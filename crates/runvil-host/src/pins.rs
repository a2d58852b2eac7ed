//! Where `runvil` keeps which tool definitions the user trusts: the pin store it lends the
//! Pack, one JSON file of the Pack's key (one per server) to its record, opaque to runvil.
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

use std::path::PathBuf;

use runvil_plugin::{PinStore, StoreError};

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
    fn load(&self, key: &str) -> Result<Option<String>, StoreError> {
        let mut records = self.file.read().map_err(StoreError::new)?;
        Ok(records.remove(key))
    }

    fn save(&self, key: &str, record: &str) -> Result<(), StoreError> {
        self.file
            .change(|records| {
                records.insert(key.to_owned(), record.to_owned());
            })
            .map_err(StoreError::new)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use super::*;
    use crate::record_file::{DIR_MODE, FILE_MODE};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("runvil-pins-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn records_are_kept_per_key_in_a_0600_file_an_absent_one_holding_none() {
        let dir = scratch("keep");
        let pins = PinFile::at(dir.join("runvil/pins.json"));
        assert_eq!(pins.load("s#00"), Ok(None));
        assert_eq!(pins.check(), Ok(()));
        let record = r#"{"version":1,"tools":{"echo":{"pin":"ab"}}}"#;
        pins.save("s#00", record).expect("saved");
        pins.save("t#11", "other").expect("saved");
        pins.save("t#11", "replaced").expect("saved");
        assert_eq!(pins.load("s#00"), Ok(Some(record.to_owned())));
        assert_eq!(pins.load("t#11"), Ok(Some("replaced".to_owned())));
        assert_eq!(pins.load("u#22"), Ok(None));
        assert_eq!(mode(&dir.join("runvil/pins.json")), FILE_MODE);
        assert_eq!(mode(&dir.join("runvil")), DIR_MODE);
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
        assert_eq!(pins.save("s#00", "{}"), Err(StoreError::new(&corrupt)));
        assert_eq!(pins.check(), Err(corrupt));
        assert_eq!(fs::read_to_string(&path).expect("text"), "{not json");

        pins_with_mode(&path, 0o644);
        let wide = format!(
            "{shown} may be read by other users (its permissions are 644); run `chmod 600 \
             {shown}` or remove it"
        );
        assert_eq!(pins.load("s#00"), Err(StoreError::new(&wide)));
        assert_eq!(pins.save("s#00", "{}"), Err(StoreError::new(&wide)));
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
