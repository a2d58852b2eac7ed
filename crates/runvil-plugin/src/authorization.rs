//! What a Host lends a Pack that reaches servers behind OAuth: the user's part of an
//! authorization.
//!
//! A Pack runs the protocol (discovery, registration, PKCE, the token requests) but never
//! opens a browser, listens on a port or starts a process: bringing the user to the
//! authorization server and back is the Host's, through an [`Authorizer`] it lends under
//! [`AUTHORIZER`]. A Host without one still runs Packs; a server that needs authorization is
//! then shown as unavailable with the Host's [`AUTHORIZATION_HINT`]. What lets a Pack stay
//! authorized between runs is kept by the Host's [`CredentialStore`].

use std::fmt;
use std::sync::Arc;

use crate::pack::BoxFuture;
use crate::services::Service;
use crate::store::StoreError;

/// The user's part of an OAuth authorization code flow.
pub trait Authorizer: Send + Sync {
    /// The redirect URI the Host receives the user's answer on. The Pack registers it with
    /// authorization servers and puts it in every authorization request.
    fn redirect_uri(&self) -> String;

    /// Brings the user through `request.url` and answers the query parameters of the redirect
    /// to [`Authorizer::redirect_uri`] that ended it, in their order, or why there was none.
    /// The Pack checks every parameter (`state`, `iss`, `code`, `error`); the Host only
    /// carries them.
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthorizeError>>;
}

/// Why the Host brought back no answer to an authorization (the browser could not be opened,
/// the listener failed), in its own words. A Pack shows it as untrusted text, scrubbed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizeError {
    /// What went wrong.
    pub reason: String,
}

impl AuthorizeError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for AuthorizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for AuthorizeError {}

/// One authorization the Pack asks a Host to bring its user through. Its `Debug` shows the
/// namespace only: the URL carries the request's `state` and the client's id, which are
/// secrets until the authorization ends.
#[derive(Clone)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The server's name in the Host's configuration.
    pub namespace: String,
    /// Where to send the user: checked by the Pack to be an `https` URL (plain `http` only to
    /// a loopback address) with no user name or password, and nothing but a URL.
    pub url: String,
}

impl fmt::Debug for AuthorizationRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl AuthorizationRequest {
    /// A request to bring the user to `url` for the server `namespace`.
    pub fn new(namespace: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            url: url.into(),
        }
    }
}

/// Where a Host keeps what a Pack needs to stay authorized between runs (tokens, a
/// registered client), as opaque text under a key the Pack chooses (a server's name). The
/// values are credentials: a Host keeps them as it keeps passwords (one file readable by the
/// user alone, a keychain).
pub trait CredentialStore: Send + Sync {
    /// The value saved under `key`, if any.
    fn load(&self, key: &str) -> Option<String>;
    /// Saves `value` under `key`, replacing what was there.
    fn save(&self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Forgets what is saved under `key`.
    fn delete(&self, key: &str) -> Result<(), StoreError>;

    /// Takes `key` for the caller alone, across every process that shares this store, until
    /// the [`CredentialHold`] is dropped or saves: what a Pack holds while it redeems a
    /// refresh token, so that when two processes need new tokens at the same moment one
    /// redeems it and the other, once it holds the key, reads what the first saved (a refresh
    /// token may be good for one use only). Waits, for a bounded time, while another holds it.
    ///
    /// `Ok(None)`, the default: this store has no such lock (one process uses it); the Pack
    /// then refreshes as it would with no other process. An `Err` (the store is unreachable,
    /// the wait ran out) leaves the Pack to refresh without the hold, as it would without one.
    fn hold(&self, key: &str) -> Result<Option<Box<dyn CredentialHold>>, StoreError> {
        let _ = key;
        Ok(None)
    }
}

/// One key of a [`CredentialStore`], held by one caller ([`CredentialStore::hold`]); let go
/// when dropped, unchanged unless [`CredentialHold::save`] was called.
pub trait CredentialHold: Send {
    /// The value saved under the key now, read inside the hold: another process may have
    /// changed it since the caller last loaded it.
    fn load(&mut self) -> Result<Option<String>, StoreError>;
    /// Saves `value` under the key, replacing what was there, and lets the key go.
    fn save(self: Box<Self>, value: &str) -> Result<(), StoreError>;
}

/// The Host's [`CredentialStore`]. Without one, authorizations last as long as the Pack.
pub const CREDENTIAL_STORE: Service<Arc<dyn CredentialStore>> = Service::new("credential-store");

/// The Host's [`Authorizer`], lent only when the user can take part (a login command, a test
/// playing the browser).
pub const AUTHORIZER: Service<Arc<dyn Authorizer>> = Service::new("authorizer");

/// The URL of the Host's OAuth Client ID Metadata Document, if it publishes one: the Pack uses
/// it as its client id with authorization servers that accept such documents, instead of
/// registering.
pub const CLIENT_METADATA_URL: Service<String> = Service::new("client-metadata-url");

/// How a user of this Host authorizes a server, for the reason shown when a server needs
/// authorization and no [`AUTHORIZER`] was lent. `{namespace}` is replaced by the server's
/// name, as in `run \`runvil login {namespace}\``.
pub const AUTHORIZATION_HINT: Service<String> = Service::new("authorization-hint");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_s_debug_shows_its_namespace_and_not_its_url() {
        let url = "https://as.example/authorize?client_id=hunter2-client&state=hunter2-state";
        let request = AuthorizationRequest::new("docs", url);
        assert_eq!(
            format!("{request:?}"),
            r#"AuthorizationRequest { namespace: "docs", .. }"#
        );
    }
}
