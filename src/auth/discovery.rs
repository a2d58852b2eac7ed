//! Finding who authorizes a server: its Protected Resource Metadata (RFC 9728) and its
//! authorization server's metadata (RFC 8414, then OpenID Connect Discovery), in the order
//! the MCP specification's authorization section gives, with the 2025-03-26 fallbacks for a
//! server that publishes no resource metadata.
//!
//! Two checks keep a server or an authorization server from redirecting the flow: the
//! metadata's `resource` must be the MCP server (same origin, a path that contains its path),
//! and an authorization server's metadata must name exactly the issuer it was fetched for.

use reqwest::{Client, Url};
use serde::Deserialize;

use super::AuthError;
use super::dpop;
use super::fetch::{self, checked_url};

/// Who authorizes a server, found: its authorization server's metadata, the resource to ask
/// tokens for, and the scopes the resource lists.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    pub(crate) metadata: ServerMetadata,
    pub(crate) resource: String,
    pub(crate) scopes: Vec<String>,
}

/// Who authorizes `server`: by its resource metadata (where the challenge `announced` it,
/// else at the well-known locations), else by the 2025-03-26 fallback.
pub(crate) async fn discover(
    http: &Client,
    server: &Url,
    announced: Option<&str>,
) -> Result<Discovery, AuthError> {
    match protected_resource(http, server, announced).await? {
        Some(resource) => {
            let metadata = authorization_server(http, &resource.issuer)
                .await?
                .ok_or_else(|| {
                    AuthError::refused("the authorization server publishes no metadata")
                })?;
            Ok(Discovery {
                metadata,
                resource: resource.resource,
                scopes: resource.scopes_supported,
            })
        }
        None => Ok(Discovery {
            metadata: legacy_authorization_server(http, server).await?,
            resource: canonical(server),
            scopes: Vec::new(),
        }),
    }
}

/// The server's URL as a resource identifier (RFC 8707) when it publishes no metadata: no
/// query (it may hold a credential, and the authorization server has no need of it), no
/// fragment. Also what a kept record names its server by.
pub(crate) fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// What the MCP server says about itself (RFC 9728 §2).
#[derive(Debug, Clone)]
pub(crate) struct ProtectedResource {
    /// The resource identifier the tokens are for: sent as `resource` (RFC 8707).
    pub(crate) resource: String,
    /// The issuer of its authorization server (the first one it names), exactly as written.
    pub(crate) issuer: String,
    pub(crate) scopes_supported: Vec<String>,
}

/// What an authorization server says about itself, checked.
#[derive(Debug, Clone)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Url,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) token_endpoint_auth_methods: Option<Vec<String>>,
    /// RFC 9207: the server puts `iss` in every authorization response.
    pub(crate) iss_parameter_supported: bool,
    pub(crate) client_id_metadata_document_supported: bool,
    /// PKCE with S256 is advertised (or, without metadata, cannot be asked about).
    pub(crate) pkce_s256: bool,
    /// DPoP with the algorithm the Pack signs with is advertised (RFC 9449 §5.1).
    pub(crate) dpop: bool,
    /// The metadata is an OpenID provider's (`openid-configuration`), which follows OpenID
    /// Connect Core's rules for `offline_access`.
    pub(crate) openid: bool,
}

