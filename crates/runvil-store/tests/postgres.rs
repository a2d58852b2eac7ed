//! runvil's store against a throwaway PostgreSQL cluster (each test its own): the migrations,
//! versioned records and their notices, sealed credentials, the audit table, a database that
//! stops and starts again, and two Packs on one database that need a new access token at the
//! same moment. Without PostgreSQL each test says so in one line and returns (under
//! `CI=true` it fails instead).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use runvil_plugin::{AUTHORIZER, CREDENTIAL_STORE, CredentialStore, Services};
use runvil_store::{
    AuditQuery, AuditRow, Change, Database, Dsn, Error, Instance, Kind, SealedCredentials,
    SealingKey, Swapped,
};
use serde_json::json;
use shared_mcp_fixture::hostile::Hostile;
use shared_mcp_fixture::oauth::{self, Approver};
use shared_mcp_fixture::services::Postgres;

const SETTLE: Duration = Duration::from_secs(30);

async fn open(postgres: &Postgres) -> Arc<Database> {
    let dsn = Dsn::parse(&postgres.dsn()).expect("a DSN");
    Database::open(dsn).await.expect("the store opens")
}

/// Waits (up to [`SETTLE`]) until `done` answers true: the workspace's one polling wait.
async fn until(mut done: impl FnMut() -> bool, what: &str) {
    shared_mcp_fixture::wait_until(&format!("never: {what}"), SETTLE, async || done()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_is_made_once_migrated_again_as_a_no_op_and_refused_when_newer() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    // Two instances starting at once on a new database: one makes the schema, the other
    // waits for it and finds it made.
    let (a, b) = tokio::join!(open(&postgres), open(&postgres));
    drop((a, b));
    let versions = "SELECT version FROM runvil.schema_version ORDER BY version";
    assert_eq!(postgres.psql(versions).trim(), "1\n2\n3");
    open(&postgres).await;
    assert_eq!(postgres.psql(versions).trim(), "1\n2\n3", "applied once");
    let tables = "SELECT string_agg(table_name, ',' ORDER BY table_name) \
                  FROM information_schema.tables WHERE table_schema = 'runvil'";
    assert_eq!(
        postgres.psql(tables).trim(),
        "audit,records,revoked_sessions,schema_version"
    );

    postgres.psql("INSERT INTO runvil.schema_version (version, applied_by) VALUES (4, 'later')");
    let dsn = Dsn::parse(&postgres.dsn()).expect("a DSN");
    let refused = Database::open(dsn).await.err().expect("refused");
    assert_eq!(refused, Error::NewerSchema { found: 4, known: 3 });
    assert_eq!(
        refused.to_string(),
        "the store's schema is version 4, newer than this runvil knows (version 3); use a \
         runvil at least as new as the one that migrated it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_is_saved_only_over_the_version_read_and_each_change_is_announced() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let store = open(&postgres).await;
    let mut changes = store.changes();
    assert_eq!(changes.recv().await.expect("a notice"), Change::Everything);
    let key = "docs#ab12";
    assert_eq!(store.load(Kind::Pins, key).await, Ok(None));
    let first = store.swap(Kind::Pins, key, "v1", None, "reviewer-a").await;
    assert_eq!(first, Ok(Swapped::Saved(1)));
    assert_eq!(
        store.swap(Kind::Pins, key, "v1'", None, "b").await,
        Ok(Swapped::Changed),
        "a second first save finds the record"
    );
    let announced = Change::Record {
        kind: Kind::Pins,
        key: key.to_owned(),
    };
    assert_eq!(changes.recv().await.expect("a notice"), announced);
    assert_eq!(
        store.swap(Kind::Pins, key, "v2", Some(1), "a").await,
        Ok(Swapped::Saved(2))
    );
    assert_eq!(
        store.swap(Kind::Pins, key, "v2'", Some(1), "b").await,
        Ok(Swapped::Changed)
    );
    let record = store
        .load(Kind::Pins, key)
        .await
        .expect("read")
        .expect("a record");
    assert_eq!((record.version, record.value.as_str()), (2, "v2"));
    assert_eq!(
        (record.changed_by.as_str(), record.changed_role.as_str()),
        ("a", "runvil")
    );

    // An administrator approves by writing the row: the version moves, the change is
    // announced, and the record says who wrote it and when.
    postgres.psql(
        "UPDATE runvil.records SET value = 'by hand', changed_by = 'dba@example' \
         WHERE kind = 'pins' AND key = 'docs#ab12'",
    );
    assert_eq!(changes.recv().await.expect("a notice"), announced);
    let record = store
        .load(Kind::Pins, key)
        .await
        .expect("read")
        .expect("a record");
    assert_eq!((record.version, record.value.as_str()), (3, "by hand"));
    assert_eq!(record.changed_by, "dba@example");
    assert!(record.changed_at <= SystemTime::now());
    assert_eq!(
        store.swap(Kind::Pins, key, "late", Some(2), "a").await,
        Ok(Swapped::Changed)
    );
    assert_eq!(store.put(Kind::Pins, key, "put", "a").await, Ok(4));
    assert_eq!(store.delete(Kind::Pins, key).await, Ok(true));
    assert_eq!(store.delete(Kind::Pins, key).await, Ok(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_sealed_in_their_row_and_one_that_does_not_open_names_its_server() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let database = open(&postgres).await;
    let store = SealedCredentials::new(
        Arc::clone(&database),
        SealingKey::new(&[3; 32]),
        "me".into(),
    );
    let token = r#"{"access_token":"tok-canary-51d0"}"#;
    let saved = tokio::task::spawn_blocking(move || {
        store.save("docs", token).expect("saved");
        store
            .save("github", r#"{"access_token":"other"}"#)
            .expect("saved");
        assert_eq!(store.load("docs").as_deref(), Some(token));
        store
    });
    let store = saved.await.expect("saved");
    let rows = postgres.psql("SELECT key, value FROM runvil.records ORDER BY key");
    assert!(
        !rows.contains("canary") && rows.contains("docs|v1:"),
        "{rows}"
    );
    assert_eq!(store.check("docs").await, Ok(true));
    assert_eq!(store.check("nothing").await, Ok(false));

    let sealed = |key: &str| Error::Sealed {
        key: key.to_owned(),
    };
    let other_key = SealedCredentials::new(
        Arc::clone(&database),
        SealingKey::new(&[4; 32]),
        "me".into(),
    );
    assert_eq!(other_key.check("docs").await, Err(sealed("docs")));
    // Rows swapped: each value opens only in its own row.
    postgres.psql(
        "UPDATE runvil.records SET value = (SELECT value FROM runvil.records WHERE key = 'docs') \
         WHERE key = 'github'",
    );
    assert_eq!(store.check("github").await, Err(sealed("github")));
    // A byte of the ciphertext changed.
    postgres.psql(
        "UPDATE runvil.records SET value = overlay(value placing \
         CASE WHEN substr(value, 10, 1) = 'A' THEN 'B' ELSE 'A' END from 10 for 1) WHERE key = 'docs'",
    );
    assert_eq!(store.check("docs").await, Err(sealed("docs")));
    assert_eq!(
        sealed("docs").to_string(),
        "the credentials of docs in the store cannot be opened with the store key \
         (--store-key-file): they were sealed under another key, or their row was changed; use \
         the key they were sealed with, or `runvil logout docs` and log in again"
    );
    let loaded = tokio::task::spawn_blocking(move || store.load("docs"))
        .await
        .expect("ran");
    assert_eq!(
        loaded, None,
        "the contract's load has no error: it is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_line_sent_again_is_kept_once() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let database = open(&postgres).await;
    let instance = Instance::current();
    let row = |outcome: &str| AuditRow {
        id: instance.line_id(),
        instance: instance.label().to_owned(),
        v: 1,
        // To the microsecond, as the column keeps it.
        time: SystemTime::UNIX_EPOCH + Duration::from_micros(1_796_117_400_123_456),
        identity: Some("key:ci".to_owned()),
        namespace: Some("docs".to_owned()),
        tool: Some("search".to_owned()),
        args_sha256: Some("44136fa3".to_owned()),
        outcome: outcome.to_owned(),
        duration_ms: Some(12),
        result_bytes: None,
    };
    let rows = [row("ok"), row("denied")];
    assert_ne!(rows[0].id, rows[1].id);
    assert_eq!(database.append_audit(&rows).await, Ok(2));
    assert_eq!(
        database.append_audit(&rows).await,
        Ok(0),
        "sent again: kept once"
    );
    let kept = postgres.psql(
        "SELECT identity, namespace, tool, outcome, duration_ms, coalesce(result_bytes, -1) \
         FROM runvil.audit ORDER BY outcome",
    );
    assert_eq!(
        kept.trim(),
        "key:ci|docs|search|denied|12|-1\nkey:ci|docs|search|ok|12|-1"
    );

    // Read back in the order kept, with the filters in the query; the numbers skipped by the
    // row sent again are asked for again by number.
    let third = AuditRow {
        tool: Some("fetch".to_owned()),
        ..row("ok")
    };
    assert_eq!(
        database.append_audit(std::slice::from_ref(&third)).await,
        Ok(1)
    );
    let last = database.audit_last().await.expect("read").expect("rows");
    let every = database
        .audit_lines(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("read");
    let seqs: Vec<i64> = every.iter().map(|kept| kept.seq).collect();
    assert_eq!(every.len(), 3);
    assert_eq!(seqs[2], last);
    assert!(seqs[0] < seqs[1] && seqs[1] < seqs[2], "{seqs:?}");
    assert_eq!(every[0].row, rows[0], "a row reads back as it was sent");
    assert_eq!(every[2].row.tool.as_deref(), Some("fetch"));
    let database = &*database;
    let read = |query: AuditQuery| async move {
        let kept = database.audit_lines(&query).await.expect("read");
        kept.into_iter().map(|k| k.seq).collect::<Vec<i64>>()
    };
    let searches = read(AuditQuery {
        tool: Some("search".to_owned()),
        limit: 10,
        ..AuditQuery::default()
    });
    assert_eq!(searches.await, seqs[..2]);
    let after_first = read(AuditQuery {
        after: Some(seqs[0]),
        until: Some(seqs[1]),
        limit: 10,
        ..AuditQuery::default()
    });
    assert_eq!(after_first.await, [seqs[1]]);
    let again = read(AuditQuery {
        after: Some(last),
        again: vec![seqs[0]],
        limit: 10,
        ..AuditQuery::default()
    });
    assert_eq!(again.await, [seqs[0]]);
    let one = read(AuditQuery {
        limit: 1,
        ..AuditQuery::default()
    });
    assert_eq!(one.await, [seqs[0]]);
}

/// A database away when `runvil serve` starts is no error: statements fail at once until the
/// listener reaches it, and the first one then makes the schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_away_at_start_is_migrated_at_its_first_statement_once_reached() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    postgres.stop();
    let dsn = Dsn::parse(&postgres.dsn()).expect("a DSN");
    let (database, away) = Database::start(dsn).await.expect("started anyway");
    let away = away.expect("it was away");
    assert!(matches!(away, Error::Unreachable { .. }), "{away}");
    assert!(!away.to_string().contains(postgres.password()), "{away}");
    let mut changes = database.changes();
    let failed = database.load(Kind::Pins, "a#1").await;
    assert!(
        matches!(failed, Err(Error::Unreachable { .. })),
        "{failed:?}"
    );
    postgres.start_again();
    loop {
        match tokio::time::timeout(Duration::from_secs(60), changes.recv()).await {
            Ok(Ok(Change::Everything)) => break,
            Ok(Ok(_)) => {}
            other => panic!("the listener never reached the database: {other:?}"),
        }
    }
    assert_eq!(database.load(Kind::Pins, "a#1").await, Ok(None), "at once");
    let versions = "SELECT version FROM runvil.schema_version ORDER BY version";
    assert_eq!(postgres.psql(versions).trim(), "1\n2\n3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_stops_fails_statements_at_once_and_serves_again_when_back() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let store = open(&postgres).await;
    let mut changes = store.changes();
    assert_eq!(changes.recv().await.expect("a notice"), Change::Everything);
    store
        .put(Kind::Pins, "a#1", "kept", "me")
        .await
        .expect("saved");
    postgres.stop();
    let failed = store
        .load(Kind::Pins, "a#1")
        .await
        .expect_err("the database is away");
    assert!(matches!(failed, Error::Unreachable { .. }), "{failed}");
    assert!(
        failed
            .to_string()
            .starts_with("cannot reach the store, database \"postgres\" at 127.0.0.1:"),
        "{failed}"
    );
    assert!(
        !failed.to_string().contains(postgres.password()),
        "{failed}"
    );
    postgres.start_again();
    // Back within the backoff's cap: the record is there, and the listener listens again
    // (everything cached is to be read anew).
    let mut record = None;
    let back = async || {
        record = store.load(Kind::Pins, "a#1").await.ok().flatten();
        record.is_some()
    };
    shared_mcp_fixture::wait_until("the store never came back", Duration::from_secs(60), back)
        .await;
    assert_eq!(record.expect("the record").value, "kept");
    loop {
        match tokio::time::timeout(Duration::from_secs(60), changes.recv()).await {
            Ok(Ok(Change::Everything)) => break,
            Ok(Ok(_)) => {}
            other => panic!("the listener did not listen again: {other:?}"),
        }
    }
}

/// Two Packs, each with its own store on one database, both holding the login's token when
/// the server stops taking it: one redeems the refresh token, the other waits on the row
/// lock, then takes up what the first saved. Both call with the new token; the refresh token
/// was redeemed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_packs_needing_a_new_token_at_once_redeem_the_refresh_token_once() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let gate = Arc::new(tokio::sync::Notify::new());
    let revoked = Arc::new(AtomicBool::new(false));
    let server = Hostile::start(oauth::refreshing(Arc::clone(&gate), Arc::clone(&revoked))).await;
    let servers = json!({"s": {"url": server.url}});
    let store = |database: Arc<Database>, by: &str| -> Arc<dyn CredentialStore> {
        Arc::new(SealedCredentials::new(
            database,
            SealingKey::new(&[5; 32]),
            by.to_owned(),
        ))
    };
    let (first, second) = (open(&postgres).await, open(&postgres).await);

    let mut services = Services::new();
    services.insert(CREDENTIAL_STORE, store(Arc::clone(&first), "login"));
    services.insert(
        AUTHORIZER,
        Arc::new(Approver) as Arc<dyn runvil_plugin::Authorizer>,
    );
    let login = shared_mcp_fixture::pack_with(servers.clone(), services).expect("pack");
    shared_mcp_fixture::wait_for(&login, "s", "ready", SETTLE).await;
    login.shutdown().await;
    assert_eq!(oauth::redemptions(&server.requests()), 0);

    revoked.store(true, std::sync::atomic::Ordering::SeqCst);
    let pack = |database: &Arc<Database>, by: &str| {
        let mut services = Services::new();
        services.insert(CREDENTIAL_STORE, store(Arc::clone(database), by));
        shared_mcp_fixture::pack_with(servers.clone(), services).expect("pack")
    };
    let (a, b) = (pack(&first, "a"), pack(&second, "b"));
    // One refresh is at the authorization server (held there) and the other Pack waits on
    // the row lock; without the lock, the second refresh arrives instead.
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'";
    until(
        || {
            let redeemed = oauth::redemptions(&server.requests());
            redeemed >= 2 || (redeemed == 1 && postgres.psql(waiting).trim() == "1")
        },
        "one refresh at the server and one Pack waiting on the lock",
    )
    .await;
    for _ in 0..oauth::redemptions(&server.requests()) {
        gate.notify_one();
    }
    for pack in [&a, &b] {
        shared_mcp_fixture::wait_for(pack, "s", "ready", SETTLE).await;
        let echoed = shared_mcp_fixture::call(pack, "s", "echo", json!({"text": "hi"})).await;
        assert_eq!(echoed.expect("called with the new token"), "hi");
    }
    assert_eq!(
        oauth::redemptions(&server.requests()),
        1,
        "the refresh token was redeemed once"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// An ended session is kept by its name with its expiry, announced, listed while it lives, and
/// pruned once expired when another is ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_is_announced_listed_while_it_lives_and_pruned_after() {
    let Some(postgres) = Postgres::start() else {
        return;
    };
    let database = open(&postgres).await;
    let mut changes = database.changes();
    // Listening first: a notice sent before is not heard.
    loop {
        match tokio::time::timeout(SETTLE, changes.recv()).await {
            Ok(Ok(Change::Everything)) => break,
            Ok(Ok(_)) => {}
            other => panic!("the listener never listened: {other:?}"),
        }
    }
    let later = SystemTime::now() + Duration::from_secs(3600);
    let past = SystemTime::now() - Duration::from_secs(1);
    database.revoke_session("aa", later).await.expect("kept");
    database
        .revoke_session("aa", later)
        .await
        .expect("again, once");
    database.revoke_session("bb", past).await.expect("kept");
    loop {
        match tokio::time::timeout(SETTLE, changes.recv()).await {
            Ok(Ok(Change::Session(name))) if name == "aa" => break,
            Ok(Ok(_)) => {}
            other => panic!("no notice of the ended session: {other:?}"),
        }
    }
    let listed = database.revoked_sessions(10).await.expect("read");
    assert_eq!(
        listed.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["aa"],
        "an expired one is not listed"
    );
    database.revoke_session("cc", later).await.expect("kept");
    let rows = postgres.psql("SELECT hash FROM runvil.revoked_sessions ORDER BY hash");
    assert_eq!(rows.trim(), "aa\ncc", "the expired one pruned");
}
