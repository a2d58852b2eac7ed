//! `cargo run --release -p bench`: the Pack against the physical limit and against rmcp, on
//! loopback, in one run. BENCHMARKS.md explains the figures and the goals.
//!
//! A crate of its own so that the policy checks (`cargo test -p build-xtask`) do not build
//! rmcp's client and server and axum. The servers are rmcp's own Streamable HTTP server in a
//! separate process: this same binary started as `bench serve` ([`serve`]), so the run never
//! waits on a second build. Every wire figure is measured in rounds, each round running the
//! four clients one after the other (raw, raw-nopool, pack, rmcp; A B C D A B C D), so the
//! machine's drift hits all of them alike. The module is split by concern: [`server`] starts
//! the server process, [`clients`] holds the four clients, [`measure`] times them and
//! [`report`] prints the table and the `RATIOS` line.

#![forbid(unsafe_code)]
// The table and the RATIOS line on stdout are this command's result.
#![allow(clippy::print_stdout)]

mod clients;
mod gateway;
mod measure;
mod oneshot;
mod relist;
mod report;
mod scale;
mod search;
mod serve;
mod server;
mod ts_sdk;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clients::{Client, Kind, Payload};
use report::{Figure, Results, RowKey};
use server::{Mode, Server};

/// Rounds of the other wire figures (A B C D, twice).
const ROUNDS: usize = 2;
/// Rounds of the 2026-07-28 section: its CPU ratio's goal (1.1) lies within this machine's
/// noise from one round to the next (raw alone moved from 48 to 79 µs a call), so its
/// ratios are medians over five rounds.
const MODERN_ROUNDS: usize = 5;
/// The window of a throughput run.
const WINDOW: Duration = Duration::from_secs(5);
/// Servers in the fleet figures (time to ready, listing, memory).
const FLEET: usize = 100;
/// Tools per server for the listing figure.
const FLEET_TOOLS: usize = 100;
/// How the fleet's servers are configured: TCP_NODELAY, so time to ready measures the
/// client's work and not the server's Nagle delays, and 2026-07-28, the latest revision.
const FLEET_MODE: Mode = Mode::Modern;
/// Rounds of the time-to-ready figures (1 server, then 100).
const READY_ROUNDS: usize = 5;
/// Rounds of time to ready for the 100 x 100 catalog (the last one is listed).
const LISTING_ROUNDS: usize = 3;
/// Timed listings of the 100 x 100 catalog.
const LIST_CALLS: usize = 1000;
/// How long the 100 ready servers sit idle before memory is read.
const IDLE: Duration = Duration::from_secs(1);
/// How long the runtime's blocking threads get to finish when the benchmark ends.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_millis(200);

/// What one step measures.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What {
    /// This many timed calls at concurrency 1.
    Latency(usize),
    /// Calls per second with this many tasks, for [`WINDOW`].
    Throughput(usize),
}

/// The wire measurements, in order: per server, the payloads and figures.
///
/// Chosen so the whole command stays well under 10 minutes on a shared 2-core machine:
/// everything the goals need is on the TCP_NODELAY server (small and 1 MiB, c=1, 16, 64);
/// the default server gets the small c=1 figure the stall shows in (a keep-alive client needs
/// 45 s per round there), the stateless JSON server the small c=1 figure, and the 2026-07-28
/// server the small figures at c=1, 16 and 64.
fn plan() -> Vec<(Mode, Vec<(Payload, What)>)> {
    let (small, large) = (Payload::small, Payload::large);
    vec![
        (Mode::Default, vec![(small(), What::Latency(1000))]),
        (
            Mode::NoDelay,
            vec![
                (small(), What::Latency(2000)),
                (small(), What::Throughput(16)),
                (small(), What::Throughput(64)),
                (large(), What::Latency(1000)),
                (large(), What::Throughput(16)),
                (large(), What::Throughput(64)),
            ],
        ),
        (Mode::Json, vec![(small(), What::Latency(2000))]),
        (
            Mode::Modern,
            vec![
                (small(), What::Latency(2000)),
                (small(), What::Throughput(16)),
                (small(), What::Throughput(64)),
            ],
        ),
    ]
}

/// The sections of a run, for `--only` (the default runs them all, in this order).
const SECTIONS: [&str; 11] = [
    "startup", "oneshot", "listing", "relist", "search", "default", "nodelay", "json", "modern",
    "scale", "store",
];

