//! The measurements: latency at concurrency 1, throughput at concurrency N, time to ready,
//! listing latency and resident memory. Each returns figures; none prints.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use runvil_plugin::Pack;
use serde_json::{Value, json};

use crate::clients::{Client, Payload, Raw};

/// Latency percentiles of one run at concurrency 1.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Latency {
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

/// Throughput of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Throughput {
    pub(crate) calls_per_s: f64,
    pub(crate) errors: u64,
    /// This process's CPU time (all threads, user and system) per completed call: what the
    /// client costs the machine, steadier than calls per second on a shared machine.
    pub(crate) cpu_per_call: Duration,
}

/// `calls` timed calls one after the other, after `calls / 10` untimed ones.
pub(crate) async fn latency(
    client: &Client,
    payload: &Payload,
    calls: usize,
) -> Result<Latency, String> {
    for _ in 0..calls / 10 {
        client.call(payload).await?;
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        client.call(payload).await?;
        samples.push(started.elapsed());
    }
    Ok(Latency::of(samples))
}

impl Latency {
    /// The median and 99th percentile of `samples`.
    fn of(mut samples: Vec<Duration>) -> Latency {
        samples.sort_unstable();
        Latency {
            p50: percentile(&samples, 50),
            p99: percentile(&samples, 99),
        }
    }
}

/// The `pct`-th percentile (nearest rank) of sorted `samples`.
pub(crate) fn percentile(samples: &[Duration], pct: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let rank = (samples.len() * pct).div_ceil(100).max(1);
    samples[rank.min(samples.len()) - 1]
}

/// `tasks` tasks each calling in a loop for `window`, after one untimed call each; completed
/// calls per second of wall time (the calls in flight at the end are waited for and counted).
pub(crate) async fn throughput(
    client: &Arc<Client>,
    payload: &Payload,
    tasks: usize,
    window: Duration,
) -> Result<Throughput, String> {
    // Warm-up: one call per task, all at once, so the pool holds its connections.
    let mut warm = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let client = Arc::clone(client);
        let payload = payload.clone();
        warm.push(tokio::spawn(async move {
            client.call(&payload).await.map(|_| ())
        }));
    }
    for task in warm {
        task.await.map_err(|error| error.to_string())??;
    }
    let completed = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let cpu_before = cpu_time()?;
    let started = Instant::now();
    let deadline = started + window;
    let mut running = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let (client, payload) = (Arc::clone(client), payload.clone());
        let (completed, errors) = (Arc::clone(&completed), Arc::clone(&errors));
        running.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                match client.call(&payload).await {
                    Ok(_) => completed.fetch_add(1, Ordering::Relaxed),
                    Err(_) => errors.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    for task in running {
        task.await.map_err(|error| error.to_string())?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_time()?.saturating_sub(cpu_before);
    let completed = completed.load(Ordering::Relaxed);
    Ok(Throughput {
        cpu_per_call: cpu / u32::try_from(completed.max(1)).unwrap_or(u32::MAX),
        calls_per_s: completed as f64 / elapsed,
        errors: errors.load(Ordering::Relaxed),
    })
}

/// The configuration of a Pack with one server per url, named `s000`, `s001`, ...
pub(crate) fn fleet_config(urls: &[String]) -> Value {
    let servers: serde_json::Map<String, Value> = urls
        .iter()
        .enumerate()
        .map(|(index, url)| (namespace(index), json!({ "url": url })))
        .collect();
    json!({ "mcp": servers })
}

fn namespace(index: usize) -> String {
    format!("s{index:03}")
}

/// Constructs a Pack over `urls` and waits until every server is `ready`; the Pack and the
/// time from construct to the last server ready, read as a Host reads it: from the Pack's
/// status, which wakes the waiter when the last server changes.
pub(crate) async fn time_to_ready(urls: &[String]) -> Result<(Arc<dyn Pack>, Duration), String> {
    let mut packs = runvil_plugin::Packs::new();
    plugin_mcp::install(&mut packs, &fleet_config(urls));
    let mut services = runvil_plugin::Services::new();
    services.insert(
        runvil_plugin::TOKIO_RUNTIME,
        tokio::runtime::Handle::current(),
    );
    let started = Instant::now();
    let pack = packs
        .construct("mcp", &services)
        .map_err(|error| error.to_string())?;
    let mut status = pack.status();
    let all_ready = |all: &Vec<runvil_plugin::BackendStatus>| {
        all.iter()
            .all(|s| matches!(s.state, runvil_plugin::BackendState::Ready { .. }))
    };
    match tokio::time::timeout(Duration::from_secs(60), status.wait_for(all_ready)).await {
        Ok(Ok(_)) => {}
        _ => return Err("the servers were not all ready within 60 s".to_owned()),
    }
    let elapsed = started.elapsed();
    drop(status);
    Ok((pack, elapsed))
}

/// The raw client's time to ready over `urls` (servers that serve 2026-07-28 if `modern`), the
/// baseline of [`time_to_ready`]: its reqwest client built (reading no trust roots, as the
/// Pack's do not before a first TLS handshake), then every server's start ([`Raw::start`])
/// and `tools/list` at once on that one client. The clients, to be closed, and the time.
pub(crate) async fn raw_time_to_ready(
    urls: &[String],
    modern: bool,
) -> Result<(Vec<Raw>, Duration), String> {
    let started = Instant::now();
    let client = Raw::http_client(true)?;
    let starts = urls.iter().cloned().map(|url| {
        let client = client.clone();
        tokio::spawn(async move {
            let raw = Raw::start(client, &url, modern).await?;
            raw.list_tools().await?;
            Ok::<_, String>(raw)
        })
    });
    let mut raws = Vec::with_capacity(urls.len());
    for start in starts.collect::<Vec<_>>() {
        raws.push(start.await.map_err(|error| error.to_string())??);
    }
    Ok((raws, started.elapsed()))
}

/// `calls` listings of every server's tools (`get_dynamic_tools` with no arguments), after
/// `calls / 10` untimed ones; the checked listing's size and the latency.
pub(crate) async fn listing(pack: &Arc<dyn Pack>, calls: usize) -> Result<Latency, String> {
    let mut samples = Vec::with_capacity(calls);
    for index in 0..calls + calls / 10 {
        let started = Instant::now();
        let text = pack
            .call("mcp/get_dynamic_tools", json!({}))
            .await
            .map_err(|error| format!("the listing failed: {error}"))?;
        let elapsed = started.elapsed();
        if index >= calls / 10 {
            samples.push(elapsed);
        } else if index == 0 {
            check_listing(&text)?;
        }
    }
    Ok(Latency::of(samples))
}

fn check_listing(text: &str) -> Result<(), String> {
    let listing: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
    let servers = listing["servers"].as_array().ok_or("no servers listed")?;
    let tools: usize = servers
        .iter()
        .map(|server| server["tools"].as_array().map_or(0, Vec::len))
        .sum();
    if servers.iter().any(|server| server["status"] != "ready") {
        return Err("a listed server is not ready".to_owned());
    }
    if tools == 0 {
        return Err("the listing has no tools".to_owned());
    }
    Ok(())
}

/// The CPU time this process has used, user and system, from `/proc/self/stat`.
fn cpu_time() -> Result<Duration, String> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|error| format!("cannot read /proc/self/stat: {error}"))?;
    // The command name (field 2) may hold spaces and parentheses; the fields after its last
    // `)` are fixed: utime and stime (fields 14 and 15) are the 12th and 13th of them.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|field| field.parse::<u64>().ok())
    };
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return Err("/proc/self/stat has no utime and stime".to_owned());
    };
    // /proc counts in USER_HZ, which Linux fixes at 100 per second for user space.
    Ok(Duration::from_millis((user + system) * 10))
}

