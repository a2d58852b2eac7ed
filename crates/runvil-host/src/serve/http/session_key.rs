//! The key 2025-11-25 session ids are sealed under (`--session-key-file`, else `session.key`
//! beside the pins file): 32 random bytes written as 64 hex characters. Every instance of a
//! gateway given the same file opens the others' sessions, so they can share a load balancer
//! with no stickiness.
//!
//! A missing file is created `0600` (its folder `0700` when runvil makes it) with a new key;
//! two instances creating it at once agree, since only one creation can succeed and the other
//! reads what it wrote. As ssh refuses a private key, the file is refused when other users may
//! read or change it, or when it belongs to another user. Errors name the file and what to do,
//! never a byte of it.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::pins::PinFile;
use crate::record_file::{DIR_MODE, FILE_MODE};

/// The key file's name beside the pins file, when `--session-key-file` is not given.
const DEFAULT_FILE_NAME: &str = "session.key";
/// The permission bits that let another user at the file.
const OTHERS: u32 = 0o077;
/// The key's characters: 32 bytes in hex.
const KEY_CHARS: usize = 64;

/// `session.key` beside the pins file, or `None` when no place for it is known (no `HOME`).
pub(crate) fn default_path() -> Option<PathBuf> {
    let pins = PinFile::default_place()?;
    Some(pins.path().parent()?.join(DEFAULT_FILE_NAME))
}

/// The key in `path`, made first when the file is missing.
pub(crate) fn read_or_create(path: &Path) -> Result<[u8; 32], String> {
    if let Some(key) = read(path) {
        return key;
    }
    let mut key = [0u8; 32];
    aws_lc_rs::rand::fill(&mut key).map_err(|_| "the system gave no random numbers".to_owned())?;
    let shown = path.display();
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(folder)
            .map_err(|e| format!("cannot make the folder of {shown}: {e}"))?;
    }
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path);
    match created {
        Ok(mut file) => {
            let text = format!("{}\n", hex(&key));
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| format!("cannot write {shown}: {e}"))?;
            Ok(key)
        }
        // Another instance made it first: its key is the one to share.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => read(path)
            .unwrap_or_else(|| Err(format!("{shown} disappeared while it was being made"))),
        Err(e) => Err(format!("cannot create {shown}: {e}")),
    }
}

/// The key in `path`, or an error that says what is wrong with the file; `None` when there
/// is no file.
fn read(path: &Path) -> Option<Result<[u8; 32], String>> {
    let shown = path.display();
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(format!("cannot read {shown}: {e}"))),
    };
    Some(check(path, &metadata).and_then(|()| {
        let mut text = String::new();
        // Two bytes past a key and its newline tell a key file from a longer one.
        fs::File::open(path)
            .and_then(|file| file.take(KEY_CHARS as u64 + 2).read_to_string(&mut text))
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        parse(text.strip_suffix('\n').unwrap_or(&text)).ok_or_else(|| {
            format!(
                "{shown} is not a session key (64 hex characters: 32 random bytes); \
                 move it away, and runvil makes a new one"
            )
        })
    }))
}

/// Refuses a key file that is not a file, that other users may read or change, or that
/// belongs to another user.
fn check(path: &Path, metadata: &fs::Metadata) -> Result<(), String> {
    let shown = path.display();
    if !metadata.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    let mode = metadata.permissions().mode();
    if mode & OTHERS != 0 {
        return Err(format!(
            "{shown} may be read or changed by other users (its permissions are {:o}); \
             run `chmod 600 {shown}`",
            mode & 0o777
        ));
    }
    // The process's own `/proc/self` belongs to the user it runs as: the standard library
    // has no getuid, and this needs neither a crate nor unsafe code. Where there is no /proc
    // the permissions above are the only check.
    if let Ok(me) = fs::metadata("/proc/self")
        && metadata.uid() != me.uid()
    {
        return Err(format!(
            "{shown} belongs to another user; the key file must be the user's own"
        ));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 hex characters as 32 bytes.
fn parse(text: &str) -> Option<[u8; 32]> {
    if text.len() != KEY_CHARS {
        return None;
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
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
                error.contains("is not a session key (64 hex characters"),
                "{error}"
            );
            assert!(!error.contains(&secret[..16]), "{error}");
        }
    }
}
