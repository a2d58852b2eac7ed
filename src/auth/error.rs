//! Why a server could not be authorized, in the Pack's words, with what a party said kept
//! apart until it is shown.
//!
//! An authorization server's error text may quote anything it was sent: a refresh token, a
//! code, a verifier, the client's secret. So a refusal is a [`Failure`], which holds it as
//! untrusted and has no `Display`: the only way to a text is [`AuthError::render`], which shows
//! the party's words through the envelope (scrubbed, then cleaned, then cut) with the scrubber
//! of the place that renders it.

use std::borrow::Cow;

use crate::http::Failure;
use crate::policy::MAX_ERROR_CHARS;
use crate::text::{Piece, Scrubber, Shown, show};

/// Why a server could not be authorized.
#[derive(Debug, Clone)]
pub(crate) enum AuthError {
    /// The server needs authorization and this Host cannot bring the user through it: the
    /// Host's hint of how to log in, and why the authorization the Pack had no longer serves,
    /// when it knows.
    Required {
        hint: String,
        why: Option<&'static str>,
    },
    /// An authorization server or a metadata document could not be reached.
    Unreachable(Failure),
    /// An answer was refused, or the flow could not go on: the Pack's own words, then what
    /// the party said, if it said anything (quoted in parentheses).
    Refused(Failure),
}

impl AuthError {
    /// Refused, in the Pack's words only.
    pub(crate) fn refused(words: impl Into<Cow<'static, str>>) -> Self {
        Self::Refused(Failure::new(words))
    }

    /// Refused, in the Pack's words, then the party's (quoted in parentheses).
    pub(crate) fn refused_saying(words: impl Into<Cow<'static, str>>, said: String) -> Self {
        Self::Refused(Failure::saying(words, said))
    }

    /// The error with `scrubber`'s secrets scrubbed from what the party said, for a secret
    /// only the place that made the error knows (it is scrubbed again, with every other
    /// secret, when the error is shown).
    pub(crate) fn scrubbed_by(self, scrubber: &Scrubber) -> Self {
        match self {
            Self::Refused(reason) => Self::Refused(reason.scrubbed_by(scrubber)),
            other => other,
        }
    }

    /// The error as it may be shown, the party's words scrubbed by `scrubber`.
    pub(crate) fn render(&self, scrubber: &Scrubber) -> Shown {
        let (lead, why, detail): (_, _, Shown) = match self {
            // The Host's hint is the Host's words, shown as any text composed at run time.
            Self::Required { hint, why } => (
                "the server requires authorization: ",
                *why,
                show(scrubber, hint, MAX_ERROR_CHARS),
            ),
            Self::Unreachable(failure) => (
                "authorization failed: could not reach the authorization server: ",
                None,
                failure.render(scrubber),
            ),
            Self::Refused(reason) => (
                "authorization failed: ",
                None,
                reason.render_quoted(scrubber),
            ),
        };
        let mut pieces = vec![Piece::Ours(lead)];
        if let Some(why) = why {
            pieces.extend([Piece::Ours(why), Piece::Ours("; ")]);
        }
        pieces.push(Piece::Shown(&detail));
        Shown::concat(pieces, MAX_ERROR_CHARS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::MAX_OAUTH_QUOTED_CHARS;
    use crate::secret::Secret;

    #[test]
    fn a_party_s_words_are_scrubbed_before_they_are_cut_and_quoted_after_the_pack_s() {
        let secret = "s3cret-".to_owned() + &"x".repeat(40);
        let scrubber = Scrubber::new([Secret::new(secret.clone())]);
        // The secret ends one character past the quote's limit.
        let said = format!(
            "{}{secret}",
            "q".repeat(MAX_OAUTH_QUOTED_CHARS + 1 - secret.len())
        );
        let error = AuthError::refused_saying("the token request answered HTTP 401", said);
        let text = error.render(&scrubber);
        assert!(!text.as_str().contains("s3cret"), "{text:?}");
        assert!(
            text.as_str()
                .starts_with("authorization failed: the token request answered HTTP 401 (qqq"),
            "{text:?}"
        );
        assert!(text.as_str().contains("[redacted]"), "{text:?}");
    }

    #[test]
    fn the_quote_is_cleaned_and_kept_to_its_limit() {
        let scrubber = Scrubber::default();
        let at = "q".repeat(MAX_OAUTH_QUOTED_CHARS);
        let render = |said: &str| {
            AuthError::refused_saying("w", said.to_owned())
                .render(&scrubber)
                .into_string()
        };
        assert_eq!(render(&at), format!("authorization failed: w ({at})"));
        assert_eq!(
            render(&format!("{at}q")),
            format!("authorization failed: w ({at}\n[... 1 characters cut])")
        );
        assert_eq!(
            render("a\u{1b}[31mb\u{202e}c"),
            "authorization failed: w (abc)"
        );
        assert_eq!(
            AuthError::Required {
                hint: "run `runvil login s`".to_owned(),
                why: None
            }
            .render(&scrubber)
            .as_str(),
            "the server requires authorization: run `runvil login s`"
        );
    }
}
