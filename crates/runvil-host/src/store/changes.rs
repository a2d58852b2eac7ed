//! How a command that keeps its records in the database hears of another process's change:
//! the database announces each committed change of a record (`NOTIFY`, whoever wrote it:
//! another runvil, `runvil trust`, an administrator's `UPDATE`), and this task tells the Pack
//! which server's record of trusted tools changed (`Pack::record_changed`), so the server's
//! next use reads it again: an approval or a rejection made anywhere counts at once. The
//! Pack's own read at use stays the fallback for a notice that never came.
//!
//! A notice names the record by the Pack's key, `NS#...`: the server is what comes before the
//! last `#`. A notice that names no record (the listener started again, and notices may have
//! been missed; or this task fell behind) is a change of every server's record.

use std::sync::Arc;

use runvil_plugin::Pack;
use runvil_store::{Change, Database, Kind};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::task::AbortOnDropHandle;

use crate::untrusted::shown;

/// Tells `pack` of each change of a record of trusted tools in `database`, until the handle
/// is dropped (or the database is).
pub(crate) fn follow(database: &Database, pack: &Arc<dyn Pack>) -> AbortOnDropHandle<()> {
    let mut changes = database.changes();
    let pack = Arc::downgrade(pack);
    AbortOnDropHandle::new(tokio::spawn(async move {
        loop {
            let change = match changes.recv().await {
                Ok(change) => change,
                Err(RecvError::Lagged(_)) => Change::Everything,
                Err(RecvError::Closed) => return,
            };
            let Some(pack) = pack.upgrade() else {
                return;
            };
            match change {
                Change::Record {
                    kind: Kind::Pins,
                    key,
                } => {
                    // Said once the Pack was told: a use after the line reads the record.
                    let server = key.rsplit_once('#').map_or(key.as_str(), |(ns, _)| ns);
                    pack.record_changed(server);
                    tracing::debug!(
                        target: "runvil",
                        "the store says the record of {} changed",
                        shown(server)
                    );
                }
                Change::Kind(Kind::Pins) | Change::Everything => {
                    let servers: Vec<String> = (pack.status().borrow().iter())
                        .map(|s| s.name.clone())
                        .collect();
                    for server in servers {
                        pack.record_changed(&server);
                    }
                    tracing::debug!(target: "runvil", "the store says any record may have changed");
                }
                Change::Record { .. } | Change::Kind(_) | Change::Session(_) => {}
            }
        }
    }))
}