#[derive(Deserialize)]
struct ResourceDocument {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

#[derive(Deserialize)]
struct MetadataDocument {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    client_id_metadata_document_supported: bool,
    #[serde(default)]
    dpop_signing_alg_values_supported: Vec<String>,
}

/// The server's resource metadata: from the challenge's `resource_metadata`, else from the
/// well-known locations for its URL (path-aware first, then the root). `None` when there is
/// none, for the 2025-03-26 fallback.
async fn protected_resource(
    client: &Client,
    server: &Url,
    announced: Option<&str>,
) -> Result<Option<ProtectedResource>, AuthError> {
    let candidates = match announced {
        Some(url) => vec![checked_url(url, "the server's resource_metadata")?],
        None => resource_metadata_urls(server),
    };
    for url in candidates {
        let answer = fetch::get(client, &url).await?;
        if answer.status != 200 {
            continue;
        }
        let document: ResourceDocument = answer.json("the protected resource metadata")?;
        if !covers(&document.resource, server) {
            return Err(AuthError::refused(
                "the server's protected resource metadata names another resource \
                 (its `resource` is not this server's URL)",
            ));
        }
        let issuer = document
            .authorization_servers
            .into_iter()
            .next()
            .ok_or_else(|| {
                AuthError::refused(
                    "the server's protected resource metadata names no authorization server",
                )
            })?;
        return Ok(Some(ProtectedResource {
            resource: document.resource,
            issuer,
            scopes_supported: document.scopes_supported,
        }));
    }
    Ok(None)
}

/// RFC 9728 §3.1: the path-aware location, then the root one for a server with a path.
fn resource_metadata_urls(server: &Url) -> Vec<Url> {
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    for suffix in [path, ""] {
        let mut url = server.clone();
        url.set_path(&format!("/.well-known/oauth-protected-resource{suffix}"));
        url.set_query(None);
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

/// Whether `resource` identifies `server`: the same scheme, host and port, and a path that is
/// the server's or one of its ancestors (by whole segments).
fn covers(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() || resource.fragment().is_some() {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = server.path();
    path == base || path.starts_with(&format!("{base}/"))
}

/// The metadata of the authorization server `issuer`, from the first of the specification's
/// locations that has it; `None` when none does. Metadata that names another issuer is
/// refused: it would let one server send the user, and the code, to another.
async fn authorization_server(
    client: &Client,
    issuer: &str,
) -> Result<Option<ServerMetadata>, AuthError> {
    let base = checked_url(issuer, "the authorization server's issuer")?;
    for url in metadata_urls(&base) {
        let answer = fetch::get(client, &url).await?;
        if answer.status != 200 {
            continue;
        }
        let document: MetadataDocument = answer.json("the authorization server's metadata")?;
        let openid = url.path().contains("/.well-known/openid-configuration");
        if document.issuer != issuer {
            return Err(AuthError::refused(
                "the authorization server's metadata names another issuer than the one it \
                 was fetched for",
            ));
        }
        return checked_metadata(document, openid).map(Some);
    }
    Ok(None)
}

/// RFC 8414 §3.1 and OpenID Connect Discovery §4, in the specification's order: for an issuer
/// with a path, the well-known names inserted before the path, then OpenID's appended after
/// it; for one without, the two at the root.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let at = |path: String| {
        let mut url = issuer.clone();
        url.set_path(&path);
        url.set_query(None);
        url
    };
    if path.is_empty() {
        return vec![
            at("/.well-known/oauth-authorization-server".to_owned()),
            at("/.well-known/openid-configuration".to_owned()),
        ];
    }
    vec![
        at(format!("/.well-known/oauth-authorization-server{path}")),
        at(format!("/.well-known/openid-configuration{path}")),
        at(format!("{path}/.well-known/openid-configuration")),
    ]
}

fn checked_metadata(document: MetadataDocument, openid: bool) -> Result<ServerMetadata, AuthError> {
    let pkce_s256 = document
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
    let registration_endpoint = document
        .registration_endpoint
        .as_deref()
        .map(|url| checked_url(url, "the registration_endpoint"))
        .transpose()?;
    Ok(ServerMetadata {
        authorization_endpoint: checked_url(
            &document.authorization_endpoint,
            "the authorization_endpoint",
        )?,
        token_endpoint: checked_url(&document.token_endpoint, "the token_endpoint")?,
        registration_endpoint,
        issuer: document.issuer,
        scopes_supported: document.scopes_supported,
        token_endpoint_auth_methods: document.token_endpoint_auth_methods_supported,
        iss_parameter_supported: document.authorization_response_iss_parameter_supported,
        client_id_metadata_document_supported: document.client_id_metadata_document_supported,
        pkce_s256,
        dpop: document
            .dpop_signing_alg_values_supported
            .iter()
            .any(|alg| alg == dpop::ALGORITHM),
        openid,
    })
}

/// The 2025-03-26 fallback for a server without resource metadata: its origin is the
/// authorization server, and without metadata there the endpoints are the default paths.
/// PKCE is used all the same: such a server cannot say whether it supports it.
async fn legacy_authorization_server(
    client: &Client,
    server: &Url,
) -> Result<ServerMetadata, AuthError> {
    let origin = server.origin().ascii_serialization();
    if let Some(metadata) = authorization_server(client, &origin).await? {
        return Ok(metadata);
    }
    let at = |path: &str| {
        let mut url = server.clone();
        url.set_path(path);
        url.set_query(None);
        url
    };
    Ok(ServerMetadata {
        issuer: origin,
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        scopes_supported: Vec::new(),
        token_endpoint_auth_methods: None,
        iss_parameter_supported: false,
        client_id_metadata_document_supported: false,
        pkce_s256: true,
        dpop: false,
        openid: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("url")
    }

    #[test]
    fn resource_metadata_is_looked_for_path_first_then_at_the_root() {
        let found: Vec<String> = resource_metadata_urls(&url("https://h.example/p/mcp?k=v"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "https://h.example/.well-known/oauth-protected-resource/p/mcp",
                "https://h.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(resource_metadata_urls(&url("https://h.example/")).len(), 1);
    }

    #[test]
    fn metadata_locations_follow_the_specification_order() {
        let with_path: Vec<String> = metadata_urls(&url("https://a.example/tenant1"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            with_path,
            [
                "https://a.example/.well-known/oauth-authorization-server/tenant1",
                "https://a.example/.well-known/openid-configuration/tenant1",
                "https://a.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let root: Vec<String> = metadata_urls(&url("https://a.example"))
            .iter()
            .map(Url::to_string)
            .collect();
        assert_eq!(
            root,
            [
                "https://a.example/.well-known/oauth-authorization-server",
                "https://a.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_own_url_and_those_below_it_only() {
        let server = url("https://h.example/api/mcp");
        for yes in [
            "https://h.example/api/mcp",
            "https://h.example/api",
            "https://h.example/",
            "https://H.EXAMPLE:443/api/",
        ] {
            assert!(covers(yes, &server), "{yes}");
        }
        for no in [
            "https://evil.example/api/mcp",
            "http://h.example/api/mcp",
            "https://h.example:8443/api/mcp",
            "https://h.example/ap",
            "https://h.example/api/mcp/more",
            "https://h.example/api/mcp#f",
            "not a url",
        ] {
            assert!(!covers(no, &server), "{no}");
        }
    }
}
