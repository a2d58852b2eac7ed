//! Who the Pack is to an authorization server, in the specification's order: the client the
//! user registered and configured, else the Host's Client ID Metadata Document when the
//! server accepts those, else Dynamic Client Registration (RFC 7591). An identity belongs to
//! one issuer and is never shown to another.

use std::fmt;

use reqwest::{Client, Url};
use serde::Deserialize;
use serde_json::json;

use super::AuthError;
use super::discovery::ServerMetadata;
use super::fetch;
use crate::config::Preregistered;
use crate::secret::Secret;

/// The name the Pack registers under.
const CLIENT_NAME: &str = "plugin_mcp";

/// How the client proves itself at the token endpoint (RFC 6749 §2.3, RFC 8414).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Basic,
    Post,
    None,
    /// A JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
}

/// A client of one authorization server. Its `Debug` shows how it proves itself only.
#[derive(Clone)]
pub(crate) struct ClientIdentity {
    /// The client id: a configured one is the user's, scrubbed as a secret, so every id is
    /// kept as one.
    pub(crate) id: Secret,
    pub(crate) secret: Option<Secret>,
    pub(crate) private_key: Option<Secret>,
    pub(crate) method: Method,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// The identity to use with the authorization server `metadata` describes.
pub(crate) async fn identify(
    client: &Client,
    metadata: &ServerMetadata,
    configured: Option<&Preregistered>,
    metadata_url: Option<&str>,
    redirect_uri: &str,
) -> Result<ClientIdentity, AuthError> {
    if let Some(configured) = configured {
        let method = if configured.private_key.is_some() {
            Method::PrivateKeyJwt
        } else {
            method_for(metadata, configured.secret.is_some(), None)
        };
        return Ok(ClientIdentity {
            id: configured.id.clone(),
            secret: configured.secret.clone(),
            private_key: configured.private_key.clone(),
            method,
        });
    }
    if let Some(url) = metadata_url
        && metadata.client_id_metadata_document_supported
    {
        return Ok(ClientIdentity {
            id: Secret::new(url.to_owned()),
            secret: None,
            private_key: None,
            method: Method::None,
        });
    }
    register(client, metadata, redirect_uri).await
}

/// Dynamic Client Registration (RFC 7591) at `metadata`'s registration endpoint.
async fn register(
    client: &Client,
    metadata: &ServerMetadata,
    redirect_uri: &str,
) -> Result<ClientIdentity, AuthError> {
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(AuthError::refused(
            "the authorization server offers no way to register this client (no \
             registration_endpoint, no client metadata documents): configure a client id \
             under oauth.clientId",
        ));
    };
    // A loopback redirect is a native application's (RFC 8252); the specification asks for
    // the type to be said.
    let native = Url::parse(redirect_uri).is_ok_and(|uri| fetch::is_loopback(&uri));
    let request = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": if native { "native" } else { "web" },
    });
    let answer = fetch::post_json(client, endpoint, &request).await?;
    if !(200..300).contains(&answer.status) {
        return Err(answer.failure("the client registration"));
    }
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    let registered: Registered = answer.json("the client registration")?;
    let secret = registered.client_secret.map(Secret::new);
    let method = method_for(
        metadata,
        secret.is_some(),
        registered.token_endpoint_auth_method.as_deref(),
    );
    Ok(ClientIdentity {
        id: Secret::new(registered.client_id),
        secret,
        private_key: None,
        method,
    })
}

/// The method the registration named, else the best the server supports for a client with
/// (or without) a secret; RFC 8414's default is `client_secret_basic`.
fn method_for(metadata: &ServerMetadata, has_secret: bool, registered: Option<&str>) -> Method {
    if !has_secret {
        return Method::None;
    }
    match registered {
        Some("client_secret_post") => return Method::Post,
        Some("client_secret_basic") => return Method::Basic,
        _ => {}
    }
    let supported = |name: &str| {
        metadata
            .token_endpoint_auth_methods
            .as_ref()
            .is_none_or(|methods| methods.iter().any(|m| m == name))
    };
    if supported("client_secret_basic") {
        Method::Basic
    } else if supported("client_secret_post") {
        Method::Post
    } else if supported("none") {
        Method::None
    } else {
        Method::Basic
    }
}
