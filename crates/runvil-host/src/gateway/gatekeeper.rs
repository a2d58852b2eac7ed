//! Who is let in: the gateway's authentication, built from `--auth-issuer`, `--resource`,
//! `--required-scope` and `--api-keys`, and each request's `Authorization` header admitted as
//! an identity or refused with what the response must carry.
//!
//! As the MCP authorization section asks of a server: it is an OAuth 2.1 resource server
//! whose RFC 9728 metadata names the issuer; a request without a token gets `401` with
//! `WWW-Authenticate: Bearer resource_metadata="…"` (and the required scopes), a bad token the
//! same with `error="invalid_token"`, and a valid token without a required scope `403` with
//! `error="insufficient_scope"` and the scopes. A key of `--api-keys` (`rvk_…`) is a bearer
//! token too; the required scopes are for tokens, a key's rights are the policy's. When the
//! issuer's keys cannot be fetched, no token can be checked: `503`. The token itself is never
//! kept (its hash is), never quoted, and never sent anywhere.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::GatewayError;
use super::api_keys::ApiKeys;
use super::identity::Identity;
use super::issuer::checked_url;
use super::token::{TokenError, Tokens};

/// The well-known path of RFC 9728 metadata, before the resource's own path.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Lets requests in: the gateway's authentication settings, built from the flags.
pub(crate) struct Gatekeeper {
    tokens: Option<Tokens>,
    keys: Option<ApiKeys>,
    /// With an issuer: the resource, and where its metadata is served.
    resource: Option<Resource>,
    required_scopes: Vec<String>,
}

struct Resource {
    issuer: String,
    url: String,
    metadata_url: String,
    metadata_path: String,
}

/// The flags, as given.
pub(crate) struct GatekeeperSettings {
    pub(crate) issuer: Option<String>,
    pub(crate) resource: Option<String>,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) api_keys: Option<PathBuf>,
}

/// Why a request was not let in, with what the response must carry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// 401; 403 for a valid token without the required scope; 503 when the issuer's keys
    /// cannot be fetched, so no token can be checked.
    pub(crate) status: u16,
    /// The `WWW-Authenticate` header value (`Bearer resource_metadata="..."`, with
    /// `error="invalid_token"` or `error="insufficient_scope", scope="..."` where due).
    pub(crate) www_authenticate: String,
    /// Why, for the log and the audit line: never the token.
    pub(crate) reason: String,
}

impl Gatekeeper {
    /// No authentication, as `from_settings` makes it when no flag asks for any, for the
    /// tests that build a server directly.
    #[cfg(test)]
    pub(crate) fn open() -> Self {
        Self {
            tokens: None,
            keys: None,
            resource: None,
            required_scopes: Vec::new(),
        }
    }

    /// From the flags: `--auth-issuer URL`, `--resource URL`, `--required-scope S`
    /// (repeatable), `--api-keys FILE`. Reads the key file; does no network I/O (the issuer's
    /// metadata and JWKS are fetched on first use, cached, bounded).
    pub(crate) fn from_settings(settings: GatekeeperSettings) -> Result<Self, GatewayError> {
        let GatekeeperSettings {
            issuer,
            resource,
            required_scopes,
            api_keys,
        } = settings;
        let resource = match (issuer, resource) {
            (Some(issuer), Some(resource)) => Some(resource_of(issuer, resource)?),
            (None, None) => None,
            (Some(_), None) => {
                return Err(GatewayError::flag(
                    "--auth-issuer",
                    "needs --resource, the gateway's public URL (the audience of its tokens)",
                ));
            }
            (None, Some(_)) => {
                return Err(GatewayError::flag(
                    "--resource",
                    "needs --auth-issuer, the issuer of the tokens for it",
                ));
            }
        };
        if !required_scopes.is_empty() && resource.is_none() {
            return Err(GatewayError::flag(
                "--required-scope",
                "needs --auth-issuer: scopes are a token's",
            ));
        }
        for scope in &required_scopes {
            // RFC 6749's scope-token: it is quoted in WWW-Authenticate as it is.
            let token_char =
                |c: char| c == '!' || ('#'..='[').contains(&c) || (']'..='~').contains(&c);
            if scope.is_empty() || !scope.chars().all(token_char) {
                return Err(GatewayError::flag(
                    "--required-scope",
                    "a scope is one or more visible ASCII characters other than \" and \\",
                ));
            }
        }
        let tokens = match &resource {
            Some(resource) => Some(
                Tokens::new(resource.issuer.clone(), resource.url.clone())
                    .map_err(|why| GatewayError::flag("--auth-issuer", why))?,
            ),
            None => None,
        };
        let keys = api_keys.as_deref().map(ApiKeys::load).transpose()?;
        Ok(Self {
            tokens,
            keys,
            resource,
            required_scopes,
        })
    }

    /// Whether any authentication is configured.
    pub(crate) fn is_open(&self) -> bool {
        self.tokens.is_none() && self.keys.is_none()
    }

