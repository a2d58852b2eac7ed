//! Versioned records: one row of `runvil.records` per kind and key, its value opaque text to
//! the store. Every change adds one to the row's `version` (a trigger does it, whoever writes),
//! so a writer that read version N can save only if nobody changed the record since
//! ([`Database::swap`]): what an approval of the definition a reviewer saw needs.

use std::time::SystemTime;

use crate::{Database, Error};

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A server's pins: the tool definitions trusted, and the reviews `runvil trust --yes`
    /// approves (one record, so one compare-and-set covers both).
    Pins,
    /// A server's login, sealed.
    Credentials,
}

impl Kind {
    /// The kind as the `kind` column writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pins => "pins",
            Self::Credentials => "credentials",
        }
    }

    /// The kind the column's text names.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pins, Self::Credentials]
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }
}

/// A record as the store holds it.
#[derive(Clone, PartialEq, Eq)]
pub struct Record {
    /// One more at every change, from 1.
    pub version: i64,
    /// The value (sealed, for credentials).
    pub value: String,
    /// Who the writer said made the change.
    pub changed_by: String,
    /// When, by the database's clock.
    pub changed_at: SystemTime,
    /// The database role that wrote it.
    pub changed_role: String,
}

impl std::fmt::Debug for Record {
    /// Without the value, which may be a credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("version", &self.version)
            .field("changed_by", &self.changed_by)
            .field("changed_role", &self.changed_role)
            .finish_non_exhaustive()
    }
}

/// How a compare-and-set ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swapped {
    /// Saved; the record's version now.
    Saved(i64),
    /// The record is no longer the version the writer read (or now exists, or is gone):
    /// nothing was saved.
    Changed,
}

const COLUMNS: &str = "version, value, changed_by, changed_at, changed_role";

impl Database {
    /// The record of `kind` under `key`, if any.
    pub async fn load(&self, kind: Kind, key: &str) -> Result<Option<Record>, Error> {
        let sql = format!("SELECT {COLUMNS} FROM runvil.records WHERE kind = $1 AND key = $2");
        let row = self
            .run(async |client| client.query_opt(&sql, &[&kind.as_str(), &key]).await)
            .await?;
        Ok(row.map(|row| Record {
            version: row.get(0),
            value: row.get(1),
            changed_by: row.get(2),
            changed_at: row.get(3),
            changed_role: row.get(4),
        }))
    }

    /// Saves `value` under `key` whatever is there; answers the record's version now.
    pub async fn put(&self, kind: Kind, key: &str, value: &str, by: &str) -> Result<i64, Error> {
        self.run(async |client| {
            let row = client
                .query_one(PUT, &[&kind.as_str(), &key, &value, &by])
                .await?;
            Ok(row.get(0))
        })
        .await
    }

    /// Saves `value` under `key` only if the record is still at version `read` (`None`: only
    /// if there is none yet).
    pub async fn swap(
        &self,
        kind: Kind,
        key: &str,
        value: &str,
        read: Option<i64>,
        by: &str,
    ) -> Result<Swapped, Error> {
        let row = self
            .run(async |client| match read {
                None => {
                    client
                        .query_opt(INSERT_NEW, &[&kind.as_str(), &key, &value, &by])
                        .await
                }
                Some(version) => {
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
                        [&kind.as_str(), &key, &value, &by, &version];
                    client.query_opt(UPDATE_IF, &params).await
                }
            })
            .await?;
        Ok(row.map_or(Swapped::Changed, |row| Swapped::Saved(row.get(0))))
    }

    /// Forgets the record of `kind` under `key`; answers whether there was one.
    pub async fn delete(&self, kind: Kind, key: &str) -> Result<bool, Error> {
        let sql = "DELETE FROM runvil.records WHERE kind = $1 AND key = $2";
        let deleted = self
            .run(async |client| client.execute(sql, &[&kind.as_str(), &key]).await)
            .await?;
        Ok(deleted > 0)
    }
}

pub(crate) const PUT: &str = "INSERT INTO runvil.records (kind, key, value, changed_by) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (kind, key) DO UPDATE \
     SET value = EXCLUDED.value, changed_by = EXCLUDED.changed_by RETURNING version";

const INSERT_NEW: &str = "INSERT INTO runvil.records (kind, key, value, changed_by) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (kind, key) DO NOTHING RETURNING version";

const UPDATE_IF: &str = "UPDATE runvil.records SET value = $3, changed_by = $4 \
     WHERE kind = $1 AND key = $2 AND version = $5 RETURNING version";
