//! The records of trusted tools in `--store`'s database, through the binary against a
//! throwaway PostgreSQL and a server whose tools a test changes: two processes judging the
//! same first listing at once keep one record and hold the same tools; `runvil trust --yes`
//! approves only the record its review saw; an approval or a rejection made by another
//! process reaches a running `runvil serve --store` at its next call, by the database's notice
//! (no wait for the Pack's own read at use); the database's password is in no output, at any
//! log level. And when the database is away: a `serve` started without it serves, trusting
//! nothing until it is reached, then trusts the first listing; a gateway that loses it keeps
//! serving the tools it trusts, and once it is back every approval is still there and every
//! call is one audit row, none doubled. `disable` and `enable` keep their decision in the
//! database's record. Each test skips in one line without PostgreSQL (fails under `CI=true`).

mod support;

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
/// What serve says at debug once the database's notices reach it.
const LISTENING: &str = "listening to the store's change notices";

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
    let mut until_said = async |what: &str| {
        while let Some(line) = log.next_line().await.expect("serve's stderr") {
            logged.push_str(&line);
            logged.push('\n');
            if line.contains(what) {
                return;
            }
        }
        panic!("serve ended without saying {what:?}: {logged}");
    };

    let (error, answer) = call(&client, "search", "x").await;
    assert_eq!(error, Some(true), "held: {answer}");
    // A change made before serve listens would be read again, never heard.
    until_said(LISTENING).await;
    let out = world.run(&["trust", "s", "--yes"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    until_said(HEARD).await;
    assert_eq!(
        call(&client, "search", "x").await,
        (Some(false), "x".to_owned())
    );

    // An administrator takes echo's approval back.
    world.edit_record("{tools,echo,pin}", &json!("0".repeat(64)));
    until_said(HEARD).await;
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

/// What serve says once the listener reaches the database again.
const REACHED: &str = "the store is reached again";

/// What serve says once it told its Pack that every record is to be read again.
const EVERY_RECORD: &str = "the store says any record may have changed";

/// A `runvil serve --store` on stdio started while the database is away starts anyway, says
/// so, and holds every tool of a server it has no record of, with the store's reason; once
/// the database is back (serve says it reached it, and told its Pack to read every record
/// again), the next call trusts the first listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_started_while_the_store_is_away_trusts_nothing_until_it_is_reached() {
    let Some(world) = World::start(json!([echo()]), false).await else {
        return;
    };
    world.postgres.stop();
    let command = tokio::process::Command::from(world.command(&["serve"]));
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .expect("runvil serve starts");
    let mut log = BufReader::new(stderr.expect("serve's stderr")).lines();
    let client = ().serve(transport).await.expect("the MCP handshake");
    let mut logged = String::new();
    let mut until_said = async |what: &str| {
        while let Some(line) = log.next_line().await.expect("serve's stderr") {
            logged.push_str(&line);
            logged.push('\n');
            if line.contains(what) {
                return;
            }
        }
        panic!("serve ended without saying {what:?}: {logged}");
    };
    until_said("serving anyway: no tool is trusted until the store is reached").await;

    let (error, answer) = call(&client, "echo", "x").await;
    assert_eq!(error, Some(true), "held: {answer}");
    let reason = format!(
        "the record of approved tools cannot be read (cannot reach the store, database \
         \"postgres\" at 127.0.0.1:{} as runvil: ",
        world.postgres.port()
    );
    assert!(answer.contains(&reason), "{answer}");
    assert!(answer.contains("so no tool is trusted"), "{answer}");

    world.postgres.start_again();
    until_said(REACHED).await;
    until_said(EVERY_RECORD).await;
    let answer = call(&client, "echo", "y").await;
    assert_eq!(answer, (Some(false), "y".to_owned()), "{logged}");
    let rows = world.pins_rows();
    assert!(
        rows.trim().starts_with("s#") && rows.trim().ends_with("|1"),
        "{rows}"
    );

    client.cancel().await.expect("closed");
    while let Some(line) = log.next_line().await.expect("serve's stderr") {
        logged.push_str(&line);
        logged.push('\n');
    }
    assert_no_canary(&logged);
}

/// A `runvil serve --http --store` whose database stops mid-run keeps calling the tools it
/// trusts, though the record cannot be read again (it says so in its log, at debug), while
/// the calls' audit lines wait; once the database is back, every approval is as it was, every
/// call is one row of the audit table (none doubled by the lines sent again), and calls go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_keeps_serving_what_it_trusts_while_the_store_is_away_and_catches_up() {
    use support::gateway::{Gateway as HttpGateway, Http, key_path, messages, result_text};
    let Some(world) = World::start(json!([search("Finds documents."), echo()]), false).await else {
        return;
    };
    let dsn = world.postgres.dsn();
    let store_key = world.state.path().join("store.key");
    let pins = world.pins_file();
    let env = [
        ("RUST_LOG", "trace"),
        ("RUNVIL_STORE", dsn.as_str()),
        ("RUNVIL_STORE_KEY_FILE", store_key.to_str().expect("a path")),
        ("RUNVIL_PINS", pins.to_str().expect("a path")),
    ];
    // Calls in a loop: the rate of one identity is not what this test is about.
    let unlimited = ["--rate", "100000", "--burst", "100000"];
    let gateway = HttpGateway::start_with(world.config.path(), &key_path(), &unlimited, &env);
    let http = Http::new(gateway.url());
    let mut id = 0;
    let mut call = async |tool: &str, text: &str| {
        id += 1;
        let params = json!({"name": "call_dynamic_tool", "arguments": {"namespace": "s",
            "toolName": tool, "arguments": {"text": text}}});
        let answer = messages(http.modern(id, "tools/call", params).await).await;
        result_text(answer.last().expect("an answer"))
    };
    let ok = |text: &str| (text.to_owned(), false);
    assert_eq!(call("echo", "a").await, ok("a"));
    assert_eq!(call("search", "b").await, ok("b"));
    let approved = world.pins_rows();
    let audit_rows = "SELECT count(*), count(DISTINCT id) FROM runvil.audit";

    world.postgres.stop();
    // Calls of trusted tools read the record again in the background (at most once a
    // second); they are served until one such read has failed, and after.
    let kept = "the record of approved tools could not be read again; the one held stays";
    let mut calls = 2;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !gateway.stderr().contains(kept) {
        assert_eq!(call("echo", "c").await, ok("c"));
        calls += 1;
        assert!(
            tokio::time::Instant::now() < deadline,
            "the record was never read again: {}",
            gateway.stderr()
        );
    }
    assert_eq!(call("search", "d").await, ok("d"));
    calls += 1;

    world.postgres.start_again();
    support::wait_until(
        "every call kept once",
        Duration::from_secs(60),
        async || world.postgres.psql(audit_rows).trim() == format!("{calls}|{calls}"),
    )
    .await;
    assert_eq!(
        world.pins_rows(),
        approved,
        "no approval lost, none changed"
    );
    assert_eq!(call("search", "e").await, ok("e"));
    support::wait_until("the last call kept", Duration::from_secs(60), async || {
        let all = calls + 1;
        world.postgres.psql(audit_rows).trim() == format!("{all}|{all}")
    })
    .await;
    // The listener, which the writer need not wait for, says it is back too.
    support::wait_until("the listener back", Duration::from_secs(60), async || {
        gateway.stderr().contains(REACHED)
    })
    .await;
    let said = gateway.stderr();
    assert!(said.contains("the store cannot be reached"), "{said}");
    assert_no_canary(&said);
}

