//! The team gateway on its shared state, against a throwaway PostgreSQL (and nginx) of the
//! fixture's, each section skipped in one line when they are not installed:
//!
//! - `scale`: two `runvil serve --http` instances on one database and one session key behind
//!   nginx (round robin), against one of them behind an nginx configured the same way, in
//!   alternating rounds: many concurrent small calls, calls per second
//!   (`scale_2_vs_1_tput`). On a two-core machine the point is that nothing serialises
//!   across instances (the database is not on a call's path), not a doubling.
//! - `store`: one client's small calls through a gateway keeping its records in the database,
//!   against the same gateway on the files, in alternating rounds: the median latency
//!   (`store_pg_c1_p50_vs_files`), which shows whether a call reads the database.
//!
//! Every gateway checks the same issuer's token, as in the gateway figures, and writes its own
//! audit file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use shared_mcp_fixture::services::{Balancer, Postgres};

use crate::clients::{Client, Payload};
use crate::gateway::{Gateway, Issuer};
use crate::measure;
use crate::report::Results;
use crate::server::{Mode, Server};
use crate::{ROUNDS, WINDOW};

/// Concurrent calls of the throughput rounds: as many as the balancer keeps idle connections
/// to its upstreams (the fixture's `keepalive 16`), so each call reuses one, as a balancer
/// sized for its load would, and the figure is the gateways' rather than new connections'.
const SCALE_TASKS: usize = 16;
/// Timed calls of each latency round.
const STORE_CALLS: usize = 2000;

/// Files the instances share (the session key, the store's key), removed when dropped.
struct Shared(PathBuf);

impl Shared {
    fn new(section: &str) -> Result<Shared, String> {
        let dir = std::env::temp_dir().join(format!("bench-{section}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        Ok(Shared(dir))
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// The flags of an instance keeping its state in `postgres`.
    fn store_flags(&self, postgres: &Postgres) -> Vec<String> {
        vec![
            "--store".to_owned(),
            postgres.dsn(),
            "--store-key-file".to_owned(),
            self.path("store.key"),
        ]
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two instances behind nginx against one: calls per second, per round.
pub(crate) async fn scale(bin: &Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: scale-out, 1 and 2 gateways on PostgreSQL behind nginx");
    let Some(postgres) = Postgres::start() else {
        return Ok(());
    };
    let server = Server::start(bin, Mode::Modern, 1, 1)?;
    let issuer = Issuer::start().await;
    let shared = Shared::new("scale")?;
    let mut flags = shared.store_flags(&postgres);
    flags.extend(["--session-key-file".to_owned(), shared.path("session.key")]);
    // One after the other: the first makes the key files the second reads.
    let first = Gateway::start_with(server.url(), &issuer, &flags).await?;
    let second = Gateway::start_with(server.url(), &issuer, &flags).await?;
    let (first_addr, second_addr) = (address(&first.url)?, address(&second.url)?);
    let Some(one) = Balancer::start(&[first_addr]) else {
        return Ok(());
    };
    let Some(two) = Balancer::start(&[first_addr, second_addr]) else {
        return Ok(());
    };
    let payload = Payload::small();
    let through_one = Arc::new(Client::through(&one.url("/mcp"), &issuer.token).await?);
    let through_two = Arc::new(Client::through(&two.url("/mcp"), &issuer.token).await?);
    for round in 1..=ROUNDS {
        for (instances, client, figures) in [
            (1, &through_one, &mut results.scale_one_tput),
            (2, &through_two, &mut results.scale_two_tput),
        ] {
            let started = Instant::now();
            let run = measure::throughput(client, &payload, SCALE_TASKS, WINDOW)
                .await
                .map_err(|error| format!("{instances} gateway(s) behind nginx: {error}"))?;
            if run.errors > 0 {
                return Err(format!(
                    "{instances} gateway(s) behind nginx: {} calls failed",
                    run.errors
                ));
            }
            figures.push(run.calls_per_s);
            eprintln!(
                "bench: {instances} gateway(s) behind nginx, c={SCALE_TASKS} for {WINDOW:?}, \
                 round {round}: {:.0} calls/s ({:.1} s)",
                run.calls_per_s,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// One client's calls through a gateway on the database against one on the files: the median
/// latency, per round.
pub(crate) async fn store(bin: &Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: a gateway's calls with --store (PostgreSQL) and with the files");
    let Some(postgres) = Postgres::start() else {
        return Ok(());
    };
    let server = Server::start(bin, Mode::Modern, 1, 1)?;
    let issuer = Issuer::start().await;
    let shared = Shared::new("store")?;
    let files = Gateway::start_with(server.url(), &issuer, &[]).await?;
    let database =
        Gateway::start_with(server.url(), &issuer, &shared.store_flags(&postgres)).await?;
    let payload = Payload::small();
    let on_files = Client::through(&files.url, &issuer.token).await?;
    let on_database = Client::through(&database.url, &issuer.token).await?;
    for round in 1..=ROUNDS {
        for (name, client, figures) in [
            ("files", &on_files, &mut results.store_files_p50_us),
            ("PostgreSQL", &on_database, &mut results.store_pg_p50_us),
        ] {
            let started = Instant::now();
            let latency = measure::latency(client, &payload, STORE_CALLS)
                .await
                .map_err(|error| format!("the gateway on {name}: {error}"))?;
            let p50 = latency.p50.as_secs_f64() * 1e6;
            figures.push(p50);
            eprintln!(
                "bench: a gateway on {name}, c=1 x {STORE_CALLS}, round {round}: p50 {p50:.0} µs \
                 ({:.1} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// `127.0.0.1:PORT` of a gateway's endpoint `http://127.0.0.1:PORT/mcp`.
fn address(url: &str) -> Result<SocketAddr, String> {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .parse()
        .map_err(|error| format!("the gateway's URL {url} has no address: {error}"))
}
