//! The terms a text is matched by: a tool's name, title, description and parameters when the
//! index is built, and a model's query, read the same way so that the two meet.
//!
//! A text is split into words at every character that is not a letter or a digit, and each word
//! again where its letter case turns (`getUserById` is `get user by id`, `HTTPServer` is `http
//! server`), so an identifier and a sentence give the same terms. Words are lowercased, and a
//! plural is read as its singular, an acronym's too (`PRs` is `pr`, not `p rs`).
//!
//! Each word also has a [`stem`], its English word stem (Snowball's English stemmer, the
//! `rust-stemmers` crate: `reviewers`, `reviewing` and `review` are `review`), matched beside
//! its term at a lower weight: a query's `waiting` then finds a tool's `wait`, while a tool
//! that says the query's own word still comes before one that says a word of the same stem.
//! A word of fewer than [`MIN_STEMMED_CHARS`] letters has its term as its stem: a stemmer's
//! cuts of short words are mostly no cut or a wrong one, and a model's unfinished word
//! (`sende`) would otherwise match by stem every tool saying `send`, not only the names it
//! starts.
//!
//! Each choice was measured on the evaluation set (`bench/search/`, its queries and the
//! held-out ones) and kept only where it helped. Left out for that reason: stop words
//! (dropping "the", "all", "me"... lowered recall: BM25 already weighs a word every tool has
//! at nearly nothing, and "all" or "me" can be what tells two tools apart), a table of
//! synonyms (`folder` for `directory`), which raised recall on the queries it was written
//! beside and lowered it on the held-out ones, and stems in place of the terms (rather than
//! beside them): Snowball reads `retrievers` as `retrieve` and `production` as `product`, and
//! found fewer tools first. A hand-written `-ing`/`-ed` stripper, tried before, lowered recall
//! on the held-out queries too. Matching a query's word to the longer words it starts and the
//! shorter ones that start it (`summarize` and `summarizer`, `reviewers` and `review`, at half
//! weight) found one or two more queries of each set, too few to tell from chance, and needs a
//! scan of every server's vocabulary per query: left out too. The plural rule reads `news` as
//! `new`, a known weakness of "S" stemmers, kept rather than a list of exceptions written for
//! the set's queries. ASCII folding is not done either: the set has no
//! accented text to measure it on, and lowercasing already treats every script alike.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};

use crate::policy::MIN_STEMMED_CHARS;

/// What a stem starts with in the index and a query: no term has it (terms are letters and
/// digits), so a stem never meets a term that happens to be spelled the same.
const STEM_MARK: char = '~';

/// Hands each of the first `limit` terms of `text` to `each`, in order, and answers how many
/// there were.
pub(super) fn each_term(text: &str, limit: usize, mut each: impl FnMut(&str)) -> usize {
    each_word(text, limit, |term, _| each(term))
}

/// Hands each of the first `limit` terms of `text` to `each` with the word it was read from,
/// lowercased (the term is that word in the singular), in order, and answers how many there
/// were. One buffer holds each term in turn: building an index of 10,000 tools reads millions
/// of words.
pub(super) fn each_word(text: &str, limit: usize, mut each: impl FnMut(&str, &str)) -> usize {
    let (mut term, mut lowered) = (String::new(), String::new());
    let mut count = 0;
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        for part in case_parts(word) {
            if count == limit {
                return count;
            }
            lowered.clear();
            lowered.extend(part.chars().flat_map(char::to_lowercase));
            if acronym_plural(part) {
                lowered.pop();
            }
            term.clear();
            term.push_str(&lowered);
            singular(&mut term);
            each(&term, &lowered);
            count += 1;
        }
    }
    count
}

/// The terms of `text`, in order.
pub(super) fn terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    each_term(text, usize::MAX, |term| terms.push(term.to_owned()));
    terms
}

/// The stem of `word` (lowercased, as [`each_word`] hands it with its term `term`), marked as
/// a stem: its own term in the index. The stemmer reads the word as written, not its singular
/// term (`updates` is `updat`, as `update` is). A word shorter than
/// [`MIN_STEMMED_CHARS`] has its term as its stem, so that stems never part what terms join
/// (`sends` and `send` are both `send`).
pub(super) fn stem(term: &str, word: &str) -> String {
    let stem = if word.chars().count() < MIN_STEMMED_CHARS {
        Cow::Borrowed(term)
    } else {
        Stemmer::create(Algorithm::English).stem(word)
    };
    let mut marked = String::with_capacity(stem.len() + 1);
    marked.push(STEM_MARK);
    marked.push_str(&stem);
    marked
}

/// The stems of the words of `text`, in order (as [`terms`] its terms).
pub(super) fn stems(text: &str) -> Vec<String> {
    let mut stems = Vec::new();
    each_word(text, usize::MAX, |term, word| stems.push(stem(term, word)));
    stems
}

