//! The audit trail in `--store`'s database, through the binary against a throwaway
//! PostgreSQL: `runvil audit --store` prints exactly what `runvil audit --audit FILE` prints of
//! the same lines, filter by filter; `runvil serve --http --store` writes each call as a row
//! naming its instance, with neither argument nor result, and `runvil audit --store --follow`
//! prints the rows as they come; the database's password is in no output. Each test skips in
//! one line without PostgreSQL (fails under `CI=true`).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use shared_mcp_fixture::canaries::{CANARY, assert_clean};
use shared_mcp_fixture::services::Postgres;
use support::gateway::{Gateway, Http, key_path, messages, result_text, tool_call};
use support::{Temp, backend, config_for, runvil_command, text};

/// The password of the store's database: it must appear in no output.
const STORE_CANARY: &str = "pg-canary-3b8e-never-shown";

/// `runvil ARGS` with the store from the environment.
fn runvil_on(postgres: &Postgres, args: &[&str]) -> Output {
    let output = runvil_command(args)
        .env("RUNVIL_STORE", postgres.dsn())
        .output()
        .expect("runvil runs");
    for out in [&output.stdout, &output.stderr] {
        assert!(!text(out).contains(STORE_CANARY), "{}", text(out));
    }
    output
}

/// An audit line of format 1 at `time`, as the gateway writes it.
fn line(time: SystemTime, identity: &str, ns: &str, tool: &str, outcome: &str) -> String {
    let time = chrono::DateTime::<chrono::Utc>::from(time)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    json!({"v": 1, "time": time, "identity": identity, "namespace": ns, "tool": tool,
        "args_sha256": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "outcome": outcome, "duration_ms": 41, "result_bytes": null})
    .to_string()
}

/// The row of `line` (from instance `h:1`), as an INSERT.
fn insert(id: &str, line: &str) -> String {
    format!(
        "INSERT INTO runvil.audit (id, instance, v, time, identity, namespace, tool, \
         args_sha256, outcome, duration_ms, result_bytes) SELECT '{id}', 'h:1', v, time, \
         identity, namespace, tool, args_sha256, outcome, duration_ms, result_bytes FROM \
         json_populate_record(null::runvil.audit, '{line}')"
    )
}

/// The tools of the JSON lines printed.
fn tools_of(stdout: &[u8]) -> Vec<String> {
    text(stdout)
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).expect("a JSON line");
            line["tool"].as_str().expect("a tool").to_owned()
        })
        .collect()
}

