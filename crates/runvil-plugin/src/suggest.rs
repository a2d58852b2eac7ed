//! The nearest name to a misspelled one, for the `did you mean ...?` of an error: a Host says
//! it of the namespaces it knows before a Pack is built (`runvil tools dcos`), a Pack of the
//! names it lists, and both must suggest the same name for the same mistake, so the rule is
//! written once, here.
//!
//! The distance is Levenshtein's (one character inserted, removed or replaced is one edit),
//! written by hand rather than taken from a crate: the crate in the tree (strsim, clap's) has no
//! bounded form, and a Pack compares a model's text with up to ten thousand names of one
//! server. Bounded by `max_edits`, each comparison looks only at the band of cells within that
//! many edits of the diagonal and stops at the first row past it, so it costs the shorter
//! name's length times `2 × max_edits + 1`, and a name whose length differs by more costs
//! nothing.

/// The most edits (characters inserted, removed or replaced) between a misspelled name and the
/// name a Host or a Pack suggests for it (`did you mean echo?`); never more than half the
/// misspelled name. Further off, a suggestion is a guess. One value, so both suggest alike.
pub const MAX_SUGGESTION_EDITS: usize = 3;

/// The name of `names` nearest to `typed`, when it is within `max_edits` edits and the edits
/// are at most half of `typed` (so `x` suggests nothing, whatever is one letter): the first of
/// the nearest, in the order given. `None` when none is that near, or `typed` is one of them.
pub fn nearest<'a>(
    typed: &str,
    names: impl IntoIterator<Item = &'a str>,
    max_edits: usize,
) -> Option<&'a str> {
    let typed: Vec<char> = typed.chars().collect();
    let bound = max_edits.min(typed.len() / 2);
    let mut best: Option<(usize, &str)> = None;
    for name in names {
        let within = best.map_or(bound, |(edits, _)| edits.saturating_sub(1));
        let candidate: Vec<char> = name.chars().collect();
        match distance_within(&typed, &candidate, within) {
            Some(0) => return None,
            Some(edits) if best.is_none_or(|(least, _)| edits < least) => {
                best = Some((edits, name));
            }
            _ => {}
        }
    }
    best.map(|(_, name)| name)
}

/// The edit distance between `a` and `b` when it is at most `k`, else `None`.
fn distance_within(a: &[char], b: &[char], k: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > k {
        return None;
    }
    // Cells outside the band hold `far`: more than `k`, and never added to past it.
    let far = k + 1;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| j.min(far)).collect();
    let mut current = vec![far; b.len() + 1];
    for i in 1..=a.len() {
        let low = i.saturating_sub(k).max(1);
        let high = (i + k).min(b.len());
        current[low - 1] = if low == 1 { i.min(far) } else { far };
        let mut least = current[low - 1];
        for j in low..=high {
            let replace = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let cell = replace
                .min(previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(far);
            current[j] = cell;
            least = least.min(cell);
        }
        if high < b.len() {
            current[high + 1] = far;
        }
        if least > k {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b.len()]).filter(|&edits| edits <= k)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain dynamic programme, for comparison.
    fn levenshtein(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for i in 1..=a.len() {
            let mut diagonal = row[0];
            row[0] = i;
            for j in 1..=b.len() {
                let above = row[j];
                row[j] = (diagonal + usize::from(a[i - 1] != b[j - 1]))
                    .min(row[j] + 1)
                    .min(row[j - 1] + 1);
                diagonal = above;
            }
        }
        row[b.len()]
    }

    #[test]
    fn the_banded_distance_is_levenshtein_s_within_its_bound() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "echo",
            "ecoh",
            "ech",
            "echoes",
            "search",
            "serach",
            "docs",
            "dcos",
            "kitten",
            "sitting",
            "get_issue",
            "get-issues",
            "naïve",
            "naive",
            "服务器",
        ];
        for a in words {
            for b in words {
                let full = levenshtein(a, b);
                let (ca, cb): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for k in 0..6 {
                    let want = (full <= k).then_some(full);
                    assert_eq!(distance_within(&ca, &cb, k), want, "{a} {b} {k}");
                }
            }
        }
    }

    #[test]
    fn the_nearest_name_within_the_bound_first_in_order() {
        let names = ["docs", "echo", "fails", "github", "progress", "slow"];
        let at = |typed| nearest(typed, names, 3);
        assert_eq!(at("ecoh"), Some("echo"));
        assert_eq!(at("dcos"), Some("docs"));
        assert_eq!(at("githbu"), Some("github"));
        assert_eq!(at("Echo"), Some("echo"));
        assert_eq!(at("progres"), Some("progress"));
        // Nearer wins over first; a tie goes to the first given.
        assert_eq!(nearest("slaw", ["flaw", "slow"], 3), Some("flaw"));
        assert_eq!(nearest("ab", ["ax", "xb"], 3), Some("ax"));
        assert_eq!(nearest("slaws", ["flaw", "slow", "slaw"], 3), Some("slaw"));
        // Nothing near, a name too short to judge, an exact name, no names.
        assert_eq!(at("zzzzzz"), None);
        assert_eq!(at("x"), None);
        assert_eq!(at("echo"), None);
        assert_eq!(nearest("echo", [], 3), None);
    }

    #[test]
    fn the_bound_is_exact() {
        // Three edits away, and four.
        assert_eq!(nearest("abcdefgh", ["abcdeXYZ"], 3), Some("abcdeXYZ"));
        assert_eq!(nearest("abcdefgh", ["abcdWXYZ"], 3), None);
        // At most half the typed name: two edits of a four-letter name, not three.
        assert_eq!(nearest("abcd", ["abXY"], 3), Some("abXY"));
        assert_eq!(nearest("abcd", ["aXYZ"], 3), None);
    }
}
