//! 2025-11-25 sessions ended with `DELETE` on one gateway, refused by every gateway sharing
//! `--store`'s database, through the binary against a throwaway PostgreSQL: two
//! `runvil serve --http --store` with one session key. Skips in one line without PostgreSQL
//! (fails under `CI=true`).

mod support;

use std::time::Duration;

use serde_json::json;
use shared_mcp_fixture::services::Postgres;
use support::gateway::{Gateway, Http, key_path};
use support::{Temp, backend, config_for};

/// The password of the store's database: it must appear in no output.
const STORE_CANARY: &str = "pg-canary-9a2f-never-shown";

/// What a gateway says, at debug, when the database tells it a session was ended.
const HEARD: &str = "the store says a session was ended";

/// What a gateway says, at debug, once the database's notices reach it: a session ended
/// before it would be learnt only by the read all that follows, never heard.
const LISTENING: &str = "listening to the store's change notices";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_deleted_on_one_gateway_is_refused_by_every_gateway_on_the_store() {
    let Some(postgres) = Postgres::start_with_password(STORE_CANARY) else {
        return;
    };
    let server = backend().await;
    let config = config_for(&server);
    let state = Temp::dir();
    let store_key = state.path().join("store.key");
    let session_key = key_path();
    let dsn = postgres.dsn();
    let env = [
        ("RUST_LOG", "debug"),
        ("RUNVIL_STORE", dsn.as_str()),
        ("RUNVIL_STORE_KEY_FILE", store_key.to_str().expect("a path")),
    ];
    let one = Gateway::start_with(config.path(), &session_key, &[], &env);
    let two = Gateway::start_with(config.path(), &session_key, &[], &env);
    let (on_one, on_two) = (Http::new(one.url()), Http::new(two.url()));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    two.said(LISTENING, 1, Duration::from_secs(30)).await;

    let session = on_one.initialize().await;
    let other = on_one.initialize().await;
    assert_eq!(on_two.in_session(&session, &list).await.status(), 200);
    assert_eq!(on_one.delete(&session).await.status(), 204);
    // Refused at once where it was ended, and on the other once the database's notice came.
    assert_eq!(on_one.in_session(&session, &list).await.status(), 404);
    two.said(HEARD, 1, Duration::from_secs(30)).await;
    assert_eq!(on_two.in_session(&session, &list).await.status(), 404);
    assert_eq!(on_two.delete(&session).await.status(), 404);
    // Another session of the same client is not ended.
    assert_eq!(on_two.in_session(&other, &list).await.status(), 200);

    // Kept by its hash and expiry, never its id; a gateway started later refuses it too.
    let rows = postgres.psql("SELECT hash, expires > now() FROM runvil.revoked_sessions");
    let rows: Vec<&str> = rows.trim().lines().collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].ends_with("|t") && !rows[0].contains(&session),
        "{rows:?}"
    );
    let three = Gateway::start_with(config.path(), &session_key, &[], &env);
    let on_three = Http::new(three.url());
    // Its listener reads every ended session when it starts listening.
    support::wait_until(
        "the ended sessions read",
        Duration::from_secs(30),
        async || on_three.in_session(&session, &list).await.status() == 404,
    )
    .await;
    assert_eq!(on_three.in_session(&other, &list).await.status(), 200);
    for gateway in [&one, &two, &three] {
        assert!(!gateway.stderr().contains(STORE_CANARY));
    }
}
