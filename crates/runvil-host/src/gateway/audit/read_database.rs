//! `runvil audit --store DSN`: the store's audit table (every instance's lines), with the
//! filters and the output of the file's reader (`read`): a table on a terminal, JSON lines
//! otherwise, in the order the database kept the rows.
//!
//! The rows there at the start are read page by page ([`AUDIT_STORE_PAGE_LINES`] at a time,
//! the filters in the query); `--follow` then asks every [`FOLLOW_INTERVAL`] for the rows kept
//! since (their `seq` past the last one seen) and filters them here. A row may be committed
//! after a later one (two instances insert at once), so the numbers skipped are looked for
//! again for [`AUDIT_FOLLOW_GAP_WAIT`] (at most [`MAX_AUDIT_FOLLOW_GAPS`] of them): a row is
//! printed once, and none is missed that its instance committed within that wait. A database
//! that goes away is said once, and asked again at the next turn.
//!
//! Rows are read as untrusted, as the file's lines are: a row that is not an audit line of
//! format 1 is skipped and counted, and every value is printed escaped.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::SystemTime;

use runvil_store::{AuditQuery, AuditRow, Database, Dsn};
use tokio::time::Instant;

use super::read::{FOLLOW_INTERVAL, Filter, Output};
use super::{FORMAT_VERSION, Outcome, Written, rfc3339};
use crate::cli::SecretText;
use crate::host::{EXIT_OK, EXIT_OTHER};
use crate::policy::{AUDIT_FOLLOW_GAP_WAIT, AUDIT_STORE_PAGE_LINES, MAX_AUDIT_FOLLOW_GAPS};

/// Runs `runvil audit --store` and answers its exit code.
pub(crate) async fn read(store: &SecretText, follow: bool, filter: &Filter) -> u8 {
    let database = match Dsn::parse(store.text()) {
        Ok(dsn) => Database::open(dsn).await,
        Err(e) => Err(e),
    };
    let database = match database {
        Ok(database) => database,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let oldest = filter
        .since
        .and_then(|since| SystemTime::now().checked_sub(since));
    let mut out = Output::new(std::io::stdout().is_terminal());
    let mut reader = Reader {
        database: &database,
        filter,
        oldest,
        skipped: 0,
    };
    let last = match reader.print_kept(&mut out).await {
        Ok(Some(last)) => last,
        // stdout is closed: no error.
        Ok(None) => return EXIT_OK,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    reader.say_skipped();
    if out.settle().is_ok() && follow {
        reader.follow(last, &mut out).await;
    }
    EXIT_OK
}

struct Reader<'a> {
    database: &'a Database,
    filter: &'a Filter,
    oldest: Option<SystemTime>,
    /// Rows that are not audit lines of this format, not said yet.
    skipped: usize,
}

impl Reader<'_> {
    /// Prints the rows kept so far that the filter keeps; answers the last row's `seq` (0 for
    /// none), `None` once stdout is closed.
    async fn print_kept(&mut self, out: &mut Output) -> Result<Option<i64>, runvil_store::Error> {
        let Some(last) = self.database.audit_last().await? else {
            return Ok(Some(0));
        };
        let mut after = None;
        loop {
            let query = AuditQuery {
                after,
                until: Some(last),
                again: Vec::new(),
                since: self.oldest,
                namespace: self.filter.namespace.clone(),
                tool: self.filter.tool.clone(),
                identity: self.filter.identity.clone(),
                limit: AUDIT_STORE_PAGE_LINES,
            };
            let page = self.database.audit_lines(&query).await?;
            let full = page.len() as i64 == AUDIT_STORE_PAGE_LINES;
            for kept in page {
                after = Some(kept.seq);
                match written(kept.row) {
                    Some(line) => {
                        if out.print(line).is_err() {
                            return Ok(None);
                        }
                    }
                    None => self.skipped += 1,
                }
            }
            if !full {
                return Ok(Some(last));
            }
        }
    }

    /// Prints the rows kept after `last` as they come, until stdout is closed.
    async fn follow(&mut self, mut last: i64, out: &mut Output) {
        // The numbers skipped, and when each was first seen missing.
        let mut gaps: BTreeMap<i64, Instant> = BTreeMap::new();
        let mut said_away = false;
        loop {
            tokio::time::sleep(FOLLOW_INTERVAL).await;
            let query = AuditQuery {
                after: Some(last),
                again: gaps.keys().copied().collect(),
                limit: AUDIT_STORE_PAGE_LINES,
                ..AuditQuery::default()
            };
            let page = match self.database.audit_lines(&query).await {
                Ok(page) => {
                    said_away = false;
                    page
                }
                Err(e) => {
                    if !std::mem::replace(&mut said_away, true) {
                        eprintln!("runvil: {e}; asking again");
                    }
                    continue;
                }
            };
            let now = Instant::now();
            for kept in page {
                gaps.remove(&kept.seq);
                if kept.seq > last {
                    // Only the newest skipped numbers are worth waiting for.
                    let from = (last + 1).max(kept.seq - MAX_AUDIT_FOLLOW_GAPS as i64);
                    gaps.extend((from..kept.seq).map(|seq| (seq, now)));
                    last = kept.seq;
                }
                match written(kept.row) {
                    Some(line) if self.filter.keeps(&line, self.oldest) => {
                        if out.print(line).is_err() {
                            return;
                        }
                    }
                    Some(_) => {}
                    None => self.skipped += 1,
                }
            }
            gaps.retain(|_, seen| now.duration_since(*seen) < AUDIT_FOLLOW_GAP_WAIT);
            while gaps.len() > MAX_AUDIT_FOLLOW_GAPS {
                gaps.pop_first();
            }
            self.say_skipped();
            if out.flush().is_err() {
                return;
            }
        }
    }

    fn say_skipped(&mut self) {
        let skipped = std::mem::take(&mut self.skipped);
        if skipped > 0 {
            eprintln!(
                "runvil: {skipped} row(s) of the store's audit table are not audit lines of \
                 format {FORMAT_VERSION}; skipped"
            );
        }
    }
}