    /// The RFC 9728 protected-resource metadata the gateway serves at
    /// `/.well-known/oauth-protected-resource` (and the path-suffixed form); None without an
    /// issuer.
    pub(crate) fn resource_metadata(&self) -> Option<Value> {
        let resource = self.resource.as_ref()?;
        let mut metadata = json!({
            "resource": resource.url,
            "authorization_servers": [resource.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !self.required_scopes.is_empty() {
            metadata["scopes_supported"] = json!(self.required_scopes);
        }
        Some(metadata)
    }

    /// The path the metadata is served at for the resource (RFC 9728 §3.1:
    /// `/.well-known/oauth-protected-resource` followed by the resource's path); None without
    /// an issuer.
    pub(crate) fn resource_metadata_path(&self) -> Option<&str> {
        self.resource.as_ref().map(|r| r.metadata_path.as_str())
    }

    /// Admits a request by its `Authorization` header value (None when absent).
    pub(crate) async fn admit(&self, authorization: Option<&[u8]>) -> Result<Identity, Refusal> {
        if self.is_open() {
            return Ok(Identity::Anonymous);
        }
        let token = match bearer(authorization) {
            Presented::Nothing => {
                return Err(self.refusal(401, None, "the request carries no bearer token"));
            }
            Presented::Malformed => {
                return Err(self.invalid("the bearer token is not token68 text"));
            }
            Presented::Token(token) => token,
        };
        if ApiKeys::looks_like_key(token) {
            return match self.keys.as_ref().and_then(|keys| keys.find(token)) {
                Some(name) => Ok(Identity::Key {
                    name: name.to_owned(),
                }),
                None => Err(self.invalid("the API key is not one of the key file's")),
            };
        }
        let Some(tokens) = &self.tokens else {
            return Err(self.invalid("the bearer token is no API key, and no issuer is configured"));
        };
        let verified = tokens.verify(token).await.map_err(|e| match e {
            TokenError::Invalid(why) => self.invalid(why),
            TokenError::Unavailable(why) => self.refusal(503, None, &why),
        })?;
        let granted: Vec<&str> = verified
            .claims
            .get("scope")
            .and_then(Value::as_str)
            .map(|scopes| scopes.split(' ').collect())
            .unwrap_or_default();
        if !self
            .required_scopes
            .iter()
            .all(|scope| granted.contains(&scope.as_str()))
        {
            return Err(self.refusal(
                403,
                Some("insufficient_scope"),
                "the token lacks a required scope",
            ));
        }
        Ok(Identity::Subject {
            sub: verified.sub.clone(),
            claims: verified.claims.clone(),
        })
    }

    fn invalid(&self, reason: &str) -> Refusal {
        self.refusal(401, Some("invalid_token"), reason)
    }

    /// A refusal whose challenge names the metadata, the error, and the required scopes
    /// where the client can act on them (asking for a token, or a token with more scopes).
    fn refusal(&self, status: u16, error: Option<&str>, reason: &str) -> Refusal {
        let mut params = Vec::new();
        if let Some(resource) = &self.resource {
            params.push(format!("resource_metadata=\"{}\"", resource.metadata_url));
        }
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
        }
        let scopes_help = matches!(error, None | Some("insufficient_scope"));
        if scopes_help && !self.required_scopes.is_empty() {
            params.push(format!("scope=\"{}\"", self.required_scopes.join(" ")));
        }
        let www_authenticate = if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        Refusal {
            status,
            www_authenticate,
            reason: reason.to_owned(),
        }
    }
}

/// The issuer and the resource, checked, with where the resource's metadata is served.
fn resource_of(issuer: String, resource: String) -> Result<Resource, GatewayError> {
    let issuer_url =
        checked_url(&issuer).map_err(|why| GatewayError::flag("--auth-issuer", why))?;
    if issuer_url.query().is_some() {
        return Err(GatewayError::flag("--auth-issuer", "has a query"));
    }
    let url = checked_url(&resource).map_err(|why| GatewayError::flag("--resource", why))?;
    if url.query().is_some() {
        return Err(GatewayError::flag(
            "--resource",
            "has a query (RFC 8707: a resource is named without one)",
        ));
    }
    let path = url.path().trim_end_matches('/');
    let metadata_path = format!("{METADATA_PATH}{path}");
    let metadata_url = format!("{}{metadata_path}", url.origin().ascii_serialization());
    Ok(Resource {
        issuer,
        url: resource,
        metadata_url,
        metadata_path,
    })
}

/// What an `Authorization` header presents.
enum Presented<'a> {
    /// No header, or a scheme other than Bearer: no credentials this gateway takes.
    Nothing,
    /// `Bearer` with something that is no token.
    Malformed,
    Token(&'a str),
}

/// The bearer token of an `Authorization` header (RFC 6750 §2.1: `Bearer`, any case, then
/// token68).
fn bearer(header: Option<&[u8]>) -> Presented<'_> {
    let Some(header) = header else {
        return Presented::Nothing;
    };
    let Ok(header) = std::str::from_utf8(header) else {
        return Presented::Malformed;
    };
    let Some((scheme, rest)) = header.split_once(' ') else {
        return if header.eq_ignore_ascii_case("bearer") {
            Presented::Malformed
        } else {
            Presented::Nothing
        };
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Presented::Nothing;
    }
    let token = rest.trim_start_matches(' ');
    let body = token.trim_end_matches('=');
    let token68 =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/');
    if body.is_empty() || !body.chars().all(token68) {
        return Presented::Malformed;
    }
    Presented::Token(token)
}

#[cfg(test)]
mod real_provider;
#[cfg(test)]
mod tests;
