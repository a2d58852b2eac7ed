//! The scrubber: every configured or learnt secret, in every form it can take, replaced by the
//! redaction marker in every text the Pack shows. Its one verb is "scrub"; "clean" is
//! `text::clean`'s (removing what a reader cannot see), a different job.
//!
//! # Every form a secret takes
//!
//! A value rarely comes back as it was configured: the client itself sends it percent-encoded
//! in a URL, and servers echo it inside JSON. So the scrubber looks for each value in every
//! form it can take on the way out and back ([`forms`]): as is; escaped in a JSON string (as
//! serde_json writes it, and with non-ASCII as `\uXXXX`, as many other libraries do);
//! percent-encoded as the url crate writes it in a path, a query and a userinfo, as a form
//! encodes it, and with every byte but the unreserved ones encoded; and as a host name after
//! IDNA (punycode). The forms the client derives from a whole URL (its serialization, the
//! `Basic` credential reqwest builds from its userinfo) are found by `config`. Matching ignores
//! ASCII case, so a lowercased host, a lowercased echo and either case of hex digits match too.
//! All forms of all secrets are found in one pass over a text, by one automaton.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::{PoisonError, RwLock};

use aho_corasick::AhoCorasick;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Url;

use crate::policy::{MAX_LEARNED_SECRETS, MIN_SCRUBBED_SECRET_CHARS, REDACTION_MARKER};
use crate::secret::Secret;

/// Replaces every configured secret, in every form it can take, with the redaction marker.
///
/// It learns secrets the Pack obtains while it runs (tokens, registered client secrets) with
/// [`Scrubber::learn`], so they are scrubbed from then on like configured ones; it keeps the
/// last [`MAX_LEARNED_SECRETS`] of them, a token refreshed all day long included.
///
/// Every form of every secret is in one automaton (Aho-Corasick), built again when the set
/// changes, so a text is read once however many secrets a Pack holds. The automaton's tables
/// hold the forms' bytes, and aho-corasick cannot wipe them when it is dropped: SECURITY.md
/// says what that costs and why it is accepted.
#[derive(Default)]
pub(crate) struct Scrubber {
    forms: RwLock<Forms>,
}

/// The scrubber's secrets, each as the forms it takes, and their automaton.
#[derive(Default)]
struct Forms {
    /// The configured secrets' forms, ASCII-lowercased: kept for the Pack's life.
    configured: Vec<Secret>,
    /// Each learned secret's forms, oldest first.
    learned: VecDeque<Vec<Secret>>,
    searcher: Searcher,
}

/// What finds every form at once.
#[derive(Clone, Default)]
enum Searcher {
    /// There is nothing to find.
    #[default]
    Nothing,
    /// Every distinct form, matched ignoring ASCII case; `count` of them.
    Built {
        automaton: AhoCorasick,
        count: usize,
    },
    /// The automaton could not be built (aho-corasick refuses a set past its own limits,
    /// which no Pack's secrets come near): every text is replaced whole, so a failure hides
    /// too much rather than too little.
    Unbuildable,
}

impl Forms {
    fn rebuild(&mut self) {
        let mut patterns: Vec<&str> = (self.configured.iter())
            .chain(self.learned.iter().flatten())
            .map(Secret::expose)
            .collect();
        patterns.sort_unstable();
        patterns.dedup();
        self.searcher = match patterns.len() {
            0 => Searcher::Nothing,
            count => AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&patterns)
                .map_or(Searcher::Unbuildable, |automaton| Searcher::Built {
                    automaton,
                    count,
                }),
        };
    }
}

impl fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.searcher() {
            Searcher::Nothing => f.write_str("Scrubber(0 forms)"),
            Searcher::Built { count, .. } => write!(f, "Scrubber({count} forms)"),
            Searcher::Unbuildable => f.write_str("Scrubber(unbuildable)"),
        }
    }
}

