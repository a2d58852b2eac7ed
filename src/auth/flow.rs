//! The authorization code grant with PKCE (OAuth 2.1): the authorization request the user is
//! sent through, the checks on the answer the Host carries back (`state`, then `iss` per
//! RFC 9207, then `error` or `code`), and the token request.

use std::fmt;
use std::time::Duration;

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine as _;
use base64::prelude::{BASE64_STANDARD, BASE64_URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{Client, RequestBuilder, Url};
use serde::Deserialize;
use tokio::time::Instant;
use zeroize::Zeroizing;

use super::AuthError;
use super::OFFLINE_ACCESS;
use super::assertion;
use super::discovery::ServerMetadata;
use super::dpop::DpopKey;
use super::fetch;
use super::registration::{ClientIdentity, Method};
use crate::policy::refresh_ahead;
use crate::secret::Secret;
use crate::text::Scrubber;

/// What application/x-www-form-urlencoded leaves as it is (RFC 6749 §2.3.1 encodes the
/// client's id and secret so before they are joined for `Basic`).
const FORM_KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// What one authorization request must be checked against when its answer comes back.
pub(crate) struct Pending {
    pub(crate) url: Url,
    state: Secret,
    verifier: Secret,
}

impl Pending {
    /// The secrets the request made, for the scrubbers to learn at once: a party that quotes
    /// its `state` or the verifier back must not get them shown.
    pub(crate) fn secrets(&self) -> [Secret; 2] {
        [self.state.clone(), self.verifier.clone()]
    }
}

/// Random bytes as base64url: PKCE verifiers (32 bytes give the 43 characters RFC 7636 asks
/// for at least) and `state`.
fn random(bytes: usize) -> Result<Secret, AuthError> {
    let mut buffer = Zeroizing::new(vec![0u8; bytes]);
    SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| AuthError::refused("the system has no random numbers to give"))?;
    Ok(Secret::new(BASE64_URL_SAFE_NO_PAD.encode(&*buffer)))
}

/// The authorization request: PKCE S256, `state`, the `resource` (RFC 8707) and the scopes;
/// `prompt=consent` when it asks an OpenID provider for `offline_access`, which OpenID
/// Connect Core §11 says it must, or the provider grants no refresh token.
pub(crate) fn request(
    metadata: &ServerMetadata,
    client: &ClientIdentity,
    redirect_uri: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Pending, AuthError> {
    // The specification: a client must refuse to go on without S256 in the metadata.
    if !metadata.pkce_s256 {
        return Err(AuthError::refused(
            "the authorization server does not advertise PKCE with S256 \
             (code_challenge_methods_supported), which the MCP specification requires",
        ));
    }
    let verifier = random(32)?;
    let state = random(16)?;
    let challenge = BASE64_URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.expose().as_bytes()));
    let mut url = metadata.authorization_endpoint.clone();
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", client.id.expose())
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state.expose())
            .append_pair("resource", resource);
        if !scopes.is_empty() {
            query.append_pair("scope", &scopes.join(" "));
        }
        if metadata.openid && scopes.iter().any(|s| s == OFFLINE_ACCESS) {
            query.append_pair("prompt", "consent");
        }
    }
    Ok(Pending {
        url,
        state,
        verifier,
    })
}

/// The code from the answer the Host carried back, once the answer is known to be this
/// request's (`state`) and from this authorization server (`iss`, RFC 9207: compared as
/// plain strings, since a client that normalizes them can be mixed up).
pub(crate) fn code(
    pending: &Pending,
    metadata: &ServerMetadata,
    params: &[(String, String)],
) -> Result<Secret, AuthError> {
    let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    if param("state").map(String::as_str) != Some(pending.state.expose()) {
        return Err(AuthError::refused(
            "the authorization answer does not carry this request's state",
        ));
    }
    match param("iss") {
        Some(iss) if *iss != metadata.issuer => {
            return Err(AuthError::refused(
                "the authorization answer names another issuer (iss) than the authorization \
                 server asked",
            ));
        }
        None if metadata.iss_parameter_supported => {
            return Err(AuthError::refused(
                "the authorization answer lacks the iss parameter its authorization server \
                 promises",
            ));
        }
        _ => {}
    }
    if let Some(error) = param("error") {
        let description = param("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(AuthError::refused_saying(
            "the authorization was not granted",
            format!("{error}{description}"),
        ));
    }
    param("code")
        .map(|code| Secret::new(code.clone()))
        .ok_or_else(|| AuthError::refused("the authorization answer carries no code"))
}

