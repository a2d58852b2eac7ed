//! The figures a run collected, the one table that shows them all, and the `RATIOS` line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::clients::{Kind, Payload};
use crate::relist::Listed;
use crate::search::Searched;
use crate::server::Mode;

/// What a row of the wire table measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Figure {
    /// Latency at concurrency 1, median, µs.
    P50,
    /// Latency at concurrency 1, 99th percentile, µs.
    P99,
    /// Completed calls per second with this many tasks.
    Throughput(usize),
    /// The client process's CPU time per call in that throughput run, µs.
    CpuPerCall(usize),
}

impl Figure {
    fn label(self) -> String {
        match self {
            Figure::P50 => "c=1 p50 µs".to_owned(),
            Figure::P99 => "c=1 p99 µs".to_owned(),
            Figure::Throughput(tasks) => format!("c={tasks} calls/s"),
            Figure::CpuPerCall(tasks) => format!("c={tasks} client CPU µs/call"),
        }
    }
}

/// A row of the wire table: the server, the payload, the figure.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RowKey {
    pub(crate) mode: Mode,
    /// Sorts the small payload before the large one.
    pub(crate) payload_rank: u8,
    pub(crate) payload: &'static str,
    pub(crate) figure: Figure,
}

impl RowKey {
    pub(crate) fn new(mode: Mode, payload: &Payload, figure: Figure) -> RowKey {
        RowKey {
            mode,
            payload_rank: payload.rank,
            payload: payload.name,
            figure,
        }
    }
}

/// Everything a run measured.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// Per row, per client, one value per round.
    wire: BTreeMap<RowKey, BTreeMap<Kind, Vec<f64>>>,
    /// Failed calls in throughput runs, per row and client.
    errors: BTreeMap<(RowKey, Kind), u64>,
    /// Times to ready (ms) of a Pack with 1 server of 1 tool, one per round.
    pub(crate) ready_1_ms: Vec<f64>,
    /// Times to ready (ms) of a Pack with 100 servers of 1 tool, one per round.
    pub(crate) ready_100_ms: Vec<f64>,
    /// The raw client's time to ready (ms) over the same 1 server, one per round.
    pub(crate) raw_ready_1_ms: Vec<f64>,
    /// The raw client's time to ready (ms) over the same 100 servers, one per round.
    pub(crate) raw_ready_100_ms: Vec<f64>,
    /// Whole-process times (ms) of one-shot `runvil call`s, one per run.
    pub(crate) oneshot_runvil_ms: Vec<f64>,
    /// Whole-process times (ms) of the raw client process making the same requests.
    pub(crate) oneshot_raw_ms: Vec<f64>,
    /// Times to ready (ms) of a Pack with 100 servers of 100 tools, one per round.
    pub(crate) ready_catalog_ms: Vec<f64>,
    /// `get_dynamic_tools` over 100 ready servers of 100 tools: p50 and p99, ms.
    pub(crate) list_ms: Option<(f64, f64)>,
    /// Resident KiB before and after 100 servers are ready and idle.
    pub(crate) rss_kib: Option<(u64, u64)>,
    /// The number of servers the memory figure is for.
    pub(crate) rss_servers: usize,
    /// A 10,000-tool server's first listing, one per round.
    pub(crate) relist_first: Vec<Listed>,
    /// Its re-listing after a change notice, one per round.
    pub(crate) relist_again: Vec<Listed>,
    /// Search: recall on the evaluation set, and latency over 10,000 tools.
    pub(crate) search: Option<Searched>,
    /// Calls per second through nginx in front of one gateway, one per round.
    pub(crate) scale_one_tput: Vec<f64>,
    /// The same in front of two gateways on one database, one per round.
    pub(crate) scale_two_tput: Vec<f64>,
    /// p50 µs of one client's calls through a gateway on the files, one per round.
    pub(crate) store_files_p50_us: Vec<f64>,
    /// The same through a gateway on PostgreSQL (`--store`), one per round.
    pub(crate) store_pg_p50_us: Vec<f64>,
}

