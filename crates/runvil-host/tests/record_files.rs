//! runvil's record files (the pins file and the credentials file), through the binary: a
//! `0600` file, or its folder, that another user owns is refused as a loosely permitted one
//! is, since that user could rewrite it. The pins file then trusts nothing and `runvil trust`
//! approves nothing; the credentials file is not used; neither is ever replaced.
//!
//! Giving a file to another user needs root, which CI runs as; elsewhere each test says in
//! one line that it is skipped.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use support::{ANOTHER_USER, Temp, may_give_away, runvil_command, text, unreachable_url};

/// `runvil ARGS --config CONFIG` with `pins` and `credentials`, off the test's runtime (the
/// server answers on it meanwhile).
async fn run(args: &[&str], config: &Temp, pins: &Path, credentials: &Path) -> Output {
    let mut command = runvil_command(args);
    command
        .args(["--config", config.arg()])
        .env("RUNVIL_PINS", pins)
        .env("RUNVIL_CREDENTIALS", credentials);
    tokio::task::spawn_blocking(move || command.output().expect("runvil runs"))
        .await
        .expect("runvil ran")
}

fn said(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// The error a record file owned by [`ANOTHER_USER`] gets, as runvil runs as root.
fn foreign_file(path: &Path) -> String {
    let shown = path.display();
    format!(
        "{shown} may be changed by another user (its owner is user {ANOTHER_USER}, and runvil \
         runs as user 0); run `chown 0 {shown}` or remove it"
    )
}

/// The error a record file in a folder owned by [`ANOTHER_USER`] gets (`noun`: `pins file`).
fn foreign_folder(path: &Path, noun: &str) -> String {
    let (shown, folder) = (path.display(), path.parent().expect("a folder").display());
    format!(
        "{folder}, the folder of {shown}, may be changed by another user (its owner is user \
         {ANOTHER_USER}, and runvil runs as user 0); run `chown 0 {folder}` or keep the {noun} \
         in a folder of your own"
    )
}

fn owner(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").uid()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pins_file_or_folder_another_user_owns_trusts_nothing_and_is_kept() {
    if !may_give_away("a_pins_file_or_folder_another_user_owns_trusts_nothing_and_is_kept") {
        return;
    }
    let server = support::backend().await;
    let config = support::config_for(&server);
    let state = Temp::dir();
    let (pins, credentials) = (
        state.path().join("pins.json"),
        state.path().join("credentials.json"),
    );
    let listed = async || {
        let out = run(&["tools", "backend"], &config, &pins, &credentials).await;
        assert_eq!(out.status.code(), Some(0), "{}", said(&out));
        let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        listing
    };
    // The first listing trusts the server's tools and records them, 0600.
    let first = listed().await;
    assert_eq!(
        first["tools"].as_array().expect("tools").len(),
        4,
        "{first}"
    );
    let mode = std::fs::metadata(&pins).expect("pins").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let before = std::fs::read(&pins).expect("pins");

    let folder = state.path();
    for (given, error) in [
        (pins.as_path(), foreign_file(&pins)),
        (folder, foreign_folder(&pins, "pins file")),
    ] {
        chown(given, Some(ANOTHER_USER), None).expect("chown");
        // Every tool is held, its reason naming the file and what to do.
        let listing = listed().await;
        assert_eq!(listing["tools"], Value::Array(Vec::new()), "{listing}");
        let rejected = listing["rejected"].as_array().expect("rejected");
        assert_eq!(rejected.len(), 4, "{listing}");
        for held in rejected {
            let reason = held["reason"].as_str().expect("a reason");
            assert!(reason.contains(&error), "{reason}");
        }
        // `trust` approves nothing, even with --yes.
        let out = run(&["trust", "backend", "--yes"], &config, &pins, &credentials).await;
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        assert!(text(&out.stderr).contains(&error), "{}", said(&out));
        // The file is as it was, and so is its owner.
        assert_eq!(std::fs::read(&pins).expect("pins"), before);
        assert_eq!(owner(given), ANOTHER_USER);
        chown(given, Some(0), None).expect("chown back");
    }
    // The user's own again, the file is the record it was.
    assert_eq!(listed().await, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credentials_file_or_folder_another_user_owns_is_refused_and_kept() {
    if !may_give_away("a_credentials_file_or_folder_another_user_owns_is_refused_and_kept") {
        return;
    }
    let config = Temp::config(json!({"backend": {"url": unreachable_url()}}));
    let state = Temp::dir();
    let (pins, credentials) = (
        state.path().join("pins.json"),
        state.path().join("credentials.json"),
    );
    let record = r#"{"backend": "a record of runvil login"}"#;
    std::fs::write(&credentials, record).expect("written");
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    for (given, error) in [
        (credentials.as_path(), foreign_file(&credentials)),
        (
            state.path(),
            foreign_folder(&credentials, "credentials file"),
        ),
    ] {
        chown(given, Some(ANOTHER_USER), None).expect("chown");
        let out = run(&["logout", "backend"], &config, &pins, &credentials).await;
        assert_eq!(out.status.code(), Some(1), "{}", said(&out));
        assert_eq!(text(&out.stderr), format!("runvil: {error}\n"));
        assert_eq!(std::fs::read_to_string(&credentials).expect("kept"), record);
        chown(given, Some(0), None).expect("chown back");
    }
    // The user's own again, the record is forgotten.
    let out = run(&["logout", "backend"], &config, &pins, &credentials).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(
        text(&out.stderr),
        "runvil: forgot the credentials of backend\n"
    );
}