/// `word` split where its letter case turns: before an upper-case letter that follows a
/// lower-case one (`userId`), and before the last of a run of capitals that a lower-case letter
/// follows (`HTTPServer`), unless that letter is an acronym's plural `s` (`PRs`, `URLs`: see
/// [`acronym_plural`]). Digits stay with the letters around them (`oauth2`).
fn case_parts(word: &str) -> impl Iterator<Item = &str> {
    let mut chars = word.char_indices().peekable();
    let mut previous: Option<char> = None;
    let mut start = 0;
    std::iter::from_fn(move || {
        while let Some((at, c)) = chars.next() {
            let next = chars.peek().map(|&(_, next)| next);
            let turns = previous.is_some_and(|p| {
                (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase()
                        && c.is_uppercase()
                        && next.is_some_and(char::is_lowercase)
                        && !plural_ending(&word[at..]))
            });
            previous = Some(c);
            if turns {
                let part = &word[start..at];
                start = at;
                return Some(part);
            }
        }
        (start < word.len()).then(|| {
            let part = &word[start..];
            start = word.len();
            part
        })
    })
}

/// Whether `rest`, the rest of a word from a capital on, is that capital and a plural's `s`
/// ending the word or its part (`Rs` of `PRs`, `Ls` of `URLsFor`).
fn plural_ending(rest: &str) -> bool {
    let mut chars = rest.chars().skip(1);
    chars.next() == Some('s') && chars.next().is_none_or(|after| !after.is_lowercase())
}

/// Whether `part` is an acronym's plural: two capitals or more and an `s` (`PRs`, `IDs`,
/// `APIs`), read as the acronym (`pr`). The plural rule would leave `prs` alone (too short) and
/// cut `apis` to `api` only by chance of length.
fn acronym_plural(part: &str) -> bool {
    part.strip_suffix('s').is_some_and(|acronym| {
        acronym.chars().count() >= 2 && acronym.chars().all(char::is_uppercase)
    })
}

/// A plural read as its singular, by the rules of an "S" stemmer: `-ies` is `-y` (`entries`),
/// `-es` after `x`, `z`, `ch`, `sh`, `ss` or `us` is dropped (`boxes`, `branches`, `addresses`,
/// `statuses`), and a last `s` is dropped unless the word ends `ss`, `us` or `is` (`files`,
/// `databases`; `class`, `status`, `analysis`). Words of three letters or fewer are left alone
/// (`gas`).
fn singular(word: &mut String) {
    if word.len() <= 3 || !word.ends_with('s') {
        return;
    }
    if word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
        return;
    }
    if let Some(stem) = word.strip_suffix("es")
        && (stem.ends_with(['x', 'z'])
            || ["ch", "sh", "ss", "us"]
                .iter()
                .any(|end| stem.ends_with(end)))
    {
        word.truncate(word.len() - 2);
        return;
    }
    if !(word.ends_with("ss") || word.ends_with("us") || word.ends_with("is")) {
        word.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        terms(text)
    }

    #[test]
    fn identifiers_and_sentences_give_the_same_terms() {
        assert_eq!(
            all("browser_take_screenshot"),
            ["browser", "take", "screenshot"]
        );
        assert_eq!(all("get-user.byId"), ["get", "user", "by", "id"]);
        assert_eq!(all("HTTPServer getX"), ["http", "server", "get", "x"]);
        assert_eq!(all("API-post-search"), ["api", "post", "search"]);
        assert_eq!(all("oauth2 PROJ-12"), ["oauth2", "proj", "12"]);
        assert_eq!(
            all("Lists the Branches of a repository"),
            ["list", "the", "branch", "of", "a", "repository"]
        );
        assert_eq!(all("Écrire un fichier"), ["écrire", "un", "fichier"]);
        assert_eq!(all("--"), Vec::<String>::new());
    }

    #[test]
    fn only_the_first_terms_are_handed_on() {
        let mut seen = Vec::new();
        assert_eq!(
            each_term("one two three", 2, |t| seen.push(t.to_owned())),
            2
        );
        assert_eq!(seen, ["one", "two"]);
        assert_eq!(each_term("one two", 5, |_| ()), 2);
    }

    #[test]
    fn words_of_one_stem_have_the_same_stem_and_no_term_is_a_stem() {
        for (word, other) in [
            ("reviewers", "review"),
            ("waiting", "waited"),
            ("assigned", "assigning"),
            ("evaluation", "evaluate"),
        ] {
            assert_eq!(stems(word), stems(other), "{word} {other}");
        }
        assert_ne!(stems("directory"), stems("direct"));
        assert_eq!(stems("Updates"), ["~updat"]);
        // At the bound: a word of five letters has its term as its stem, one of six is stemmed.
        assert_eq!(MIN_STEMMED_CHARS, 6);
        assert_eq!(stems("sende Files"), ["~sende", "~file"]);
        assert_eq!(stems("sended"), ["~send"]);
        assert!(
            !all("~review ~ review")
                .iter()
                .any(|t| t.starts_with(STEM_MARK))
        );
    }

    #[test]
    fn an_acronym_s_plural_is_the_acronym() {
        assert_eq!(all("PRs URLs IDs APIs"), ["pr", "url", "id", "api"]);
        assert_eq!(all("URLsFor getPRs"), ["url", "for", "get", "pr"]);
        assert_eq!(all("As iOS Ss"), ["as", "i", "os", "ss"]);
    }

    #[test]
    fn plurals_are_read_as_singulars() {
        let cases = [
            ("entries", "entry"),
            ("boxes", "box"),
            ("branches", "branch"),
            ("files", "file"),
            ("class", "class"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("gas", "gas"),
            ("issues", "issue"),
            ("databases", "database"),
            ("addresses", "address"),
            ("statuses", "status"),
        ];
        for (plural, singular) in cases {
            assert_eq!(all(plural), [singular], "{plural}");
        }
    }
}