impl Results {
    /// Records one value of one round.
    pub(crate) fn add(&mut self, key: RowKey, kind: Kind, value: f64) {
        self.wire
            .entry(key)
            .or_default()
            .entry(kind)
            .or_default()
            .push(value);
    }

    /// Records failed calls of a throughput run.
    pub(crate) fn add_errors(&mut self, key: RowKey, kind: Kind, errors: u64) {
        if errors > 0 {
            *self.errors.entry((key, kind)).or_default() += errors;
        }
    }

    /// pack / `other` for one row, as [`Results::ratio_of`] pairs them.
    fn ratio(&self, key: &RowKey, other: Kind) -> Option<f64> {
        self.ratio_of(key, Kind::Pack, other)
    }

    /// `kind` / `other` for one row: the median of each round's ratio. A round measures the
    /// clients one after the other, so its two figures share the machine's state of that
    /// minute; a slow minute moves both, where it would move a ratio of means.
    fn ratio_of(&self, key: &RowKey, kind: Kind, other: Kind) -> Option<f64> {
        let row = self.wire.get(key)?;
        let paired: Vec<f64> = (row.get(&kind)?.iter())
            .zip(row.get(&other)?)
            .map(|(value, over)| value / over)
            .collect();
        median(&paired)
    }

    fn idle_kib_per_server(&self) -> Option<f64> {
        let (before, after) = self.rss_kib?;
        let servers = self.rss_servers.max(1) as f64;
        Some(after.saturating_sub(before) as f64 / servers)
    }

    /// One-shot `runvil call` over the raw client process, of the medians.
    fn oneshot_ratio(&self) -> Option<f64> {
        median_ratio(&self.oneshot_runvil_ms, &self.oneshot_raw_ms)
    }

    fn ready_ratio(&self) -> Option<f64> {
        median_ratio(&self.ready_100_ms, &self.ready_1_ms)
    }

    fn raw_ready_ratio(&self) -> Option<f64> {
        median_ratio(&self.raw_ready_100_ms, &self.raw_ready_1_ms)
    }

