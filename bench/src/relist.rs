//! The live catalog's cost: a server of [`RELIST_TOOLS`] tools listed when the Pack starts,
//! then listed again after it tells of a change (one tool fewer), each timed and measured for
//! the Pack process's peak memory.
//!
//! Peak memory is `VmHWM`, reset before each listing by writing `5` to
//! `/proc/self/clear_refs` (Linux), less `VmRSS` at that moment: what the listing needed on
//! top of what the process held. The server is a separate process (`bench serve --changing`).

use std::time::{Duration, Instant};

use runvil_plugin::{BackendState, Pack};
use serde_json::json;

use crate::clients::NAMESPACE;
use crate::measure::{resident_kib, status_kib};
use crate::report::Results;
use crate::server::Server;

/// The size of the catalog: the Pack's own limit per server.
const RELIST_TOOLS: usize = 10_000;
/// Rounds, each with a new Pack: its first listing, then one re-list.
const RELIST_ROUNDS: usize = 3;
/// How long after its first listing the Pack is told of a change: past the Pack's least
/// interval between two listings (2 s), so the figure is the re-list's own time.
const SETTLE: Duration = Duration::from_millis(2_500);
/// How long a listing may take.
const WITHIN: Duration = Duration::from_secs(60);

/// One listing: how long it took and the peak memory it added, KiB.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Listed {
    pub(crate) ms: f64,
    pub(crate) peak_kib: u64,
}

pub(crate) async fn relist(bin: &std::path::Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: a server of {RELIST_TOOLS} tools: first listing, then re-listed");
    for _ in 0..RELIST_ROUNDS {
        // A server per round: its notice goes to the one stream open for it, the round's.
        let mut server = Server::start_changing(bin, RELIST_TOOLS)?;
        let start = Peak::reset()?;
        let config = json!({ NAMESPACE: { "url": server.url() } });
        let pack = shared_mcp_fixture::try_pack(config).map_err(|error| error.to_string())?;
        let first_count = tools_once_ready(&*pack, None).await?;
        results.relist_first.push(start.listed()?);
        tokio::time::sleep(SETTLE).await;
        let start = Peak::reset()?;
        server.change()?;
        tools_once_ready(&*pack, Some(first_count)).await?;
        results.relist_again.push(start.listed()?);
        pack.shutdown().await;
    }
    Ok(())
}

/// Waits until the server is ready with a number of tools other than `not`; that number.
async fn tools_once_ready(pack: &dyn Pack, not: Option<usize>) -> Result<usize, String> {
    let mut status = pack.status();
    let listed = |all: &Vec<runvil_plugin::BackendStatus>| {
        all.iter().any(|s| match &s.state {
            BackendState::Ready { tools } => Some(tools.len()) != not,
            _ => false,
        })
    };
    let ready = tokio::time::timeout(WITHIN, status.wait_for(listed))
        .await
        .map_err(|_| format!("the listing did not end within {WITHIN:?}"))?
        .map_err(|_| "the Pack's status ended".to_owned())?;
    ready
        .iter()
        .find_map(|s| match &s.state {
            BackendState::Ready { tools } => Some(tools.len()),
            _ => None,
        })
        .ok_or_else(|| "no server is ready".to_owned())
}

/// A listing's start: when it began and the memory held then, the peak reset.
struct Peak {
    started: Instant,
    resident_kib: u64,
}

impl Peak {
    fn reset() -> Result<Peak, String> {
        std::fs::write("/proc/self/clear_refs", "5")
            .map_err(|error| format!("cannot reset the peak memory: {error}"))?;
        Ok(Peak {
            started: Instant::now(),
            resident_kib: resident_kib()?,
        })
    }

    /// The time since the reset and the peak above what was held then.
    fn listed(&self) -> Result<Listed, String> {
        let ms = self.started.elapsed().as_secs_f64() * 1e3;
        let peak = status_kib("VmHWM")?;
        Ok(Listed {
            ms,
            peak_kib: peak.saturating_sub(self.resident_kib),
        })
    }
}
