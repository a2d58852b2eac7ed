//! `cargo run -p build-xtask -- advisories [--db-source <dir>]`: checks `Cargo.lock` against a
//! RustSec advisory database snapshot, offline, with cargo-audit.
//!
//! The snapshot (`../shared/advisory-db` beside the workspace by default) is a plain folder,
//! while cargo-audit only opens a git repository; so the folder is copied into a temporary
//! git repository (one commit, dated the snapshot's date), and
//! `cargo audit --no-fetch --db <that repository> --file Cargo.lock --json` runs against it:
//! `--no-fetch` means no network and no staleness check. Each finding is reported with its
//! crate, version, advisory id, the versions that fix it, and whether the crate is in
//! `plugin_mcp`'s own tree (see `audit/dependencies.md`) or only in the rest of the workspace
//! (dev-dependencies, the Host, build-xtask). The temporary repository is removed afterwards.
//!
//! Exit code 0 when no vulnerability is found (unmaintained, unsound and yanked crates are
//! listed as warnings), 1 when one is or the check could not run.

// A command whose output (the report) is its result.
#![allow(clippy::print_stdout)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::Value;

use crate::audit::{self, Entry, Use};
use crate::workspace;

/// The snapshot, relative to the workspace root.
pub const DEFAULT_DB_SOURCE: &str = "../shared/advisory-db";

/// How to get cargo-audit when it is missing.
pub const INSTALL_HINT: &str = "cargo install --locked cargo-audit";

/// The file in the snapshot that says which commit of advisory-db it is and when it was taken
/// (`<commit> <YYYY-MM-DD>`).
pub const SNAPSHOT_FILE: &str = "SNAPSHOT";

/// One advisory that matched a crate of `Cargo.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `vulnerability`, or the warning kind (`unmaintained`, `unsound`, `yanked`).
    pub kind: String,
    /// The crate.
    pub package: String,
    /// Its version in `Cargo.lock`.
    pub version: String,
    /// The advisory id (`RUSTSEC-...`), empty for a yanked crate.
    pub id: String,
    /// The advisory's title.
    pub title: String,
    /// The version requirements that fix it (empty: no fixed release).
    pub patched: Vec<String>,
}

/// The parts of a cargo-audit JSON report the summary needs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// How many advisories the database held.
    pub advisory_count: u64,
    /// How many crates `Cargo.lock` has.
    pub dependency_count: u64,
    /// Vulnerabilities first, then warnings, each sorted.
    pub findings: Vec<Finding>,
}

/// Parses the JSON cargo-audit prints with `--json`.
pub fn parse_report(json: &Value) -> Result<Report, String> {
    let advisory_count = json
        .pointer("/database/advisory-count")
        .and_then(Value::as_u64)
        .ok_or("the cargo-audit report has no database.advisory-count")?;
    let dependency_count = json
        .pointer("/lockfile/dependency-count")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut findings: Vec<Finding> = json
        .pointer("/vulnerabilities/list")
        .and_then(Value::as_array)
        .ok_or("the cargo-audit report has no vulnerabilities.list")?
        .iter()
        .map(|item| finding("vulnerability", item))
        .collect();
    let mut warnings: Vec<Finding> = json
        .get("warnings")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .flat_map(|(kind, items)| {
            items
                .as_array()
                .into_iter()
                .flatten()
                .map(move |item| finding(kind, item))
        })
        .collect();
    let key = |finding: &Finding| {
        (
            finding.kind.clone(),
            finding.package.clone(),
            finding.version.clone(),
            finding.id.clone(),
        )
    };
    findings.sort_by_key(key);
    warnings.sort_by_key(key);
    findings.extend(warnings);
    Ok(Report {
        advisory_count,
        dependency_count,
        findings,
    })
}

fn finding(kind: &str, item: &Value) -> Finding {
    let field = |pointer: &str| {
        item.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Finding {
        kind: kind.to_owned(),
        package: field("/package/name"),
        version: field("/package/version"),
        id: field("/advisory/id"),
        title: field("/advisory/title"),
        patched: item
            .pointer("/versions/patched")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    }
}

/// One line per finding: what, where, whether a release fixes it, and whether `plugin_mcp`'s
/// tree (`tree`, from the inventory) has the crate.
pub fn describe(finding: &Finding, tree: &[Entry]) -> String {
    let place = match tree
        .iter()
        .find(|entry| entry.name == finding.package && entry.version == finding.version)
    {
        Some(entry) if entry.used == Use::Linked => "in plugin_mcp's tree, linked into the Pack",
        Some(_) => "in plugin_mcp's tree, build time only",
        None => "not in plugin_mcp's tree (dev-dependencies, the Host or build-xtask only)",
    };
    let fix = if finding.kind == "yanked" {
        "a newer release replaces it".to_owned()
    } else if finding.patched.is_empty() {
        "no fixed release".to_owned()
    } else {
        format!("fixed in {}", finding.patched.join(", "))
    };
    let id = if finding.id.is_empty() {
        String::new()
    } else {
        format!(" {}", finding.id)
    };
    let title = if finding.title.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", finding.title)
    };
    format!(
        "{}: {} {}{id}{title}; {fix}; {place}",
        finding.kind, finding.package, finding.version
    )
}

