//! The sessions ended on one instance, for every instance: a 2025-11-25 session id is sealed
//! and self-contained, so an instance that did not see its `DELETE` would accept it until it
//! expires. The instance that ends one records it here ([`Database::revoke_session`]), by the
//! hash of the random number sealed in it (the id itself is never kept), with its expiry;
//! the insert is announced (`session` TAB the hash, see `listen`), and each instance reads
//! every unexpired one when it (re)starts listening ([`Database::revoked_sessions`]).

use std::time::SystemTime;

use crate::{Database, Error};

impl Database {
    /// Records that the session named by `hash` was ended; it expires at `expires`. Rows
    /// past their expiry are pruned in the same statement.
    pub async fn revoke_session(&self, hash: &str, expires: SystemTime) -> Result<(), Error> {
        self.run(async |client| client.execute(REVOKE, &[&hash, &expires]).await)
            .await
            .map(|_| ())
    }

    /// Every session ended that has not expired, with its expiry; at most `limit`, those that
    /// expire last first.
    pub async fn revoked_sessions(&self, limit: i64) -> Result<Vec<(String, SystemTime)>, Error> {
        let rows = self
            .run(async |client| client.query(REVOKED, &[&limit]).await)
            .await?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }
}

const REVOKE: &str = "WITH pruned AS (DELETE FROM runvil.revoked_sessions WHERE expires < now()) \
     INSERT INTO runvil.revoked_sessions (hash, expires) VALUES ($1, $2) \
     ON CONFLICT (hash) DO NOTHING";

const REVOKED: &str = "SELECT hash, expires FROM runvil.revoked_sessions WHERE expires > now() \
     ORDER BY expires DESC LIMIT $1";
