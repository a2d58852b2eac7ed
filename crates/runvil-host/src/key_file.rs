//! A key kept in a file, shared by the processes that must agree on it (the store key of
//! `--store-key-file`, which seals credentials in the database; the gateway's session key):
//! 32 random bytes written as 64 hex characters and a newline, readable by the user alone.
//!
//! A missing file is created `0600` (in a `0700` folder when runvil makes it) with a new key
//! from the system's generator, published whole (written beside it, then linked into place,
//! so two processes starting at once end with the one key the first published). An existing
//! file is refused when it is not a file, when others may read or change it, when another user
//! owns it, or when it does not hold exactly a key; its errors name the file and never show
//! what it holds. The key is wiped from memory when dropped.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use zeroize::Zeroizing;

use crate::file_owner::{self, DIR_MODE, FILE_MODE, OTHERS};

/// The key's length in bytes.
pub(crate) const KEY_BYTES: usize = 32;

/// The key in the file at `path`, created when missing. `flag` names the setting in errors
/// (`--store-key-file`).
pub(crate) fn load_or_create(
    path: &Path,
    flag: &str,
) -> Result<Zeroizing<[u8; KEY_BYTES]>, String> {
    let shown = path.display();
    match fs::symlink_metadata(path) {
        Ok(_) => read(path, flag),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create(path).map_err(|e| format!("{flag}: cannot write {shown}: {e}"))?;
            read(path, flag)
        }
        Err(e) => Err(format!("{flag}: cannot read {shown}: {e}")),
    }
}

fn read(path: &Path, flag: &str) -> Result<Zeroizing<[u8; KEY_BYTES]>, String> {
    let shown = path.display();
    let metadata = fs::metadata(path).map_err(|e| format!("{flag}: cannot read {shown}: {e}"))?;
    if !metadata.is_file() {
        return Err(format!("{flag}: {shown} is not a file"));
    }
    let mode = metadata.permissions().mode();
    if mode & OTHERS != 0 {
        return Err(format!(
            "{flag}: {shown} may be read or changed by other users (its permissions are {:o}); \
             run `chmod 600 {shown}`",
            mode & 0o777
        ));
    }
    if metadata.uid() != file_owner::running_user() {
        return Err(format!(
            "{flag}: {shown} belongs to another user (uid {}), who could change it",
            metadata.uid()
        ));
    }
    let mut text = Zeroizing::new(String::new());
    fs::File::open(path)
        .and_then(|file| file.take(4 * KEY_BYTES as u64).read_to_string(&mut text))
        .map_err(|e| format!("{flag}: cannot read {shown}: {e}"))?;
    decode(text.trim_end()).ok_or_else(|| {
        format!(
            "{flag}: {shown} is not a key: it must hold {} hex characters ({KEY_BYTES} random \
             bytes), as runvil writes it when the file is missing",
            2 * KEY_BYTES
        )
    })
}

fn decode(text: &str) -> Option<Zeroizing<[u8; KEY_BYTES]>> {
    let mut key = Zeroizing::new([0u8; KEY_BYTES]);
    if text.len() != 2 * KEY_BYTES || !text.is_ascii() {
        return None;
    }
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(key)
}

/// Writes a new key beside `path` and links it into place, unless a key got there first.
fn create(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)?;
    }
    let mut key = Zeroizing::new([0u8; KEY_BYTES]);
    fs::File::open("/dev/urandom")?.read_exact(key.as_mut_slice())?;
    let mut text = Zeroizing::new(String::with_capacity(2 * KEY_BYTES + 1));
    for byte in key.iter() {
        text.push_str(&format!("{byte:02x}"));
    }
    text.push('\n');
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".new.{}", std::process::id()));
    let fresh = path.with_file_name(name);
    let _ = fs::remove_file(&fresh);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&fresh)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
        })
        .and_then(|()| fs::hard_link(&fresh, path));
    let _ = fs::remove_file(&fresh);
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("runvil-key-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_missing_key_is_made_0600_and_read_back_the_same() {
        let dir = scratch("made");
        let path = dir.join("keys/store.key");
        let made = load_or_create(&path, "--store-key-file").expect("made");
        let again = load_or_create(&path, "--store-key-file").expect("read");
        assert_eq!(*made, *again);
        assert_ne!(*made, [0u8; KEY_BYTES]);
        let text = fs::read_to_string(&path).expect("text");
        assert_eq!(text.len(), 2 * KEY_BYTES + 1);
        assert!(
            text.trim_end().bytes().all(|b| b.is_ascii_hexdigit()),
            "{text}"
        );
        let mode = |p: &Path| fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&path), FILE_MODE);
        assert_eq!(mode(&dir.join("keys")), DIR_MODE);
        assert_eq!(
            fs::read_dir(dir.join("keys")).expect("dir").count(),
            1,
            "nothing left beside it"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_loose_or_malformed_key_file_is_refused_without_showing_it() {
        let dir = scratch("refused");
        fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("store.key");
        let shown = path.display();
        let secret = "ab".repeat(KEY_BYTES);
        fs::write(&path, &secret).expect("written");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(
            load_or_create(&path, "--store-key-file").expect_err("loose"),
            format!(
                "--store-key-file: {shown} may be read or changed by other users (its \
                 permissions are 640); run `chmod 600 {shown}`"
            )
        );
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(
            *load_or_create(&path, "k").expect("a key"),
            [0xab; KEY_BYTES]
        );
        let not_a_key = format!(
            "k: {shown} is not a key: it must hold 64 hex characters (32 random bytes), as \
             runvil writes it when the file is missing"
        );
        for text in [
            &secret[..62],
            &format!("{secret}00"),
            &"zz".repeat(KEY_BYTES),
            "",
        ] {
            fs::write(&path, text).expect("written");
            let error = load_or_create(&path, "k").expect_err("not a key");
            assert_eq!(error, not_a_key);
            assert!(text.is_empty() || !error.contains(&text[..16]));
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
