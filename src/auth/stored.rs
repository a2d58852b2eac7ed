//! What one server's authorization leaves in the Host's credential store, so that a later Pack
//! (the next `runvil call` after `runvil login`) starts authorized.
//!
//! A record names the server it is for and is used only for that URL: a configuration that
//! now points the same name elsewhere gets no token. It keeps the issuer the tokens are from,
//! which binds a configured client to that authorization server from then on, and a DPoP-bound
//! token's key with the token. A configured client's secret or private key is not kept: the
//! configuration has it, and a changed one must be the one used. The text is JSON, wiped from
//! memory once read or written.

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
    /// The client is the configuration's: its secret or key is taken from there.
    #[serde(default)]
    configured: bool,
    client_secret: Option<String>,
    method: String,
    access_token: String,
    refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    expires_at: Option<u64>,
    /// When to refresh the token, in seconds since the Unix epoch.
    #[serde(default)]
    refresh_at: Option<u64>,
    /// The DPoP key the access token is bound to, PKCS#8 in base64.
    #[serde(default)]
    dpop_key: Option<String>,
}

impl Drop for Record {
    fn drop(&mut self) {
        use zeroize::Zeroize as _;
        self.client_id.zeroize();
        self.access_token.zeroize();
        self.refresh_token.zeroize();
        self.client_secret.zeroize();
        self.dpop_key.zeroize();
    }
}

/// What a record gives back to the Pack.
pub(crate) struct Restored {
    pub(crate) issuer: String,
    pub(crate) resource: String,
    pub(crate) scopes: Vec<String>,
    /// The client, whose secret or key the caller takes from the configuration when
    /// `configured`.
    pub(crate) client: ClientIdentity,
    pub(crate) configured: bool,
    pub(crate) tokens: Tokens,
    /// The key the tokens are bound to, when they are DPoP tokens.
    pub(crate) dpop: Option<Secret>,
}

/// What one authorization leaves, to be kept.
pub(crate) struct Kept<'a> {
    pub(crate) server: &'a str,
    pub(crate) issuer: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) scopes: &'a [String],
    pub(crate) client: &'a ClientIdentity,
    pub(crate) configured: bool,
    pub(crate) tokens: &'a Tokens,
    pub(crate) dpop: Option<&'a Secret>,
}

/// The text to store for what `kept` names; `None` for a DPoP-bound token without its key.
pub(crate) fn record(kept: &Kept<'_>) -> Option<Zeroizing<String>> {
    let method = match kept.client.method {
        Method::Basic => "client_secret_basic",
        Method::Post => "client_secret_post",
        Method::None => "none",
        Method::PrivateKeyJwt => "private_key_jwt",
    };
    let tokens = kept.tokens;
    if tokens.bound && kept.dpop.is_none() {
        return None;
    }
    let client_secret = match kept.configured {
        true => None,
        false => kept.client.secret.as_ref().map(|s| s.expose().to_owned()),
    };
    let record = Record {
        server: kept.server.to_owned(),
        issuer: kept.issuer.to_owned(),
        resource: kept.resource.to_owned(),
        scopes: kept.scopes.to_vec(),
        client_id: kept.client.id.expose().to_owned(),
        configured: kept.configured,
        client_secret,
        method: method.to_owned(),
        access_token: tokens.access.expose().to_owned(),
        refresh_token: tokens.refresh.as_ref().map(|s| s.expose().to_owned()),
        expires_at: tokens.expires_at.map(epoch_secs),
        refresh_at: tokens.refresh_at.map(epoch_secs),
        dpop_key: kept
            .dpop
            .filter(|_| tokens.bound)
            .map(|key| key.expose().to_owned()),
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
        "private_key_jwt" if record.configured => Method::PrivateKeyJwt,
        _ => return None,
    };
    let dpop = record.dpop_key.clone().map(Secret::new);
    Some(Restored {
        issuer: record.issuer.clone(),
        resource: record.resource.clone(),
        scopes: record.scopes.clone(),
        client: ClientIdentity {
            id: Secret::new(record.client_id.clone()),
            secret: record.client_secret.clone().map(Secret::new),
            private_key: None,
            method,
        },
        configured: record.configured,
        tokens: Tokens {
            access: Secret::new(record.access_token.clone()),
            bound: dpop.is_some(),
            refresh: record.refresh_token.clone().map(Secret::new),
            expires_at: record.expires_at.map(instant),
            // A record of an earlier version: refreshed as late as tokens ever were.
            refresh_at: record.refresh_at.or(record.expires_at).map(instant),
        },
        dpop,
    })
}

