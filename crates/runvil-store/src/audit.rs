//! The audit table: one row per audit line (the line format's version 1, its fields as
//! columns), with the instance that wrote it and an id that instance chose. The id is unique
//! ([`Instance::line_id`]), and a row is inserted with `ON CONFLICT DO NOTHING`, so a line
//! sent again after its answer was lost (the database restarted mid-way) is kept once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::{Database, Error};

/// One runvil process, as its rows name it: `HOST:PID`, and a random part of its line ids.
#[derive(Debug)]
pub struct Instance {
    label: String,
    /// Random per process, so ids of two processes (or of one pid used again) never meet.
    salt: String,
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
            salt: salt.iter().map(|b| format!("{b:02x}")).collect(),
            next: AtomicU64::new(0),
        }
    }

    /// `HOST:PID`: the `instance` of its rows, and who saved its records (`changed_by`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// A new line id, unique across processes: `HOST:PID:SALT:N`.
    pub fn line_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}:{}:{n}", self.label, self.salt)
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
