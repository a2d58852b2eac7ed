//! Other SDKs' MCP programs the tests run against the Pack and `runvil`, installed on first use
//! at the versions the repository pins, into folders git ignores: the Python SDK (pip, from
//! `tests/peers/requirements.txt`, into a virtual environment at `.tools/python-sdk`) and
//! Node packages (`npm ci` of a folder with its `package-lock.json`). A test machine needs
//! Python 3, Node and the registries, nothing set up.
//!
//! A process-wide lock keeps two tests of one binary from installing at once; cargo runs test
//! binaries one after another, and a copy of what was installed from (the requirements, the
//! lock file) beside it says an installation is complete.
//!
//! Where a peer cannot be had (no Python, no Node, no registry), its test says so in one line
//! and passes ([`unavailable`]); under `CI=true` that is a failure, so CI always runs them.

// Starting pip and npm is what this module is for.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Says that `test` cannot run because `why` (a peer cannot be had), in one line on stderr.
///
/// # Panics
///
/// Under `CI=true`, where every peer must be had.
pub fn unavailable(test: &str, why: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} must run under CI=true: {why}"
    );
    // Straight to stderr: the harness hides `eprintln!` of a passing test, and a skip
    // nobody sees would read as a pass.
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
}

/// The interpreter of the Python SDK's environment, once every pinned package is in it; why
/// not, when Python 3 or PyPI cannot be had.
pub fn python() -> Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(install_python).clone()
}

fn install_python() -> Result<PathBuf, String> {
    let tools = root().join(".tools");
    let dir = tools.join("python-sdk");
    fs::create_dir_all(&tools).map_err(|e| format!("cannot create .tools: {e}"))?;
    let requirements = root().join("tests/peers/requirements.txt");
    let wanted = fs::read_to_string(&requirements).expect("tests/peers/requirements.txt");
    let done = dir.join("installed-requirements.txt");
    let python = dir.join("bin/python");
    if fs::read_to_string(&done).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    let _ = fs::remove_dir_all(&dir);
    run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--requirement")
        .arg(&requirements))?;
    fs::write(&done, wanted).expect("record the installed requirements");
    Ok(python)
}

/// Installs the packages `folder`'s lock file pins into its `node_modules`, unless they are
/// there already; why not, when npm or its registry cannot be had.
pub fn npm(folder: &Path) -> Result<(), String> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let wanted = fs::read_to_string(folder.join("package-lock.json")).expect("package-lock.json");
    let installed = folder.join("node_modules/.installed-package-lock.json");
    if fs::read_to_string(&installed).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(());
    }
    run(Command::new("npm")
        // A package may ask for a newer Node than a fresh machine's 20 (the Inspector asks
        // for 22) and still run on it: a user's engine-strict must not refuse the install.
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--engine-strict=false",
        ])
        .current_dir(folder))?;
    fs::write(&installed, wanted).expect("record the installed lock file");
    Ok(())
}

/// Runs an installer to its end; why it failed, in one line (the installers' own accounts are
/// many lines: the last is the one that says why).
fn run(command: &mut Command) -> Result<(), String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let output = command
        .output()
        .map_err(|e| format!("{program} cannot be run ({e})"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    Err(format!(
        "{program} failed ({}: {}); the peers need Python 3, Node and their registries",
        output.status,
        last.unwrap_or("no message").trim()
    ))
}
