//! Who may change a file of runvil's: the owner and permission rules that its record files,
//! their lock files, the gateway's settings and audit files are held to, as ssh's
//! `StrictModes` holds a key, and the permissions its key files are made with. One module, so
//! no file of runvil's drifts from the others on who may read or change it. (A key file is
//! stricter on its owner: only the user running runvil may own it, not root as well.)

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The file's permissions: the user reads and writes, nobody else.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Its folder's, when runvil makes it.
pub(crate) const DIR_MODE: u32 = 0o700;
/// The permission bits that let another user (the group or anyone) at the file.
pub(crate) const OTHERS: u32 = 0o077;
/// Of those, the ones that let another user read it.
pub(crate) const OTHERS_READ: u32 = 0o044;
/// The permission bits that let another user add, replace or remove a file in a folder.
pub(crate) const OTHERS_WRITE: u32 = 0o022;
/// The sticky bit: in a folder that has it, only a file's owner may replace or remove it.
const STICKY: u32 = 0o1000;

/// Refuses the folder of `path` (a file only the user may use, a `noun`) when another user owns
/// it or may write in it: whoever may change the folder may replace or remove the file. An
/// absent folder is no refusal (the first write makes it, `0700`). The error names the folder
/// and what to do.
pub(crate) fn check_folder(path: &Path, noun: &str) -> Result<(), String> {
    let place = folder_of(path);
    let (folder, shown) = (place.display(), path.display());
    let metadata = match fs::metadata(place) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {folder}, the folder of {shown}: {e}")),
    };
    let elsewhere = format!("or keep the {} in a folder of your own", noun);
    if let Some(owner) = foreign_owner(&metadata) {
        return Err(format!(
            "{folder}, the folder of {shown}, may be changed by another user ({owner}); run \
             `chown {} {folder}` {elsewhere}",
            running_user()
        ));
    }
    let mode = metadata.permissions().mode();
    if mode & OTHERS_WRITE != 0 && mode & STICKY == 0 {
        return Err(format!(
            "{folder}, the folder of {shown}, may be changed by other users (its \
             permissions are {:o}); run `chmod {DIR_MODE:o} {folder}` {elsewhere}",
            mode & 0o777
        ));
    }
    Ok(())
}

/// The folder `path` is in, as written: `.` for a bare name.
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The user this process runs as (its effective user id, which the kernel checks a file's
/// permissions against).
pub(crate) fn running_user() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Who owns `metadata`'s file or folder, said for an error, when it is neither the user
/// running runvil nor root.
pub(crate) fn foreign_owner(metadata: &fs::Metadata) -> Option<String> {
    let (owner, me) = (metadata.uid(), running_user());
    (owner != me && owner != ROOT)
        .then(|| format!("its owner is user {owner}, and runvil runs as user {me}"))
}

/// The superuser's id: whatever root owns, root could change whoever owned it.
const ROOT: u32 = 0;
