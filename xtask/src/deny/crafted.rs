//! Proof that `deny.toml` is live: cargo-deny, with the project's `deny.toml`, must fail on
//! crafted graphs that break its rules. The `deny` subcommand runs them after cargo-deny's own
//! checks, so they need cargo-deny only where it is installed (CI installs it before that
//! step); `cargo test -p build-xtask` runs the parts that need no cargo-deny (the crafted
//! inputs and the reading of a report).
//!
//! - [`bans`]: a workspace of local stand-ins carrying the banned names and features
//!   (cargo-deny matches crates by name, so no registry is needed) that enables every
//!   forbidden feature and depends on every banned crate; `cargo deny check bans` must report
//!   each one.
//! - [`advisories`]: crafted `cargo metadata` holding h2 0.4.1, which has RUSTSEC-2024-0003;
//!   `cargo deny check advisories` must report it. It needs the staged advisory snapshot.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// `crate: features` the crafted graph enables, one crate a line; a crate with no feature is
/// banned whole. These are `deny.toml`'s bans, written out independently of it.
pub const FORBIDDEN: &str = "jsonschema: resolve-http resolve-file resolve-async
reqwest: gzip brotli zstd deflate native-tls native-tls-vendored __native-tls blocking
serde_json: unbounded_depth
openssl:
openssl-sys:
native-tls:";

/// The advisory the crafted advisory graph must be reported for, and the crate that has it.
pub const KNOWN_ADVISORY: &str = "RUSTSEC-2024-0003";
const VULNERABLE_H2: &str = "0.4.1";

/// One banned crate and the features of it the crafted graph enables.
#[derive(Debug, PartialEq, Eq)]
pub struct Forbidden<'a> {
    /// The crate's name.
    pub name: &'a str,
    /// Its forbidden features; none when the crate is banned whole.
    pub features: Vec<&'a str>,
}

/// Parses [`FORBIDDEN`]-shaped text. A line that is not `crate: features` is an error naming
/// it, never skipped: a crafted graph missing a ban would prove nothing about it.
pub fn parse_forbidden(text: &str) -> Result<Vec<Forbidden<'_>>, String> {
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            let (name, features) = line.split_once(':').ok_or_else(|| {
                format!(
                    "line {} of the forbidden list is not `crate: features`: {line:?}",
                    index + 1
                )
            })?;
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) {
                return Err(format!(
                    "line {} of the forbidden list names no crate: {line:?}",
                    index + 1
                ));
            }
            Ok(Forbidden {
                name,
                features: features.split_whitespace().collect(),
            })
        })
        .collect()
}

/// The files of the crafted bans workspace, relative to its folder, with their text.
pub fn bans_workspace(forbidden: &[Forbidden<'_>]) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut dependencies = String::from("[dependencies]\n");
    for Forbidden { name, features } in forbidden {
        let declared: String = features.iter().map(|f| format!("\"{f}\" = []\n")).collect();
        files.push((
            Path::new(name).join("Cargo.toml"),
            manifest(name, &format!("[features]\n{declared}")),
        ));
        files.push((Path::new(name).join("src/lib.rs"), String::new()));
        dependencies.push_str(&format!(
            "{name} = {{ path = \"{name}\", features = {features:?} }}\n"
        ));
    }
    files.push((
        PathBuf::from("Cargo.toml"),
        manifest("crafted", &format!("{dependencies}[workspace]\n")),
    ));
    files.push((PathBuf::from("src/lib.rs"), String::new()));
    files
}

/// A package manifest: unpublished (so path dependencies are no wildcard for deny.toml).
fn manifest(name: &str, rest: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n{rest}"
    )
}

