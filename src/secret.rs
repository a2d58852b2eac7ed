//! Configuration values that may hold a credential, and the scrubber that keeps them out of
//! every text the Pack shows.
//!
//! A [`Secret`] has no `Display` and its `Debug` is the policy's redaction marker, so neither
//! `{}` nor `{:?}` can print it; reading it takes an explicit [`Secret::expose`]. The memory is
//! wiped when the value is dropped (secrecy + zeroize). The [`Scrubber`] is the defence in
//! depth behind that: whatever a server echoes back, a configured secret is replaced by the
//! marker before the text leaves the Pack.

use std::borrow::Cow;
use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroize;

use crate::policy::{MIN_SCRUBBED_SECRET_CHARS, REDACTION_MARKER};

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

/// Replaces every configured secret in a text with the redaction marker.
#[derive(Clone, Default)]
pub(crate) struct Scrubber {
    /// Longest first, so a secret that contains another is replaced whole.
    secrets: Vec<Secret>,
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scrubber({} secrets)", self.secrets.len())
    }
}

impl Scrubber {
    pub(crate) fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        let mut secrets: Vec<Secret> = secrets
            .into_iter()
            .filter(|s| s.expose().chars().count() >= MIN_SCRUBBED_SECRET_CHARS)
            // Text that leaves the Pack is often JSON, where `"` or `\` in a secret is escaped.
            .flat_map(|s| {
                let quoted = serde_json::to_string(s.expose()).unwrap_or_default();
                let escaped = quoted
                    .get(1..quoted.len().saturating_sub(1))
                    .unwrap_or_default();
                let json_form = (escaped != s.expose()).then(|| Secret::new(escaped.to_owned()));
                std::iter::once(s).chain(json_form)
            })
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
        secrets.dedup_by(|a, b| a.expose() == b.expose());
        Self { secrets }
    }

    /// `text` with every secret replaced by the marker; borrowed when there was none.
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            let secret = secret.expose();
            if out.contains(secret) {
                out = Cow::Owned(out.replace(secret, REDACTION_MARKER));
            }
        }
        out
    }

    /// [`Scrubber::scrub`] of an owned string, which comes back unchanged (not copied) when
    /// it holds no secret: results can be megabytes.
    pub(crate) fn clean(&self, text: String) -> String {
        if let Cow::Owned(scrubbed) = self.scrub(&text) {
            return scrubbed;
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_marker() {
        let secret = Secret::new("hunter2-canary".into());
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(&secret)), "Some([redacted])");
        assert_eq!(secret.expose(), "hunter2-canary");
    }

    #[test]
    fn scrubs_every_occurrence_longest_first() {
        let scrubber =
            Scrubber::new(["token-123".into(), "Bearer token-123".into()].map(Secret::new));
        let text = "got Bearer token-123 and token-123";
        assert_eq!(scrubber.scrub(text), "got [redacted] and [redacted]");
        assert!(matches!(scrubber.scrub("clean"), Cow::Borrowed("clean")));
        assert_eq!(format!("{scrubber:?}"), "Scrubber(2 secrets)");
    }

    #[test]
    fn scrubs_the_json_escaped_form_too() {
        let scrubber = Scrubber::new([Secret::new("pa\"ss\\word".into())]);
        let json = serde_json::json!({"echo": "pa\"ss\\word"}).to_string();
        assert_eq!(scrubber.scrub(&json), "{\"echo\":\"[redacted]\"}");
    }

    #[test]
    fn short_values_are_left_in_free_text() {
        // At the policy minimum a value is scrubbed; one character less, it is not.
        let at = "a".repeat(MIN_SCRUBBED_SECRET_CHARS);
        let below = "b".repeat(MIN_SCRUBBED_SECRET_CHARS - 1);
        let scrubber = Scrubber::new([Secret::new(at.clone()), Secret::new(below.clone())]);
        assert_eq!(scrubber.scrub(&at), REDACTION_MARKER);
        assert_eq!(scrubber.scrub(&below), below);
    }
}
