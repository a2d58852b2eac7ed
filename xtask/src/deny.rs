//! `cargo run -p build-xtask -- deny [--db-source <dir>] [check...]`: cargo-deny's checks
//! (`deny.toml`: advisories, bans, licenses, sources), offline, against a snapshot of RustSec's
//! advisory database.
//!
//! The snapshot (`../shared/advisory-db` beside the workspace by default) is a plain folder,
//! while cargo-deny opens its database as a git repository (it reads the last commit's date)
//! at `<db-path>/<name derived from the database URL>`. So the folder is staged there, in the
//! git-ignored `.tools/advisory-db` that `deny.toml` names, as a repository of one commit dated
//! the snapshot's date; then `cargo deny --offline --workspace check [check...]` runs from the
//! workspace root (`--offline`: no fetch of the database nor of crates; `--workspace`: every
//! member's graph, as cargo unifies features across them). A stage of the same snapshot (the
//! same `SNAPSHOT` file) is kept, so plain `cargo deny --offline check` works afterwards.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::workspace;

/// The snapshot, relative to the workspace root.
pub const DEFAULT_DB_SOURCE: &str = "../shared/advisory-db";

/// `deny.toml`'s `[advisories] db-path`, relative to the workspace root.
pub const DB_PATH: &str = ".tools/advisory-db";

/// The folder cargo-deny opens under `db-path` for its default database,
/// `https://github.com/rustsec/advisory-db` (cargo-deny 0.20). A cargo-deny that names it
/// otherwise fails with "cannot change to '<db-path>/<its name>'".
pub const DB_DIR: &str = "advisory-db-3157b0e258782691";

/// The snapshot's file that says which commit of advisory-db it is and when it was taken
/// (`<commit> <YYYY-MM-DD>`).
pub const SNAPSHOT_FILE: &str = "SNAPSHOT";

/// How to get cargo-deny when it is missing.
pub const INSTALL_HINT: &str = "cargo install --locked cargo-deny";

/// `(commit, date)` from the snapshot's `SNAPSHOT` file (`<commit> <YYYY-MM-DD>`).
pub fn parse_snapshot(text: &str) -> Option<(&str, &str)> {
    let mut words = text.split_whitespace();
    let (commit, date) = (words.next()?, words.next()?);
    let valid_date = date.len() == 10
        && date.chars().enumerate().all(|(index, c)| {
            matches!(index, 4 | 7) == (c == '-') && (c == '-' || c.is_ascii_digit())
        });
    (valid_date && commit.chars().all(|c| c.is_ascii_hexdigit())).then_some((commit, date))
}

/// The subcommand's entry point.
pub fn command(args: &[String]) -> ExitCode {
    let root = workspace::root();
    let (source, checks) = match args {
        [flag, dir, checks @ ..] if flag == "--db-source" => (PathBuf::from(dir), checks),
        checks => (root.join(DEFAULT_DB_SOURCE), checks),
    };
    // Only the advisories need the database: bans, licenses and sources run without it.
    let advisories = checks.is_empty() || checks.iter().any(|c| c == "advisories");
    let staged = root.join(DB_PATH).join(DB_DIR);
    if advisories && let Err(error) = stage(&source, &staged) {
        eprintln!("deny: {error}");
        return ExitCode::FAILURE;
    }
    eprintln!(
        "deny: `cargo deny --offline --workspace check {}`",
        checks.join(" ")
    );
    let status = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["deny", "--offline", "--workspace", "check"])
        .args(checks)
        .status();
    if status.is_ok_and(|status| status.success()) {
        return ExitCode::SUCCESS;
    }
    eprintln!("deny: cargo deny failed, or is not installed (`{INSTALL_HINT}`)");
    ExitCode::FAILURE
}

/// Stages the snapshot `source` at `staged` as a git repository, unless it already is.
pub fn stage(source: &Path, staged: &Path) -> Result<(), String> {
    let snapshot = fs::read_to_string(source.join(SNAPSHOT_FILE)).map_err(|error| {
        format!(
            "no advisory database snapshot at {} ({error}); pass `--db-source <dir>` with a \
             copy of https://github.com/rustsec/advisory-db and its {SNAPSHOT_FILE} file",
            source.display()
        )
    })?;
    let (commit, date) = parse_snapshot(&snapshot)
        .ok_or_else(|| format!("{SNAPSHOT_FILE} is not `<commit> <YYYY-MM-DD>`: {snapshot}"))?;
    if fs::read_to_string(staged.join(SNAPSHOT_FILE)).is_ok_and(|staged| staged == snapshot) {
        return Ok(());
    }
    eprintln!("deny: staging advisory-db {commit} of {date} in {DB_PATH}");
    if staged.exists() {
        fs::remove_dir_all(staged)
            .map_err(|error| format!("cannot clear {}: {error}", staged.display()))?;
    }
    fs::create_dir_all(staged)
        .map_err(|error| format!("cannot create {}: {error}", staged.display()))?;
    // git copies the snapshot: committed from where it is, then checked out into the stage.
    let work_tree = format!("--work-tree={}", source.display());
    git(staged, &["init", "--quiet", "."], date)?;
    git(staged, &[&work_tree, "add", "--all"], date)?;
    let commit = [
        "commit",
        "--quiet",
        "--no-gpg-sign",
        "--message",
        "snapshot",
    ];
    git(staged, &[&[work_tree.as_str()][..], &commit].concat(), date)?;
    git(staged, &["reset", "--quiet", "--hard"], date)
}

