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
