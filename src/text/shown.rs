//! Text that may leave the Pack: a reason, an error's text, a log field, a tool's description,
//! whenever any of it came from outside (a server, an authorization server, another program's
//! error).
//!
//! Such text is safe to show only after three things were done to it, in this order: every
//! secret scrubbed, in every form it takes; then cleaned of what a reader cannot see (or, for a
//! log line or a name, escaped), and scrubbed again if cleaning changed it, since removing an
//! invisible character can join the pieces of a secret; then cut to its length. Cutting first can leave all but the
//! last characters of a secret past the cut, where the scrubber no longer recognises it;
//! cleaning or escaping first can change a secret's form so that it is not found. [`Shown`] is
//! made by the functions of this file alone, each of which does the three in that order, so no
//! other order can be written: a reason or log field is a `Shown`, or the Pack's own constant.
//!
//! Texts are composed from texts shown already and the Pack's own words by [`Shown::concat`],
//! never by formatting a `Shown` and showing the result again (which scrubbed and cut twice,
//! nesting one cut's marker in another). A `Shown` leaves the Pack by [`Shown::leave`] alone,
//! which makes the contract's type of it, at the very edge.

use std::fmt;
use std::ops::Deref;

use super::Escape;
use super::Scrubber;
use super::Untrusted;
use super::clean::{clean_text, log_safe, plain_len, truncate};

/// Text that was scrubbed, then cleaned or escaped, then cut (see the module's documentation).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Shown(String);

/// `text` with every secret `scrubber` knows replaced, cleaned (the control and invisible
/// characters removed) and cut to `max` characters.
pub(crate) fn show(scrubber: &Scrubber, text: &str, max: usize) -> Shown {
    show_owned(scrubber, text.to_owned(), max)
}

/// [`show`] of an owned text, which is not copied when no step changes it: results can be
/// megabytes.
pub(crate) fn show_owned(scrubber: &Scrubber, text: String, max: usize) -> Shown {
    Shown(truncate(scrub_and_clean(scrubber, text), max))
}

/// [`show_owned`] written on one line: the line breaks and tabs cleaning keeps are escaped
/// (`\\n`, `\\t`) before the cut, so the text cannot start a line of a list it is one item
/// of; only the cut's marker starts one.
pub(crate) fn show_on_one_line(scrubber: &Scrubber, text: String, max: usize) -> Shown {
    let cleaned = scrub_and_clean(scrubber, text);
    let one_line = if cleaned.contains(['\n', '\t']) {
        log_safe(&cleaned).to_string()
    } else {
        cleaned
    };
    Shown(truncate(one_line, max))
}

/// `text` scrubbed, then cleaned. A text that cleaning changed is scrubbed once more:
/// removing an invisible character can join the pieces of a secret it split. Plain text (a
/// megabyte of ASCII, say) is read once by each step and never copied.
fn scrub_and_clean(scrubber: &Scrubber, text: String) -> String {
    let scrubbed = scrubber.scrub_owned(text);
    if plain_len(scrubbed.as_bytes()) == scrubbed.len() {
        return scrubbed;
    }
    let cleaned = clean_text(&scrubbed);
    if cleaned == scrubbed {
        return scrubbed;
    }
    scrubber.scrub_owned(cleaned)
}

/// The JSON `get_dynamic_tools` answers: texts shown already (names, titles, descriptions,
/// reasons) around the servers' schemas, whose strings were cleaned one by one, and the
/// model's own query. Scrubbed whole, which the schemas need; never cut, since the listing
/// keeps its own cap in bytes by leaving out whole tools, and a cut would break its JSON.
pub(crate) fn show_listing(scrubber: &Scrubber, json: String) -> Shown {
    Shown(scrubber.scrub_owned(json))
}

/// `pieces` each scrubbed and cleaned on its own (so an escape left open in one cannot swallow
/// the next), joined by `separator`, then cut to `max` characters: a result's content blocks.
pub(crate) fn show_joined(
    scrubber: &Scrubber,
    pieces: Vec<String>,
    separator: &str,
    max: usize,
) -> Shown {
    let mut pieces = pieces
        .into_iter()
        .map(|piece| scrub_and_clean(scrubber, piece));
    // One piece is moved on whole: results can be megabytes.
    let text = match (pieces.next(), pieces.next()) {
        (None, _) => String::new(),
        (Some(one), None) => one,
        (Some(first), Some(second)) => {
            let rest: Vec<String> = [first, second].into_iter().chain(pieces).collect();
            rest.join(separator)
        }
    };
    Shown(truncate(text, max))
}

/// `text` scrubbed, then escaped wherever it is not printable ASCII (newlines, escape
/// sequences, invisible characters and any other non-ASCII character all become `\u{..}` or
/// `\n`), then cut to `max` characters: for a log line, which tracing writes as it is, and for a
/// name a reader must be able to tell from every other (a rejected tool's, a model's typo).
pub(crate) fn show_escaped(scrubber: &Scrubber, text: &str, max: usize) -> Shown {
    let escaped = Escape::ascii(&scrubber.scrub(text)).to_string();
    Shown(truncate(escaped, max))
}

/// A piece of a text [`Shown::concat`] composes: nothing in one came from outside unshown.
#[derive(Clone, Copy)]
pub(crate) enum Piece<'a> {
    /// The Pack's own words, written in its source.
    Ours(&'static str),
    /// A number the Pack counted, a limit of its policy, or an error's code.
    Number(i128),
    /// A text shown already.
    Shown(&'a Shown),
}

impl From<&'static str> for Piece<'_> {
    fn from(text: &'static str) -> Self {
        Self::Ours(text)
    }
}

impl From<u64> for Piece<'_> {
    fn from(number: u64) -> Self {
        Self::Number(number.into())
    }
}