/// Tokens for one server, from one authorization server. Its `Debug` shows whether they are
/// bound to a key, and no token.
#[derive(Clone)]
pub(crate) struct Tokens {
    pub(crate) access: Secret,
    /// The access token is bound to the server's DPoP key (`token_type` DPoP).
    pub(crate) bound: bool,
    pub(crate) refresh: Option<Secret>,
    pub(crate) expires_at: Option<Instant>,
    /// When to refresh it: [`refresh_ahead`] of its lifetime before it expires.
    pub(crate) refresh_at: Option<Instant>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

/// The `Basic` credential of a client with a secret (RFC 6749 §2.3.1: each part
/// form-encoded before they are joined), without the scheme.
pub(crate) fn basic_credential(client: &ClientIdentity) -> Option<Secret> {
    let secret = client.secret.as_ref()?;
    let joined = Zeroizing::new(format!(
        "{}:{}",
        utf8_percent_encode(client.id.expose(), FORM_KEPT),
        utf8_percent_encode(secret.expose(), FORM_KEPT)
    ));
    Some(Secret::new(BASE64_STANDARD.encode(joined.as_bytes())))
}

/// The grant a token request makes.
pub(crate) enum Grant {
    Code {
        code: Secret,
        pending: Pending,
        redirect_uri: String,
    },
    Refresh(Secret),
    /// A machine client's own tokens (RFC 6749 §4.4), for these scopes.
    ClientCredentials(Vec<String>),
}

/// Exchanges a grant at the token endpoint, with the `resource` and the client's proof; with
/// a DPoP proof of `dpop` too, when given (and again with the nonce the server asks for).
pub(crate) async fn tokens(
    http: &Client,
    metadata: &ServerMetadata,
    client: &ClientIdentity,
    grant: &Grant,
    resource: &str,
    dpop: Option<&DpopKey>,
) -> Result<Tokens, AuthError> {
    let scope = match grant {
        Grant::ClientCredentials(scopes) if !scopes.is_empty() => Some(scopes.join(" ")),
        _ => None,
    };
    let mut form = grant_form(grant, scope.as_deref());
    form.push(("resource", resource));
    let assertion = match (&client.method, &client.private_key) {
        (Method::PrivateKeyJwt, Some(key)) => {
            Some(assertion::sign(key, client.id.expose(), &metadata.issuer)?)
        }
        _ => None,
    };
    let request = http.post(metadata.token_endpoint.clone());
    let request = authenticated(request, &mut form, client, assertion.as_ref())?;
    let answer = send_proven(request, &form, dpop, &metadata.token_endpoint).await?;
    if answer.status != 200 {
        // A party may quote the assertion it was sent: good for minutes, it is no secret the
        // scrubbers keep, so it is scrubbed here (the rest of the form they know already).
        let failure = answer.failure("the token request");
        return Err(match &assertion {
            Some(assertion) => failure.scrubbed_by(&Scrubber::new([assertion.clone()])),
            None => failure,
        });
    }
    read_tokens(&answer, grant, dpop.is_some())
}

/// The token request's form for `grant`, before the resource and the client's credentials.
fn grant_form<'a>(grant: &'a Grant, scope: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
    let mut form = match grant {
        Grant::Code {
            code,
            pending,
            redirect_uri,
        } => vec![
            ("grant_type", "authorization_code"),
            ("code", code.expose()),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_verifier", pending.verifier.expose()),
        ],
        Grant::Refresh(refresh) => vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.expose()),
        ],
        Grant::ClientCredentials(_) => vec![("grant_type", "client_credentials")],
    };
    if let Some(scope) = scope {
        form.push(("scope", scope));
    }
    form
}