#[test]
fn audit_of_the_store_prints_what_audit_of_the_file_prints_of_the_same_lines() {
    let Some(postgres) = Postgres::start_with_password(STORE_CANARY) else {
        return;
    };
    // Opening the store makes its schema; an empty trail prints nothing.
    let empty = runvil_on(&postgres, &["audit"]);
    assert_eq!(empty.status.code(), Some(0), "{}", text(&empty.stderr));
    assert!(empty.stdout.is_empty() && empty.stderr.is_empty());

    let now = SystemTime::now();
    let old = now - Duration::from_secs(3 * 3600);
    let lines = [
        line(old, "alice", "docs", "t1", "ok"),
        line(old, "key:ci", "build", "t2", "denied"),
        line(now, "alice", "docs", "t3", "ok"),
        line(now, "bob", "docs", "t4", "tool_error"),
        line(now, "key:ci", "build", "t5", "ok"),
    ];
    let dir = Temp::dir();
    let file = dir.write("audit.jsonl", &format!("{}\n", lines.join("\n")));
    let file = file.to_str().expect("a path");
    for (n, line) in lines.iter().enumerate() {
        postgres.psql(&insert(&format!("{n:032x}"), line));
    }
    // A row of a later format is skipped and counted, as a line of the file is.
    postgres.psql(
        "INSERT INTO runvil.audit (id, instance, v, time, outcome) \
         VALUES ('ff', 'h:1', 2, now(), 'ok')",
    );

    for args in [
        vec![],
        vec!["--ns", "docs"],
        vec!["--tool", "t5"],
        vec!["--identity", "key:ci"],
        vec!["--since", "2h"],
        vec!["--since", "4h", "--identity", "alice"],
        vec!["--ns", "nope"],
    ] {
        let mut of_file = vec!["audit", "--audit", file];
        of_file.extend_from_slice(&args);
        let mut of_store = vec!["audit"];
        of_store.extend_from_slice(&args);
        let (from_file, from_store) = (
            runvil_on(&postgres, &of_file),
            runvil_on(&postgres, &of_store),
        );
        assert_eq!(from_store.status.code(), Some(0), "{args:?}");
        assert_eq!(
            text(&from_store.stdout),
            text(&from_file.stdout),
            "{args:?}"
        );
    }
    let every = runvil_on(&postgres, &["audit"]);
    assert_eq!(tools_of(&every.stdout), ["t1", "t2", "t3", "t4", "t5"]);
    assert_eq!(
        text(&every.stderr),
        "runvil: 1 row(s) of the store's audit table are not audit lines of format 1; skipped\n"
    );

    // A store that cannot be reached is an error naming it, never its password.
    postgres.stop();
    let away = runvil_on(&postgres, &["audit"]);
    assert_eq!(away.status.code(), Some(1));
    assert!(
        text(&away.stderr).starts_with(&format!(
            "runvil: cannot reach the store, database \"postgres\" at 127.0.0.1:{} as runvil: ",
            postgres.port()
        )),
        "{}",
        text(&away.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_on_the_store_keeps_each_call_as_a_row_that_audit_follows() {
    let Some(postgres) = Postgres::start_with_password(STORE_CANARY) else {
        return;
    };
    let server = backend().await;
    let config = config_for(&server);
    let state = Temp::dir();
    let store_key = state.path().join("store.key");
    let dsn = postgres.dsn();
    let env = [
        ("RUST_LOG", "trace"),
        ("RUNVIL_STORE", dsn.as_str()),
        ("RUNVIL_STORE_KEY_FILE", store_key.to_str().expect("a path")),
    ];

    // The trail is the table: an audit file besides it is refused.
    let mut refused = runvil_command(&["serve", "--http", "127.0.0.1:0", "--audit", "x.jsonl"]);
    let refused = refused
        .args(["--config", config.arg()])
        .envs(env)
        .output()
        .expect("runvil runs");
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains(
            "runvil: --audit: with --store the audit trail is the store's table (`runvil audit \
             --store` reads it), not a file"
        ),
        "{}",
        text(&refused.stderr)
    );

    let gateway = Gateway::start_with(config.path(), &key_path(), &[], &env);
    let http = Http::new(gateway.url());
    let call = async |id: i64, tool: &str, arguments: Value| {
        let params = tool_call(
            "call_dynamic_tool",
            json!({"namespace": "backend",
            "toolName": tool, "arguments": arguments}),
        );
        let answer = messages(http.modern(id, "tools/call", params).await).await;
        result_text(answer.last().expect("an answer"))
    };
    assert_eq!(
        call(1, "echo", json!({"text": CANARY})).await,
        (CANARY.to_owned(), false)
    );
    assert!(call(2, "fails", json!({})).await.1);

    let count = "SELECT count(*) FROM runvil.audit";
    support::wait_until("two rows", Duration::from_secs(30), async || {
        postgres.psql(count).trim() == "2"
    })
    .await;
    let rows = postgres
        .psql("SELECT instance, identity, namespace, tool, outcome FROM runvil.audit ORDER BY seq");
    let instance = format!(":{}", gateway.pid());
    let rows: Vec<&str> = rows.trim().lines().collect();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].ends_with("|anonymous|backend|echo|ok"), "{rows:?}");
    assert!(
        rows[1].ends_with("|anonymous|backend|fails|tool_error"),
        "{rows:?}"
    );
    assert!(rows.iter().all(|row| {
        row.split('|')
            .next()
            .is_some_and(|i| i.ends_with(&instance))
    }));

    // --follow prints what is there, then each row as it is kept.
    let mut follow = runvil_command(&["audit", "--follow", "--tool", "echo"])
        .env("RUNVIL_STORE", &dsn)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runvil audit --follow runs");
    let (lines, printed) = std::sync::mpsc::channel();
    let stdout = follow.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        printed
            .recv_timeout(Duration::from_secs(30))
            .expect("a line")
    };
    let first: Value = serde_json::from_str(&next()).expect("JSON");
    assert_eq!(
        (first["tool"].as_str(), first["outcome"].as_str()),
        (Some("echo"), Some("ok"))
    );
    assert_eq!(
        call(3, "echo", json!({"text": "again"})).await,
        ("again".to_owned(), false)
    );
    assert!(call(4, "fails", json!({})).await.1);
    assert_eq!(
        call(5, "echo", json!({"text": "third"})).await,
        ("third".to_owned(), false)
    );
    for _ in 0..2 {
        let line: Value = serde_json::from_str(&next()).expect("JSON");
        assert_eq!(line["tool"], "echo", "{line}");
    }
    let _ = follow.kill();
    let followed = follow.wait_with_output().expect("ended");
    assert!(!text(&followed.stderr).contains(STORE_CANARY));

    let dump = postgres.psql("SELECT row_to_json(a)::text FROM runvil.audit a");
    assert_clean("the audit table", &dump);
    let said = gateway.stderr();
    assert!(
        !said.contains(STORE_CANARY),
        "the gateway's log holds the password"
    );
    assert!(!said.contains(&postgres.dsn()));
}
