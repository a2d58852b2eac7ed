//! The audit folder on the real workspace: `cargo test -p build-xtask` fails when the audit
//! table names a test, file or command that no longer exists, or when the dependency
//! inventory no longer matches `Cargo.lock`.

use build_xtask::{audit, audit_table, workspace};

#[test]
fn every_test_file_and_command_named_in_the_audit_table_exists() {
    let violations =
        audit_table::check(&workspace::root()).expect("the audit table could not be checked");
    assert!(
        violations.is_empty(),
        "{} name(s) in audit/README.md point at nothing (rename them there, or restore the \
         test):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

#[test]
fn the_dependency_inventory_is_current() {
    let current =
        audit::is_current(&workspace::root()).expect("the dependency inventory could not be made");
    assert!(
        current,
        "audit/dependencies.md does not match Cargo.lock; run `cargo run -p build-xtask -- audit` \
         and commit the result"
    );
}