/// `bench [--only SECTION,...]`, where a section is one of [`SECTIONS`] (`--only` is for
/// profiling one part; the table of a partial run is partial); `bench serve ...` is the
/// server process the run starts.
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|arg| arg == serve::SUBCOMMAND) {
        return serve::main(&args[1..]);
    }
    if args.first().is_some_and(|arg| arg == oneshot::SUBCOMMAND) {
        return oneshot::raw_main(&args[1..]);
    }
    let only: Vec<String> = match args.as_slice() {
        [] => SECTIONS.iter().map(|s| (*s).to_owned()).collect(),
        [flag, list] if flag == "--only" => list.split(',').map(str::to_owned).collect(),
        _ => {
            eprintln!(
                "usage: bench [--only {}] | bench {} ... | bench {} URL",
                SECTIONS.join(","),
                serve::SUBCOMMAND,
                oneshot::SUBCOMMAND
            );
            return ExitCode::from(2);
        }
    };
    if let Some(unknown) = only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
        eprintln!(
            "bench: unknown section {unknown}; the sections are {}",
            SECTIONS.join(",")
        );
        return ExitCode::from(2);
    }
    // The Pack's own logs (which server switched to new connections, ...), when asked for.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    if cfg!(debug_assertions) {
        eprintln!("bench: this is a debug build; run `cargo run --release -p bench`");
    }
    let started = Instant::now();
    let bin = match std::env::current_exe() {
        Ok(bin) => bin,
        Err(error) => {
            eprintln!("bench: cannot find this program to start its server: {error}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench: cannot build the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Everything runs in a task, so calls are made from the runtime's workers as a Host's
    // would be, not from the thread that blocks on the runtime.
    let outcome = runtime.block_on(async move {
        tokio::spawn(run(bin, only))
            .await
            .map_err(|error| format!("the benchmark task failed: {error}"))?
    });
    runtime.shutdown_timeout(SHUTDOWN_TIMEOUT);
    match outcome {
        Ok(results) => {
            println!("{}", results.table());
            println!(
                "Latency ratios above 1 and throughput ratios below 1 mean the Pack is slower; \
                 CPU ratios above 1 mean it costs more."
            );
            println!(
                "bench: finished in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            println!("{}", results.ratios_line());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("bench: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The tokio runtime of both benchmark processes, the client and `bench serve`: two workers
/// each, as the two processes share the machine's two cores.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

async fn run(bin: std::path::PathBuf, only: Vec<String>) -> Result<Results, String> {
    let wanted = |section: &str| only.iter().any(|s| s == section);
    let mut results = Results::default();
    if wanted("startup") {
        startup(&bin, &mut results).await?;
    }
    if wanted("oneshot") {
        oneshot::oneshot(&bin, &mut results).await?;
    }
    if wanted("listing") {
        listing(&bin, &mut results).await?;
    }
    if wanted("relist") {
        relist::relist(&bin, &mut results).await?;
    }
    if wanted("search") {
        search::search(&mut results).await?;
    }
    for (mode, steps) in plan() {
        if wanted(mode.section()) {
            wire(&bin, mode, &steps, &mut results).await?;
        }
    }
    if wanted("scale") {
        scale::scale(&bin, &mut results).await?;
    }
    if wanted("store") {
        scale::store(&bin, &mut results).await?;
    }
    Ok(results)
}

/// Memory and time to ready, on [`FLEET`] servers with the one `echo` tool each.
///
/// Memory first, while the heap is fresh: VmRSS before and after a Pack of [`FLEET`] servers
/// is ready and has sat idle for [`IDLE`] (a one-server Pack is built and dropped before, so
/// one-time costs are not counted). Then time to ready for 1 and for [`FLEET`] servers, in
/// alternating rounds, of the Pack and of the raw client (the baseline: the same handshake
/// and listing with nothing else, on the same machine).
async fn startup(bin: &std::path::Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: memory and time to ready, 1 and {FLEET} servers of 1 tool");
    let server = Server::start(bin, FLEET_MODE, 1, FLEET)?;
    let (warm, _) = measure::time_to_ready(&server.urls[..1]).await?;
    warm.shutdown().await;
    drop(warm);
    let before = measure::resident_kib()?;
    let (pack, _) = measure::time_to_ready(&server.urls).await?;
    tokio::time::sleep(IDLE).await;
    let after = measure::resident_kib()?;
    results.rss_kib = Some((before, after));
    results.rss_servers = FLEET;
    pack.shutdown().await;
    drop(pack);
    let millis = |time: Duration| time.as_secs_f64() * 1e3;
    for _ in 0..READY_ROUNDS {
        for (urls, times) in [
            (&server.urls[..1], &mut results.ready_1_ms),
            (&server.urls[..], &mut results.ready_100_ms),
        ] {
            let (pack, time) = measure::time_to_ready(urls).await?;
            times.push(millis(time));
            pack.shutdown().await;
            drop(pack);
        }
        for (urls, times) in [
            (&server.urls[..1], &mut results.raw_ready_1_ms),
            (&server.urls[..], &mut results.raw_ready_100_ms),
        ] {
            let (raws, time) = measure::raw_time_to_ready(urls, FLEET_MODE.modern()).await?;
            times.push(millis(time));
            for raw in &raws {
                raw.close().await;
            }
            drop(raws);
        }
    }
    Ok(())
}

/// [`FLEET`] servers of [`FLEET_TOOLS`] tools: time to ready, then the latency of listing
/// them all with the last Pack.
async fn listing(bin: &std::path::Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: {FLEET} servers of {FLEET_TOOLS} tools: time to ready, listing");
    let server = Server::start(bin, FLEET_MODE, FLEET_TOOLS, FLEET)?;
    for round in 0..LISTING_ROUNDS {
        let (pack, all) = measure::time_to_ready(&server.urls).await?;
        results.ready_catalog_ms.push(all.as_secs_f64() * 1e3);
        if round + 1 == LISTING_ROUNDS {
            let listing = measure::listing(&pack, LIST_CALLS).await?;
            results.list_ms = Some((
                listing.p50.as_secs_f64() * 1e3,
                listing.p99.as_secs_f64() * 1e3,
            ));
        }
        pack.shutdown().await;
        drop(pack);
    }
    Ok(())
}

/// Every step of one server's plan, in rounds of the four clients.
async fn wire(
    bin: &std::path::Path,
    mode: Mode,
    steps: &[(Payload, What)],
    results: &mut Results,
) -> Result<(), String> {
    let server = Server::start(bin, mode, 1, 1)?;
    // `BENCH_CLIENTS=pack,raw` measures those clients only (for profiling one of them).
    let chosen = std::env::var("BENCH_CLIENTS").ok();
    let chosen = |kind: &Kind| {
        chosen
            .as_deref()
            .is_none_or(|list| list.split(',').any(|name| name == kind.name()))
    };
    let kinds: Vec<Kind> = (Kind::ALL.into_iter())
        .filter(|kind| kind.serves(mode) && chosen(kind))
        .collect();
    if kinds.contains(&Kind::TsSdk) {
        ts_sdk::install().await?;
    }
    let mut clients = Vec::with_capacity(kinds.len());
    for kind in kinds {
        let client = Client::connect(kind, server.url(), mode.modern())
            .await
            .map_err(|error| format!("{} on {}: {error}", kind.name(), mode.name()))?;
        clients.push((kind, Arc::new(client)));
    }
    for (payload, what) in steps {
        let rounds = if mode == Mode::Modern {
            MODERN_ROUNDS
        } else {
            ROUNDS
        };
        for round in 1..=rounds {
            for (kind, client) in clients.iter().filter(|(kind, _)| kind.measures(*what)) {
                let started = Instant::now();
                let context = |error: String| {
                    format!(
                        "{} on {}, {}: {error}",
                        kind.name(),
                        mode.name(),
                        payload.name
                    )
                };
                let key = |figure| RowKey::new(mode, payload, figure);
                match *what {
                    What::Latency(calls) => {
                        let latency = match &**client {
                            Client::TsSdk(node) => node.latency(payload, calls).await,
                            client => measure::latency(client, payload, calls).await,
                        }
                        .map_err(context)?;
                        results.add(key(Figure::P50), *kind, micros(latency.p50));
                        results.add(key(Figure::P99), *kind, micros(latency.p99));
                    }
                    What::Throughput(tasks) => {
                        let throughput = match &**client {
                            Client::TsSdk(node) => node.throughput(payload, tasks, WINDOW).await,
                            _ => measure::throughput(client, payload, tasks, WINDOW).await,
                        }
                        .map_err(context)?;
                        let cpu = micros(throughput.cpu_per_call);
                        results.add(key(Figure::CpuPerCall(tasks)), *kind, cpu);
                        let key = key(Figure::Throughput(tasks));
                        results.add(key.clone(), *kind, throughput.calls_per_s);
                        results.add_errors(key, *kind, throughput.errors);
                    }
                }
                eprintln!(
                    "bench: {:<20} {:<12} {:<16} round {round} {:<10} {:.1} s",
                    mode.name(),
                    payload.name,
                    match what {
                        What::Latency(calls) => format!("c=1 x {calls}"),
                        What::Throughput(tasks) => format!("c={tasks} for {WINDOW:?}"),
                    },
                    kind.name(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
    }
    for (_, client) in &clients {
        client.close().await;
    }
    drop(clients);
    drop(server);
    Ok(())
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