/// A row as the line it was, if it is an audit line of this format.
fn written(row: AuditRow) -> Option<Written> {
    let v = u32::try_from(row.v).ok().filter(|v| *v == FORMAT_VERSION)?;
    let outcome: Outcome = serde_json::from_value(serde_json::Value::String(row.outcome)).ok()?;
    let number = |n: Option<i64>| n.map(u64::try_from).transpose().ok();
    Some(Written {
        v,
        time: rfc3339(row.time),
        identity: row.identity,
        namespace: row.namespace,
        tool: row.tool,
        args_sha256: row.args_sha256,
        outcome,
        duration_ms: number(row.duration_ms)?,
        result_bytes: number(row.result_bytes)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> AuditRow {
        AuditRow {
            id: "00".into(),
            instance: "h:1".into(),
            v: 1,
            time: SystemTime::UNIX_EPOCH,
            identity: Some("key:ci".into()),
            namespace: Some("docs".into()),
            tool: None,
            args_sha256: None,
            outcome: "tool_error".into(),
            duration_ms: Some(4),
            result_bytes: None,
        }
    }

    /// A row reads as the line it was; one of another version, an unknown outcome or a
    /// negative number is no audit line.
    #[test]
    fn a_row_is_its_line_and_a_stranger_is_none() {
        assert_eq!(
            written(row()),
            Some(Written {
                v: 1,
                time: "1970-01-01T00:00:00.000Z".into(),
                identity: Some("key:ci".into()),
                namespace: Some("docs".into()),
                tool: None,
                args_sha256: None,
                outcome: Outcome::ToolError,
                duration_ms: Some(4),
                result_bytes: None,
            })
        );
        let strangers = [
            AuditRow { v: 2, ..row() },
            AuditRow {
                outcome: "fine".into(),
                ..row()
            },
            AuditRow {
                duration_ms: Some(-1),
                ..row()
            },
        ];
        for stranger in strangers {
            assert_eq!(written(stranger), None);
        }
    }
}
