//! The audit trail as the server writes it: a real server on a loopback port, the real Pack
//! before the workspace's fixture, and an audit sink that keeps its lines in memory (the
//! gateway's interface, not a copy of the server), so each call's line and outcome can be read
//! back, and a sink that fails can refuse calls; then the store's sink, against a throwaway
//! PostgreSQL that stops and starts again around calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::canaries::{CANARY, assert_clean};
use shared_mcp_fixture::{Fixture, ToolSet};

use super::limits::Settings as LimitSettings;
use super::session::SessionKey;
use super::{Server, Settings, listener};
use crate::cli::DEFAULT_MAX_STREAMS;
use crate::gateway::{
    AuditError, AuditLine, AuditSink, Gatekeeper, Gateway, Outcome, Policy, args_sha256,
};
use crate::host::{Lent, build_pack_with};
use crate::serve::{Served, Waits};

/// What the sink does with each line.
#[derive(Clone, Copy, PartialEq)]
enum Keeps {
    Everything,
    /// `accepting` fails: no line could be kept now.
    Nothing,
    /// `accepting` passes but `record` fails.
    NothingLater,
}

struct Memory {
    keeps: Keeps,
    lines: Mutex<Vec<AuditLine>>,
}

impl AuditSink for Memory {
    fn record(&self, line: AuditLine) -> Result<(), AuditError> {
        if self.keeps != Keeps::Everything {
            return Err(AuditError::new("the disk is full"));
        }
        self.lines.lock().expect("the lines").push(line);
        Ok(())
    }

    fn accepting(&self) -> Result<(), AuditError> {
        match self.keeps {
            Keeps::Nothing => Err(AuditError::new("the disk is full")),
            _ => Ok(()),
        }
    }
}