/// What a cargo-deny report of the crafted bans graph lacks: one line per ban it did not
/// report. Empty means every ban held.
pub fn missing_bans(forbidden: &[Forbidden<'_>], report: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for Forbidden { name, features } in forbidden {
        if features.is_empty() {
            let banned = format!("crate '{name} = 0.1.0' is explicitly banned");
            if !report.contains(&banned) {
                missing.push(format!("{name} is not reported as banned"));
            }
        }
        for feature in features {
            let denied =
                format!("feature '{feature}' for crate '{name} = 0.1.0' is explicitly denied");
            if !report.contains(&denied) {
                missing.push(format!("{name}/{feature} is not reported as denied"));
            }
        }
    }
    missing
}

/// Writes the crafted bans workspace under `dir` and runs cargo-deny's bans check on it with
/// `deny_toml`: `Ok(())` when it failed on every ban, else what held or why it could not run.
pub fn bans(dir: &Path, deny_toml: &Path) -> Result<(), String> {
    let forbidden = parse_forbidden(FORBIDDEN)?;
    let _ = fs::remove_dir_all(dir);
    for (path, text) in bans_workspace(&forbidden) {
        write(&dir.join(path), &text)?;
    }
    let output = cargo_deny(dir, |command| {
        command
            .arg("--config")
            .arg(deny_toml)
            .args(["check", "bans"]);
    });
    let _ = fs::remove_dir_all(dir);
    let output = output?;
    let report = String::from_utf8_lossy(&output.stderr);
    if output.status.success() {
        return Err(format!("cargo-deny passed the crafted graph:\n{report}"));
    }
    match missing_bans(&forbidden, &report).as_slice() {
        [] => Ok(()),
        missing => Err(format!("{}\n{report}", missing.join("\n"))),
    }
}

/// `cargo metadata` of a crafted workspace that depends on h2 [`VULNERABLE_H2`] only.
pub fn advisory_metadata() -> Value {
    let registry = "registry+https://github.com/rust-lang/crates.io-index";
    let crafted = "path+file:///crafted#crafted@0.1.0";
    let h2 = format!("{registry}#h2@{VULNERABLE_H2}");
    let package = |name: &str, version: &str, id: &str, source: Option<&str>, dependencies| {
        json!({ "name": name, "version": version, "id": id, "source": source, "targets": [],
            "dependencies": dependencies, "features": {}, "manifest_path": format!("/{name}/Cargo.toml") })
    };
    let on_h2 = json!([{ "name": "h2", "source": registry, "req": "^0.4", "kind": null,
        "optional": false, "uses_default_features": true, "features": [], "target": null,
        "rename": null, "registry": null }]);
    json!({
        "packages": [
            package("crafted", "0.1.0", crafted, None, on_h2),
            package("h2", VULNERABLE_H2, &h2, Some(registry), json!([])),
        ],
        "workspace_members": [crafted], "workspace_root": "/crafted", "version": 1,
        "target_directory": "/crafted/target",
        "resolve": { "root": crafted, "nodes": [
            { "id": crafted, "dependencies": [h2], "features": [],
              "deps": [{ "name": "h2", "pkg": h2, "dep_kinds": [{ "kind": null, "target": null }] }] },
            { "id": h2, "dependencies": [], "deps": [], "features": [] },
        ] },
    })
}

/// Runs cargo-deny's advisories check from `root` (where `deny.toml` and its staged database
/// are) on [`advisory_metadata`], written to `metadata_path`: `Ok(())` when it reported
/// [`KNOWN_ADVISORY`].
pub fn advisories(root: &Path, metadata_path: &Path) -> Result<(), String> {
    write(metadata_path, &advisory_metadata().to_string())?;
    let output = cargo_deny(root, |command| {
        command
            .arg("--metadata-path")
            .arg(metadata_path)
            .args(["check", "advisories"]);
    });
    let _ = fs::remove_file(metadata_path);
    let output = output?;
    let report = String::from_utf8_lossy(&output.stderr);
    if output.status.success() || !report.contains(KNOWN_ADVISORY) {
        return Err(format!(
            "cargo-deny did not report {KNOWN_ADVISORY} for h2 {VULNERABLE_H2}:\n{report}"
        ));
    }
    Ok(())
}

