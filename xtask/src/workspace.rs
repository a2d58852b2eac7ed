//! The I/O that gathers the real workspace's data for the checks (`cargo metadata`, the
//! source files of `plugin_mcp`) and runs the tools the commands need (cargo, npm).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::metadata::Metadata;

use crate::public_api_policy::SourceFile;

/// The target the dependency checks resolve for (the platform `plugin_mcp` ships on).
pub const TARGET_PLATFORM: &str = "x86_64-unknown-linux-gnu";

/// The workspace root: the parent of this crate's manifest directory.
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs `cargo metadata` for [`TARGET_PLATFORM`] in `root` and parses its JSON.
pub fn cargo_metadata(root: &Path) -> Result<Metadata, String> {
    let command =
        format!("metadata --format-version 1 --locked --filter-platform {TARGET_PLATFORM}");
    serde_json::from_slice(&run_cargo(root, &command)?)
        .map_err(|error| format!("cargo metadata printed JSON that does not parse: {error}"))
}

/// Runs `cargo <command>` (its arguments separated by blanks, so none holds one) in `root`
/// offline and, if that fails (a cold registry cache), once more as cargo is configured; the
/// callers pass `--locked`, so the committed `Cargo.lock` is judged either way. Answers what
/// cargo printed on stdout.
pub fn run_cargo(root: &Path, command: &str) -> Result<Vec<u8>, String> {
    let run = |offline: bool| -> Result<Vec<u8>, String> {
        let output = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(command.split_whitespace())
            .envs(offline.then_some(("CARGO_NET_OFFLINE", "true")))
            .output()
            .map_err(|error| format!("cannot run {}: {error}", env!("CARGO")))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.success() {
            true => Ok(output.stdout),
            false => Err(format!(
                "cargo {command} failed ({}): {}",
                output.status,
                stderr.trim()
            )),
        }
    };
    run(true).or_else(|offline| {
        run(false).map_err(|online| format!("offline: {offline}\nthen: {online}"))
    })
}

/// Reads every `.rs` file under `<package_root>/src`, sorted by path, each named by its path
/// relative to `package_root` (so the crate root is `src/lib.rs`).
pub fn read_sources(package_root: &Path) -> Result<Vec<SourceFile>, String> {
    let mut files = Vec::new();
    let mut dirs = vec![package_root.join("src")];
    while let Some(dir) = dirs.pop() {
        let error = |error: std::io::Error| format!("cannot read {}: {error}", dir.display());
        for entry in fs::read_dir(&dir).map_err(error)? {
            let path = entry.map_err(error)?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                let text = fs::read_to_string(&path)
                    .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
                let relative = path.strip_prefix(package_root).unwrap_or(&path);
                let path = relative.to_string_lossy().into_owned();
                files.push(SourceFile { path, text });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Installs each npm package `(name, version)` into `dir` (created if needed) unless every
/// one is there already, without touching any lock file. A version is exact, or a prefix of
/// whole parts (`22` takes any 22.x.y); what npm installed is checked against it.
pub fn npm_install(dir: &Path, packages: &[(&str, &str)]) -> Result<(), String> {
    let installed = |name: &str| -> Option<String> {
        let manifest = dir.join("node_modules").join(name).join("package.json");
        let manifest: serde_json::Value = serde_json::from_slice(&fs::read(manifest).ok()?).ok()?;
        manifest["version"].as_str().map(str::to_owned)
    };
    let pinned = |(name, version): &(&str, &str)| {
        installed(name).is_some_and(|installed| is_pinned(&installed, version))
    };
    if packages.iter().all(pinned) {
        return Ok(());
    }
    let specs: Vec<String> = packages.iter().map(|(n, v)| format!("{n}@{v}")).collect();
    fs::create_dir_all(dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    eprintln!("installing {} into {}", specs.join(" "), dir.display());
    let status = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(dir)
        .args(&specs)
        .status()
        .map_err(|error| format!("cannot run npm (is Node.js installed?): {error}"))?;
    if !status.success() {
        return Err(format!("npm install failed ({status})"));
    }
    match packages.iter().find(|package| !pinned(package)) {
        Some((name, version)) => Err(format!(
            "npm installed {name} {} instead of {version}",
            installed(name).as_deref().unwrap_or("nothing")
        )),
        None => Ok(()),
    }
}

/// Whether the `installed` version is the pinned `version`: the same, or a release inside it
/// when it names only its first parts (`22` takes `22.11.0`, not `220.1.0`).
fn is_pinned(installed: &str, version: &str) -> bool {
    installed == version || installed.starts_with(&format!("{version}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_version_is_exact_or_its_leading_parts() {
        assert!(is_pinned("22.11.0", "22") && is_pinned("0.2.0-alpha.12", "0.2.0-alpha.12"));
        assert!(!is_pinned("220.1.0", "22") && !is_pinned("20.19.0", "22"));
        assert!(!is_pinned("0.2.0-alpha.120", "0.2.0-alpha.12"));
    }

    #[test]
    fn sources_are_every_rs_file_under_src_sorted_by_relative_path() {
        let root = std::env::temp_dir().join(format!("build-xtask-sources-{}", std::process::id()));
        let files = [
            ("src/lib.rs", "l"),
            ("src/a/m.rs", "m"),
            ("src/a/x.txt", "x"),
        ];
        for (path, text) in files {
            fs::create_dir_all(root.join(path).parent().expect("a parent")).expect("create");
            fs::write(root.join(path), text).expect("write");
        }
        let sources = read_sources(&root);
        let _ = fs::remove_dir_all(&root);
        let sources = sources.expect("read");
        let names: Vec<(&str, &str)> = sources
            .iter()
            .map(|f| (f.path.as_str(), f.text.as_str()))
            .collect();
        assert_eq!(names, [("src/a/m.rs", "m"), ("src/lib.rs", "l")]);
        assert!(
            read_sources(Path::new("/nonexistent")).is_err_and(|e| e.starts_with("cannot read"))
        );
    }
}