/// A server before `fixture` (as `backend`) and an unreachable `down`, auditing into `audit`;
/// its MCP endpoint.
async fn serve(fixture: &Fixture, audit: Arc<dyn AuditSink>) -> String {
    let servers = json!({
        "backend": {"url": fixture.url()},
        "down": {"url": "http://127.0.0.1:9/mcp"},
    });
    let pack = build_pack_with(servers, Lent::default()).expect("the Pack");
    let settings = Settings {
        address: String::new(),
        session_key_file: None,
        tls: None,
        drain: Duration::from_secs(1),
        call_timeout: Duration::from_secs(2),
        limits: LimitSettings {
            rate: 1000,
            burst: 1000,
            max_requests: 100,
            max_streams: DEFAULT_MAX_STREAMS,
        },
    };
    let gateway = Gateway {
        gatekeeper: Gatekeeper::open(),
        policy: Policy::allow_all(),
        audit,
    };
    let served = Served::new(pack, Waits::from_flag(Some(10)));
    let server = Arc::new(Server::new(
        served,
        gateway,
        SessionKey::new(&[7; 32]),
        super::revoked::Revoked::new(None),
        &settings,
    ));
    let socket = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}/mcp", socket.local_addr().expect("an address"));
    tokio::spawn(listener::serve(
        socket,
        None,
        server,
        settings.drain,
        std::future::pending(),
    ));
    url
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`; its answer's result.
async fn call(url: &str, tool: &str, arguments: Value) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}});
    let response = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await
        .expect("an answer");
    let answer: Value =
        serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
    answer["result"].clone()
}

/// Waits until `done` holds, failing with `what` after 20 s (a bound on a failure, not a
/// timing).
async fn until(what: &str, done: impl Fn() -> bool) {
    let wait = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), wait)
        .await
        .unwrap_or_else(|_| panic!("{what}"));
}

fn call_of(tool: &str, arguments: Value) -> Value {
    json!({"namespace": "backend", "toolName": tool, "arguments": arguments})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_has_one_line_with_its_outcome_and_neither_its_arguments_nor_its_result() {
    let fixture = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "fails", "slow"]))
        .start()
        .await;
    let audit = Arc::new(Memory {
        keeps: Keeps::Everything,
        lines: Mutex::new(Vec::new()),
    });
    let url = serve(&fixture, Arc::clone(&audit) as Arc<dyn AuditSink>).await;
    let secret = json!({"text": CANARY});
    let calls = [
        ("get_dynamic_tools", json!({"namespace": "backend"})),
        ("call_dynamic_tool", call_of("echo", secret.clone())),
        ("call_dynamic_tool", call_of("fails", json!({}))),
        ("call_dynamic_tool", call_of("echo", json!({}))),
        (
            "call_dynamic_tool",
            json!({"namespace": "down", "toolName": "x"}),
        ),
        ("call_dynamic_tool", call_of("slow", json!({}))),
        ("no_such_tool", json!({})),
    ];
    for (tool, arguments) in &calls {
        call(&url, tool, arguments.clone()).await;
    }
    // A call whose client goes away: its line comes once the call has ended.
    let started = fixture.slow_started().len();
    let abandoned = tokio::spawn({
        let url = url.clone();
        async move { call(&url, "call_dynamic_tool", call_of("slow", json!({}))).await }
    });
    until("the call reached the server", || {
        fixture.slow_started().len() > started
    })
    .await;
    abandoned.abort();
    let all = || audit.lines.lock().expect("the lines").len() == calls.len() + 1;
    until("the abandoned call's line", all).await;
    let lines = audit.lines.lock().expect("the lines").clone();
    let seen: Vec<(Option<&str>, Option<&str>, Outcome)> = lines
        .iter()
        .map(|l| (l.namespace.as_deref(), l.tool.as_deref(), l.outcome))
        .collect();
    assert_eq!(
        seen,
        [
            (Some("backend"), None, Outcome::Ok),
            (Some("backend"), Some("echo"), Outcome::Ok),
            (Some("backend"), Some("fails"), Outcome::ToolError),
            (Some("backend"), Some("echo"), Outcome::Invalid),
            (Some("down"), Some("x"), Outcome::Transport),
            (Some("backend"), Some("slow"), Outcome::Timeout),
            (None, None, Outcome::Invalid),
            (Some("backend"), Some("slow"), Outcome::Cancelled),
        ]
    );
    // Only an answer has a size: the listing's, the echoed text's, the tool error's.
    let sizes: Vec<Option<u64>> = lines.iter().map(|l| l.result_bytes).collect();
    assert!(sizes[0].is_some_and(|n| n > 0));
    assert_eq!(sizes[1..3], [Some(CANARY.len() as u64), Some(16)]);
    assert!(sizes[3..].iter().all(Option::is_none), "{sizes:?}");
    assert!(
        lines
            .iter()
            .all(|l| l.identity.as_deref() == Some("anonymous"))
    );
    assert!(lines.iter().all(|l| l.duration_ms.is_some()));
    assert_eq!(
        lines[0].args_sha256, None,
        "a listing has no arguments hash"
    );
    assert_eq!(lines[1].args_sha256, Some(args_sha256(Some(&secret))));
    assert_eq!(lines[2].args_sha256, Some(args_sha256(Some(&json!({})))));
    assert_clean("the audit lines", &format!("{lines:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_line_cannot_be_kept_is_not_made_or_its_result_is_withheld() {
    let fixture = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "slow"]))
        .slow_for(Duration::ZERO)
        .start()
        .await;
    for (keeps, text, made) in [
        (
            Keeps::Nothing,
            "runvil did not make this call: the audit line cannot be kept: the disk is full",
            0,
        ),
        (
            Keeps::NothingLater,
            "runvil withheld this call's result: the audit line cannot be kept: the disk is full",
            1,
        ),
    ] {
        let audit = Arc::new(Memory {
            keeps,
            lines: Mutex::new(Vec::new()),
        });
        let url = serve(&fixture, audit).await;
        let before = fixture.slow_started().len();
        let result = call(&url, "call_dynamic_tool", call_of("slow", json!({}))).await;
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result["content"][0]["text"], text);
        assert_eq!(fixture.slow_started().len() - before, made);
    }
}

/// The password of the throwaway database: in no row, no answer, no log line.
const STORE_CANARY: &str = "pg-canary-5d1e-never-shown";

/// The rows of the store's audit table, once there are `n` (polled: the row count is the
/// event), failing after 60 s.
async fn rows(database: &runvil_store::Database, n: usize) -> Vec<runvil_store::AuditRow> {
    let query = runvil_store::AuditQuery {
        limit: 100,
        ..runvil_store::AuditQuery::default()
    };
    let mut kept = Vec::new();
    let counted = async {
        loop {
            if let Ok(rows) = database.audit_lines(&query).await {
                kept = rows.into_iter().map(|k| k.row).collect();
                if kept.len() >= n {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(60), counted)
        .await
        .is_err()
    {
        panic!("the store never held {n} rows: {kept:?}");
    }
    kept
}

/// With the store, every call is one row (its id chosen once, so none is doubled through the
/// database's restart), naming the instance and holding neither argument nor result; while the
/// database is away the lines wait, up to the queue's bound, and past it a call is refused
/// before it reaches its server, which the log says. Back, the waiting lines are kept and
/// calls are served again. (A runtime of one thread, so the log of every task is captured.)
#[tokio::test(flavor = "current_thread")]
async fn with_the_store_each_line_is_one_row_through_a_restart_and_a_full_queue_refuses_calls() {
    use runvil_store::{Database, Dsn, Instance};
    let Some(postgres) = shared_mcp_fixture::services::Postgres::start_with_password(STORE_CANARY)
    else {
        return;
    };
    let logs = crate::gateway::CapturedLogs::start();
    let fixture = Fixture::builder()
        .tools(ToolSet::Only(&["echo"]))
        .start()
        .await;
    let dsn = Dsn::parse(&postgres.dsn()).expect("a DSN");
    let database = Database::open(dsn).await.expect("the store");
    let instance = Arc::new(Instance::current());
    let label = instance.label().to_owned();
    const BOUND: usize = 3;
    let sink = crate::gateway::DatabaseSink::start_within(Arc::clone(&database), instance, BOUND);
    let url = serve(&fixture, Arc::new(sink)).await;
    let secret = json!({"text": CANARY});
    let echo = || call(&url, "call_dynamic_tool", call_of("echo", secret.clone()));
    assert_eq!(echo().await["content"][0]["text"], CANARY);
    rows(&database, 1).await;

    postgres.stop();
    for _ in 0..BOUND {
        let served = echo().await;
        assert_eq!(served["content"][0]["text"], CANARY, "{served}");
    }
    let made = fixture.requests("tools/call");
    let refused = echo().await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().expect("a text");
    let want = format!(
        "runvil did not make this call: the audit line cannot be kept: {BOUND} lines already \
         wait to be kept in the store: cannot reach the store, database \"postgres\" at \
         127.0.0.1:{} as runvil: ",
        postgres.port()
    );
    assert!(text.starts_with(&want), "{text}");
    assert_eq!(
        fixture.requests("tools/call"),
        made,
        "the refused call reached no server"
    );
    assert!(
        logs.text()
            .contains("a call was refused: its audit line cannot be kept"),
        "{}",
        logs.text()
    );

    postgres.start_again();
    let kept = rows(&database, 1 + BOUND).await;
    assert_eq!(echo().await["content"][0]["text"], CANARY, "served again");
    let kept_now = rows(&database, 2 + BOUND).await;
    assert_eq!(kept_now.len(), 2 + BOUND, "one row a call, none doubled");
    assert_eq!(kept_now[..kept.len()], kept[..]);
    let mut ids: Vec<&str> = kept_now.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), kept_now.len());
    let want_hash = args_sha256(Some(&secret));
    for row in &kept_now {
        assert_eq!(row.instance, label);
        assert_eq!(
            (
                row.namespace.as_deref(),
                row.tool.as_deref(),
                row.outcome.as_str()
            ),
            (Some("backend"), Some("echo"), "ok")
        );
        assert_eq!(row.args_sha256.as_deref(), Some(want_hash.as_str()));
        assert_eq!(row.result_bytes, Some(CANARY.len() as i64));
    }
    let dump = postgres.psql("SELECT row_to_json(a)::text FROM runvil.audit a");
    assert_clean("the audit table", &dump);
    // runvil's log: the fixture's server (rmcp's) runs on this thread too, and logs its
    // answers.
    let logged: String = (logs.text().lines())
        .filter(|line| !line.contains("rmcp::"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_clean("the log", &logged);
    for text in [&dump, &logged, &format!("{refused}")] {
        assert!(!text.contains(STORE_CANARY), "{text}");
    }
    assert!(
        logged.contains("audit lines wait: cannot reach the store")
            && logged.contains("the store keeps audit lines again"),
        "{logged}"
    );
}
