//! Requests to parties the Pack does not trust: authorization servers, and metadata documents
//! wherever a server says they are.
//!
//! Every URL is checked before it is used ([`checked_url`]); no redirect is followed (the
//! Pack's HTTP client follows none); every answer is read within [`OAUTH_REQUEST_DEADLINE`]
//! and [`MAX_OAUTH_RESPONSE_BYTES`]; and nothing the party sent reaches a reason unless the
//! envelope cleaned it. The configured headers of the MCP server are never sent here.

use std::net::IpAddr;

use reqwest::header::{self, HeaderValue};
use reqwest::{Client, RequestBuilder, Url};
use serde::de::DeserializeOwned;

use super::{AuthError, dpop};
use crate::http::{self, DPOP_NONCE, Failure, Unanswered};
use crate::policy::{MAX_OAUTH_RESPONSE_BYTES, OAUTH_REQUEST_DEADLINE};

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// `text` as a URL the Pack may send a request or the user to: `https`, or `http` to a
/// loopback address only; no user name or password; no fragment. `what` names it in errors
/// (the URL is the party's, so it is not quoted).
pub(crate) fn checked_url(text: &str, what: &'static str) -> Result<Url, AuthError> {
    let url = Url::parse(text).map_err(|_| AuthError::refused(format!("{what} is not a URL")))?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        _ => {
            return Err(AuthError::refused(format!(
                "{what} is not an https URL (plain http is allowed only to a loopback address)"
            )));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(AuthError::refused(format!(
            "{what} carries a user name or password"
        )));
    }
    if url.fragment().is_some() {
        return Err(AuthError::refused(format!("{what} has a fragment")));
    }
    Ok(url)
}

/// Whether `url`'s host is this machine: `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || ip.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An answer read whole: its status and body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    /// The `DPoP-Nonce` the party asks proofs to carry.
    pub(crate) dpop_nonce: Option<String>,
}

impl Answer {
    /// The body as `T`, if it parses.
    pub(crate) fn json<T: DeserializeOwned>(&self, what: &'static str) -> Result<T, AuthError> {
        serde_json::from_slice(&self.body)
            .map_err(|_| AuthError::refused(format!("{what} is not JSON of the expected shape")))
    }

    /// The OAuth error (RFC 6749 §5.2) the answer carries, if it is one.
    fn oauth_error(&self) -> Option<OAuthError> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Whether the answer is the OAuth error `code`.
    pub(crate) fn is_error(&self, code: &str) -> bool {
        self.oauth_error().is_some_and(|e| e.error == code)
    }

    /// An error answer as a reason: the status, then what the party said of it (its OAuth
    /// `error` code and description), if anything.
    pub(crate) fn failure(&self, what: &'static str) -> AuthError {
        let words = format!("{what} answered HTTP {}", self.status);
        match self.oauth_error() {
            Some(OAuthError {
                error,
                error_description: Some(description),
            }) => AuthError::refused_saying(words, format!("{error}: {description}")),
            Some(OAuthError { error, .. }) => AuthError::refused_saying(words, error),
            None => AuthError::refused(words),
        }
    }
}

#[derive(serde::Deserialize)]
struct OAuthError {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// GETs `url` expecting JSON.
pub(crate) async fn get(client: &Client, url: &Url) -> Result<Answer, AuthError> {
    send(client.get(url.clone()).header(header::ACCEPT, JSON)).await
}

/// POSTs a form to `url`.
pub(crate) async fn post_form(
    request: RequestBuilder,
    form: &[(&str, &str)],
) -> Result<Answer, AuthError> {
    send(request.header(header::ACCEPT, JSON).form(form)).await
}

/// POSTs JSON to `url`.
pub(crate) async fn post_json(
    client: &Client,
    url: &Url,
    body: &serde_json::Value,
) -> Result<Answer, AuthError> {
    let request = client
        .post(url.clone())
        .header(header::ACCEPT, JSON)
        .header(header::CONTENT_TYPE, JSON)
        .body(body.to_string());
    send(request).await
}

async fn send(request: RequestBuilder) -> Result<Answer, AuthError> {
    let exchange = http::send_capped(request, MAX_OAUTH_RESPONSE_BYTES);
    let whole = match tokio::time::timeout(OAUTH_REQUEST_DEADLINE, exchange).await {
        Ok(Ok(whole)) => whole,
        Ok(Err(unanswered)) => return Err(unanswered_error(unanswered)),
        Err(_) => {
            return Err(AuthError::Unreachable(Failure::new(format!(
                "an authorization request took longer than {} s",
                OAUTH_REQUEST_DEADLINE.as_secs()
            ))));
        }
    };
    Ok(Answer {
        status: whole.status,
        dpop_nonce: dpop::nonce(whole.headers.get(DPOP_NONCE)),
        body: whole.body,
    })
}

/// Why an authorization request got no answer, in the flow's terms.
fn unanswered_error(unanswered: Unanswered) -> AuthError {
    match unanswered {
        Unanswered::Unsent(failure) | Unanswered::Broke(failure) => AuthError::Unreachable(failure),
        Unanswered::Redirect(status) => AuthError::refused(format!(
            "an authorization request was answered with a redirect (HTTP {status}), which is \
             not followed"
        )),
        Unanswered::TooLarge => AuthError::refused(format!(
            "an authorization answer is larger than {MAX_OAUTH_RESPONSE_BYTES} bytes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Scrubber;

    #[test]
    fn urls_must_be_https_or_loopback_http_without_userinfo_or_fragment() {
        for good in [
            "https://as.example/authorize?x=1",
            "http://localhost:3000/a",
            "http://127.0.0.1/t",
            "http://[::1]:8/t",
        ] {
            assert!(checked_url(good, "the endpoint").is_ok(), "{good}");
        }
        for (bad, why) in [
            ("http://as.example/authorize", "not an https URL"),
            ("file:///etc/passwd", "not an https URL"),
            ("javascript:alert(1)", "not an https URL"),
            ("https://user:pw@as.example/", "user name or password"),
            ("https://as.example/#x", "fragment"),
            ("not a url", "is not a URL"),
            ("http://10.0.0.1/", "not an https URL"),
        ] {
            let error = checked_url(bad, "the endpoint")
                .expect_err(bad)
                .render(&Scrubber::default())
                .into_string();
            assert!(error.contains(why), "{bad}: {error}");
            assert!(!error.contains(bad), "the URL is the party's: {error}");
        }
    }
}