/// The client's credentials on `request`, by the method it registered: a `Basic` header, or
/// fields of `form`.
fn authenticated<'a>(
    mut request: RequestBuilder,
    form: &mut Vec<(&'static str, &'a str)>,
    client: &'a ClientIdentity,
    assertion: Option<&'a Secret>,
) -> Result<RequestBuilder, AuthError> {
    match client.method {
        Method::Basic => {
            let credential = basic_credential(client)
                .ok_or_else(|| AuthError::refused("the client credentials cannot be sent"))?;
            let mut value = HeaderValue::from_str(&format!("Basic {}", credential.expose()))
                .map_err(|_| AuthError::refused("the client credentials cannot be sent"))?;
            value.set_sensitive(true);
            request = request.header(AUTHORIZATION, value);
        }
        Method::Post => {
            let secret = client.secret.as_ref().map(Secret::expose);
            form.push(("client_id", client.id.expose()));
            form.push(("client_secret", secret.unwrap_or_default()));
        }
        Method::None => form.push(("client_id", client.id.expose())),
        Method::PrivateKeyJwt => {
            form.push(("client_id", client.id.expose()));
            form.push(("client_assertion_type", assertion::ASSERTION_TYPE));
            if let Some(assertion) = assertion {
                form.push(("client_assertion", assertion.expose()));
            }
        }
    }
    Ok(request)
}

/// Posts `form` with a DPoP proof when `dpop` is given, again once with the nonce the server
/// asks for (RFC 9449 §8).
async fn send_proven(
    request: RequestBuilder,
    form: &[(&str, &str)],
    dpop: Option<&DpopKey>,
    endpoint: &Url,
) -> Result<fetch::Answer, AuthError> {
    let mut nonce: Option<String> = None;
    loop {
        let mut attempt = request
            .try_clone()
            .ok_or_else(|| AuthError::refused("the token request cannot be sent"))?;
        if let Some(key) = dpop {
            let proof = key.proof("POST", endpoint, None, nonce.as_deref())?;
            attempt = attempt.header("dpop", proof);
        }
        let answer = fetch::post_form(attempt, form).await?;
        if dpop.is_some()
            && nonce.is_none()
            && answer.status == 400
            && answer.is_error("use_dpop_nonce")
            && let Some(asked) = answer.dpop_nonce
        {
            nonce = Some(asked);
            continue;
        }
        return Ok(answer);
    }
}

