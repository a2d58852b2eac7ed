//! A page padded with a field the Pack does not read costs the time to read it, not memory:
//! in its own test binary, so the process's peak resident memory is this test's alone.

use shared_mcp_fixture::test_support as support;

use std::time::Duration;

use serde_json::json;
use support::hostile::{Hostile, Request, mcp, raw_result_reply};

/// Peak resident memory of this process in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_padded_with_an_unused_array_is_not_held() {
    // Nearly 16 MiB of zeros: 8 million JSON values, 256 MiB as parsed values.
    let zeros = "0,".repeat(8_380_000);
    let result = format!(
        r#"{{"tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}],"padding":[{zeros}0]}}"#
    );
    drop(zeros);
    let before = peak_rss_kib();
    let server = Hostile::start(move |r: &Request| {
        if r.rpc_method() != "tools/list" {
            return mcp(r);
        }
        raw_result_reply(r, &result)
    })
    .await;
    let pack = support::pack(json!({"s": {"url": server.url}}));
    let entry = support::wait_for(&pack, "s", "ready", Duration::from_secs(60)).await;
    assert_eq!(entry["tools"], json!(["t"]));
    // The page's text passes through the test server and the client a few times over; the
    // values it would parse into are 256 MiB on their own.
    let grown = peak_rss_kib().saturating_sub(before);
    assert!(grown < 128 * 1024, "peak memory grew by {grown} KiB");
}
