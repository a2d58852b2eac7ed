//! The user's browser, for commands that drive the Pack against authorization servers
//! without a person (`conformance-client`): an [`Authorizer`] that opens the authorization URL
//! with one GET, as a user who approves at once would, and reads the redirect it answers with.
//!
//! It decides nothing about the protocol: the Pack built the URL and checks every parameter
//! that comes back. Nothing listens on the redirect URI; the redirect is read, not followed.

use reqwest::header::LOCATION;
use reqwest::{Client, Url, redirect};
use runvil_plugin::{AuthorizationRequest, AuthorizeError, Authorizer, BoxFuture};

/// Where the browser is told to come back to. Nothing needs to listen there: the redirect is
/// read from the authorization server's answer.
pub(crate) const REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";

/// An [`Authorizer`] that approves every authorization at once.
pub(crate) struct Browser {
    client: Client,
}

impl Browser {
    /// A browser whose HTTP client follows no redirect, so the answer's `Location` can be read.
    pub(crate) fn new() -> Result<Self, String> {
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the browser's HTTP client: {e}"))?;
        Ok(Self { client })
    }
}

impl Authorizer for Browser {
    fn redirect_uri(&self) -> String {
        REDIRECT_URI.to_owned()
    }

    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'_, Result<Vec<(String, String)>, AuthorizeError>> {
        let refused = |reason: String| AuthorizeError::new(reason);
        Box::pin(async move {
            let response = self
                .client
                .get(&request.url)
                .send()
                .await
                .map_err(|e| refused(format!("the browser could not open the page: {e}")))?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    refused(format!(
                        "the authorization page answered {status} without a redirect"
                    ))
                })?;
            let back = Url::parse(location).map_err(|_| {
                refused("the authorization page redirected to something that is not a URL".into())
            })?;
            if !back.as_str().starts_with(REDIRECT_URI) {
                return Err(refused(
                    "the authorization page redirected somewhere else".into(),
                ));
            }
            Ok(back.query_pairs().into_owned().collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Opens an authorization page that answers `head` (a status line and headers).
    async fn approve(head: &'static str) -> Result<Vec<(String, String)>, AuthorizeError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!(
            "http://{}/authorize",
            listener.local_addr().expect("address")
        );
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.expect("accept");
            let _ = stream.read(&mut [0; 4096]).await;
            let answer = format!("{head}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = stream.write_all(answer.as_bytes()).await;
        });
        let browser = Browser::new().expect("a browser");
        browser.authorize(AuthorizationRequest::new("s", url)).await
    }

    #[tokio::test]
    async fn approving_answers_what_the_redirect_back_carries() {
        let back = "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:33418/callback?code=c&state=s";
        let pairs = [("code", "c"), ("state", "s")].map(|(k, v)| (k.to_owned(), v.to_owned()));
        assert_eq!(approve(back).await, Ok(pairs.to_vec()));
    }

    #[tokio::test]
    async fn a_page_that_redirects_elsewhere_or_nowhere_is_refused() {
        let elsewhere = approve("HTTP/1.1 302 Found\r\nlocation: https://example.org/?code=c");
        let error = elsewhere.await.expect_err("elsewhere");
        assert_eq!(
            error.reason,
            "the authorization page redirected somewhere else"
        );
        let error = approve("HTTP/1.1 200 OK").await.expect_err("nowhere");
        assert_eq!(
            error.reason,
            "the authorization page answered 200 OK without a redirect"
        );
    }
}