/// The tokens of a `200` answer to `grant`, checked: a type the request allows (`DPoP` only
/// when `proven`), an access token that can be sent in a header.
fn read_tokens(answer: &fetch::Answer, grant: &Grant, proven: bool) -> Result<Tokens, AuthError> {
    #[derive(Deserialize)]
    struct TokenAnswer {
        access_token: String,
        token_type: String,
        #[serde(default)]
        expires_in: Option<u64>,
        #[serde(default)]
        refresh_token: Option<String>,
    }
    let answer: TokenAnswer = answer.json("the token answer")?;
    let access = Secret::new(answer.access_token);
    let refresh = answer.refresh_token.map(Secret::new);
    let bound = proven && answer.token_type.eq_ignore_ascii_case("dpop");
    if !bound && !answer.token_type.eq_ignore_ascii_case("bearer") {
        let words = if proven {
            "the token is of neither type Bearer nor DPoP"
        } else {
            "the token is not of type Bearer"
        };
        return Err(AuthError::refused_saying(words, answer.token_type));
    }
    let sendable = access
        .expose()
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b',');
    if access.expose().is_empty() || !sendable {
        return Err(AuthError::refused(
            "the access token cannot be sent in a header",
        ));
    }
    let refresh = refresh.or_else(|| match grant {
        // RFC 6749 §6: a refresh may leave the refresh token as it was.
        Grant::Refresh(kept) => Some(kept.clone()),
        Grant::Code { .. } | Grant::ClientCredentials(_) => None,
    });
    let now = Instant::now();
    let lifetime = answer
        .expires_in
        .map(|secs| Duration::from_secs(secs.min(u64::from(u32::MAX))));
    Ok(Tokens {
        access,
        bound,
        refresh,
        expires_at: lifetime.map(|lifetime| now + lifetime),
        refresh_at: lifetime.map(|lifetime| now + lifetime - refresh_ahead(lifetime)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(iss_supported: bool) -> ServerMetadata {
        let url = |path: &str| Url::parse(&format!("https://as.example{path}")).expect("url");
        ServerMetadata {
            issuer: "https://as.example".to_owned(),
            authorization_endpoint: url("/authorize?tenant=1"),
            token_endpoint: url("/token"),
            registration_endpoint: None,
            scopes_supported: Vec::new(),
            token_endpoint_auth_methods: None,
            iss_parameter_supported: iss_supported,
            client_id_metadata_document_supported: false,
            pkce_s256: true,
            dpop: false,
            openid: false,
        }
    }

    fn new_request(metadata: &ServerMetadata) -> Pending {
        let client = ClientIdentity {
            id: Secret::new("client-1".to_owned()),
            secret: None,
            private_key: None,
            method: Method::None,
        };
        let scopes = ["mcp:basic".to_owned(), "mcp:write".to_owned()];
        request(
            metadata,
            &client,
            "http://127.0.0.1:9/cb",
            "https://mcp.example/mcp",
            &scopes,
        )
        .expect("request")
    }

    fn answer(pending: &Pending, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut params = vec![("state".to_owned(), pending.state.expose().to_owned())];
        params.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        params
    }

    #[test]
    fn the_request_carries_pkce_s256_state_resource_and_scopes() {
        let metadata = metadata(true);
        let pending = new_request(&metadata);
        let params: Vec<(String, String)> = pending.url.query_pairs().into_owned().collect();
        let get = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("tenant"), Some("1"), "the endpoint's own query stays");
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        let challenge =
            BASE64_URL_SAFE_NO_PAD.encode(digest(&SHA256, pending.verifier.expose().as_bytes()));
        assert_eq!(get("code_challenge"), Some(challenge.as_str()));
        assert_eq!(pending.verifier.expose().len(), 43);
        assert_eq!(get("state"), Some(pending.state.expose()));
        assert_eq!(get("resource"), Some("https://mcp.example/mcp"));
        assert_eq!(get("scope"), Some("mcp:basic mcp:write"));
        assert_ne!(
            pending.state.expose(),
            new_request(&metadata).state.expose()
        );
    }

    #[test]
    fn the_answer_must_carry_the_state_and_the_right_issuer() {
        let strict = metadata(true);
        let lax = metadata(false);
        let pending = new_request(&strict);
        let outcome = |metadata: &ServerMetadata, params: &[(String, String)]| {
            code(&pending, metadata, params)
                .map(|code| code.expose().to_owned())
                .map_err(|e| e.render(&Scrubber::default()).into_string())
        };
        let ok = answer(&pending, &[("iss", "https://as.example"), ("code", "c1")]);
        assert_eq!(outcome(&strict, &ok).as_deref(), Ok("c1"));
        assert_eq!(outcome(&lax, &ok).as_deref(), Ok("c1"));
        let no_iss = answer(&pending, &[("code", "c1")]);
        assert!(
            outcome(&strict, &no_iss).is_err(),
            "an advertised iss must come"
        );
        assert_eq!(outcome(&lax, &no_iss).as_deref(), Ok("c1"));
        for wrong in [
            "https://evil.example",
            "https://as.example/",
            "https://AS.example",
        ] {
            let params = answer(&pending, &[("iss", wrong), ("code", "c1")]);
            assert!(outcome(&strict, &params).is_err(), "{wrong}");
            assert!(outcome(&lax, &params).is_err(), "{wrong}, not advertised");
        }
        let forged = vec![
            ("state".to_owned(), "other".to_owned()),
            ("code".to_owned(), "c".to_owned()),
        ];
        assert!(
            outcome(&lax, &forged)
                .expect_err("refused")
                .contains("state")
        );
        assert!(outcome(&lax, &[("code".to_owned(), "c".to_owned())]).is_err());
    }

    #[test]
    fn an_error_answer_is_cleaned_and_short_and_only_after_the_issuer_check() {
        let metadata = metadata(true);
        let pending = new_request(&metadata);
        let long = format!("\u{1b}]52;c;AAAA\u{7}denied\u{202e}{}", "x".repeat(5000));
        let params = answer(
            &pending,
            &[
                ("iss", "https://as.example"),
                ("error", "access_denied"),
                ("error_description", &long),
            ],
        );
        let error = code(&pending, &metadata, &params)
            .expect_err("refused")
            .render(&Scrubber::default())
            .into_string();
        assert!(
            error.starts_with(
                "authorization failed: the authorization was not granted (access_denied: denied"
            ),
            "{error}"
        );
        assert!(!error.contains('\u{1b}') && !error.contains('\u{202e}'));
        assert!(error.len() < 400, "{}", error.len());
        let mixed_up = answer(
            &pending,
            &[("iss", "https://evil.example"), ("error", "access_denied")],
        );
        let error = code(&pending, &metadata, &mixed_up)
            .expect_err("refused")
            .render(&Scrubber::default())
            .into_string();
        assert!(error.contains("another issuer"), "{error}");
    }
}
