//! The key 2025-11-25 session ids are sealed under (`--session-key-file`, else `session.key`
//! beside the pins file): 32 random bytes written as 64 hex characters. Every instance of a
//! gateway given the same file opens the others' sessions, so they can share a load balancer
//! with no stickiness.
//!
//! The file is a [`key_file`](crate::key_file), as the store key is: created `0600` with a new
//! key when missing (two instances starting at once end with the one key the first published),
//! refused when others may read or change it or another user owns it, its errors naming the
//! file and never a byte of it.

use std::path::{Path, PathBuf};

use crate::key_file;
use crate::pins::PinFile;

/// The key file's name beside the pins file, when `--session-key-file` is not given.
const DEFAULT_FILE_NAME: &str = "session.key";

/// `session.key` beside the pins file, or `None` when no place for it is known (no `HOME`).
pub(crate) fn default_path() -> Option<PathBuf> {
    let pins = PinFile::default_place()?;
    Some(pins.path().parent()?.join(DEFAULT_FILE_NAME))
}

/// The key in `path`, made first when the file is missing.
pub(crate) fn read_or_create(path: &Path) -> Result<[u8; 32], String> {
    key_file::load_or_create(path, "--session-key-file").map(|key| *key)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("runvil-key-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir.join("state").join("session.key")
    }

    #[test]
    fn a_missing_key_is_made_0600_and_read_back_the_same() {
        let path = scratch("made");
        let key = read_or_create(&path).expect("made");
        let mode = fs::metadata(&path).expect("there").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let folder = fs::metadata(path.parent().expect("a folder")).expect("there");
        assert_eq!(folder.permissions().mode() & 0o777, 0o700);
        let text = fs::read_to_string(&path).expect("text");
        assert_eq!(text.len(), 65);
        assert_eq!(read_or_create(&path), Ok(key));
    }

    #[test]
    fn a_loose_or_malformed_key_file_is_refused_naming_it_never_its_bytes() {
        let path = scratch("refused");
        fs::create_dir_all(path.parent().expect("a folder")).expect("made");
        let secret = "ab".repeat(32);
        fs::write(&path, &secret).expect("written");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        let error = read_or_create(&path).expect_err("refused");
        assert!(
            error.contains("may be read or changed by other users (its permissions are 640)"),
            "{error}"
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(read_or_create(&path), Ok([0xab; 32]));
        for bad in [
            &secret[..63],
            &format!("{secret}0"),
            &format!("{}zz", &secret[..62]),
        ] {
            fs::write(&path, bad).expect("written");
            let error = read_or_create(&path).expect_err("refused");
            assert!(
                error.contains("is not a key: it must hold 64 hex characters"),
                "{error}"
            );
            assert!(!error.contains(&secret[..16]), "{error}");
        }
    }
}
