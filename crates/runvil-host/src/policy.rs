//! runvil's own limits and waits, in one place an auditor can read: the Pack's are in its
//! `policy` module, these are the command line's (the gateway's own are in `policy/gateway.md`
//! beside their modules; the store's connection bounds are `runvil-store`'s, listed here too). `policy/runvil.md` at the top of the
//! repository holds the same values as a table, and `the_table_matches_policy_runvil_md`
//! fails when the two disagree.

use std::time::Duration;

/// The most edits between a misspelled namespace and the one `runvil` suggests before any
/// server is contacted (`runvil tools dcos`: `did you mean docs?`): the contract's, which the
/// Pack uses for the names it lists, so both suggest alike.
pub(crate) const MAX_SUGGESTION_EDITS: usize = runvil_plugin::MAX_SUGGESTION_EDITS;

/// How long `runvil serve`'s first listing of every server waits for each one's first attempt
/// to connect to end, when `--wait` is not given: a one-shot client (an inspector's command
/// line) lists right after its handshake, and would otherwise see every server `loading`.
/// Short, since a client waits for it; a server still loading then is listed so.
pub(crate) const FIRST_LISTING_WAIT: Duration = Duration::from_secs(5);

/// How long `tools` and `call` wait, without a terminal to show it live, before saying on
/// stderr which servers they are still waiting for: a server that accepts connections and
/// never answers would otherwise leave the command silent until `--wait` runs out.
pub(crate) const STILL_WAITING_AFTER: Duration = Duration::from_secs(1);

/// How long `runvil completions` waits for the config's servers to be listed, for their tool
/// names: the catalog where it is cheap. A server not ready by then adds none.
pub(crate) const COMPLETIONS_WAIT: Duration = Duration::from_secs(3);

/// The audit lines of `serve --http --store` that may wait to be kept in the database: while
/// it is away (a restart, a failover) the gateway goes on serving until this many calls wait
/// to be recorded, then refuses calls rather than serve them unrecorded. A row is a few hundred
/// bytes (its fields are capped), so the queue is a few MiB at most, and minutes of a team's
/// calls.
pub(crate) const AUDIT_STORE_QUEUE_LINES: usize = 16_384;

/// The most audit lines sent to the database in one statement: one round trip keeps a busy
/// gateway's lines, and a statement stays far below PostgreSQL's bound on parameters' size.
pub(crate) const AUDIT_STORE_BATCH_LINES: usize = 500;

/// How long a gateway that stops waits for its queued audit lines to reach the database
/// before it ends anyway, saying how many were lost: the store's deadline for one statement.
pub(crate) const AUDIT_STORE_CLOSE_WAIT: Duration = runvil_store::database::STATEMENT_DEADLINE;

/// The most rows `runvil audit --store` reads in one query: a bound on what it holds at once,
/// however long the trail.
pub(crate) const AUDIT_STORE_PAGE_LINES: i64 = 1000;

/// How long `runvil audit --store --follow` looks again for a row whose number was skipped: a
/// row committed after a later one (two instances inserting at once) is printed when it
/// comes within this wait, three times the store's deadline for a statement.
pub(crate) const AUDIT_FOLLOW_GAP_WAIT: Duration = Duration::from_secs(30);

/// The most skipped numbers `runvil audit --store --follow` looks for again at once, the
/// newest kept: a bound on its memory and on its query.
pub(crate) const MAX_AUDIT_FOLLOW_GAPS: usize = 10_000;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use runvil_store::{backoff, database};

    /// The `(name, value)` of each row of a policy page's tables whose first two cells are
    /// code: how `policy/runvil.md` and `policy/gateway.md` are held to the code.
    pub(crate) fn page_rows(page: &str) -> Vec<(String, String)> {
        (page.lines())
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                let value = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
                Some((name.to_owned(), value.to_owned()))
            })
            .collect()
    }

    /// Every value as `policy/runvil.md` shows it.
    fn table() -> Vec<(&'static str, String)> {
        let secs = |d: Duration| format!("{} s", d.as_secs());
        vec![
            ("MAX_SUGGESTION_EDITS", MAX_SUGGESTION_EDITS.to_string()),
            ("FIRST_LISTING_WAIT", secs(FIRST_LISTING_WAIT)),
            ("STILL_WAITING_AFTER", secs(STILL_WAITING_AFTER)),
            ("COMPLETIONS_WAIT", secs(COMPLETIONS_WAIT)),
            (
                "AUDIT_STORE_QUEUE_LINES",
                AUDIT_STORE_QUEUE_LINES.to_string(),
            ),
            (
                "AUDIT_STORE_BATCH_LINES",
                AUDIT_STORE_BATCH_LINES.to_string(),
            ),
            ("AUDIT_STORE_CLOSE_WAIT", secs(AUDIT_STORE_CLOSE_WAIT)),
            ("AUDIT_STORE_PAGE_LINES", AUDIT_STORE_PAGE_LINES.to_string()),
            ("AUDIT_FOLLOW_GAP_WAIT", secs(AUDIT_FOLLOW_GAP_WAIT)),
            ("MAX_AUDIT_FOLLOW_GAPS", MAX_AUDIT_FOLLOW_GAPS.to_string()),
            (
                "RECONNECT_FIRST",
                format!("{} ms", backoff::RECONNECT_FIRST.as_millis()),
            ),
            ("RECONNECT_MAX", secs(backoff::RECONNECT_MAX)),
            ("STATEMENT_DEADLINE", secs(database::STATEMENT_DEADLINE)),
            (
                "CONNECT_DEADLINE",
                secs(runvil_store::dsn::CONNECT_DEADLINE),
            ),
        ]
    }

    #[test]
    fn the_table_matches_policy_runvil_md() {
        let rows = page_rows(include_str!("../../../policy/runvil.md"));
        let want: Vec<(String, String)> = table()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        assert_eq!(rows, want);
    }
}
