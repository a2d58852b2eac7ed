//! The HTTP layer under both the transport and authorization: the client every request of
//! the Pack goes out on (its TLS settings in `tls`), the one sender every request goes out
//! through, a body read within a cap, and a failed request told without its URL.
//!
//! Both the MCP servers and the authorization servers are untrusted parties reached over the
//! same client, so what keeps a request from carrying a header elsewhere (no redirect
//! followed, no `Referer`, no proxy from the environment, no compressed encoding asked for) and
//! what keeps an answer from costing more than its cap is written once, here. Nothing here
//! knows MCP or OAuth.

mod tls;

use std::borrow::Cow;
use std::error::Error as _;

use reqwest::header::{HeaderMap, HeaderName};
use reqwest::{Client, ClientBuilder, RequestBuilder, Response};

use crate::policy::{CONNECT_TIMEOUT, MAX_ERROR_CHARS, MAX_OAUTH_QUOTED_CHARS, redirect_policy};
use crate::text::{Piece, Scrubber, Shown, Untrusted, show};

/// `DPoP-Nonce` (RFC 9449): what a server or an authorization server asks the next proofs to
/// carry.
pub(crate) const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

/// The settings of every HTTP client of the Pack: no redirect, no proxy, no compression
/// (reqwest's decompression features are off), a connect timeout, and reqwest's TLS with the
/// trust roots read on first use ([`tls`]).
pub(crate) fn client_builder() -> ClientBuilder {
    let builder = match tls::client_config() {
        Ok(config) => Client::builder().tls_backend_preconfigured(config),
        // reqwest's own settings, which refuse the same provider when the client is built.
        Err(_) => Client::builder(),
    };
    builder
        .redirect(redirect_policy())
        .referer(false)
        .no_proxy()
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_nodelay(true)
        .user_agent(concat!("plugin_mcp/", env!("CARGO_PKG_VERSION")))
}

/// Why a request's answer could not be had.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The request could not be sent or no answer came (connect, TLS, reset).
    Unsent(Failure),
    /// A 3xx, with its status: no redirect is followed, so no header of the Pack's goes
    /// anywhere else.
    Redirect(u16),
    /// The body is larger than the cap: nothing more is read.
    TooLarge,
    /// The body broke off.
    Broke(Failure),
}

/// Sends `request`: the answer, its body still to be read, or why none came. Every request
/// of the Pack goes out here, and a redirect is refused here, before its body is read.
pub(crate) async fn send(request: RequestBuilder) -> Result<Response, Unanswered> {
    let response = request
        .send()
        .await
        .map_err(|e| Unanswered::Unsent(describe(e)))?;
    if response.status().is_redirection() {
        return Err(Unanswered::Redirect(response.status().as_u16()));
    }
    Ok(response)
}

/// An answer read whole.
pub(crate) struct Whole {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// Sends `request` ([`send`]) and reads its answer whole within `limit` bytes.
pub(crate) async fn send_capped(
    request: RequestBuilder,
    limit: usize,
) -> Result<Whole, Unanswered> {
    let mut response = send(request).await?;
    let status = response.status().as_u16();
    let headers = std::mem::take(response.headers_mut());
    let body = read_capped(response, limit).await?;
    Ok(Whole {
        status,
        headers,
        body,
    })
}

/// Reads a whole body, failing as soon as it passes `limit` bytes: `Content-Length` is not
/// trusted.
pub(crate) async fn read_capped(
    mut response: Response,
    limit: usize,
) -> Result<Vec<u8>, Unanswered> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Unanswered::Broke(describe(e)))?
    {
        if body.len() + chunk.len() > limit {
            return Err(Unanswered::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Something that failed: what, in the Pack's words, and what a party said of it (another
/// crate's causes, an authorization server's error), kept [`Untrusted`] until it is shown:
/// those words may name a server's host, quote its certificate, or quote a secret the party
/// was sent.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    words: Cow<'static, str>,
    said: Option<Untrusted<String>>,
    /// A cause the Pack recognised in the failure's causes, by type, whose words it adds.
    cause: Option<Cause>,
}

/// A cause of a failure that the Pack recognises by its type and names in its own words,
/// since the causes' words do not make it plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// A TLS handshake answered with bytes that are no TLS record (rustls'
    /// `InvalidContentType`): most often an `https://` URL at a port that serves plain HTTP.
    PlainHttpAnswer,
}

impl Cause {
    /// The Pack's words for the cause, added after the failure's own.
    fn words(self) -> &'static str {
        match self {
            Self::PlainHttpAnswer => "(is this an http:// server? the URL says https://)",
        }
    }

    /// The cause `error` is, when the Pack knows it. rustls' error reaches reqwest inside
    /// `io::Error`s (one inside another), whose `source` skips what they hold, so each is
    /// opened in turn.
    fn of(error: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut inner = error;
        while let Some(held) = (inner.downcast_ref::<std::io::Error>()).and_then(|io| io.get_ref())
        {
            inner = held;
        }
        match inner.downcast_ref::<rustls::Error>() {
            Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) => {
                Some(Self::PlainHttpAnswer)
            }
            _ => None,
        }
    }
}

