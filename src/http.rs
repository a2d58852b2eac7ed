//! The HTTP layer under both the transport and authorization: the client every request of
//! the Pack goes out on, a body read within a cap, and a failed request told without its URL.
//!
//! Both the MCP servers and the authorization servers are untrusted parties reached over the
//! same client, so what keeps a request from carrying a header elsewhere (no redirect
//! followed, no `Referer`, no proxy from the environment, no compressed encoding asked for) and
//! what keeps an answer from costing more than its cap is written once, here. Nothing here
//! knows MCP or OAuth.

use std::borrow::Cow;
use std::error::Error as _;

use reqwest::header::HeaderName;
use reqwest::{Client, ClientBuilder, Response};

use crate::policy::{CONNECT_TIMEOUT, MAX_ERROR_CHARS, redirect_policy};
use crate::text::{Scrubber, Untrusted};

/// `DPoP-Nonce` (RFC 9449): what a server or an authorization server asks the next proofs to
/// carry.
pub(crate) const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// The settings of every HTTP client of the Pack: no redirect, no proxy, no compression
/// (reqwest's decompression features are off), a connect timeout.
pub(crate) fn client_builder() -> ClientBuilder {
    Client::builder()
        .redirect(redirect_policy())
        .referer(false)
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .user_agent(concat!("plugin_mcp/", env!("CARGO_PKG_VERSION")))
}

/// Why a capped read stopped short.
pub(crate) enum Capped {
    /// The body is larger than the cap: nothing more is read.
    TooLarge,
    /// It broke off.
    Broke(Failure),
}

/// Reads a whole body, failing as soon as it passes `limit` bytes: `Content-Length` is not
/// trusted.
pub(crate) async fn read_capped(mut response: Response, limit: usize) -> Result<Vec<u8>, Capped> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Capped::Broke(describe(e)))?
    {
        if body.len() + chunk.len() > limit {
            return Err(Capped::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A request reqwest could not complete: what failed, in the Pack's words, and the causes it
/// gave, without the URL. The causes are other crates' words, which may name the server's
/// host or quote its certificate, so they are kept as [`Untrusted`].
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    what: Cow<'static, str>,
    causes: Option<Untrusted<String>>,
}

impl Failure {
    /// A failure with no cause to quote.
    pub(crate) fn new(what: impl Into<Cow<'static, str>>) -> Self {
        Self {
            what: what.into(),
            causes: None,
        }
    }

    /// What failed, then its causes.
    pub(crate) fn render(&self, scrubber: &Scrubber) -> String {
        match &self.causes {
            None => self.what.clone().into_owned(),
            Some(causes) => format!("{}: {}", self.what, causes.show(scrubber, MAX_ERROR_CHARS)),
        }
    }
}

/// A reqwest error without its URL: what failed and each of its causes.
pub(crate) fn describe(e: reqwest::Error) -> Failure {
    let e = e.without_url();
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut causes = String::new();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !causes.ends_with(&cause_text) {
            if !causes.is_empty() {
                causes.push_str(": ");
            }
            causes.push_str(&cause_text);
        }
        source = cause.source();
    }
    Failure {
        what: Cow::Borrowed(what),
        causes: (!causes.is_empty()).then(|| Untrusted::new(causes)),
    }
}
