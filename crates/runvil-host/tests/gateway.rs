//! The gateway's commands through the binary: `runvil gateway-key`, `runvil audit` over
//! written audit files (filters, rotated files, `--follow` across a rotation, lines that are
//! not audit lines, values that would forge a line), and the gateway's flags refused on stdio.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::{Temp, runvil, runvil_command, text};

/// An audit line of format 1 at `time`.
fn line(time: SystemTime, identity: &str, namespace: &str, tool: &str, outcome: &str) -> String {
    let time = chrono::DateTime::<chrono::Utc>::from(time)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    json!({
        "v": 1, "time": time, "identity": identity, "namespace": namespace, "tool": tool,
        "args_sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "outcome": outcome, "duration_ms": 12, "result_bytes": 345
    })
    .to_string()
}

fn tools_of(stdout: &[u8]) -> Vec<String> {
    text(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .map(|v| v["tool"].as_str().expect("a tool").to_owned())
        .collect()
}

#[test]
fn gateway_key_prints_a_new_key_once_and_the_line_that_admits_it() {
    let output = runvil(&["gateway-key", "ci"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let [key, file_line] = lines[..] else {
        panic!("two lines: {stdout}");
    };
    assert!(key.starts_with("rvk_") && key.len() == 47, "{key}");
    let mut sha256sum = std::process::Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    sha256sum
        .stdin
        .take()
        .expect("stdin")
        .write_all(key.as_bytes())
        .expect("written");
    let hashed = text(&sha256sum.wait_with_output().expect("hashed").stdout);
    let hash = hashed.split_whitespace().next().expect("a hash");
    assert_eq!(file_line, format!("ci {hash}"));
    assert_eq!(
        text(&output.stderr),
        "runvil: line 1 is the key, shown this once: the client sends it as `Authorization: \
         Bearer KEY`. Line 2 goes into the --api-keys file.\n"
    );
    let again = text(&runvil(&["gateway-key", "ci"]).stdout);
    assert!(!again.contains(key), "a new key each time");

    let output = runvil(&["gateway-key", "key:ci"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    assert_eq!(
        text(&output.stderr),
        "runvil: the name is not 1 to 64 of A-Z a-z 0-9 . _ -\n"
    );
}

#[test]
fn audit_prints_the_lines_the_filters_keep_oldest_file_first() {
    let dir = Temp::dir();
    let now = SystemTime::now();
    let old = now - Duration::from_secs(3 * 3600);
    dir.write(
        "audit.jsonl.2",
        &format!("{}\n", line(old, "alice", "docs", "t1", "ok")),
    );
    dir.write(
        "audit.jsonl.1",
        &format!(
            "{}\nnot an audit line\n{}\n",
            line(old, "key:ci", "build", "t2", "denied"),
            json!({"v": 2, "time": "2026-01-01T00:00:00Z"})
        ),
    );
    let path = dir.write(
        "audit.jsonl",
        &format!(
            "{}\n{}\n{}\n",
            line(now, "alice", "docs", "t3", "ok"),
            line(now, "bob", "docs", "t4", "tool_error"),
            line(now, "key:ci", "build", "t5", "ok"),
        ),
    );
    let path = path.to_str().expect("a path");
    let audit = |args: &[&str]| {
        let mut all = vec!["audit", "--audit", path];
        all.extend_from_slice(args);
        runvil(&all)
    };

    let output = audit(&[]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(tools_of(&output.stdout), ["t1", "t2", "t3", "t4", "t5"]);
    assert_eq!(
        text(&output.stderr),
        format!("runvil: 2 line(s) of {path}.1 are not audit lines of format 1; skipped\n")
    );
    // Each line is printed as the format writes it.
    let first: Value =
        serde_json::from_str(text(&output.stdout).lines().next().expect("a line")).expect("JSON");
    assert_eq!(
        first,
        serde_json::from_str::<Value>(&line(old, "alice", "docs", "t1", "ok")).expect("JSON")
    );

    for (args, want) in [
        (vec!["--ns", "docs"], vec!["t1", "t3", "t4"]),
        (vec!["--tool", "t5"], vec!["t5"]),
        (vec!["--identity", "key:ci"], vec!["t2", "t5"]),
        (vec!["--since", "2h"], vec!["t3", "t4", "t5"]),
        (
            vec!["--since", "4h", "--identity", "alice"],
            vec!["t1", "t3"],
        ),
        (vec!["--ns", "nope"], vec![]),
    ] {
        let output = audit(&args);
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        assert_eq!(tools_of(&output.stdout), want, "{args:?}");
    }

    let output = audit(&["--since", "2 hours"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("\"2 hours\" is not a duration such as 30s, 10m, 2h or 7d"),
        "{}",
        text(&output.stderr)
    );
    let missing = dir.path().join("none.jsonl");
    let output = runvil(&["audit", "--audit", missing.to_str().expect("a path")]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).starts_with(&format!("runvil: cannot read {}: ", missing.display())),
        "{}",
        text(&output.stderr)
    );
}

/// A value written by a client (its token's `sub`, a tool name) cannot end the line it is
/// printed on, nor move the cursor.
#[test]
fn an_audit_value_cannot_forge_a_line_of_the_output() {
    let dir = Temp::dir();
    let forged = "mallory\n{\"v\":1,\"identity\":\"alice\"}\u{2028}\u{1b}[2J\u{85}";
    let path = dir.write(
        "audit.jsonl",
        &format!("{}\n", line(SystemTime::now(), forged, "docs", "t", "ok")),
    );
    let output = runvil(&["audit", "--audit", path.to_str().expect("a path")]);
    let stdout = text(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    for raw in ['\n', '\u{2028}', '\u{1b}', '\u{85}'] {
        assert!(!stdout.trim_end().contains(raw), "{stdout:?}");
    }
    let printed: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(printed["identity"], forged, "escaped, not changed");
}

#[test]
fn audit_follow_prints_new_lines_across_a_rotation() {
    let dir = Temp::dir();
    let path = dir.write(
        "audit.jsonl",
        &format!(
            "{}\n",
            line(SystemTime::now(), "alice", "docs", "before", "ok")
        ),
    );
    let mut child = runvil_command(&[
        "audit",
        "--follow",
        "--audit",
        path.to_str().expect("a path"),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("runvil runs");
    let (sender, lines) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let value: Value = serde_json::from_str(&line).expect("a JSON line");
            if sender
                .send(value["tool"].as_str().unwrap_or_default().to_owned())
                .is_err()
            {
                return;
            }
        }
    });
    // A bound on a test that would otherwise hang, not a timing assertion.
    let next = || {
        lines
            .recv_timeout(Duration::from_secs(60))
            .expect("a line is printed")
    };
    assert_eq!(next(), "before");

    let append = |tool: &str| {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .expect("the audit file");
        writeln!(
            file,
            "{}",
            line(SystemTime::now(), "alice", "docs", tool, "ok")
        )
        .expect("written");
    };
    append("appended");
    assert_eq!(next(), "appended");
    // Rotated as the gateway rotates it: renamed, then a new file.
    std::fs::rename(&path, dir.path().join("audit.jsonl.1")).expect("rotated");
    append("after rotation");
    assert_eq!(next(), "after rotation");
    append("and again");
    assert_eq!(next(), "and again");
    child.kill().expect("stopped");
    let _ = child.wait();
}

#[test]
fn the_gateway_s_flags_are_refused_on_stdio() {
    for flag in [
        ["--policy", "p.json"],
        ["--api-keys", "keys"],
        ["--auth-issuer", "https://id.example"],
        ["--audit", "audit.jsonl"],
    ] {
        let output = runvil(&["serve", flag[0], flag[1]]);
        assert_eq!(output.status.code(), Some(2), "{flag:?}");
        assert_eq!(
            text(&output.stderr),
            format!(
                "runvil: {} is a flag of the HTTP gateway (`runvil serve --http`)\n",
                flag[0]
            )
        );
    }
}