/// `cargo deny --offline --color never` in `dir`, with the arguments `args` adds.
fn cargo_deny(dir: &Path, args: impl FnOnce(&mut Command)) -> Result<Output, String> {
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(dir)
        .args(["deny", "--offline", "--color", "never"]);
    args(&mut command);
    let output = command
        .output()
        .map_err(|error| format!("cannot run {}: {error}", env!("CARGO")))?;
    if String::from_utf8_lossy(&output.stderr).contains("no such command") {
        return Err("cargo-deny is not installed: `cargo install --locked cargo-deny`".to_owned());
    }
    Ok(output)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    }
    fs::write(path, text).map_err(|error| format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forbidden_list_parses_and_a_malformed_line_fails_loudly() {
        let forbidden = parse_forbidden(FORBIDDEN).expect("the list parses");
        assert_eq!(forbidden.len(), 6);
        assert_eq!(
            forbidden[2],
            Forbidden {
                name: "serde_json",
                features: vec!["unbounded_depth"]
            }
        );
        assert_eq!(
            forbidden[3],
            Forbidden {
                name: "openssl",
                features: vec![]
            }
        );
        let error = parse_forbidden("openssl:\nnative-tls").expect_err("no colon");
        assert_eq!(
            error,
            "line 2 of the forbidden list is not `crate: features`: \"native-tls\""
        );
        let error = parse_forbidden(": gzip").expect_err("no crate");
        assert!(error.starts_with("line 1 of the forbidden list names no crate"));
    }

    #[test]
    fn the_crafted_workspace_enables_every_forbidden_feature() {
        let forbidden = parse_forbidden(FORBIDDEN).expect("the list parses");
        let files = bans_workspace(&forbidden);
        let root = files
            .iter()
            .find(|(path, _)| path == Path::new("Cargo.toml"))
            .map(|(_, text)| text)
            .expect("a root manifest");
        assert!(root.contains("publish = false"), "{root}");
        assert!(
            root.contains(r#"reqwest = { path = "reqwest", features = ["gzip", "brotli""#),
            "{root}"
        );
        assert!(root.contains(r#"openssl = { path = "openssl", features = [] }"#));
        let reqwest = files
            .iter()
            .find(|(path, _)| path == Path::new("reqwest/Cargo.toml"))
            .map(|(_, text)| text)
            .expect("the reqwest stand-in");
        assert!(reqwest.contains("\"blocking\" = []\n"), "{reqwest}");
    }

    #[test]
    fn a_report_missing_any_ban_is_a_failure_naming_it() {
        let forbidden = parse_forbidden("openssl:\nreqwest: gzip blocking").expect("parses");
        let full = "error[banned]: crate 'openssl = 0.1.0' is explicitly banned\n\
                    error[denied]: feature 'gzip' for crate 'reqwest = 0.1.0' is explicitly denied\n\
                    error[denied]: feature 'blocking' for crate 'reqwest = 0.1.0' is explicitly denied\n";
        assert_eq!(missing_bans(&forbidden, full), Vec::<String>::new());
        let partial = full.replace("'blocking'", "'other'");
        assert_eq!(
            missing_bans(&forbidden, &partial),
            ["reqwest/blocking is not reported as denied"]
        );
        assert_eq!(
            missing_bans(&forbidden, "").len(),
            3,
            "an empty report proves nothing"
        );
    }

    #[test]
    fn the_crafted_metadata_holds_the_vulnerable_h2_only() {
        let metadata = advisory_metadata();
        let packages = metadata["packages"].as_array().expect("packages");
        let names: Vec<(&str, &str)> = packages
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or(""),
                    p["version"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(names, [("crafted", "0.1.0"), ("h2", "0.4.1")]);
        assert_eq!(
            metadata["resolve"]["nodes"][0]["dependencies"][0],
            packages[1]["id"]
        );
    }
}
