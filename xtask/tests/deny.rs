//! The crafted graph the `deny` subcommand hands cargo-deny (`xtask/src/deny/crafted.rs`) is a
//! real cargo workspace that enables every forbidden feature and depends on every banned
//! crate, as cargo itself resolves it. This needs no cargo-deny: cargo-deny's verdict on the
//! graph is checked by `cargo run -p build-xtask -- deny`, which CI runs once it has
//! installed cargo-deny.

use std::fs;
use std::process::Command;

use build_xtask::deny::crafted::{FORBIDDEN, bans_workspace, parse_forbidden};
use serde_json::Value;

#[test]
fn the_crafted_bans_graph_resolves_with_every_forbidden_crate_and_feature() {
    let forbidden = parse_forbidden(FORBIDDEN).expect("the forbidden list parses");
    let dir = std::env::temp_dir().join(format!("build-xtask-crafted-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in bans_workspace(&forbidden) {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
        fs::write(path, text).expect("write the crafted graph");
    }
    // Path dependencies only: cargo resolves it offline, with no registry.
    let output = Command::new(env!("CARGO"))
        .current_dir(&dir)
        .args(["metadata", "--format-version", "1", "--offline"])
        .output()
        .expect("cargo runs");
    let _ = fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let nodes = metadata["resolve"]["nodes"].as_array().expect("resolved");
    for ban in &forbidden {
        let package = metadata["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .find(|p| p["name"] == ban.name)
            .unwrap_or_else(|| panic!("{} is not in the graph", ban.name));
        let node = nodes
            .iter()
            .find(|n| n["id"] == package["id"])
            .unwrap_or_else(|| panic!("{} is not resolved", ban.name));
        let enabled: Vec<&str> = node["features"]
            .as_array()
            .expect("features")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for feature in &ban.features {
            assert!(
                enabled.contains(feature),
                "{}/{feature}: {enabled:?}",
                ban.name
            );
        }
    }
}