/// This process's resident memory, in KiB (`VmRSS` of `/proc/self/status`).
pub(crate) fn resident_kib() -> Result<u64, String> {
    status_kib("VmRSS")
}

/// One memory figure of `/proc/self/status`, in KiB (`VmRSS`, `VmHWM`, ...).
pub(crate) fn status_kib(field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|error| format!("cannot read /proc/self/status: {error}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("/proc/self/status has no {field}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_counts_only_when_every_server_is_ready_with_tools() {
        let ready = r#"{"servers": [{"status": "ready", "tools": ["a"]}, {"status": "ready", "tools": []}]}"#;
        assert_eq!(check_listing(ready), Ok(()));
        let loading = ready.replacen("ready", "loading", 1);
        assert_eq!(
            check_listing(&loading),
            Err("a listed server is not ready".to_owned())
        );
        let empty = r#"{"servers": [{"status": "ready", "tools": []}]}"#;
        assert_eq!(
            check_listing(empty),
            Err("the listing has no tools".to_owned())
        );
        assert!(check_listing("{}").is_err() && check_listing("not json").is_err());
    }

    #[test]
    fn a_fleet_names_its_servers_in_order() {
        let urls = ["http://a".to_owned(), "http://b".to_owned()];
        let expected = json!({"mcp": {"s000": {"url": "http://a"}, "s001": {"url": "http://b"}}});
        assert_eq!(fleet_config(&urls), expected);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=200).map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50), Duration::from_millis(100));
        assert_eq!(percentile(&samples, 99), Duration::from_millis(198));
        assert_eq!(percentile(&samples[..1], 99), Duration::from_millis(1));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }
}