impl Failure {
    /// A failure with nothing said of it.
    pub(crate) fn new(words: impl Into<Cow<'static, str>>) -> Self {
        Self {
            words: words.into(),
            said: None,
            cause: None,
        }
    }

    /// A failure in the Pack's `words`, and what a party `said` of it.
    pub(crate) fn saying(words: impl Into<Cow<'static, str>>, said: String) -> Self {
        Self {
            words: words.into(),
            said: Some(Untrusted::new(said)),
            cause: None,
        }
    }

    /// The failure with `scrubber`'s secrets scrubbed from what was said, for a secret only
    /// the place that made it knows (it is scrubbed again, with every other secret, when it
    /// is shown).
    pub(crate) fn scrubbed_by(self, scrubber: &Scrubber) -> Self {
        Self {
            said: (self.said).map(|said| Untrusted::new(scrubber.scrub(said.peek()).into_owned())),
            ..self
        }
    }

    /// What failed, then its causes after a colon, within [`MAX_ERROR_CHARS`], then the
    /// cause the Pack recognised in them, in its words.
    pub(crate) fn render(&self, scrubber: &Scrubber) -> Shown {
        let words = self.words(scrubber);
        let said = self
            .said
            .as_ref()
            .map(|s| s.show(scrubber, MAX_ERROR_CHARS));
        let mut pieces = vec![Piece::Shown(&words)];
        if let Some(said) = &said {
            pieces.extend([Piece::Ours(": "), Piece::Shown(said)]);
        }
        if let Some(cause) = self.cause {
            pieces.extend([Piece::Ours(" "), Piece::Ours(cause.words())]);
        }
        Shown::concat(pieces, MAX_ERROR_CHARS)
    }

    /// What failed, then what the party said quoted in parentheses, within
    /// [`MAX_OAUTH_QUOTED_CHARS`].
    pub(crate) fn render_quoted(&self, scrubber: &Scrubber) -> Shown {
        let words = self.words(scrubber);
        let Some(said) = &self.said else {
            return words;
        };
        let said = said.show(scrubber, MAX_OAUTH_QUOTED_CHARS);
        let pieces = [
            Piece::Shown(&words),
            Piece::Ours(" ("),
            Piece::Shown(&said),
            Piece::Ours(")"),
        ];
        Shown::concat(pieces, MAX_ERROR_CHARS)
    }

    /// The Pack's words: as written in its source, or, composed at run time (where they may
    /// hold a URL or an issuer a server named), shown like any such text.
    fn words(&self, scrubber: &Scrubber) -> Shown {
        match &self.words {
            Cow::Borrowed(words) => Shown::ours(words),
            Cow::Owned(words) => show(scrubber, words, MAX_ERROR_CHARS),
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
    let mut known = None;
    let mut source = e.source();
    while let Some(cause) = source {
        known = known.or_else(|| Cause::of(cause));
        let cause_text = cause.to_string();
        if !causes.ends_with(&cause_text) {
            if !causes.is_empty() {
                causes.push_str(": ");
            }
            causes.push_str(&cause_text);
        }
        source = cause.source();
    }
    let failure = match causes.is_empty() {
        true => Failure::new(what),
        false => Failure::saying(what, causes),
    };
    Failure {
        cause: known,
        ..failure
    }
}
