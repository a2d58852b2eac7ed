//! `runvil call --pretty` prints what the Pack answered: a tool result that is itself JSON is
//! re-indented, never decoded, so escapes that spell a control character, an invisible one or
//! a configured secret reach the terminal as the escapes they are.

mod support;

use serde_json::json;

use support::{Temp, backend, runvil_command, text};

const SECRET: &str = "canary-secret-77";

#[tokio::test(flavor = "multi_thread")]
async fn pretty_printing_decodes_no_escape_of_a_result() {
    let backend = backend().await;
    let config = Temp::config(json!({
        "backend": {"url": backend.url(), "headers": {"X-Token": SECRET}}
    }));
    // The echo tool answers with this text: JSON whose strings escape a bidirectional
    // override, an 8-bit CSI, a zero-width space, a tag character (as a surrogate pair) and
    // the first letter of the configured secret.
    let result = r#"{"a":"\u202e\u009b\u200b\udb40\udc41","k":"\u0063anary-secret-77"}"#;
    let args = json!({ "text": result }).to_string();
    let out = tokio::process::Command::from(runvil_command(&[
        "call",
        "backend",
        "echo",
        &args,
        "--pretty",
        "--config",
        config.arg(),
    ]))
    .output()
    .await
    .expect("runvil runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout,
        concat!(
            "{\n",
            r#"  "a": "\u202e\u009b\u200b\udb40\udc41","#,
            "\n",
            r#"  "k": "\u0063anary-secret-77""#,
            "\n}\n"
        )
    );
    assert!(!stdout.contains(SECRET), "{stdout}");
    let decoded = ['\u{202e}', '\u{9b}', '\u{200b}', '\u{e0041}'];
    assert!(!stdout.contains(decoded), "{stdout}");
}
