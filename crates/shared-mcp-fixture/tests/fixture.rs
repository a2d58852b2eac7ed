//! The fixture's own promises, through the Pack as every user of it sees them: each tool set
//! lists what it says, the gate holds handshakes, the recorder counts what arrived, and a
//! late or `nodelay` server still serves; `ready` answers a server's entry or why it has none.

use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::{
    Answers, Fixture, Mode, Revisions, ToolSet, call, pack, ready, settled, wait_for,
};

const READY: Duration = Duration::from_secs(10);

/// The names in `namespace`'s listing entry, as the no-argument listing shows them.
fn names(entry: &Value) -> Vec<&str> {
    entry["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|name| name.as_str().expect("a name"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_with_a_delete_the_recorder_counts() {
    let server = Fixture::start(Mode::Sse).await;
    let pack = pack(json!({"s": {"url": server.url()}}));
    wait_for(&pack, "s", "ready", READY).await;
    assert_eq!(server.initializes(), 1);
    assert_eq!(server.session_count().await, 1);
    assert_eq!(server.requests("DELETE"), 0);
    pack.shutdown().await;
    assert_eq!(server.requests("DELETE"), 1);
    assert!(
        server.requests("POST") >= 2,
        "initialize and tools/list at least"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tool_set_lists_what_it_says() {
    let only = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "slow"]))
        .start()
        .await;
    let generated = Fixture::builder()
        .tools(ToolSet::Generated(3))
        .mode(Mode::Json)
        .start()
        .await;
    let paged = Fixture::builder().tools(ToolSet::Paged).start().await;
    let pack = pack(json!({
        "only": {"url": only.url()},
        "generated": {"url": generated.url()},
        "paged": {"url": paged.url()},
    }));
    let entry = wait_for(&pack, "only", "ready", READY).await;
    assert_eq!(names(&entry), ["echo", "slow"]);
    let entry = wait_for(&pack, "generated", "ready", READY).await;
    assert_eq!(names(&entry), ["echo", "tool_001", "tool_002", "tool_003"]);
    let entry = wait_for(&pack, "paged", "ready", READY).await;
    assert_eq!(names(&entry), shared_mcp_fixture::PAGED_TOOL_NAMES);

    assert_eq!(
        call(&pack, "generated", "tool_002", json!({"query": "q"})).await,
        Ok("called tool_002".to_owned())
    );
    assert_eq!(
        call(
            &pack,
            "generated",
            "echo",
            json!({"text": "ab", "repeat": 3})
        )
        .await,
        Ok("ababab".to_owned())
    );
    assert_eq!(
        call(&pack, "paged", "p3a", json!({})).await,
        Ok("called p3a".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_late_nodelay_server_serves_once_released() {
    let server = Fixture::builder()
        .answers(Answers::Sse)
        .revisions(Revisions::SessionBased)
        .nodelay(true)
        .late(Duration::from_millis(200))
        .held()
        .start()
        .await;
    let pack = pack(json!({"s": {"url": server.url()}}));
    let entry = settled(&pack, "s", Duration::from_millis(500)).await;
    assert_eq!(entry["status"], "loading", "{entry}");
    assert_eq!(server.initializes(), 0);
    server.release();
    wait_for(&pack, "s", "ready", READY).await;
    assert_eq!(server.initializes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_answers_after_its_time_and_records_its_start() {
    let server = Fixture::builder()
        .slow_for(Duration::from_millis(50))
        .start()
        .await;
    let pack = pack(json!({"s": {"url": server.url()}}));
    wait_for(&pack, "s", "ready", READY).await;
    let started = std::time::Instant::now();
    assert_eq!(
        call(&pack, "s", "slow", json!({})).await,
        Ok("done".to_owned())
    );
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "answered before its time"
    );
    assert_eq!(server.slow_started().len(), 1);
    assert_eq!(server.wait_cancelled(Duration::ZERO).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_answers_the_entry_or_why_the_server_is_not_ready() {
    let server = Fixture::start(Mode::Sse).await;
    let servers = json!({"s": {"url": server.url()}, "local": {"command": "x"}});
    let pack = pack(servers);
    let entry = ready(&pack, "s", READY).await.expect("s is ready");
    assert_eq!(entry["status"], "ready");
    let refused = ready(&pack, "local", READY)
        .await
        .expect_err("a refused entry");
    assert!(refused.starts_with("`local` is in error: "), "{refused}");
    // No status will ever name it: the wait ends at once.
    let missing = ready(&pack, "absent", Duration::ZERO).await;
    let missing = missing.expect_err("no such server");
    assert_eq!(missing, "the listing has no `absent`");
}
