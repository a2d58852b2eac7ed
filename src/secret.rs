//! Configuration values that may hold a credential.
//!
//! A [`Secret`] has no `Display` and its `Debug` is the policy's redaction marker, so neither
//! `{}` nor `{:?}` can print it; reading it takes an explicit [`Secret::expose`]. The memory is
//! wiped when the value is dropped (secrecy + zeroize). The scrubber (`text::scrubber`) is the
//! defence in depth behind that: whatever a server echoes back, a configured secret is replaced
//! by the marker before the text leaves the Pack.

use std::fmt;

use reqwest::Url;
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroize;

use crate::policy::REDACTION_MARKER;

/// A string that may hold a credential: a header value, an expanded `${env:...}` value, or
/// the endpoint URL.
#[derive(Clone)]
pub(crate) struct Secret(SecretString);

impl Secret {
    pub(crate) fn new(mut value: String) -> Self {
        // secrecy's `From<String>` shrinks the buffer to fit, which may move it and free the
        // old one unwiped: the value is copied into a box of its exact size instead, and the
        // original wiped.
        let exact = Box::<str>::from(value.as_str());
        value.zeroize();
        Self(SecretString::from(exact))
    }

    /// The value itself, for the one place that must send it.
    pub(crate) fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTION_MARKER)
    }
}

/// A URL that may hold a credential (userinfo, a token in its path or query): the endpoint,
/// parsed once by `config` and carried parsed from there, printed by neither `{}` nor `{:?}`.
/// Its text is wiped when it is dropped, as a [`Secret`]'s is.
#[derive(Clone)]
pub(crate) struct SecretUrl(Url);

impl SecretUrl {
    pub(crate) fn new(url: Url) -> Self {
        Self(url)
    }

    /// The URL itself, for the places that must send a request to it.
    pub(crate) fn expose(&self) -> &Url {
        &self.0
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTION_MARKER)
    }
}

impl Drop for SecretUrl {
    fn drop(&mut self) {
        // A `Url` is its serialization plus offsets: taking the text out (a move, not a copy)
        // leaves an empty placeholder behind, and the text is wiped.
        if let Ok(empty) = Url::parse(WIPED_URL) {
            let mut text = String::from(std::mem::replace(&mut self.0, empty));
            text.zeroize();
        }
    }
}

/// What a dropped [`SecretUrl`] holds while it goes: any URL that parses.
const WIPED_URL: &str = "http://wiped.invalid/";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_marker() {
        let secret = Secret::new("hunter2-canary".into());
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&secret)), "Some([redacted])");
        assert_eq!(secret.expose(), "hunter2-canary");
        let url = Url::parse("https://user:hunter2-canary@h/p?k=v").expect("url");
        let url = SecretUrl::new(url);
        assert_eq!(format!("{url:?}"), "[redacted]");
        assert_eq!(url.expose().password(), Some("hunter2-canary"));
    }
}