impl From<i64> for Piece<'_> {
    fn from(number: i64) -> Self {
        Self::Number(number.into())
    }
}

impl From<usize> for Piece<'_> {
    fn from(number: usize) -> Self {
        // A usize is at most 64 bits on every target Rust supports.
        Self::Number(i128::try_from(number).unwrap_or(i128::MAX))
    }
}

impl<'a> From<&'a Shown> for Piece<'a> {
    fn from(shown: &'a Shown) -> Self {
        Self::Shown(shown)
    }
}

impl Untrusted<String> {
    /// What a party said, as [`show`] shows it.
    pub(crate) fn show(&self, scrubber: &Scrubber, max: usize) -> Shown {
        show(scrubber, self.peek(), max)
    }
}

impl Shown {
    /// The Pack's own words, written in its source: nothing in them came from outside.
    pub(crate) fn ours(text: &'static str) -> Self {
        Self(text.to_owned())
    }

    /// `pieces` in order, cut to `max` characters: a text shown already is neither scrubbed
    /// nor cleaned again, so composing cannot show anything twice.
    pub(crate) fn concat<'a>(pieces: impl IntoIterator<Item = Piece<'a>>, max: usize) -> Self {
        let mut text = String::new();
        for piece in pieces {
            match piece {
                Piece::Ours(words) => text.push_str(words),
                Piece::Number(number) => text.push_str(&number.to_string()),
                Piece::Shown(shown) => text.push_str(&shown.0),
            }
        }
        Self(truncate(text, max))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, for a test to compare; the product hands a `Shown` over only by [`Self::leave`].
    #[cfg(test)]
    pub(crate) fn into_string(self) -> String {
        self.0
    }

    /// The text handed over to the contract, whose types hold a `String` (a `ToolError`, a
    /// `BackendState`, a `StoreError`, a held tool's change, a progress message): `kind` made
    /// of it. The one place a `Shown` becomes a `String`, at the very edge of the Pack.
    pub(crate) fn leave<T>(self, kind: impl FnOnce(String) -> T) -> T {
        kind(self.0)
    }

    /// The text on one line, for a log field: newlines and tabs written as `\n` and `\t`, so
    /// a text cannot forge a line of its own (cleaned text holds no other control).
    pub(crate) fn line(&self) -> Escape<'_> {
        log_safe(&self.0)
    }
}

impl PartialEq<str> for Shown {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for Shown {
    fn eq(&self, other: &String) -> bool {
        self.0 == *other
    }
}

impl PartialEq<&str> for Shown {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Deref for Shown {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl fmt::Debug for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn scrubber(secret: &str) -> Scrubber {
        Scrubber::new([Secret::new(secret.to_owned())])
    }

    #[test]
    fn a_secret_is_scrubbed_before_the_cut_whatever_the_cut_leaves_of_it() {
        let secret = "client-secret-canary-47-characters-long-abcdefg";
        let s = scrubber(secret);
        // Every cut that falls inside the secret: none leaves a piece of it.
        for cut in 0..secret.len() + 8 {
            let text = format!("{}{secret} and more", "q".repeat(cut));
            for shown in [
                show(&s, &text, cut + 10),
                show_owned(&s, text.clone(), cut + 10),
                show_escaped(&s, &text, cut + 10),
            ] {
                assert!(!shown.as_str().contains(&secret[..6]), "{shown:?}");
            }
        }
    }

    #[test]
    fn a_secret_broken_up_by_invisible_characters_is_not_joined_by_cleaning() {
        // Cleaning after scrubbing: the secret as sent is found; one the server split with a
        // zero-width space is not a secret the client ever sent, and stays split in the
        // scrubber's eyes, so it is shown without the space (what the reader sees anyway).
        let s = scrubber("abcdef-secret");
        assert_eq!(
            show(&s, "x abcdef-secret y", 100).as_str(),
            "x [redacted] y"
        );
        assert_eq!(
            show(&s, "\u{1b}[31mabcdef-secret\u{1b}[0m", 100).as_str(),
            "[redacted]"
        );
    }

    #[test]
    fn escaped_text_and_one_line_text_cannot_forge_a_line() {
        let s = Scrubber::default();
        let forged = "denied\nrunvil: s is authorized\t\u{1b}[2J\u{202e}é";
        let escaped = show_escaped(&s, forged, 1000);
        assert_eq!(
            escaped.as_str(),
            "denied\\nrunvil: s is authorized\\t\\u{1b}[2J\\u{202e}\\u{e9}"
        );
        let cleaned = show(&s, forged, 1000);
        assert_eq!(cleaned.as_str(), "denied\nrunvil: s is authorized\té");
        assert_eq!(
            cleaned.line().to_string(),
            "denied\\nrunvil: s is authorized\\té"
        );
    }

    #[test]
    fn each_is_cut_at_its_limit_and_not_a_character_before() {
        let s = Scrubber::default();
        let at = "x".repeat(20);
        assert_eq!(show(&s, &at, 20).as_str(), at);
        assert_eq!(
            show(&s, &format!("{at}y"), 20).as_str(),
            format!("{at}\n[... 1 characters cut]")
        );
    }
}