/// `runvil disable` and `enable` with `--store` keep their decision in the server's record in
/// the database, where every runvil on it reads it (the pins file is left alone), and say a
/// database that cannot be reached as such, without its password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_and_enable_keep_their_decision_in_the_store_s_record() {
    let Some(world) = World::start(json!([search("Finds documents."), echo()]), false).await else {
        return;
    };
    let decisions = "SELECT coalesce(value::jsonb->>'disabled', 'false') || ' ' || \
                     coalesce(value::jsonb->>'disabled_tools', '[]') FROM runvil.records \
                     WHERE kind = 'pins'";
    let out = world.run(&["disable", "s", "echo"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(
        text(&out.stderr).contains("runvil: s echo is turned off\n"),
        "{}",
        said(&out)
    );
    assert_eq!(world.postgres.psql(decisions).trim(), r#"false ["echo"]"#);
    let out = world.run(&["tools", "s"]).await;
    assert_eq!(
        judged(&out),
        (vec!["search".to_owned()], vec![]),
        "{}",
        said(&out)
    );

    let out = world.run(&["disable", "s"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(world.postgres.psql(decisions).trim(), r#"true ["echo"]"#);
    let out = world.run(&["enable", "s"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let out = world.run(&["enable", "s", "echo"]).await;
    assert!(
        text(&out.stderr).contains("runvil: s echo is turned on\n"),
        "{}",
        said(&out)
    );
    assert_eq!(world.postgres.psql(decisions).trim(), "false []");
    let out = world.run(&["tools", "s"]).await;
    assert_eq!(
        judged(&out),
        (vec!["echo".to_owned(), "search".to_owned()], vec![]),
        "{}",
        said(&out)
    );
    assert!(!world.pins_file().exists(), "the pins file is not used");

    world.postgres.stop();
    let out = world.run(&["disable", "s", "echo"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "runvil: cannot disable: cannot reach the store, database \"postgres\" at \
             127.0.0.1:{} as runvil: ",
            world.postgres.port()
        )),
        "{}",
        said(&out)
    );
}