/// `(commit, date)` from the snapshot's `SNAPSHOT` file (`<commit> <YYYY-MM-DD>`).
pub fn parse_snapshot(text: &str) -> Option<(&str, &str)> {
    let mut words = text.split_whitespace();
    let commit = words.next()?;
    let date = words.next()?;
    let valid_date = date.len() == 10
        && date.chars().enumerate().all(|(index, c)| {
            matches!(index, 4 | 7) == (c == '-') && (c == '-' || c.is_ascii_digit())
        });
    (valid_date && commit.chars().all(|c| c.is_ascii_hexdigit())).then_some((commit, date))
}

/// The subcommand's entry point.
pub fn command(args: &[String]) -> ExitCode {
    let root = workspace::root();
    let source = match args {
        [] => root.join(DEFAULT_DB_SOURCE),
        [flag, dir] if flag == "--db-source" => PathBuf::from(dir),
        _ => {
            eprintln!("usage: cargo run -p build-xtask -- advisories [--db-source <dir>]");
            return ExitCode::from(2);
        }
    };
    match run(&root, &source) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("advisories: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the check; `Ok(true)` when no vulnerability was found.
fn run(root: &Path, source: &Path) -> Result<bool, String> {
    let root = &root
        .canonicalize()
        .map_err(|error| format!("cannot resolve the workspace root: {error}"))?;
    let version = cargo_audit_version().ok_or_else(|| {
        format!("cargo-audit is not installed; install it with `{INSTALL_HINT}` (about 10 minutes)")
    })?;
    let source = source.canonicalize().map_err(|error| {
        format!(
            "no advisory database at {} ({error}); pass `--db-source <dir>` with a copy of \
             https://github.com/rustsec/advisory-db",
            source.display()
        )
    })?;
    let snapshot_text = fs::read_to_string(source.join(SNAPSHOT_FILE)).unwrap_or_default();
    let snapshot = parse_snapshot(&snapshot_text);
    let repository =
        std::env::temp_dir().join(format!("build-xtask-advisory-db-{}", std::process::id()));
    let result = make_repository(&source, &repository, snapshot.map(|(_, date)| date))
        .and_then(|()| audit(root, &repository));
    let _ = fs::remove_dir_all(&repository);
    let (command_line, report) = result?;

    let tree = audit::generate(root).map(|(_, entries)| entries)?;
    println!("advisories: {version}");
    match snapshot {
        Some((commit, date)) => println!(
            "advisories: database {} ({} advisories), advisory-db commit {commit} taken {date}",
            source.display(),
            report.advisory_count
        ),
        None => println!(
            "advisories: database {} ({} advisories), no {SNAPSHOT_FILE} file says its date",
            source.display(),
            report.advisory_count
        ),
    }
    println!(
        "advisories: ran `{command_line}` (the database copied into a temporary git repository)"
    );
    let vulnerabilities = report
        .findings
        .iter()
        .filter(|finding| finding.kind == "vulnerability")
        .count();
    for finding in &report.findings {
        println!("  {}", describe(finding, &tree));
    }
    println!(
        "advisories: {vulnerabilities} vulnerabilit{} and {} warning(s) in {} crates of Cargo.lock",
        if vulnerabilities == 1 { "y" } else { "ies" },
        report.findings.len() - vulnerabilities,
        report.dependency_count
    );
    Ok(vulnerabilities == 0)
}

/// `cargo audit --version`, or `None` when cargo-audit is not installed.
fn cargo_audit_version() -> Option<String> {
    let output = Command::new(env!("CARGO"))
        .args(["audit", "--version"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Copies `source` (but any `.git`) to `repository` and commits it there, dated `date`.
fn make_repository(source: &Path, repository: &Path, date: Option<&str>) -> Result<(), String> {
    if repository.exists() {
        fs::remove_dir_all(repository)
            .map_err(|error| format!("cannot clear {}: {error}", repository.display()))?;
    }
    copy_dir(source, repository)?;
    git(repository, &["init", "--quiet"], None)?;
    git(repository, &["add", "--all"], None)?;
    git(
        repository,
        &[
            "-c",
            "user.name=build-xtask",
            "-c",
            "user.email=build-xtask@localhost",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--message",
            "advisory-db snapshot",
        ],
        date,
    )
}

fn git(repository: &Path, args: &[&str], date: Option<&str>) -> Result<(), String> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(repository)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    if let Some(date) = date {
        let timestamp = format!("{date}T00:00:00Z");
        command
            .env("GIT_AUTHOR_DATE", &timestamp)
            .env("GIT_COMMITTER_DATE", &timestamp);
    }
    let output = command
        .output()
        .map_err(|error| format!("cannot run git (is it installed?): {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|error| format!("cannot create {}: {error}", to.display()))?;
    let entries =
        fs::read_dir(from).map_err(|error| format!("cannot list {}: {error}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|error| format!("cannot list {}: {error}", from.display()))?;
        if entry.file_name() == ".git" {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_dir(&source, &target)?;
        } else {
            fs::copy(&source, &target)
                .map_err(|error| format!("cannot copy {}: {error}", source.display()))?;
        }
    }
    Ok(())
}

/// Runs cargo-audit on `root`'s `Cargo.lock` against `repository`; the command line (with the
/// database shown as `<temporary copy>`) and the parsed report.
fn audit(root: &Path, repository: &Path) -> Result<(String, Report), String> {
    let lockfile = root.join("Cargo.lock");
    let output = Command::new(env!("CARGO"))
        .arg("audit")
        .arg("--no-fetch")
        .arg("--db")
        .arg(repository)
        .arg("--file")
        .arg(&lockfile)
        .arg("--json")
        // Its progress and any error go straight to the user; stdout is the JSON report.
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("cannot run cargo audit: {error}"))?;
    let command_line = format!(
        "cargo audit --no-fetch --db {} --file {} --json",
        repository.display(),
        lockfile.display()
    );
    // Exit code 1 only means vulnerabilities were found; the JSON says which.
    let json: Value = serde_json::from_slice(&output.stdout).map_err(|error| {
        format!(
            "`{command_line}` failed ({}) without a JSON report ({error}); its errors are above",
            output.status
        )
    })?;
    Ok((command_line, parse_report(&json)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({
            "database": { "advisory-count": 1225, "last-commit": "bf5c", "last-updated": "x" },
            "lockfile": { "dependency-count": 300 },
            "vulnerabilities": {
                "found": true,
                "count": 1,
                "list": [{
                    "advisory": { "id": "RUSTSEC-2099-0001", "package": "h2", "title": "A bug" },
                    "versions": { "patched": [">=0.4.99"], "unaffected": [] },
                    "package": { "name": "h2", "version": "0.4.20" },
                }],
            },
            "warnings": {
                "unmaintained": [{
                    "kind": "unmaintained",
                    "advisory": { "id": "RUSTSEC-2099-0002", "title": "gone" },
                    "versions": { "patched": [] },
                    "package": { "name": "paste", "version": "1.0.15" },
                }],
                "yanked": [{ "kind": "yanked", "package": { "name": "old", "version": "0.1.0" } }],
            },
        })
    }

    fn entry(name: &str, version: &str, used: Use) -> Entry {
        Entry {
            name: name.to_owned(),
            version: version.to_owned(),
            license: "MIT".to_owned(),
            source: "crates.io".to_owned(),
            used,
            why: "via reqwest".to_owned(),
        }
    }

    #[test]
    fn a_report_is_parsed_vulnerabilities_first() {
        let parsed = parse_report(&report()).expect("report");
        assert_eq!(parsed.advisory_count, 1225);
        assert_eq!(parsed.dependency_count, 300);
        let kinds: Vec<&str> = parsed.findings.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["vulnerability", "unmaintained", "yanked"]);
        assert_eq!(parsed.findings[0].patched, [">=0.4.99"]);
        assert!(parse_report(&json!({ "error": "no database" })).is_err());
    }

    #[test]
    fn a_finding_says_whether_it_is_fixed_and_in_our_tree() {
        let parsed = parse_report(&report()).expect("report");
        let tree = [
            entry("h2", "0.4.20", Use::Linked),
            entry("paste", "1.0.15", Use::BuildTime),
        ];
        let lines: Vec<String> = parsed.findings.iter().map(|f| describe(f, &tree)).collect();
        assert_eq!(
            lines,
            [
                "vulnerability: h2 0.4.20 RUSTSEC-2099-0001 \"A bug\"; fixed in >=0.4.99; in \
                 plugin_mcp's tree, linked into the Pack",
                "unmaintained: paste 1.0.15 RUSTSEC-2099-0002 \"gone\"; no fixed release; in \
                 plugin_mcp's tree, build time only",
                "yanked: old 0.1.0; a newer release replaces it; not in plugin_mcp's tree \
                 (dev-dependencies, the Host or build-xtask only)",
            ]
        );
        // Another version of a crate in the tree is not "in the tree".
        assert!(
            describe(&parsed.findings[0], &[entry("h2", "0.4.21", Use::Linked)]).ends_with(
                "not in plugin_mcp's tree (dev-dependencies, the Host or build-xtask only)"
            )
        );
    }

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
}
