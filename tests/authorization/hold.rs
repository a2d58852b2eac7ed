//! The Host store's hold of a server's key, which a refresh takes so that a refresh token
//! shared with other processes is redeemed once: taken only when there is a refresh token to
//! redeem, and never the way to overwrite a record the store cannot read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use runvil_plugin::{
    AUTHORIZER, Authorizer, CREDENTIAL_STORE, CredentialHold, CredentialStore, Services, StoreError,
};
use serde_json::json;

use crate::support;
use crate::support::hostile::{Hostile, Request};
use crate::support::oauth::{TOKEN, World, json_answer};
use crate::{Browser, Memory, SETTLE, grants};

/// What a store that cannot open a record says (as one whose key changed would).
const UNREADABLE: &str = "the store key does not open the record";

/// A Host's store that holds keys, counting the holds; its hold cannot read the record when
/// `unreadable`.
#[derive(Default)]
struct Holding {
    memory: Arc<Memory>,
    holds: AtomicUsize,
    unreadable: bool,
}

impl CredentialStore for Holding {
    fn load(&self, key: &str) -> Option<String> {
        self.memory.load(key)
    }
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.memory.save(key, value)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.memory.delete(key)
    }
    fn hold(&self, key: &str) -> Result<Option<Box<dyn CredentialHold>>, StoreError> {
        self.holds.fetch_add(1, Ordering::SeqCst);
        Ok(Some(Box::new(Hold {
            memory: Arc::clone(&self.memory),
            key: key.to_owned(),
            unreadable: self.unreadable,
        })))
    }
}

struct Hold {
    memory: Arc<Memory>,
    key: String,
    unreadable: bool,
}

impl CredentialHold for Hold {
    fn load(&mut self) -> Result<Option<String>, StoreError> {
        match self.unreadable {
            true => Err(StoreError::new(UNREADABLE)),
            false => Ok(self.memory.load(&self.key)),
        }
    }
    fn save(self: Box<Self>, value: &str) -> Result<(), StoreError> {
        self.memory.save(&self.key, value)
    }
}

/// A Pack over `server`, lent `store` and `browser`.
fn pack(
    server: &Hostile,
    store: &Arc<Holding>,
    browser: &Arc<Browser>,
) -> Arc<dyn runvil_plugin::Pack> {
    let mut services = Services::new();
    let store: Arc<dyn CredentialStore> = store.clone();
    services.insert(CREDENTIAL_STORE, store);
    let authorizer: Arc<dyn Authorizer> = browser.clone();
    services.insert(AUTHORIZER, authorizer);
    support::pack_with(json!({"s": {"url": server.url}}), services).expect("pack")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_a_refresh_token_never_takes_the_store_s_hold() {
    // A token good for no time at all is due before each request; with no refresh token to
    // redeem, nothing takes the hold (in a shared store, a connection and a row lock).
    let world = World {
        token: Some(|_: &Request| {
            json_answer(
                "200 OK",
                &json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 0}),
            )
        }),
        ..World::default()
    };
    let server = Hostile::start(world.handler()).await;
    let store = Arc::new(Holding::default());
    let browser = Arc::new(Browser::default());
    let pack = pack(&server, &store, &browser);
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    support::call(&pack, "s", "echo", json!({}))
        .await
        .expect("call");
    assert_eq!(grants(&server), ["grant_type=authorization_code"]);
    assert_eq!(store.holds.load(Ordering::SeqCst), 0, "a hold for nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_hold_cannot_read_is_neither_refreshed_over_nor_logged_in_again() {
    // The first token is refused, so the Pack must renew it; the record it saved is one the
    // hold cannot open. Refreshing would overwrite that record, and a login would too.
    let world = World {
        token: Some(|r: &Request| {
            let body = if r.text.contains("grant_type=refresh_token") {
                json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600})
            } else {
                json!({"access_token": "tok-refused", "token_type": "Bearer",
                       "expires_in": 3600, "refresh_token": "refresh-canary-6"})
            };
            json_answer("200 OK", &body)
        }),
        ..World::default()
    };
    let server = Hostile::start(world.handler()).await;
    let store = Arc::new(Holding {
        unreadable: true,
        ..Holding::default()
    });
    let browser = Arc::new(Browser::default());
    let pack = pack(&server, &store, &browser);
    let listed = support::wait_for(&pack, "s", "error", SETTLE).await;
    let reason = listed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("s: the credentials the Host's store keeps for this server cannot be read"),
        "{reason}"
    );
    assert!(reason.contains(UNREADABLE), "{reason}");
    assert!(!reason.contains("refresh-canary-6"), "{reason}");
    assert_eq!(
        grants(&server),
        ["grant_type=authorization_code"],
        "nothing redeemed"
    );
    assert_eq!(
        browser.asked.lock().expect("asked").len(),
        1,
        "no second login"
    );
    let kept = store.memory.load("s").expect("kept");
    assert!(kept.contains("tok-refused"), "the record is left as it was");
    assert!(store.holds.load(Ordering::SeqCst) >= 1);
}
