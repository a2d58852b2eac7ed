//! The notices of changed records: one connection of its own `LISTEN`s on `runvil_records`,
//! which the records' trigger notifies at each committed change, by any process (runvil, or
//! an administrator writing a row). Each notice becomes a [`Change`] for whoever subscribed
//! ([`Database::changes`]), so a cached record is dropped and read again at its next use.
//!
//! A lost connection is made again with a backoff from
//! [`RECONNECT_FIRST`](crate::backoff::RECONNECT_FIRST) to
//! [`RECONNECT_MAX`](crate::backoff::RECONNECT_MAX). Notices sent while it was away are lost, so each time it listens
//! (again) it sends [`Change::Everything`]: every cached record is to be read anew, and what
//! waits for the database (the audit lines) goes at once. Its loss and its return are said in
//! the log, once each: they are the database's; each time it listens is said at debug.

use std::sync::Weak;

use tokio_postgres::AsyncMessage;

use crate::backoff::Backoff;
use crate::{Database, Kind};

/// The channel the trigger notifies.
const CHANNEL: &str = "runvil_records";

/// A change of the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The record of this kind under this key changed (or is new, or gone).
    Record {
        /// Its kind.
        kind: Kind,
        /// Its key.
        key: String,
    },
    /// Records of this kind changed (a key too long for a notice).
    Kind(Kind),
    /// A 2025-11-25 session was ended: the hash its row names it by.
    Session(String),
    /// Anything may have changed: the listener (re)started, and notices may have been missed.
    Everything,
}

impl Change {
    /// The change a notice's payload (`kind` TAB `key`, or `kind`) names.
    fn parse(payload: &str) -> Change {
        let (kind, key) = match payload.split_once('\t') {
            Some((kind, key)) => (kind, Some(key)),
            None => (payload, None),
        };
        if let ("session", Some(hash)) = (kind, key) {
            return Change::Session(hash.to_owned());
        }
        match (Kind::parse(kind), key) {
            (Some(kind), Some(key)) => Change::Record {
                kind,
                key: key.to_owned(),
            },
            (Some(kind), None) => Change::Kind(kind),
            (None, _) => Change::Everything,
        }
    }
}

/// Listens until the database is dropped, connecting again whenever the connection is lost.
pub(crate) async fn run(database: Weak<Database>) {
    let mut backoff = Backoff::FIRST;
    // Whether the database was found away, and not reached since: said once each way.
    let mut away = false;
    loop {
        let Some(strong) = database.upgrade() else {
            return;
        };
        let notices = strong.notices().clone();
        let connected = strong.connect_raw().await;
        drop(strong);
        if let Ok((client, mut driver)) = connected {
            let drive = async {
                loop {
                    match std::future::poll_fn(|cx| driver.poll_message(cx)).await {
                        Some(Ok(AsyncMessage::Notification(notice))) => {
                            let _ = notices.send(Change::parse(notice.payload()));
                        }
                        Some(Ok(_)) => {}
                        Some(Err(_)) | None => return,
                    }
                }
            };
            let listen = async {
                if client
                    .batch_execute(&format!("LISTEN {CHANNEL}"))
                    .await
                    .is_ok()
                {
                    // From here on every committed change is told: a test (or an operator)
                    // changing a record after this line knows the notice will come.
                    tracing::debug!(target: "runvil", "listening to the store's change notices");
                    if let Some(database) = database.upgrade() {
                        database.reached().await;
                        if std::mem::take(&mut away) {
                            tracing::info!(
                                target: "runvil",
                                "the store is reached again: {}",
                                database.describe()
                            );
                        }
                    }
                    let _ = notices.send(Change::Everything);
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                () = drive => {}
                () = listen => {}
            }
            backoff = Backoff::FIRST;
            tracing::debug!("the store's change notices stopped; listening again");
        }
        if !away && let Some(database) = database.upgrade() {
            away = true;
            tracing::warn!(
                target: "runvil",
                "the store cannot be reached ({}): runvil serves what it already trusts, \
                 trusts nothing new and keeps audit lines waiting, and connects again",
                database.describe()
            );
        }
        tokio::time::sleep(backoff.wait()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_names_a_record_a_kind_or_anything() {
        assert_eq!(
            Change::parse("pins\tdocs#ab12"),
            Change::Record {
                kind: Kind::Pins,
                key: "docs#ab12".to_owned()
            }
        );
        assert_eq!(
            Change::parse("credentials"),
            Change::Kind(Kind::Credentials)
        );
        assert_eq!(Change::parse("other\tx"), Change::Everything);
        assert_eq!(
            Change::parse("session\tab12"),
            Change::Session("ab12".to_owned())
        );
    }
}
