//! The policy checks on the real workspace: `cargo test -p build-xtask` fails on a violation.

use build_xtask::{check, workspace};

#[test]
fn the_workspace_has_no_policy_violations() {
    let violations = check::run_all(&workspace::root()).expect("the policy checks could not run");
    assert!(
        violations.is_empty(),
        "{} policy violation(s):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

/// A workspace on disk where each check has something to find: the Plugin depends on the Host,
/// on a crate `policy/deps.allow` does not list (outside the workspace, so not a member), and
/// the list has a stale entry; `src/lib.rs` exports more than `install`; a module outside the
/// envelope opens server data; the taint module imports one that imports it.
#[test]
fn a_crafted_workspace_fails_every_check() {
    let dir = std::env::temp_dir().join(format!("build-xtask-policy-{}", std::process::id()));
    let root = dir.join("ws");
    let files = [
        (
            "ws/Cargo.toml",
            "[workspace]\nmembers = [\"host\"]\n\n[package]\nname = \"plugin_mcp\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nrunvil-host = { path = \"host\" }\nleftpad = { path = \"../leftpad\" }\n",
        ),
        ("ws/src/lib.rs", "pub fn install() {}\npub struct Leak;\n"),
        (
            "ws/src/tools.rs",
            "use crate::text::Untrusted;\nfn f(u: Untrusted<String>) -> String { u.into_for_check() }\n",
        ),
        ("ws/src/text.rs", "use crate::tools::f;\n"),
        (
            "ws/src/envelope/result.rs",
            "fn f(u: Untrusted<String>) -> String { u.into_for_check() }\n",
        ),
        ("ws/policy/deps.allow", "serde # gone\n"),
        (
            "ws/host/Cargo.toml",
            "[package]\nname = \"runvil-host\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
        ),
        ("ws/host/src/lib.rs", ""),
        (
            "leftpad/Cargo.toml",
            "[package]\nname = \"leftpad\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
        ),
        ("leftpad/src/lib.rs", ""),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
        std::fs::write(path, text).expect("write the crafted workspace");
    }
    workspace::run_cargo(&root, "generate-lockfile").expect("a lock file");
    let violations = check::run_all(&root);
    let _ = std::fs::remove_dir_all(&dir);
    let violations = violations.expect("the checks run").join("\n");
    for expected in [
        "plugin_family_deps: plugin_mcp has a normal dependency on workspace crate runvil-host",
        "only_install_is_public: src/lib.rs: `struct Leak` is public",
        "allow_list: plugin_mcp depends directly on leftpad, which policy/deps.allow does not list",
        "allow_list: policy/deps.allow:1: stale entry serde",
        "opened_only_by_the_envelope: src/tools.rs: calls `into_for_check`",
        "layered: these modules import each other in a circle (or import one that does): text, \
         tools",
        "layered: src/text/ imports `tools`; the taint module stands on policy and secret alone",
    ] {
        assert!(violations.contains(expected), "{expected}:\n{violations}");
    }
    assert!(
        !violations.contains("src/envelope/result.rs"),
        "{violations}"
    );
}
