//! What the store answers when it cannot do what it was asked: in words for the person running
//! runvil, naming the database (host, port, database, user) and the record's key, never the
//! connection string's password or a value kept.

use std::fmt;

/// Why the store failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `--store` (or `$RUNVIL_STORE`) cannot be used as it is written.
    Dsn(String),
    /// The database cannot be reached now, or did not answer in time; the reason is the
    /// client's, with the password scrubbed from it.
    Unreachable {
        /// The database, as [`crate::Dsn::describe`] names it.
        database: String,
        /// What failed.
        reason: String,
    },
    /// The database's schema is newer than this runvil knows.
    NewerSchema {
        /// The database's version.
        found: i32,
        /// The newest this runvil knows.
        known: i32,
    },
    /// A statement failed; the reason is the server's, scrubbed.
    Query(String),
    /// A value kept under `key` cannot be opened with this key: another key sealed it, or
    /// the row was changed or moved.
    Sealed {
        /// The record's key (a namespace for credentials).
        key: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dsn(reason) | Self::Query(reason) => f.write_str(reason),
            Self::Unreachable { database, reason } => {
                write!(f, "cannot reach the store, {database}: {reason}")
            }
            Self::NewerSchema { found, known } => write!(
                f,
                "the store's schema is version {found}, newer than this runvil knows \
                 (version {known}); use a runvil at least as new as the one that migrated it"
            ),
            Self::Sealed { key } => write!(
                f,
                "the credentials of {key} in the store cannot be opened with the store key \
                 (--store-key-file): they were sealed under another key, or their row was \
                 changed; use the key they were sealed with, or `runvil logout {key}` and log \
                 in again"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for runvil_plugin::StoreError {
    fn from(error: Error) -> Self {
        Self::new(error.to_string())
    }
}
