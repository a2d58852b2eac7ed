//! `deny.toml` is live: cargo-deny, with the project's `deny.toml`, fails on a crafted graph
//! that enables every forbidden feature and depends on every banned crate, and on one that
//! holds a crate with a known vulnerability. The first graph is made of local stand-ins
//! carrying the banned names and features (cargo-deny matches crates by name), the second is
//! crafted `cargo metadata`, so neither needs a registry. They need cargo-deny (`cargo install
//! --locked cargo-deny`), as CI has, and the second the advisory database snapshot, which is
//! not in the repository (so CI, on a fresh machine, runs the first only).

use std::fs;
use std::path::Path;
use std::process::Command;

use build_xtask::{deny, workspace};
use serde_json::json;

/// `crate: features` the crafted graph enables, one crate a line; the crates with no feature
/// are banned.
const FORBIDDEN: &str = "jsonschema: resolve-http resolve-file resolve-async
reqwest: gzip brotli zstd deflate native-tls native-tls-vendored __native-tls blocking
serde_json: unbounded_depth
openssl:
openssl-sys:
native-tls:";

fn forbidden() -> impl Iterator<Item = (&'static str, Vec<&'static str>)> {
    let lines = FORBIDDEN
        .lines()
        .map(|line| line.split_once(':').expect("`crate: features`"));
    lines.map(|(name, features)| (name, features.split_whitespace().collect()))
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
    fs::write(path, text).expect("write the crafted graph");
}

/// A package manifest: unpublished (so path dependencies are no wildcard for deny.toml).
fn manifest(name: &str, rest: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n{rest}"
    )
}

#[test]
fn deny_toml_bans_each_forbidden_crate_and_feature() {
    let dir = std::env::temp_dir().join(format!("build-xtask-deny-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let mut dependencies = String::from("[dependencies]\n");
    for (name, features) in forbidden() {
        let declared: String = features.iter().map(|f| format!("\"{f}\" = []\n")).collect();
        write(
            &dir.join(name).join("Cargo.toml"),
            &manifest(name, &format!("[features]\n{declared}")),
        );
        write(&dir.join(name).join("src/lib.rs"), "");
        dependencies.push_str(&format!(
            "{name} = {{ path = \"{name}\", features = {features:?} }}\n"
        ));
    }
    write(
        &dir.join("Cargo.toml"),
        &manifest("crafted", &format!("{dependencies}[workspace]\n")),
    );
    write(&dir.join("src/lib.rs"), "");

    let output = Command::new(env!("CARGO"))
        .current_dir(&dir)
        .args(["deny", "--offline", "--color", "never", "--config"])
        .arg(workspace::root().join("deny.toml"))
        .args(["check", "bans"])
        .output()
        .expect("cargo runs");
    let report = String::from_utf8_lossy(&output.stderr);
    let _ = fs::remove_dir_all(&dir);
    assert!(
        !report.contains("no such command"),
        "cargo-deny is not installed: `cargo install --locked cargo-deny`"
    );
    assert!(
        !output.status.success(),
        "cargo-deny passed the crafted graph:\n{report}"
    );
    for (name, features) in forbidden() {
        if features.is_empty() {
            assert!(
                report.contains(&format!("crate '{name} = 0.1.0' is explicitly banned")),
                "{name}:\n{report}"
            );
        }
        for feature in features {
            let denied =
                format!("feature '{feature}' for crate '{name} = 0.1.0' is explicitly denied");
            assert!(report.contains(&denied), "{name}/{feature}:\n{report}");
        }
    }
}

#[test]
#[ignore = "needs the advisory snapshot, which is not in the repository: run it with \
            `cargo test -p build-xtask --test deny -- --ignored` where the snapshot is"]
fn deny_toml_fails_on_a_crate_with_a_known_vulnerability() {
    let root = workspace::root();
    deny::stage(
        &root.join(deny::DEFAULT_DB_SOURCE),
        &root.join(deny::DB_PATH).join(deny::DB_DIR),
    )
    .expect("the advisory database is staged");
    // h2 0.4.1 has RUSTSEC-2024-0003 (and more), which the snapshot holds.
    let registry = "registry+https://github.com/rust-lang/crates.io-index";
    let (crafted, h2) = (
        "path+file:///crafted#crafted@0.1.0",
        format!("{registry}#h2@0.4.1"),
    );
    let package = |name: &str, version: &str, id: &str, source: Option<&str>, dependencies| {
        json!({ "name": name, "version": version, "id": id, "source": source, "targets": [],
            "dependencies": dependencies, "features": {}, "manifest_path": format!("/{name}/Cargo.toml") })
    };
    let on_h2 = json!([{ "name": "h2", "source": registry, "req": "^0.4", "kind": null,
        "optional": false, "uses_default_features": true, "features": [], "target": null,
        "rename": null, "registry": null }]);
    let metadata = json!({
        "packages": [
            package("crafted", "0.1.0", crafted, None, on_h2),
            package("h2", "0.4.1", &h2, Some(registry), json!([])),
        ],
        "workspace_members": [crafted], "workspace_root": "/crafted", "version": 1,
        "target_directory": "/crafted/target",
        "resolve": { "root": crafted, "nodes": [
            { "id": crafted, "dependencies": [h2], "features": [],
              "deps": [{ "name": "h2", "pkg": h2, "dep_kinds": [{ "kind": null, "target": null }] }] },
            { "id": h2, "dependencies": [], "deps": [], "features": [] },
        ] },
    });
    let path =
        std::env::temp_dir().join(format!("build-xtask-advisory-{}.json", std::process::id()));
    fs::write(&path, metadata.to_string()).expect("write the crafted metadata");
    // From the workspace root, where deny.toml's `db-path` is.
    let output = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["deny", "--offline", "--color", "never", "--metadata-path"])
        .arg(&path)
        .args(["check", "advisories"])
        .output()
        .expect("cargo runs");
    let _ = fs::remove_file(&path);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "cargo-deny passed h2 0.4.1:\n{report}"
    );
    assert!(report.contains("RUSTSEC-2024-0003"), "{report}");
}
