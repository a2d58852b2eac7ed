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
//! member's graph, as cargo unifies features across them). Staging takes about two seconds, so
//! it is done anew each time; the stage stays, so plain `cargo deny --offline check` works
//! afterwards.
//!
//! Then it proves the checks it ran are live ([`crafted`]): with `bans`, cargo-deny must fail
//! on a crafted graph holding every banned crate and feature; with `advisories`, on crafted
//! metadata holding a crate with a known vulnerability. These need cargo-deny, which only this
//! subcommand may assume (CI installs it before running it): `cargo test` runs on a machine
//! without it, so no test runs them.

pub mod crafted;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workspace;

/// The snapshot, relative to the workspace root.
pub const DEFAULT_DB_SOURCE: &str = "../shared/advisory-db";

/// `deny.toml`'s `[advisories] db-path`, relative to the workspace root.
pub const DB_PATH: &str = ".tools/advisory-db";

/// The folder cargo-deny opens under `db-path` for its default database,
/// `https://github.com/rustsec/advisory-db` (cargo-deny 0.20). A cargo-deny that names it
/// otherwise fails with `cannot change to '<db-path>/<its name>'`.
pub const DB_DIR: &str = "advisory-db-3157b0e258782691";

/// The snapshot's file that says which commit of advisory-db it is and when it was taken
/// (`<commit> <YYYY-MM-DD>`).
pub const SNAPSHOT_FILE: &str = "SNAPSHOT";

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

/// The subcommand's entry point: `Ok(false)` if cargo-deny found a problem or could not run.
pub fn command(args: &[String]) -> Result<bool, String> {
    let root = workspace::root();
    let (source, checks) = match args {
        [flag, dir, checks @ ..] if flag == "--db-source" => (PathBuf::from(dir), checks),
        checks => (root.join(DEFAULT_DB_SOURCE), checks),
    };
    // Only the advisories need the database: bans, licenses and sources run without it.
    if checks.is_empty() || checks.iter().any(|c| c == "advisories") {
        stage(&source, &root.join(DB_PATH).join(DB_DIR))?;
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
    let mut passed = status.is_ok_and(|status| status.success());
    if !passed {
        eprintln!(
            "deny: cargo deny failed, or is not installed (`cargo install --locked cargo-deny`)"
        );
    }
    let scratch = std::env::temp_dir().join(format!("build-xtask-deny-{}", std::process::id()));
    let wanted = |check: &str| checks.is_empty() || checks.iter().any(|c| c == check);
    let mut proofs: Vec<(&str, Result<(), String>)> = Vec::new();
    if wanted("bans") {
        let proof = crafted::bans(&scratch.join("bans"), &root.join("deny.toml"));
        proofs.push(("bans", proof));
    }
    if wanted("advisories") {
        let proof = crafted::advisories(&root, &scratch.join("advisory-metadata.json"));
        proofs.push(("advisories", proof));
    }
    let _ = fs::remove_dir_all(&scratch);
    for (check, proof) in proofs {
        match proof {
            Ok(()) => eprintln!("deny: {check} is live: cargo deny fails on its crafted graph"),
            Err(error) => {
                eprintln!("deny: {check} is not proven live: {error}");
                passed = false;
            }
        }
    }
    Ok(passed)
}

/// Stages the snapshot `source` at `staged` as a git repository, replacing what is there.
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
    eprintln!("deny: staging advisory-db {commit} of {date} in {DB_PATH}");
    if staged.exists() {
        fs::remove_dir_all(staged)
            .map_err(|error| format!("cannot clear {}: {error}", staged.display()))?;
    }
    fs::create_dir_all(staged)
        .map_err(|error| format!("cannot create {}: {error}", staged.display()))?;
    // git copies the snapshot: committed from where it is, then checked out into the stage,
    // as build-xtask on the snapshot's date (what cargo-deny reads).
    let work_tree = format!("--work-tree={}", source.display());
    let commit = ["commit", "--quiet", "--no-gpg-sign", "-m", "snapshot"];
    for args in [
        &["init", "--quiet", "."][..],
        &[&work_tree, "add", "--all"],
        &[&[work_tree.as_str()][..], &commit].concat(),
        &["reset", "--quiet", "--hard"],
    ] {
        let when = format!("{date}T00:00:00Z");
        let output = Command::new("git")
            .args([
                "-c",
                "user.name=build-xtask",
                "-c",
                "user.email=build-xtask@localhost",
            ])
            .arg("-C")
            .arg(staged)
            .args(args)
            .envs([("GIT_AUTHOR_DATE", &when), ("GIT_COMMITTER_DATE", &when)])
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .map_err(|error| format!("cannot run git (is it installed?): {error}"))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("git {} failed: {}", args.join(" "), stderr.trim()));
        }
    }
    Ok(())
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
        let db_path = format!("db-path = \"{DB_PATH}\"");
        assert!(include_str!("../../deny.toml").contains(&db_path));
    }

    #[test]
    fn a_snapshot_is_staged_as_a_repository_dated_its_date_and_replaces_the_last() {
        let dir = std::env::temp_dir().join(format!("build-xtask-stage-{}", std::process::id()));
        let (source, staged) = (dir.join("snapshot"), dir.join("stage"));
        fs::create_dir_all(source.join("crates/h2")).expect("create the snapshot");
        fs::write(source.join("crates/h2/RUSTSEC-2099-0001.md"), "advisory").expect("write");
        fs::write(source.join(SNAPSHOT_FILE), "bf5c0d2 2026-08-21\n").expect("write");
        stage(&source, &staged).expect("staged");
        let show = ["show", "-s", "--format=%cI", "HEAD"];
        let date = Command::new("git").current_dir(&staged).args(show).output();
        let date = date.expect("git runs").stdout;
        assert_eq!(
            String::from_utf8_lossy(&date).trim(),
            "2026-08-21T00:00:00Z"
        );
        assert!(staged.join("crates/h2/RUSTSEC-2099-0001.md").is_file());
        fs::write(staged.join("marker"), "").expect("write");
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