/// `at` as seconds since the Unix epoch.
fn epoch_secs(at: Instant) -> u64 {
    let left = at.saturating_duration_since(Instant::now());
    (SystemTime::now() + left)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Seconds since the Unix epoch as an instant of this process (the past as now).
fn instant(secs: u64) -> Instant {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    Instant::now() + Duration::from_secs(secs.saturating_sub(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> ClientIdentity {
        ClientIdentity {
            id: Secret::new("c-1".to_owned()),
            secret: Some(Secret::new("client-secret-9".to_owned())),
            private_key: None,
            method: Method::Post,
        }
    }

    fn tokens(bound: bool) -> Tokens {
        let at = Instant::now() + Duration::from_secs(600);
        Tokens {
            access: Secret::new("access-1".to_owned()),
            bound,
            refresh: Some(Secret::new("refresh-1".to_owned())),
            expires_at: Some(at),
            refresh_at: Some(at - Duration::from_secs(60)),
        }
    }

    const SERVER: &str = "https://mcp.example/mcp";

    #[test]
    fn a_client_s_or_tokens_debug_shows_no_value() {
        assert_eq!(
            format!("{:?}", client()),
            "ClientIdentity { method: Post, .. }"
        );
        assert_eq!(format!("{:?}", tokens(true)), "Tokens { bound: true, .. }");
    }

    fn kept<'a>(
        client: &'a ClientIdentity,
        tokens: &'a Tokens,
        configured: bool,
        dpop: Option<&'a Secret>,
    ) -> Kept<'a> {
        Kept {
            server: SERVER,
            issuer: "https://as.example",
            resource: "r",
            scopes: &[],
            client,
            configured,
            tokens,
            dpop,
        }
    }

    #[test]
    fn a_record_comes_back_for_its_server_only() {
        let (client, tokens) = (client(), tokens(false));
        let text = record(&kept(&client, &tokens, false, None)).expect("kept");
        let back = restore(SERVER, &text).expect("restored");
        assert_eq!(back.issuer, "https://as.example");
        assert_eq!(back.client.id.expose(), "c-1");
        assert_eq!(back.client.method, Method::Post);
        assert_eq!(
            back.client.secret.as_ref().map(Secret::expose),
            Some("client-secret-9")
        );
        assert!(!back.configured && back.dpop.is_none() && !back.tokens.bound);
        assert_eq!(back.tokens.access.expose(), "access-1");
        assert_eq!(
            back.tokens.refresh.as_ref().map(Secret::expose),
            Some("refresh-1")
        );
        let left = back.tokens.expires_at.expect("expiry") - Instant::now();
        assert!(left > Duration::from_secs(590) && left <= Duration::from_secs(601));
        let refresh = back.tokens.refresh_at.expect("refresh") - Instant::now();
        assert!(refresh > Duration::from_secs(530) && refresh <= Duration::from_secs(541));
        assert!(restore("https://other.example/mcp", &text).is_none());
        assert!(restore(SERVER, "not json").is_none());
    }

    #[test]
    fn a_dpop_token_is_kept_with_its_key_and_a_configured_client_without_its_secret() {
        let (client, bound) = (client(), tokens(true));
        assert!(
            record(&kept(&client, &bound, false, None)).is_none(),
            "a bound token is useless without its key"
        );
        let key = Secret::new("a2V5LWJ5dGVz".to_owned());
        let text = record(&kept(&client, &bound, true, Some(&key))).expect("kept");
        assert!(!text.contains("client-secret-9"), "{}", &*text);
        let back = restore(SERVER, &text).expect("restored");
        assert!(back.tokens.bound && back.configured);
        assert_eq!(back.dpop.as_ref().map(Secret::expose), Some("a2V5LWJ5dGVz"));
        assert!(back.client.secret.is_none());
        let mut keyed = client;
        keyed.method = Method::PrivateKeyJwt;
        let plain = tokens(false);
        let text = record(&kept(&keyed, &plain, true, None)).expect("kept");
        assert_eq!(
            restore(SERVER, &text).expect("restored").client.method,
            Method::PrivateKeyJwt
        );
        // A key client is only ever the configuration's.
        let text = record(&kept(&keyed, &plain, false, None)).expect("kept");
        assert!(restore(SERVER, &text).is_none());
    }
}