impl Scrubber {
    /// A scrubber of the configured `secrets`, which it keeps as long as it lives.
    pub(crate) fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        let mut forms = Forms {
            configured: secrets
                .into_iter()
                .flat_map(|s| forms_to_find(&s))
                .collect(),
            ..Forms::default()
        };
        forms.rebuild();
        Self {
            forms: RwLock::new(forms),
        }
    }

    /// Scrubs `secrets` too, in every form, from now on; the oldest learned secret is
    /// forgotten past [`MAX_LEARNED_SECRETS`].
    pub(crate) fn learn(&self, secrets: impl IntoIterator<Item = Secret>) {
        let new: Vec<Vec<Secret>> = secrets
            .into_iter()
            .map(|s| forms_to_find(&s))
            .filter(|forms| !forms.is_empty())
            .collect();
        if new.is_empty() {
            return;
        }
        let mut forms = self.forms.write().unwrap_or_else(PoisonError::into_inner);
        // A secret learnt again becomes the newest, once: what is still in use stays.
        let same = |a: &[Secret], b: &[Secret]| {
            a.iter()
                .map(Secret::expose)
                .eq(b.iter().map(Secret::expose))
        };
        forms
            .learned
            .retain(|old| !new.iter().any(|n| same(old, n)));
        forms.learned.extend(new);
        while forms.learned.len() > MAX_LEARNED_SECRETS {
            forms.learned.pop_front();
        }
        forms.rebuild();
    }

    /// The automaton as it is now: a cheap copy (aho-corasick shares its tables), so no lock
    /// is held while a text is read.
    fn searcher(&self) -> Searcher {
        let forms = self.forms.read().unwrap_or_else(PoisonError::into_inner);
        forms.searcher.clone()
    }

    /// `text` with every secret replaced by the marker; borrowed when there was none. Where
    /// forms overlap, the marker covers all of them, so no piece of a secret is left over.
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let automaton = match self.searcher() {
            Searcher::Nothing => return Cow::Borrowed(text),
            Searcher::Unbuildable if text.is_empty() => return Cow::Borrowed(text),
            Searcher::Unbuildable => return Cow::Owned(REDACTION_MARKER.to_owned()),
            Searcher::Built { automaton, .. } => automaton,
        };
        // Every match of every form, overlapping ones included, in one pass. A match ignoring
        // ASCII case has the same byte range in the text, on character boundaries (UTF-8
        // self-synchronizes and every form is whole characters).
        let mut found: Vec<Range<usize>> = automaton
            .find_overlapping_iter(text)
            .map(|m| m.range())
            .collect();
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        found.sort_unstable_by_key(|range| range.start);
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut found = found.into_iter().peekable();
        while let Some(Range { start, mut end }) = found.next() {
            while let Some(next) = found.next_if(|next| next.start < end) {
                end = end.max(next.end);
            }
            out.push_str(&text[copied..start]);
            out.push_str(REDACTION_MARKER);
            copied = end;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// [`Scrubber::scrub`] of an owned string, which comes back unchanged (not copied) when
    /// it holds no secret: results can be megabytes.
    pub(crate) fn scrub_owned(&self, text: String) -> String {
        if let Cow::Owned(scrubbed) = self.scrub(&text) {
            return scrubbed;
        }
        text
    }
}

/// The forms of `secret` long enough to scrub ([`MIN_SCRUBBED_SECRET_CHARS`]), each
/// ASCII-lowercased in place (no copy left unwiped); none for a secret shorter than that.
fn forms_to_find(secret: &Secret) -> Vec<Secret> {
    if secret.expose().chars().count() < MIN_SCRUBBED_SECRET_CHARS {
        return Vec::new();
    }
    forms(secret.expose())
        .into_iter()
        .filter(|form| form.chars().count() >= MIN_SCRUBBED_SECRET_CHARS)
        .map(|mut form| {
            form.make_ascii_lowercase();
            Secret::new(form)
        })
        .collect()
}

