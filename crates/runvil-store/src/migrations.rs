//! The schema, created and migrated by runvil: the migrations are SQL files of this crate
//! (`migrations/NNNN_*.sql`), applied in order, each once, and recorded in
//! `runvil.schema_version`. All of them run in one transaction under an advisory lock, so two
//! instances starting at once against a new database do not both create it (the second waits,
//! then finds it done), and a migration that fails leaves the schema as it was. A database
//! migrated by a newer runvil is refused ([`Error::NewerSchema`]): this one cannot know what
//! the newer schema means.

use crate::{Database, Error};

/// The migrations, by version: each applied once, in order.
pub const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_records_and_audit.sql")),
    (2, include_str!("../migrations/0002_audit_order.sql")),
    (3, include_str!("../migrations/0003_revoked_sessions.sql")),
];

/// The schema version this runvil writes and reads.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// The advisory lock the migrations hold (`runvil` in ASCII), the same in every runvil.
const MIGRATION_LOCK: i64 = 0x0000_7275_6e76_696c;

/// Where the applied versions are kept; made first, in the schema it names.
const VERSION_TABLE: &str = "CREATE SCHEMA IF NOT EXISTS runvil;
CREATE TABLE IF NOT EXISTS runvil.schema_version (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text        NOT NULL
)";

/// Brings the database's schema to [`SCHEMA_VERSION`], or refuses a newer one.
pub(crate) async fn migrate(database: &Database) -> Result<(), Error> {
    let failed = |e: tokio_postgres::Error| database.failed(&e);
    let mut client = database.connect().await?;
    let transaction = client.transaction().await.map_err(failed)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed)?;
    transaction
        .batch_execute(VERSION_TABLE)
        .await
        .map_err(failed)?;
    let found: i32 = transaction
        .query_one(
            "SELECT coalesce(max(version), 0) FROM runvil.schema_version",
            &[],
        )
        .await
        .map_err(failed)?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            found,
            known: SCHEMA_VERSION,
        });
    }
    let by = format!("runvil {}", env!("CARGO_PKG_VERSION"));
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        transaction.batch_execute(sql).await.map_err(failed)?;
        transaction
            .execute(
                "INSERT INTO runvil.schema_version (version, applied_by) VALUES ($1, $2)",
                &[version, &by],
            )
            .await
            .map_err(failed)?;
        tracing::info!(version, "migrated the store's schema");
    }
    transaction.commit().await.map_err(failed)
}
