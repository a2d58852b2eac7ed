//! The contract's `PinStore` on the database: a server's record of trusted tools (and of the
//! reviews `runvil trust --yes` approves, which the Pack keeps in the same record) is the
//! record of kind `pins` under the Pack's key, the one the pins file uses (`NS#...`), in the
//! clear: it holds tool definitions, no secret.
//!
//! A save is the records' compare-and-set ([`Database::swap`]): the Pack's [`Version`] is the
//! row's `version`, so two processes that judge the same first listing at once keep one record
//! (the second insert finds the row and is a [`Saved::Conflict`], after which its Pack reads
//! the record and judges again), and an approval saved against the version its reviewer read
//! is refused once anyone changed the record. Every committed change is announced by the
//! records' trigger ([`crate::listen`]); the Host that hears it tells its Pack, which reads
//! the record again at the server's next use.
//!
//! An error (the database cannot be reached, a statement failed) is the Pack's
//! [`StoreError`], never "no record": the Pack then trusts nothing new, and keeps serving the
//! tools of the records it already holds.

use std::sync::Arc;

use runvil_plugin::{PinStore, Saved, StoreError, Stored, Version};

use crate::{Database, Kind, Swapped};

const KIND: Kind = Kind::Pins;

/// Records of trusted tools in the database.
pub struct DatabasePins {
    database: Arc<Database>,
    /// Who saves (`changed_by`): this runvil instance.
    by: String,
}

impl DatabasePins {
    /// The records in `database`, saved as `by`.
    pub fn new(database: Arc<Database>, by: String) -> Self {
        Self { database, by }
    }
}

impl PinStore for DatabasePins {
    fn load(&self, key: &str) -> Result<Option<Stored>, StoreError> {
        let record = self.database.block(self.database.load(KIND, key))?;
        Ok(record.map(|record| Stored {
            record: record.value,
            // Versions start at 1 and only grow (the trigger's), so never negative.
            version: Version(u64::try_from(record.version).unwrap_or_default()),
        }))
    }

    fn save(&self, key: &str, record: &str, read: Option<Version>) -> Result<Saved, StoreError> {
        let read = match read.map(|Version(n)| i64::try_from(n)) {
            None => None,
            Some(Ok(version)) => Some(version),
            // No row has such a version: the record is not the one the Pack read.
            Some(Err(_)) => return Ok(Saved::Conflict),
        };
        let swapped = self
            .database
            .block(self.database.swap(KIND, key, record, read, &self.by))?;
        Ok(match swapped {
            Swapped::Saved(version) => {
                Saved::Kept(Version(u64::try_from(version).unwrap_or_default()))
            }
            Swapped::Changed => Saved::Conflict,
        })
    }
}
