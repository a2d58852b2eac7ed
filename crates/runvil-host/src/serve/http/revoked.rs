//! The 2025-11-25 sessions a client ended with `DELETE`: their ids are sealed and
//! self-contained, so without a record of the ended ones an id would open until it expires.
//! Each instance keeps the ones it knows of in memory, by the name [`Session::ended_name`]
//! gives (a hash of the number sealed in the id), until each expires; the one that received the
//! `DELETE` refuses it at once. With `--store` the instance also records it in the database
//! (`runvil-store`'s `sessions`), which announces it: every instance adds it when the notice
//! comes (at once, in practice), and reads every unexpired one again whenever its listener
//! (re)starts, so one that was away learns of those ended meanwhile. A database that cannot
//! be reached when a session is ended is said in the log: the other instances then accept the
//! id until it expires, as without a store.
//!
//! At most [`MAX_REVOKED_SESSIONS`] are kept; past it the one expiring first is forgotten.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::SystemTime;

use runvil_store::{Change, Database};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::task::AbortOnDropHandle;

use super::session::{SESSION_LIFETIME, Session};

/// The most ended sessions an instance keeps in memory (each a 64-character name and a time):
/// several MiB, far more than a team ends in a session's life; past it the one expiring first
/// is forgotten, and may be used on another instance until it expires.
pub(crate) const MAX_REVOKED_SESSIONS: usize = 100_000;

/// The sessions ended, as this instance knows them.
pub(crate) struct Revoked {
    ended: Arc<Ended>,
    database: Option<Arc<Database>>,
    _follow: Option<AbortOnDropHandle<()>>,
}

/// Each ended session's name and expiry.
#[derive(Default)]
struct Ended(Mutex<HashMap<String, SystemTime>>);

impl Ended {
    fn insert(&self, name: String, expires: SystemTime, bound: usize) {
        let mut ended = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if ended.len() >= bound && !ended.contains_key(&name) {
            let now = SystemTime::now();
            ended.retain(|_, expires| *expires > now);
            if ended.len() >= bound
                && let Some(first) = (ended.iter())
                    .min_by_key(|(_, expires)| **expires)
                    .map(|(name, _)| name.clone())
            {
                ended.remove(&first);
            }
        }
        ended.insert(name, expires);
    }

    fn holds(&self, name: &str) -> bool {
        let ended = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        ended
            .get(name)
            .is_some_and(|expires| *expires > SystemTime::now())
    }
}

impl Revoked {
    /// The ended sessions of this instance, and with `database` of every instance on it (its
    /// notices followed on this runtime).
    pub(crate) fn new(database: Option<Arc<Database>>) -> Self {
        let ended = Arc::new(Ended::default());
        let follow = database.as_ref().map(|database| {
            let changes = database.changes();
            let task = follow(Arc::clone(&ended), Arc::downgrade(database), changes);
            AbortOnDropHandle::new(tokio::spawn(task))
        });
        Self {
            ended,
            database,
            _follow: follow,
        }
    }

    /// Whether `session` was ended.
    pub(crate) fn ended(&self, session: &Session) -> bool {
        self.ended.holds(&session.ended_name())
    }

    /// Ends `session`: here at once, and for every instance on the database.
    pub(crate) async fn end(&self, session: &Session) {
        let name = session.ended_name();
        let expires = session.expires_at();
        self.ended
            .insert(name.clone(), expires, MAX_REVOKED_SESSIONS);
        if let Some(database) = &self.database
            && let Err(e) = database.revoke_session(&name, expires).await
        {
            tracing::warn!(
                target: "runvil",
                "a session ended here could not be recorded in the store ({e}); other \
                 instances accept it until it expires"
            );
        }
    }
}

/// Adds each session the database says was ended, and all of them whenever the listener
/// (re)starts, until the database is gone.
async fn follow(
    ended: Arc<Ended>,
    database: Weak<Database>,
    mut changes: tokio::sync::broadcast::Receiver<Change>,
) {
    let mut read_all = true;
    loop {
        if std::mem::take(&mut read_all) {
            let Some(strong) = database.upgrade() else {
                return;
            };
            let bound = i64::try_from(MAX_REVOKED_SESSIONS).unwrap_or(i64::MAX);
            // Away: the listener says when it is back, and they are read then.
            if let Ok(all) = strong.revoked_sessions(bound).await {
                for (name, expires) in all {
                    ended.insert(name, expires, MAX_REVOKED_SESSIONS);
                }
            }
        }
        match changes.recv().await {
            Ok(Change::Session(name)) => {
                // The notice has no expiry; no session lives longer than this from now.
                let expires = SystemTime::now() + SESSION_LIFETIME;
                ended.insert(name, expires, MAX_REVOKED_SESSIONS);
                // Said once it is refused: a request after the line is.
                tracing::debug!(target: "runvil", "the store says a session was ended");
            }
            Ok(Change::Everything) | Err(RecvError::Lagged(_)) => read_all = true,
            Ok(_) => {}
            Err(RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// MAX_REVOKED_SESSIONS: at the bound every ended session is kept; one past it, the one
    /// expiring first is forgotten and the rest kept. An expired one is no longer held.
    #[test]
    fn ended_sessions_are_kept_to_the_bound_and_the_first_to_expire_goes_past_it() {
        let ended = Ended::default();
        let now = SystemTime::now();
        let at = |n: usize| now + Duration::from_secs(3600 + n as u64);
        for n in 0..MAX_REVOKED_SESSIONS {
            ended.insert(format!("s{n}"), at(n), MAX_REVOKED_SESSIONS);
        }
        assert!((0..MAX_REVOKED_SESSIONS).all(|n| ended.holds(&format!("s{n}"))));
        ended.insert(
            "past".into(),
            at(MAX_REVOKED_SESSIONS),
            MAX_REVOKED_SESSIONS,
        );
        assert!(ended.holds("past"));
        assert!(!ended.holds("s0"), "the first to expire is forgotten");
        assert!(ended.holds("s1"));
        assert_eq!(ended.0.lock().expect("lock").len(), MAX_REVOKED_SESSIONS);
        ended.insert("gone".into(), now - Duration::from_secs(1), 4);
        assert!(!ended.holds("gone"), "expired");
    }
}
