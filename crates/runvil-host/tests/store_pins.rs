//! The records of trusted tools in `--store`'s database, through the binary against a
//! throwaway PostgreSQL and a server whose tools a test changes: two processes judging the
//! same first listing at once keep one record and hold the same tools; `runvil trust --yes`
//! approves only the record its review saw; an approval or a rejection made by another
//! process reaches a running `runvil serve --store` at its next call, by the database's notice
//! (no wait for the Pack's own read at use); the database's password is in no output, at any
//! log level. Each test skips in one line without PostgreSQL (fails under `CI=true`).

mod support;

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use shared_mcp_fixture::changing::{Changing, Era, tool};
use shared_mcp_fixture::hostile::{Hostile, Request, Script, Step};
use shared_mcp_fixture::services::Postgres;
use support::{Temp, runvil_command, text};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Notify, watch};

/// The password of the store's database: it must appear in no output, at any log level.
const STORE_CANARY: &str = "pg-canary-71c4-never-shown";

/// What `serve` says at debug when the database tells it that `s`'s record changed.
const HEARD: &str = "the store says the record of s changed";

/// A server `s` listing what the test says (each `tools/list` first waits for its gate when
/// the test gates them), a config naming it, a store key and a pins file that must stay
/// unused, and the database.
struct World {
    changing: Changing,
    config: Temp,
    state: Temp,
    postgres: Postgres,
    /// The gates of the `tools/list` requests so far, while `gated`; `None` once opened.
    gates: Arc<Mutex<Option<Vec<Arc<Notify>>>>>,
    listed: watch::Receiver<usize>,
    _server: Hostile,
}

impl World {
    /// `None` (said in one line) without PostgreSQL. With `gated`, each `tools/list` waits
    /// until the test opens its gate ([`World::open_gates`]).
    async fn start(tools: Value, gated: bool) -> Option<Self> {
        let postgres = Postgres::start_with_password(STORE_CANARY)?;
        let changing = Changing::new(tools);
        let answer = changing.handler(Era::Legacy);
        let gates = Arc::new(Mutex::new(Some(Vec::new())));
        let (count, listed) = watch::channel(0);
        let kept = Arc::clone(&gates);
        let handler = move |r: &Request| {
            let mut script: Script = answer(r);
            let mut all = kept.lock().expect("gates");
            // Once the gates are opened (taken), listings are answered at once.
            if gated && all.is_some() && r.method == "POST" && r.rpc_method() == "tools/list" {
                let gate = Arc::new(Notify::new());
                script.steps.insert(0, Step::Wait(Arc::clone(&gate)));
                let gates = all.as_mut().expect("gates");
                gates.push(gate);
                count.send_replace(gates.len());
            }
            script
        };
        let server = Hostile::start(handler).await;
        let config = Temp::config(json!({"s": {"url": server.url}}));
        Some(Self {
            changing,
            config,
            state: Temp::dir(),
            postgres,
            gates,
            listed,
            _server: server,
        })
    }

    /// Waits until `n` listings were asked for, then lets every one be answered.
    async fn open_gates(&mut self, n: usize) {
        self.listed
            .wait_for(|asked| *asked >= n)
            .await
            .expect("the server runs");
        let gates = self.gates.lock().expect("gates").take();
        for gate in gates.unwrap_or_default() {
            gate.notify_one();
        }
    }

    /// The pins file, which `--store` leaves alone.
    fn pins_file(&self) -> PathBuf {
        self.state.path().join("pins.json")
    }

    /// `runvil ARGS --config CONFIG` with the store from the environment and every log line
    /// of runvil's on.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = runvil_command(args);
        command
            .args(["--config", self.config.arg()])
            .env("RUST_LOG", "trace")
            .env("RUNVIL_STORE", self.postgres.dsn())
            .env("RUNVIL_STORE_KEY_FILE", self.state.path().join("store.key"))
            .env("RUNVIL_PINS", self.pins_file())
            .env(
                "RUNVIL_CREDENTIALS",
                self.state.path().join("credentials.json"),
            );
        command
    }

    /// Runs it off the test's runtime (the server answers on it meanwhile); its output holds
    /// no password.
    async fn run(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        let out = tokio::task::spawn_blocking(move || command.output().expect("runvil runs"))
            .await
            .expect("runvil ran");
        assert_no_canary(&said(&out));
        out
    }

    /// The rows of the pins records: key, version.
    fn pins_rows(&self) -> String {
        self.postgres
            .psql("SELECT key, version FROM runvil.records WHERE kind = 'pins' ORDER BY key")
    }

    /// Changes `s`'s record as an administrator would, with SQL: `path` of its JSON set to
    /// `value`.
    fn edit_record(&self, path: &str, value: &Value) {
        let sql = format!(
            "UPDATE runvil.records SET value = jsonb_set(value::jsonb, '{path}', '{value}')::text \
             WHERE kind = 'pins'"
        );
        self.postgres.psql(&sql);
    }
}

fn assert_no_canary(output: &str) {
    assert!(
        !output.contains(STORE_CANARY),
        "the password shown: {output}"
    );
}

fn said(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

fn listing(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("JSON: {}", said(out)))
}

/// The names of the callable tools of a one-server listing, and of its held ones.
fn judged(out: &Output) -> (Vec<String>, Vec<String>) {
    let listed = listing(out);
    let names = |key: &str| -> Vec<String> {
        (listed[key].as_array().cloned().unwrap_or_default().iter())
            .map(|t| t["name"].as_str().expect("a name").to_owned())
            .collect()
    };
    (names("tools"), names("rejected"))
}

fn search(description: &str) -> Value {
    tool("search", description)
}

fn echo() -> Value {
    tool("echo", "Echoes text.")
}

