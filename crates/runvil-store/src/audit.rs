//! The audit table: one row per audit line (the line format's version 1, its fields as
//! columns), with the instance that wrote it and an id that instance chose. The id is 128
//! random bits ([`Instance::line_id`]), chosen once per line, and a row is inserted with
//! `ON CONFLICT DO NOTHING`, so a line sent again after its answer was lost (the connection
//! broke, the database restarted mid-way) is kept once. The database numbers the rows in the
//! order it kept them (`seq`), which is how a reader follows the table ([`AuditQuery`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::{Database, Error};

/// One runvil process, as its rows name it: `HOST:PID`.
#[derive(Debug)]
pub struct Instance {
    label: String,
    /// Random per process: the ids of its lines should the system's generator ever fail.
    salt: u64,
    next: AtomicU64,
}

impl Instance {
    /// This process.
    pub fn current() -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_owned())
            .unwrap_or_else(|_| "localhost".to_owned());
        // Random; should the system's generator fail, the clock still sets two runs apart.
        let mut salt = [0u8; 8];
        if aws_lc_rs::rand::fill(&mut salt).is_err() {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
            salt = now.unwrap_or_default().as_nanos().to_le_bytes()[..8]
                .try_into()
                .unwrap_or_default();
        }
        Self {
            label: format!("{host}:{}", std::process::id()),
            salt: u64::from_le_bytes(salt),
            next: AtomicU64::new(0),
        }
    }

    /// `HOST:PID`: the `instance` of its rows, and who saved its records (`changed_by`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// A new line id: 128 random bits as 32 hex digits, so the ids of any number of
    /// instances never meet (a pid used again, two hosts of one name). Should the system's
    /// generator fail, this process's random salt and a counter, unique within it.
    pub fn line_id(&self) -> String {
        let mut bytes = [0u8; 16];
        if aws_lc_rs::rand::fill(&mut bytes).is_err() {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            bytes[..8].copy_from_slice(&self.salt.to_be_bytes());
            bytes[8..].copy_from_slice(&n.to_be_bytes());
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// One audit line as a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// Chosen by the instance ([`Instance::line_id`]), once per line.
    pub id: String,
    /// [`Instance::label`].
    pub instance: String,
    /// The line format's version.
    pub v: i32,
    /// When the call or refusal ended.
    pub time: SystemTime,
    /// The fields of the line, `None` where the line has `null`.
    pub identity: Option<String>,
    /// The server's namespace.
    pub namespace: Option<String>,
    /// The tool's name.
    pub tool: Option<String>,
    /// Hex SHA-256 of the arguments' canonical form.
    pub args_sha256: Option<String>,
    /// `ok`, `tool_error`, `invalid`, `denied`, ...
    pub outcome: String,
    /// How long the call took.
    pub duration_ms: Option<i64>,
    /// The result's size.
    pub result_bytes: Option<i64>,
}

impl Database {
    /// Inserts `rows` in one statement; a row whose id is there already is left as it is.
    /// Answers how many were new.
    pub async fn append_audit(&self, rows: &[AuditRow]) -> Result<u64, Error> {
        let column = |f: fn(&AuditRow) -> Option<String>| rows.iter().map(f).collect::<Vec<_>>();
        let ids = column(|r| Some(r.id.clone()));
        let instances = column(|r| Some(r.instance.clone()));
        let vs: Vec<i32> = rows.iter().map(|r| r.v).collect();
        let times: Vec<SystemTime> = rows.iter().map(|r| r.time).collect();
        let identities = column(|r| r.identity.clone());
        let namespaces = column(|r| r.namespace.clone());
        let tools = column(|r| r.tool.clone());
        let hashes = column(|r| r.args_sha256.clone());
        let outcomes = column(|r| Some(r.outcome.clone()));
        let durations: Vec<Option<i64>> = rows.iter().map(|r| r.duration_ms).collect();
        let sizes: Vec<Option<i64>> = rows.iter().map(|r| r.result_bytes).collect();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 11] = [
            &ids,
            &instances,
            &vs,
            &times,
            &identities,
            &namespaces,
            &tools,
            &hashes,
            &outcomes,
            &durations,
            &sizes,
        ];
        self.run(async |client| client.execute(APPEND, &params).await)
            .await
    }
}

const APPEND: &str = "INSERT INTO runvil.audit (id, instance, v, time, identity, namespace, \
     tool, args_sha256, outcome, duration_ms, result_bytes) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::text[], \
     $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[]) \
     ON CONFLICT (id) DO NOTHING";

/// Which rows [`Database::audit_lines`] answers: those past `after` and up to `until` (in the
/// order they were kept), or whose `seq` is one of `again`; no older than `since`, of this
/// namespace, tool and identity when given; at most `limit`.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Only rows kept after the row of this `seq`.
    pub after: Option<i64>,
    /// Only rows kept up to the row of this `seq`.
    pub until: Option<i64>,
    /// Also the rows of these `seq`s (numbers skipped before, looked for again).
    pub again: Vec<i64>,
    /// Only rows of this time or later.
    pub since: Option<SystemTime>,
    /// Only rows of this namespace.
    pub namespace: Option<String>,
    /// Only rows of this tool.
    pub tool: Option<String>,
    /// Only rows of this identity.
    pub identity: Option<String>,
    /// The most rows answered.
    pub limit: i64,
}

/// A row as read back, with the number the database gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptRow {
    /// The order the database kept it in.
    pub seq: i64,
    /// The row.
    pub row: AuditRow,
}

impl Database {
    /// The rows `query` asks for, in the order they were kept.
    pub async fn audit_lines(&self, query: &AuditQuery) -> Result<Vec<KeptRow>, Error> {
        let from_start = query.after.is_none();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
            &query.after,
            &query.again,
            &query.since,
            &query.namespace,
            &query.tool,
            &query.identity,
            &query.limit,
            &from_start,
            &query.until,
        ];
        let rows = self
            .run(async |client| client.query(READ, &params).await)
            .await?;
        Ok(rows
            .iter()
            .map(|row| KeptRow {
                seq: row.get(0),
                row: AuditRow {
                    id: row.get(1),
                    instance: row.get(2),
                    v: row.get(3),
                    time: row.get(4),
                    identity: row.get(5),
                    namespace: row.get(6),
                    tool: row.get(7),
                    args_sha256: row.get(8),
                    outcome: row.get(9),
                    duration_ms: row.get(10),
                    result_bytes: row.get(11),
                },
            })
            .collect())
    }

    /// The `seq` of the last row kept, `None` for an empty table: where a reader that printed
    /// nothing yet starts following.
    pub async fn audit_last(&self) -> Result<Option<i64>, Error> {
        let row = self
            .run(async |client| {
                client
                    .query_one("SELECT max(seq) FROM runvil.audit", &[])
                    .await
            })
            .await?;
        Ok(row.get(0))
    }
}

const READ: &str = "SELECT seq, id, instance, v, time, identity, namespace, tool, args_sha256, \
     outcome, duration_ms, result_bytes FROM runvil.audit \
     WHERE (($8 OR seq > $1) AND ($9::bigint IS NULL OR seq <= $9) OR seq = ANY($2)) \
     AND ($3::timestamptz IS NULL OR time >= $3) \
     AND ($4::text IS NULL OR namespace = $4) \
     AND ($5::text IS NULL OR tool = $5) \
     AND ($6::text IS NULL OR identity = $6) \
     ORDER BY seq LIMIT $7";
