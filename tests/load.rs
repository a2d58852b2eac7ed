//! Load without loss: many servers, many calls at once and in a row, through the contract.
//! Every call gets exactly one outcome, each result matches its request, and dropping the
//! Pack leaves no task, connection or session behind.

use shared_mcp_fixture::test_support as support;

use std::time::Duration;

use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, Mode};
use support::wait_until;

/// How long the Pack's sessions and tasks get to end after it is dropped.
const SETTLE: Duration = Duration::from_secs(15);

const SERVERS: usize = 20;
const CONCURRENT: usize = 200;
const SEQUENTIAL: usize = 2_000;

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Resident memory of this process in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_calls_each_get_their_own_answer_and_nothing_is_left_behind() {
    // The servers run on a runtime of their own, so this runtime's task count is the Pack's.
    let server_runtime = tokio::runtime::Runtime::new().expect("server runtime");
    let servers: Vec<Fixture> = {
        let handle = server_runtime.handle().clone();
        std::thread::spawn(move || {
            handle.block_on(async {
                let mut servers = Vec::new();
                for i in 0..SERVERS {
                    let mode = if i % 2 == 0 { Mode::Sse } else { Mode::Json };
                    servers.push(Fixture::start(mode).await);
                }
                servers
            })
        })
        .join()
        .expect("servers started")
    };
    let config: serde_json::Map<String, Value> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("s{i:02}"), json!({"url": s.url()})))
        .collect();
    let tasks_before = alive_tasks();
    let rss_before = rss_kib();

    let pack = support::pack(Value::Object(config));
    for i in 0..SERVERS {
        support::wait_for(&pack, &format!("s{i:02}"), "ready", Duration::from_secs(20)).await;
    }

    let mut calls = tokio::task::JoinSet::new();
    for i in 0..CONCURRENT {
        let pack = pack.clone();
        calls.spawn(async move {
            let text = format!("concurrent-{i}");
            let namespace = format!("s{:02}", i % SERVERS);
            let outcome = support::call(&pack, &namespace, "echo", json!({"text": text})).await;
            (text, outcome)
        });
    }
    let outcomes = calls.join_all().await;
    assert_eq!(outcomes.len(), CONCURRENT);
    for (text, outcome) in outcomes {
        assert_eq!(outcome, Ok(text));
    }

    for i in 0..SEQUENTIAL {
        let text = format!("sequential-{i}");
        let namespace = format!("s{:02}", i % SERVERS);
        assert_eq!(
            support::call(&pack, &namespace, "echo", json!({"text": text})).await,
            Ok(text)
        );
    }

    drop(pack);
    for server in &servers {
        wait_until("every session is deleted", SETTLE, async || {
            server.session_count().await == 0
        })
        .await;
    }
    wait_until("every task of the Pack has ended", SETTLE, async || {
        alive_tasks() <= tasks_before
    })
    .await;
    let grown = rss_kib().saturating_sub(rss_before);
    assert!(grown < 64 * 1024, "memory grew by {grown} KiB and stayed");
    drop(servers);
    server_runtime.shutdown_background();
}