    /// The table, as Markdown.
    pub(crate) fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| server | payload | figure | raw | raw-nopool | pack | pack-100 | rmcp | ts-sdk | \
             gateway | pack/raw | pack/raw-nopool | pack/rmcp | pack/ts-sdk | pack-100/pack | \
             gateway/pack |"
        );
        let _ = writeln!(
            out,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for (key, cells) in &self.wire {
            let mut row = format!(
                "| {} | {} | {} |",
                key.mode.name(),
                key.payload,
                key.figure.label()
            );
            for kind in Kind::ALL {
                let values = cells.get(&kind).map(Vec::as_slice).unwrap_or_default();
                let mut cell = values
                    .iter()
                    .map(|value| thousands(*value))
                    .collect::<Vec<_>>()
                    .join(" ; ");
                if let Some(errors) = self.errors.get(&(key.clone(), kind)) {
                    let _ = write!(cell, " ({errors} errors)");
                }
                let _ = write!(row, " {cell} |");
            }
            for other in [Kind::Raw, Kind::RawNoPool, Kind::Rmcp, Kind::TsSdk] {
                let ratio = self.ratio(key, other).map_or("–".to_owned(), two);
                let _ = write!(row, " {ratio} |");
            }
            for kind in [Kind::Pack100, Kind::Gateway] {
                let ratio = self.ratio_of(key, kind, Kind::Pack);
                let _ = write!(row, " {} |", ratio.map_or("–".to_owned(), two));
            }
            let _ = writeln!(out, "{row}");
        }
        let pack_only = |label: &str, value: String| {
            format!("| Pack startup | | {label} | – | – | {value} | – | – | – | – | | | | | | |\n")
        };
        let rounds = |values: &[f64]| {
            values
                .iter()
                .map(|value| format!("{value:.1}"))
                .collect::<Vec<_>>()
                .join(" ; ")
        };
        // Time to ready has a raw baseline; pack/raw is of the medians.
        let with_raw = |label: &str, raw: String, pack: String, ratio: Option<f64>| {
            let ratio = ratio.map_or("–".to_owned(), two);
            format!(
                "| Pack startup | | {label} | {raw} | – | {pack} | – | – | – | – | {ratio} | | | | | |\n"
            )
        };
        out.push_str(&with_raw(
            "ready, 1 server, ms (rounds)",
            rounds(&self.raw_ready_1_ms),
            rounds(&self.ready_1_ms),
            median_ratio(&self.ready_1_ms, &self.raw_ready_1_ms),
        ));
        out.push_str(&with_raw(
            "ready, 100 servers, ms (rounds)",
            rounds(&self.raw_ready_100_ms),
            rounds(&self.ready_100_ms),
            median_ratio(&self.ready_100_ms, &self.raw_ready_100_ms),
        ));
        if let (Some(pack), Some(raw)) = (self.ready_ratio(), self.raw_ready_ratio()) {
            out.push_str(&with_raw(
                "ready 100 / ready 1 (medians)",
                two(raw),
                two(pack),
                Some(pack / raw),
            ));
        }
        if !self.oneshot_runvil_ms.is_empty() {
            let spread = |values: &[f64]| {
                let median = median(values).map_or("–".to_owned(), |ms| format!("{ms:.1}"));
                let (low, high) = min_max(values);
                format!("{median} (min {low:.1}, max {high:.1})")
            };
            out.push_str(&with_raw(
                &format!(
                    "one-shot `runvil call`, process ms: median (range of {} runs)",
                    self.oneshot_runvil_ms.len()
                ),
                spread(&self.oneshot_raw_ms),
                spread(&self.oneshot_runvil_ms),
                self.oneshot_ratio(),
            ));
        }
        out.push_str(&pack_only(
            "ready, 100 servers of 100 tools, ms (rounds)",
            rounds(&self.ready_catalog_ms),
        ));
        if let Some((p50, p99)) = self.list_ms {
            out.push_str(&pack_only(
                "get_dynamic_tools, 100 x 100 tools, p50 ; p99 ms",
                format!("{p50:.3} ; {p99:.3}"),
            ));
        }
        if let (Some((before, after)), Some(per_server)) =
            (self.rss_kib, self.idle_kib_per_server())
        {
            out.push_str(&pack_only(
                &format!(
                    "VmRSS before → after {} idle ready servers",
                    self.rss_servers
                ),
                format!("{before} → {after} KiB = {per_server:.1} KiB/server"),
            ));
        }
        for (label, listings) in [
            ("10,000 tools, first listing", &self.relist_first),
            (
                "10,000 tools, re-listed after a change notice",
                &self.relist_again,
            ),
        ] {
            if listings.is_empty() {
                continue;
            }
            let ms: Vec<f64> = listings.iter().map(|l| l.ms).collect();
            let peaks: Vec<String> = listings.iter().map(|l| l.peak_kib.to_string()).collect();
            out.push_str(&pack_only(
                &format!("{label}: ms ; peak KiB above resident (rounds)"),
                format!("{} ; {}", rounds(&ms), peaks.join(" ; ")),
            ));
        }
        if let Some(search) = &self.search {
            let set = format!(
                "{} queries, {} tools of {} servers",
                search.queries, search.tools, search.servers
            );
            for (label, recall) in [
                ("", search.clean),
                (", 20 poisoned tools added", search.poisoned),
            ] {
                out.push_str(&pack_only(
                    &format!("search recall@1 ; recall@5, {set}{label}"),
                    format!("{:.3} ; {:.3}", recall.at_1, recall.at_5),
                ));
            }
            out.push_str(&pack_only(
                "search over 10,000 tools: first query (indexing) ; p50 ; p99 ms",
                format!(
                    "{:.3} ; {:.3} ; {:.3}",
                    search.first_ms, search.p50_ms, search.p99_ms
                ),
            ));
        }
        // The shared state's figures: their own baselines, shown in the gateway's column.
        let gateways = |label: &str, value: String| {
            format!(
                "| gateways on PostgreSQL | small 100 B | {label} | – | – | – | – | – | – | {value} | | | | | | |\n"
            )
        };
        for (label, values) in [
            (
                "c=16 calls/s, 1 gateway behind nginx (rounds)",
                &self.scale_one_tput,
            ),
            (
                "c=16 calls/s, 2 gateways behind nginx (rounds)",
                &self.scale_two_tput,
            ),
            (
                "c=1 p50 µs, gateway on the files (rounds)",
                &self.store_files_p50_us,
            ),
            (
                "c=1 p50 µs, gateway with --store (rounds)",
                &self.store_pg_p50_us,
            ),
        ] {
            if !values.is_empty() {
                let shown: Vec<String> = values.iter().map(|value| thousands(*value)).collect();
                out.push_str(&gateways(label, shown.join(" ; ")));
            }
        }
        out
    }

    /// Two gateways' throughput over one's, on the round means.
    fn scale_ratio(&self) -> Option<f64> {
        Some(mean(&self.scale_two_tput)? / mean(&self.scale_one_tput)?)
    }

    /// The p50 with `--store` over the p50 on the files, on the round means.
    fn store_ratio(&self) -> Option<f64> {
        Some(mean(&self.store_pg_p50_us)? / mean(&self.store_files_p50_us)?)
    }

    /// The closing `RATIOS name=value ...` line.
    pub(crate) fn ratios_line(&self) -> String {
        let (small, large) = (&Payload::small(), &Payload::large());
        let pack_vs = |mode, payload: &Payload, figure, other| {
            self.ratio(&RowKey::new(mode, payload, figure), other)
        };
        let nodelay_small = |figure, other| pack_vs(Mode::NoDelay, small, figure, other);
        let modern_small = |figure| pack_vs(Mode::Modern, small, figure, Kind::Raw);
        let large_key = |figure| RowKey::new(Mode::NoDelay, large, figure);
        let gateway_vs_pack = |figure| {
            self.ratio_of(
                &RowKey::new(Mode::Modern, small, figure),
                Kind::Gateway,
                Kind::Pack,
            )
        };
        let search = self.search.as_ref();
        let pairs: [(&str, Option<f64>); 30] = [
            (
                "nagle_c1_p50_vs_nopool",
                pack_vs(Mode::Default, small, Figure::P50, Kind::RawNoPool),
            ),
            (
                "nodelay_c1_p50_vs_raw",
                nodelay_small(Figure::P50, Kind::Raw),
            ),
            (
                "nodelay_c16_tput_vs_raw",
                nodelay_small(Figure::Throughput(16), Kind::Raw),
            ),
            (
                "nodelay_c64_tput_vs_raw",
                nodelay_small(Figure::Throughput(64), Kind::Raw),
            ),
            (
                "nodelay_c16_tput_vs_rmcp",
                nodelay_small(Figure::Throughput(16), Kind::Rmcp),
            ),
            (
                "nodelay_c64_tput_vs_rmcp",
                nodelay_small(Figure::Throughput(64), Kind::Rmcp),
            ),
            (
                "large_c1_p50_vs_raw",
                pack_vs(Mode::NoDelay, large, Figure::P50, Kind::Raw),
            ),
            (
                "large_c1_p50_vs_raw_100_secrets",
                self.ratio_of(&large_key(Figure::P50), Kind::Pack100, Kind::Raw),
            ),
            (
                "secrets_100_vs_1",
                self.ratio_of(&large_key(Figure::P50), Kind::Pack100, Kind::Pack),
            ),
            (
                "large_cpu_per_call_vs_raw",
                pack_vs(Mode::NoDelay, large, Figure::CpuPerCall(16), Kind::Raw),
            ),
            (
                "nodelay_c1_p50_vs_ts_sdk",
                nodelay_small(Figure::P50, Kind::TsSdk),
            ),
            (
                "nodelay_c16_tput_vs_ts_sdk",
                nodelay_small(Figure::Throughput(16), Kind::TsSdk),
            ),
            ("stateless_c1_p50_vs_raw", modern_small(Figure::P50)),
            ("cpu_per_call_vs_raw", modern_small(Figure::CpuPerCall(16))),
            (
                "stateless_c16_tput_vs_raw",
                modern_small(Figure::Throughput(16)),
            ),
            (
                "stateless_c64_tput_vs_raw",
                modern_small(Figure::Throughput(64)),
            ),
            (
                "ready_100_vs_raw",
                median_ratio(&self.ready_100_ms, &self.raw_ready_100_ms),
            ),
            ("ready_100_vs_1", self.ready_ratio()),
            ("oneshot_call_vs_raw_process", self.oneshot_ratio()),
            ("gateway_c1_p50_vs_pack", gateway_vs_pack(Figure::P50)),
            (
                "gateway_c16_tput_vs_pack",
                gateway_vs_pack(Figure::Throughput(16)),
            ),
            ("list_100x100_p50_ms", self.list_ms.map(|(p50, _)| p50)),
            ("idle_kib_per_server", self.idle_kib_per_server()),
            ("search_10k_p50_ms", search.map(|s| s.p50_ms)),
            ("search_recall_at_1", search.map(|s| s.clean.at_1)),
            ("search_recall_at_5", search.map(|s| s.clean.at_5)),
            (
                "search_poisoned_recall_at_1",
                search.map(|s| s.poisoned.at_1),
            ),
            (
                "search_poisoned_recall_at_5",
                search.map(|s| s.poisoned.at_5),
            ),
            ("scale_2_vs_1_tput", self.scale_ratio()),
            ("store_pg_c1_p50_vs_files", self.store_ratio()),
        ];
        let mut line = "RATIOS".to_owned();
        for (name, value) in pairs {
            let value = value.map_or("nan".to_owned(), |value| format!("{value:.3}"));
            let _ = write!(line, " {name}={value}");
        }
        line
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The mean of `values`.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The least and the greatest of `values` (NaN for none).
fn min_max(values: &[f64]) -> (f64, f64) {
    let fold = |pick: fn(f64, f64) -> f64, start| values.iter().copied().fold(start, pick);
    match values {
        [] => (f64::NAN, f64::NAN),
        _ => (
            fold(f64::min, f64::INFINITY),
            fold(f64::max, f64::NEG_INFINITY),
        ),
    }
}

/// The median of `values` over the median of `over`.
fn median_ratio(values: &[f64], over: &[f64]) -> Option<f64> {
    Some(median(values)? / median(over)?)
}

fn two(value: f64) -> String {
    format!("{value:.2}")
}

/// A figure rounded to a whole number, with thin thousands separators (`12,345`).
fn thousands(value: f64) -> String {
    let whole = value.round() as u64;
    let digits = whole.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median_ratio(&[2.0, 4.0, 6.0], &[1.0, 2.0]), Some(4.0 / 1.5));
        assert_eq!(median_ratio(&[1.0], &[]), None);
        assert_eq!(min_max(&[2.0, 0.5, 9.0]), (0.5, 9.0));
        assert!(min_max(&[]).0.is_nan());
    }

    #[test]
    fn a_ratio_is_the_median_of_the_rounds_ratios_and_idle_memory_is_per_server() {
        let key = RowKey {
            mode: Mode::NoDelay,
            payload_rank: 0,
            payload: "small",
            figure: Figure::P50,
        };
        let mut results = Results::default();
        // Rounds of 1.1, 1.3 and 1.2 (the ratio of the means would be 490 / 400).
        for (pack, raw) in [(110.0, 100.0), (260.0, 200.0), (120.0, 100.0)] {
            results.add(key.clone(), Kind::Pack, pack);
            results.add(key.clone(), Kind::Raw, raw);
        }
        let ratio = results.ratio(&key, Kind::Raw).expect("a ratio");
        assert!((ratio - 1.2).abs() < 1e-9, "{ratio}");
        assert_eq!(results.ratio(&key, Kind::Rmcp), None);
        (results.rss_kib, results.rss_servers) = (Some((1_000, 6_360)), 100);
        assert_eq!(results.idle_kib_per_server(), Some(53.6));
    }

    #[test]
    fn figures_are_rounded_with_thousands_separators() {
        let shown = [0.4, 999.5, 12_345.0, 1_234_567.0].map(thousands);
        assert_eq!(shown, ["0", "1,000", "12,345", "1,234,567"]);
        assert_eq!(two(1.005_1), "1.01");
    }
}
