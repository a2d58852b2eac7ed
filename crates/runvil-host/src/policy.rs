//! runvil's own limits and waits, in one place an auditor can read: the Pack's are in its
//! `policy` module, these are the command line's. `policy/runvil.md` at the top of the
//! repository holds the same values as a table, and `the_table_matches_policy_runvil_md`
//! fails when the two disagree.

use std::time::Duration;

/// The most edits between a misspelled namespace and the one `runvil` suggests before any
/// server is contacted (`runvil tools dcos`: `did you mean docs?`), as the Pack's own
/// `MAX_SUGGESTION_EDITS` does for the names it lists, so both suggest alike.
pub(crate) const MAX_SUGGESTION_EDITS: usize = 3;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value as `policy/runvil.md` shows it.
    fn table() -> Vec<(&'static str, String)> {
        let secs = |d: Duration| format!("{} s", d.as_secs());
        vec![
            ("MAX_SUGGESTION_EDITS", MAX_SUGGESTION_EDITS.to_string()),
            ("FIRST_LISTING_WAIT", secs(FIRST_LISTING_WAIT)),
            ("STILL_WAITING_AFTER", secs(STILL_WAITING_AFTER)),
            ("COMPLETIONS_WAIT", secs(COMPLETIONS_WAIT)),
        ]
    }

    #[test]
    fn the_table_matches_policy_runvil_md() {
        let doc = include_str!("../../../policy/runvil.md");
        let rows: Vec<(String, String)> = doc
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                let value = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
                Some((name.to_owned(), value.to_owned()))
            })
            .collect();
        let want: Vec<(String, String)> = table()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        assert_eq!(rows, want);
    }
}