/// Two `runvil tools s --store` whose first listings of `s` are both asked for before either
/// is answered: both judge a first listing at the same moment, one record is kept (version 1:
/// the other found it and did not save again), and both trust the same tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_judging_one_first_listing_keep_one_record_and_the_same_tools() {
    let Some(mut world) = World::start(json!([search("Finds documents."), echo()]), true).await
    else {
        return;
    };
    let (one, two) = (
        world.command(&["tools", "s"]),
        world.command(&["tools", "s"]),
    );
    let run = |mut command: std::process::Command| {
        tokio::task::spawn_blocking(move || command.output().expect("runvil runs"))
    };
    let (one, two) = (run(one), run(two));
    world.open_gates(2).await;
    let (one, two) = (one.await.expect("ran"), two.await.expect("ran"));
    for out in [&one, &two] {
        assert_eq!(out.status.code(), Some(0), "{}", said(out));
        assert_no_canary(&said(out));
        assert_eq!(
            judged(out),
            (vec!["echo".to_owned(), "search".to_owned()], vec![]),
            "{}",
            said(out)
        );
    }
    let rows = world.pins_rows().trim().to_owned();
    assert_eq!(rows.lines().count(), 1, "{rows}");
    assert!(rows.starts_with("s#") && rows.ends_with("|1"), "{rows}");
    assert!(!world.pins_file().exists(), "the pins file is not used");
}

/// `runvil trust s --yes --store` approves only the record its review saw: once the record
/// changed after the review (an administrator's edit of the approved definition), the tool
/// `changed again` and nothing is approved; the review that says so is recorded, and the
/// next `--yes` approves what it showed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_applies_only_to_the_record_its_review_saw() {
    let Some(world) = World::start(json!([search("Finds documents."), echo()]), false).await else {
        return;
    };
    assert_eq!(world.run(&["tools", "s"]).await.status.code(), Some(0));
    world
        .changing
        .set(json!([search("Finds documents, v2."), echo()]));
    let out = world.run(&["trust", "s"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(text(&out.stdout).contains("after:  Finds documents, v2."));

    // Meanwhile the record changes (another approval of search): what is approved is not what
    // the review compared with.
    world.edit_record("{tools,search,pin}", &json!("1".repeat(64)));
    world.edit_record(
        "{tools,search,definition,description}",
        &json!("Finds documents, approved elsewhere."),
    );
    let out = world.run(&["trust", "s", "--yes"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        text(&out.stderr).contains("runvil: search of s changed again since it was last reviewed"),
        "{}",
        said(&out)
    );
    assert!(text(&out.stdout).contains("before: Finds documents, approved elsewhere."));
    let call = ["call", "s", "search", r#"{"text":"hi"}"#];
    assert_eq!(world.run(&call).await.status.code(), Some(2), "still held");

    let out = world.run(&["trust", "s", "--yes"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(world.run(&call).await.status.code(), Some(0));
    assert!(!world.pins_file().exists(), "the pins file is not used");
}

/// rmcp's client, speaking to a `runvil serve --store`.
type Gateway = RunningService<RoleClient, ()>;

async fn call(client: &Gateway, tool: &str, text: &str) -> (Option<bool>, String) {
    let args = json!({"namespace": "s", "toolName": tool, "arguments": {"text": text}});
    let Value::Object(args) = args else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("call_dynamic_tool").with_arguments(args);
    let result = client.call_tool(params).await.expect("tools/call answers");
    let said = result.content[0].as_text().expect("text").text.clone();
    (result.is_error, said)
}

/// An approval made by `runvil trust --yes --store` reaches a running `runvil serve --store`
/// at its next call, and so does a rejection written into the database by an administrator:
/// each time the test waits only for serve to say it heard the database's notice, never for
/// the Pack's own read at use (at most once a second). Serve's log, at trace, holds no
/// password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_rejections_made_elsewhere_reach_a_running_serve_at_its_next_call() {
    let Some(world) = World::start(json!([search("Finds documents."), echo()]), false).await else {
        return;
    };
    assert_eq!(world.run(&["tools", "s"]).await.status.code(), Some(0));
    world
        .changing
        .set(json!([search("Finds documents, and more."), echo()]));
    assert_eq!(world.run(&["trust", "s"]).await.status.code(), Some(2));

    let command = tokio::process::Command::from(world.command(&["serve"]));
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("runvil serve starts");
    let mut log = BufReader::new(stderr.expect("serve's stderr")).lines();
    let client = ().serve(transport).await.expect("the MCP handshake");
    let mut logged = String::new();
    let mut heard = async || {
        while let Some(line) = log.next_line().await.expect("serve's stderr") {
            logged.push_str(&line);
            logged.push('\n');
            if line.contains(HEARD) {
                return;
            }
        }
        panic!("serve ended without hearing of the change: {logged}");
    };

    let (error, answer) = call(&client, "search", "x").await;
    assert_eq!(error, Some(true), "held: {answer}");
    let out = world.run(&["trust", "s", "--yes"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    heard().await;
    assert_eq!(
        call(&client, "search", "x").await,
        (Some(false), "x".to_owned())
    );

    // An administrator takes echo's approval back.
    world.edit_record("{tools,echo,pin}", &json!("0".repeat(64)));
    heard().await;
    let (error, answer) = call(&client, "echo", "y").await;
    assert_eq!(error, Some(true), "{answer}");
    assert!(
        answer.contains("its definition changed since it was approved"),
        "{answer}"
    );

    client.cancel().await.expect("closed");
    while let Some(line) = log.next_line().await.expect("serve's stderr") {
        logged.push_str(&line);
        logged.push('\n');
    }
    assert_no_canary(&logged);
    assert!(!world.pins_file().exists(), "the pins file is not used");
}