/// What every percent-encoder leaves as it is: the unreserved characters of RFC 3986.
const UNRESERVED_KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Every form `value` can take in a text the Pack reads back (see the module's documentation).
/// Forms that equal another are left to the caller to drop.
fn forms(value: &str) -> Vec<String> {
    let mut out = vec![value.to_owned()];
    let json = serde_json::to_string(value).expect("a string serializes");
    // Inside its quotes, which are one byte each.
    let json = &json[1..json.len() - 1];
    out.push(ascii_json(json));
    out.push(json.to_owned());
    out.push(utf8_percent_encode(value, UNRESERVED_KEPT).to_string());
    if let Ok(mut url) = Url::parse("http://h/") {
        url.set_path(&format!("/{value}"));
        out.push(url.path().get(1..).unwrap_or_default().to_owned());
        url.set_query(Some(value));
        out.extend(url.query().map(str::to_owned));
        url.query_pairs_mut().clear().append_pair("v", value);
        out.extend(
            url.query()
                .and_then(|q| q.strip_prefix("v="))
                .map(str::to_owned),
        );
        if url.set_username(value).is_ok() {
            out.push(url.username().to_owned());
        }
    }
    // Only a value that is a host name on its own: a URL's delimiters would make a part of
    // it the host.
    if !value.contains(['/', '\\', '?', '#', '@', ':']) {
        let host = Url::parse(&format!("http://{value}/"));
        out.extend(host.ok().and_then(|url| url.host_str().map(str::to_owned)));
    }
    out
}

/// `json` (the inside of a JSON string) with every non-ASCII character written as `\uXXXX`,
/// UTF-16 surrogate pairs beyond the basic plane.
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[&str]) -> Scrubber {
        Scrubber::new(values.iter().map(|v| Secret::new((*v).to_owned())))
    }

    #[test]
    fn one_pass_finds_every_form_of_every_secret_past_near_misses() {
        let values: Vec<String> = (0..100).map(|i| format!("s3cr3t canary {i:03}")).collect();
        let scrubber = Scrubber::new(values.iter().map(|v| Secret::new(v.clone())));
        // Near-misses of every secret, then each secret once: as is, upper-cased,
        // percent-encoded and form-encoded.
        let mut text = "s3cr3t canary ".repeat(10_000);
        for (i, value) in values.iter().enumerate() {
            let form = match i % 4 {
                0 => value.clone(),
                1 => value.to_ascii_uppercase(),
                2 => value.replace(' ', "%20"),
                _ => value.replace(' ', "+"),
            };
            text.push_str(&format!(" <{form}>"));
        }
        let scrubbed = scrubber.scrub(&text);
        assert_eq!(scrubbed.matches("<[redacted]>").count(), 100);
        assert!(!scrubbed.to_ascii_lowercase().contains("canary 0"));
    }

    #[test]
    fn the_last_learned_secrets_are_kept_up_to_the_limit() {
        let scrubber = Scrubber::new([Secret::new("configured-canary".to_owned())]);
        let learned = |i: usize| format!("learned-canary-{i:05}");
        scrubber.learn((0..MAX_LEARNED_SECRETS).map(|i| Secret::new(learned(i))));
        // At the limit every learned secret is still scrubbed.
        assert_eq!(scrubber.scrub(&learned(0)), REDACTION_MARKER);
        // One past it, the oldest is forgotten; the newest and the configured one are not.
        scrubber.learn([Secret::new(learned(MAX_LEARNED_SECRETS))]);
        assert_eq!(scrubber.scrub(&learned(0)), learned(0));
        assert_eq!(scrubber.scrub(&learned(1)), REDACTION_MARKER);
        assert_eq!(
            scrubber.scrub(&learned(MAX_LEARNED_SECRETS)),
            REDACTION_MARKER
        );
        assert_eq!(scrubber.scrub("configured-canary"), REDACTION_MARKER);
        // A secret learnt again is the newest: MAX_LEARNED_SECRETS newer ones later, it stays.
        scrubber.learn([Secret::new(learned(1))]);
        scrubber.learn((0..MAX_LEARNED_SECRETS - 1).map(|i| Secret::new(learned(10_000 + i))));
        assert_eq!(scrubber.scrub(&learned(1)), REDACTION_MARKER);
        assert_eq!(scrubber.scrub(&learned(2)), learned(2));
    }

    #[test]
    fn scrubs_every_occurrence_longest_first() {
        let scrubber = of(&["token-123", "Bearer token-123"]);
        let text = "got Bearer token-123 and token-123";
        assert_eq!(scrubber.scrub(text), "got [redacted] and [redacted]");
        // Two secrets that overlap leave no piece of either.
        let overlapping = of(&["abcdef", "defghi"]);
        assert_eq!(overlapping.scrub("<abcdefghi>"), "<[redacted]>");
        assert!(matches!(overlapping.scrub("clean"), Cow::Borrowed("clean")));
    }

    #[test]
    fn scrubs_the_json_escaped_form_too() {
        let scrubber = of(&["pa\"ss\\wörd"]);
        let json = serde_json::json!({"echo": "pa\"ss\\wörd"}).to_string();
        assert_eq!(scrubber.scrub(&json), "{\"echo\":\"[redacted]\"}");
        // As Python's json.dumps writes it, and with upper-case hex.
        let ascii = r#"{"echo": "pa\"ss\\w\u00f6rd", "again": "pa\"ss\\w\u00F6rd"}"#;
        assert_eq!(
            scrubber.scrub(ascii),
            r#"{"echo": "[redacted]", "again": "[redacted]"}"#
        );
    }

    #[test]
    fn scrubs_every_percent_encoding_of_a_url_part() {
        let scrubber = of(&["Canary Päth'-4d2a"]);
        for encoded in [
            "Canary%20P%C3%A4th'-4d2a",   // in a path, as the url crate writes it
            "Canary%20P%C3%A4th%27-4d2a", // in a query, and fully encoded
            "canary%20p%c3%a4th%27-4d2a", // lower-case hex
            "Canary+P%C3%A4th%27-4d2a",   // in a form
        ] {
            assert_eq!(
                scrubber.scrub(&format!("/{encoded}/")),
                "/[redacted]/",
                "{encoded}"
            );
        }
        let userinfo = of(&["us@er:pa ss"]);
        assert_eq!(userinfo.scrub("//us%40er%3Apa%20ss@h"), "//[redacted]@h");
    }

    #[test]
    fn scrubs_a_host_name_after_idna_and_in_any_case() {
        let scrubber = of(&["Canary-Höst-7c2e"]);
        assert_eq!(
            scrubber.scrub("connecting to xn--canary-hst-7c2e-gtb.example:443"),
            "connecting to [redacted].example:443"
        );
        assert_eq!(scrubber.scrub("CANARY-HöST-7C2E"), "[redacted]");
        assert_eq!(scrubber.scrub("canary-höst-7c2e"), "[redacted]");
    }

    #[test]
    fn a_url_gives_no_host_form_of_a_part_of_it() {
        // Read as a host, this URL would be "https": common words stay.
        let scrubber = of(&["https://api.example.com/mcp"]);
        assert!(matches!(
            scrubber.scrub("see https://other"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            scrubber.scrub("at https://api.example.com/mcp"),
            "at [redacted]"
        );
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