/// `git -C <repository> <args>`, as build-xtask, on `date` (what a commit records).
fn git(repository: &Path, args: &[&str], date: &str) -> Result<(), String> {
    let (who, email, when) = (
        "build-xtask",
        "build-xtask@localhost",
        format!("{date}T00:00:00Z"),
    );
    let output = Command::new("git")
        .arg("-C")
        .arg(repository)
        .args(args)
        .envs([
            ("GIT_AUTHOR_NAME", who),
            ("GIT_AUTHOR_EMAIL", email),
            ("GIT_AUTHOR_DATE", &when),
        ])
        .envs([("GIT_COMMITTER_NAME", who), ("GIT_COMMITTER_EMAIL", email)])
        .env("GIT_COMMITTER_DATE", &when)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|error| format!("cannot run git (is it installed?): {error}"))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(format!(
        "git {} failed in {}: {}",
        args.join(" "),
        repository.display(),
        stderr.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_file_gives_commit_and_date() {
        assert_eq!(
            parse_snapshot("bf5c0d245a92671908518d7e765914d437954ed6 2026-08-21\n"),
            Some(("bf5c0d245a92671908518d7e765914d437954ed6", "2026-08-21"))
        );
        assert_eq!(parse_snapshot("bf5c0d2 21/08/2026"), None);
        assert_eq!(parse_snapshot("not-a-commit 2026-08-21"), None);
        assert_eq!(parse_snapshot(""), None);
    }

    #[test]
    fn deny_toml_names_the_staging_folder() {
        let deny_toml = include_str!("../../deny.toml");
        assert!(
            deny_toml.contains(&format!("db-path = \"{DB_PATH}\"")),
            "{deny_toml}"
        );
    }

    #[test]
    fn a_snapshot_is_staged_as_a_repository_dated_its_date_and_kept_until_it_changes() {
        let dir = std::env::temp_dir().join(format!("build-xtask-stage-{}", std::process::id()));
        let (source, staged) = (dir.join("snapshot"), dir.join("stage"));
        fs::create_dir_all(source.join("crates/h2")).expect("create the snapshot");
        fs::write(source.join("crates/h2/RUSTSEC-2099-0001.md"), "advisory").expect("write");
        fs::write(source.join(SNAPSHOT_FILE), "bf5c0d2 2026-08-21\n").expect("write");
        stage(&source, &staged).expect("staged");
        let date = Command::new("git")
            .arg("-C")
            .arg(&staged)
            .args(["show", "-s", "--format=%cI", "HEAD"])
            .output()
            .expect("git runs");
        assert_eq!(
            String::from_utf8_lossy(&date.stdout).trim(),
            "2026-08-21T00:00:00Z"
        );
        assert!(staged.join("crates/h2/RUSTSEC-2099-0001.md").is_file());
        // The same snapshot: the stage is kept; another: it is made again.
        fs::write(staged.join("marker"), "").expect("write");
        stage(&source, &staged).expect("kept");
        assert!(staged.join("marker").exists());
        fs::write(source.join(SNAPSHOT_FILE), "cafe 2026-09-01\n").expect("write");
        stage(&source, &staged).expect("staged again");
        assert!(!staged.join("marker").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_or_undated_snapshot_is_an_error() {
        let dir = std::env::temp_dir().join(format!("build-xtask-nostage-{}", std::process::id()));
        let error = stage(&dir.join("none"), &dir.join("stage")).expect_err("no snapshot");
        assert!(
            error.starts_with("no advisory database snapshot at "),
            "{error}"
        );
        fs::create_dir_all(&dir).expect("create");
        fs::write(dir.join(SNAPSHOT_FILE), "undated\n").expect("write");
        let error = stage(&dir, &dir.join("stage")).expect_err("undated");
        assert!(
            error.starts_with("SNAPSHOT is not `<commit> <YYYY-MM-DD>`"),
            "{error}"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
