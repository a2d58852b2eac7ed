//! The I/O that gathers the real workspace's data for the checks (`cargo metadata`, the
//! source files of `plugin_mcp`) and runs the tools the commands need (cargo, npm).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::metadata::Metadata;

use crate::public_api_policy::SourceFile;

/// The target the dependency checks resolve for (the platform `plugin_mcp` ships on).
pub const TARGET_PLATFORM: &str = "x86_64-unknown-linux-gnu";

/// The workspace root: the parent of this crate's manifest directory.
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Runs `cargo metadata --format-version 1 --locked --filter-platform
/// x86_64-unknown-linux-gnu` in `root` and parses its JSON.
pub fn cargo_metadata(root: &Path) -> Result<Metadata, String> {
    let args = [
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        TARGET_PLATFORM,
    ];
    serde_json::from_slice(&run_cargo(root, &args)?)
        .map_err(|error| format!("cargo metadata printed JSON that does not parse: {error}"))
}

/// `cargo build [--release] -p build-xtask --bin <bin>` in `root`; the absolute path of the
/// binary. The path comes from cargo's own messages, so `CARGO_TARGET_DIR` and
/// `build.target-dir` are honoured.
pub fn build_bin(root: &Path, bin: &str, release: bool) -> Result<PathBuf, String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .arg("build")
        .args(release.then_some("--release"))
        .args(["-p", "build-xtask", "--bin", bin])
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", env!("CARGO")))?;
    if !output.status.success() {
        return Err(format!("building {bin} failed ({})", output.status));
    }
    /// The fields of cargo's `compiler-artifact` message that name a built executable.
    #[derive(Deserialize)]
    struct Artifact {
        target: Target,
        executable: Option<PathBuf>,
    }
    #[derive(Deserialize)]
    struct Target {
        name: String,
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Artifact>(line).ok())
        .find(|artifact| artifact.target.name == bin)
        .and_then(|artifact| artifact.executable)
        .ok_or_else(|| format!("cargo built no executable named {bin}"))
}

/// Runs `cargo <args>` in `root` with `--offline` and, if that fails (a cold registry cache),
/// once more without it; the callers pass `--locked`, so the committed `Cargo.lock` is judged
/// either way. Answers what cargo printed on stdout.
pub fn run_cargo(root: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let run = |offline: bool| -> Result<Vec<u8>, String> {
        // `--offline` is cargo's, so it goes before any `--` (after which come the arguments
        // of what cargo runs).
        let (own, passed_on) =
            args.split_at(args.iter().position(|a| *a == "--").unwrap_or(args.len()));
        let mut command = Command::new(env!("CARGO"));
        command.current_dir(root).args(own);
        if offline {
            command.arg("--offline");
        }
        command.args(passed_on);
        let output = command
            .output()
            .map_err(|error| format!("cannot run {}: {error}", env!("CARGO")))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(format!(
                "cargo {}{} failed ({}): {}",
                args.first().unwrap_or(&""),
                if offline { " --offline" } else { "" },
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    };
    run(true).or_else(|offline_error| {
        run(false).map_err(|online_error| {
            format!("{offline_error}\nretried without --offline: {online_error}")
        })
    })
}

/// Reads every `.rs` file under `<package_root>/src`, sorted by path, each named by its path
/// relative to `package_root` with `/` separators (so the crate root is `src/lib.rs`).
pub fn read_sources(package_root: &Path) -> Result<Vec<SourceFile>, String> {
    let mut paths = Vec::new();
    collect_rs_files(&package_root.join("src"), &mut paths)?;
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path)
                .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let relative = path.strip_prefix(package_root).unwrap_or(&path);
            let name = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Ok(SourceFile { path: name, text })
        })
        .collect()
}

fn collect_rs_files(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        fs::read_dir(dir).map_err(|error| format!("cannot list {}: {error}", dir.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|error| format!("cannot list {}: {error}", dir.display()))?
            .path();
        if path.is_dir() {
            collect_rs_files(&path, found)?;
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
    Ok(())
}

/// Installs npm `packages` into `dir` (created if needed) without touching any lock file.
pub fn npm_install(dir: &Path, packages: &[String]) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    eprintln!("installing {} into {}", packages.join(" "), dir.display());
    let status = Command::new("npm")
        .arg("install")
        .arg("--prefix")
        .arg(dir)
        .args(["--no-save", "--no-audit", "--no-fund"])
        .args(packages)
        .status()
        .map_err(|error| format!("cannot run npm (is Node.js installed?): {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("npm install failed ({status})"))
    }
}
