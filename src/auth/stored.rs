//! What one server's authorization leaves in the Host's credential store, so that a later Pack
//! (the next `runvil call` after `runvil login`) starts authorized.
//!
//! A record names the server it is for and is used only for that URL: a configuration that
//! now points the same name elsewhere gets no token. Tokens bound to a DPoP key are not kept,
//! since the key lives in memory only. The text is JSON, wiped from memory once read or
//! written.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use zeroize::Zeroizing;

use super::flow::Tokens;
use super::registration::{ClientIdentity, Method};
use crate::secret::Secret;

/// One server's authorization, as stored.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The server's URL without its query, as `canonical` writes it.
    server: String,
    issuer: String,
    resource: String,
    scopes: Vec<String>,
    client_id: String,
    client_secret: Option<String>,
    method: String,
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    expires_at: Option<u64>,
}

impl Drop for Record {
    fn drop(&mut self) {
        use zeroize::Zeroize as _;
        self.access_token.zeroize();
        self.refresh_token.zeroize();
        self.client_secret.zeroize();
    }
}

/// What a record gives back to the Pack.
pub(crate) struct Restored {
    pub(crate) issuer: String,
    pub(crate) resource: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) client: ClientIdentity,
    pub(crate) tokens: Tokens,
}

/// The text to store for `tokens` from `issuer`, or `None` for tokens that cannot be kept (a
/// DPoP-bound token, a client with a private key of the configuration's).
pub(crate) fn record(
    server: &str,
    issuer: &str,
    resource: &str,
    scopes: &[String],
    client: &ClientIdentity,
    tokens: &Tokens,
) -> Option<Zeroizing<String>> {
    let method = match client.method {
        Method::Basic => "client_secret_basic",
        Method::Post => "client_secret_post",
        Method::None => "none",
        Method::PrivateKeyJwt => return None,
    };
    if tokens.bound {
        return None;
    }
    let expires_at = tokens.expires_at.map(|at| {
        let left = at.saturating_duration_since(Instant::now());
        (SystemTime::now() + left)
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
    });
    let record = Record {
        server: server.to_owned(),
        issuer: issuer.to_owned(),
        resource: resource.to_owned(),
        scopes: scopes.to_vec(),
        client_id: client.id.clone(),
        client_secret: client.secret.as_ref().map(|s| s.expose().to_owned()),
        method: method.to_owned(),
        access_token: tokens.access.expose().to_owned(),
        refresh_token: tokens.refresh.as_ref().map(|s| s.expose().to_owned()),
        expires_at,
    };
    serde_json::to_string(&record).ok().map(Zeroizing::new)
}

/// The record in `text` if it is one for `server`.
pub(crate) fn restore(server: &str, text: &str) -> Option<Restored> {
    let record: Record = serde_json::from_str(text).ok()?;
    if record.server != server {
        return None;
    }
    let method = match record.method.as_str() {
        "client_secret_basic" => Method::Basic,
        "client_secret_post" => Method::Post,
        "none" => Method::None,
        _ => return None,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let expires_at = record
        .expires_at
        .map(|at| Instant::now() + Duration::from_secs(at.saturating_sub(now)));
    Some(Restored {
        issuer: record.issuer.clone(),
        resource: record.resource.clone(),
        scopes: record.scopes.clone(),
        client: ClientIdentity {
            id: record.client_id.clone(),
            secret: record.client_secret.clone().map(Secret::new),
            private_key: None,
            method,
        },
        tokens: Tokens {
            access: Secret::new(record.access_token.clone()),
            bound: false,
            refresh: record.refresh_token.clone().map(Secret::new),
            expires_at,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientIdentity {
        ClientIdentity {
            id: "c-1".to_owned(),
            secret: Some(Secret::new("client-secret-9".to_owned())),
            private_key: None,
            method: Method::Post,
        }
    }

    fn tokens(bound: bool) -> Tokens {
        Tokens {
            access: Secret::new("access-1".to_owned()),
            bound,
            refresh: Some(Secret::new("refresh-1".to_owned())),
            expires_at: Some(Instant::now() + Duration::from_secs(600)),
        }
    }

    #[test]
    fn a_record_comes_back_for_its_server_only() {
        let scopes = ["a".to_owned()];
        let server = "https://mcp.example/mcp";
        let text = record(
            server,
            "https://as.example",
            "r",
            &scopes,
            &client(),
            &tokens(false),
        )
        .expect("kept");
        let back = restore(server, &text).expect("restored");
        assert_eq!(back.issuer, "https://as.example");
        assert_eq!(back.scopes, scopes);
        assert_eq!(back.client.id, "c-1");
        assert_eq!(back.client.method, Method::Post);
        assert_eq!(back.tokens.access.expose(), "access-1");
        assert_eq!(
            back.tokens.refresh.as_ref().map(Secret::expose),
            Some("refresh-1")
        );
        let left = back.tokens.expires_at.expect("expiry") - Instant::now();
        assert!(left > Duration::from_secs(590) && left <= Duration::from_secs(601));
        assert!(restore("https://other.example/mcp", &text).is_none());
        assert!(restore(server, "not json").is_none());
    }

    #[test]
    fn dpop_bound_tokens_and_key_clients_are_not_kept() {
        let server = "https://mcp.example/mcp";
        assert!(record(server, "i", "r", &[], &client(), &tokens(true)).is_none());
        let mut keyed = client();
        keyed.method = Method::PrivateKeyJwt;
        assert!(record(server, "i", "r", &[], &keyed, &tokens(false)).is_none());
    }
}
