//! The contract's `CredentialStore` on the database: a server's login is the record of kind
//! `credentials` under its namespace (the key runvil's credentials file uses), sealed under
//! the store key ([`crate::sealed`]).
//!
//! Its hold ([`CredentialStore::hold`]) is a row lock: a transaction on a connection of its
//! own that reads the record `FOR UPDATE` and keeps it across the refresh, so a second
//! process that needs new tokens at the same moment waits, then reads what the first saved.
//! The wait is bounded by [`HOLD_WAIT`] (`lock_timeout`), and the hold itself by
//! [`HOLD_LIMIT`] (`idle_in_transaction_session_timeout`): a process that stops while it
//! holds a key cannot keep others from it for longer, since the server then ends its
//! transaction. A record that exists but does not open is an error naming the server: the
//! contract's `load` has no error, so it is logged, and `runvil login` refuses it before it
//! starts ([`SealedCredentials::check`]); no new login replaces it unasked.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{CredentialHold, CredentialStore, StoreError};
use tokio_postgres::Client;
use zeroize::Zeroizing;

use crate::{Database, Error, Kind, SealingKey};

/// The longest a process waits for another's hold of a key (its refresh) to end.
pub const HOLD_WAIT: Duration = Duration::from_secs(30);
/// The longest a process may hold a key without saying anything to the database: more than
/// a refresh takes (the Pack bounds each request to an authorization server), and the bound
/// on a holder that stopped.
pub const HOLD_LIMIT: Duration = Duration::from_secs(60);

const KIND: Kind = Kind::Credentials;

/// Logins in the database, sealed.
pub struct SealedCredentials {
    database: Arc<Database>,
    key: Arc<SealingKey>,
    /// Who saves (`changed_by`): this runvil instance.
    by: String,
}

impl SealedCredentials {
    /// The logins in `database`, sealed under `key`, saved as `by`.
    pub fn new(database: Arc<Database>, key: SealingKey, by: String) -> Self {
        Self {
            database,
            key: Arc::new(key),
            by,
        }
    }

    /// The database, as runvil names it.
    pub fn describe(&self) -> String {
        self.database.describe()
    }

    /// Whether a login is kept for `namespace`, and it opens with the store key: `Ok(false)`
    /// when none is kept, an error when one is kept that does not open.
    pub async fn check(&self, namespace: &str) -> Result<bool, Error> {
        Ok(self.load_opened(namespace).await?.is_some())
    }

    /// Whether a record (opened or not) is kept for `namespace`.
    pub async fn has(&self, namespace: &str) -> Result<bool, Error> {
        Ok(self.database.load(KIND, namespace).await?.is_some())
    }

    /// Forgets the login of `namespace`; answers whether there was one.
    pub async fn forget(&self, namespace: &str) -> Result<bool, Error> {
        self.database.delete(KIND, namespace).await
    }

    async fn load_opened(&self, namespace: &str) -> Result<Option<Zeroizing<String>>, Error> {
        match self.database.load(KIND, namespace).await? {
            None => Ok(None),
            Some(record) => self.key.open(KIND, namespace, &record.value).map(Some),
        }
    }

    async fn hold_async(&self, namespace: &str) -> Result<PgHold, Error> {
        let client = self.database.connect().await?;
        let failed = |e: tokio_postgres::Error| self.database.failed(&e);
        let begin = format!(
            "BEGIN; SET LOCAL lock_timeout = {}; SET LOCAL idle_in_transaction_session_timeout = {}",
            HOLD_WAIT.as_millis(),
            HOLD_LIMIT.as_millis()
        );
        let deadline = HOLD_WAIT + crate::database::STATEMENT_DEADLINE;
        let read = async {
            client.batch_execute(&begin).await?;
            let sql = "SELECT value FROM runvil.records WHERE kind = $1 AND key = $2 FOR UPDATE";
            client.query_opt(sql, &[&KIND.as_str(), &namespace]).await
        };
        let row = match tokio::time::timeout(deadline, read).await {
            Ok(row) => row.map_err(failed)?,
            Err(_) => return Err(self.database.unreachable("the hold got no answer in time")),
        };
        Ok(PgHold {
            database: Arc::clone(&self.database),
            key: Arc::clone(&self.key),
            client,
            namespace: namespace.to_owned(),
            sealed: row.map(|row| row.get(0)),
            by: self.by.clone(),
        })
    }
}

impl CredentialStore for SealedCredentials {
    fn load(&self, key: &str) -> Option<String> {
        match self.database.block(self.load_opened(key)) {
            Ok(value) => value.map(|value| value.as_str().to_owned()),
            Err(error) => {
                tracing::error!(%error, "the credentials could not be read");
                None
            }
        }
    }

    fn save(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let sealed = self.key.seal(KIND, key, value)?;
        let saved = self.database.put(KIND, key, &sealed, &self.by);
        self.database
            .block(saved)
            .map(|_| ())
            .map_err(StoreError::from)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let deleted = self.database.delete(KIND, key);
        self.database
            .block(deleted)
            .map(|_| ())
            .map_err(StoreError::from)
    }

    fn hold(&self, key: &str) -> Result<Option<Box<dyn CredentialHold>>, StoreError> {
        let hold = self.database.block(self.hold_async(key))?;
        Ok(Some(Box::new(hold)))
    }
}

/// A row lock on one login, in its own transaction; rolled back (the connection closed) when
/// dropped unsaved.
struct PgHold {
    database: Arc<Database>,
    key: Arc<SealingKey>,
    client: Client,
    namespace: String,
    /// The sealed value read under the lock.
    sealed: Option<String>,
    by: String,
}

impl CredentialHold for PgHold {
    fn load(&mut self) -> Result<Option<String>, StoreError> {
        let Some(sealed) = &self.sealed else {
            return Ok(None);
        };
        let opened = self.key.open(KIND, &self.namespace, sealed)?;
        Ok(Some(opened.as_str().to_owned()))
    }

    fn save(self: Box<Self>, value: &str) -> Result<(), StoreError> {
        let sealed = self.key.seal(KIND, &self.namespace, value)?;
        let database = Arc::clone(&self.database);
        let saved = database.block(async {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&KIND.as_str(), &self.namespace, &sealed, &self.by];
            let write = async {
                self.client.query_one(crate::records::PUT, &params).await?;
                self.client.batch_execute("COMMIT").await
            };
            match tokio::time::timeout(crate::database::STATEMENT_DEADLINE, write).await {
                Ok(written) => written.map_err(|e| database.failed(&e)),
                Err(_) => Err(database.unreachable("the save got no answer in time")),
            }
        });
        saved.map_err(StoreError::from)
    }
}
