//! The answer to `get_dynamic_tools {query}`: the tools found, best first, each with a short
//! description, and the servers that could not be searched because they are not ready.
//!
//! A description here is a glimpse to choose by, not the tool's documentation: its whitespace
//! folded and cut to [`MAX_SEARCH_DESCRIPTION_CHARS`]. It is the envelope's cleaned text, so
//! the cut shows nothing the listing of the tool would not.

use serde::Serialize;

use super::to_json;
use crate::policy::{
    MAX_LISTING_BYTES, MAX_SEARCH_DESCRIPTION_CHARS, MAX_SEARCH_QUERY_CHARS, MAX_SEARCH_RESULTS,
    MAX_TOOL_NAME_CHARS,
};
use crate::search::Found;

// Every answer fits the listing's cap: each result at most its name, a namespace of the same
// room and its description (4 bytes a character, escaped at most doubled), and the query.
const _: () = assert!(
    MAX_LISTING_BYTES
        > MAX_SEARCH_RESULTS * (8 * (2 * MAX_TOOL_NAME_CHARS + MAX_SEARCH_DESCRIPTION_CHARS) + 64)
            + 8 * MAX_SEARCH_QUERY_CHARS
            + 1024
);

/// `get_dynamic_tools {query}`.
#[derive(Serialize)]
struct Answer<'a> {
    query: &'a str,
    results: Vec<Result<'a>>,
    /// Servers not ready (still loading, or in error): their tools were not searched.
    #[serde(rename = "notSearched", skip_serializing_if = "Vec::is_empty")]
    not_searched: Vec<&'a str>,
}

/// One tool found.
#[derive(Serialize)]
struct Result<'a> {
    namespace: &'a str,
    name: &'a str,
    description: String,
}

/// The answer to `query`: `found` in order, and the namespaces of the servers `not_searched`.
pub(crate) fn answer(query: &str, found: &[Found<'_>], not_searched: Vec<&str>) -> String {
    let results = found
        .iter()
        .map(|found| Result {
            namespace: found.namespace,
            name: &found.tool.name,
            description: glimpse(&found.tool.description),
        })
        .collect();
    to_json(&Answer {
        query,
        results,
        not_searched,
    })
}

/// `description` with its whitespace folded to single spaces, cut to
/// [`MAX_SEARCH_DESCRIPTION_CHARS`] characters, the last of which is then `…`.
fn glimpse(description: &str) -> String {
    let folded = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= MAX_SEARCH_DESCRIPTION_CHARS {
        return folded;
    }
    let mut cut: String = folded
        .chars()
        .take(MAX_SEARCH_DESCRIPTION_CHARS - 1)
        .collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_is_folded_and_cut_at_its_limit() {
        assert_eq!(glimpse("  Lists\n\nthe\tfiles. "), "Lists the files.");
        let at = "é".repeat(MAX_SEARCH_DESCRIPTION_CHARS);
        assert_eq!(glimpse(&at), at);
        let past = format!("{at}x");
        let cut = glimpse(&past);
        assert_eq!(cut.chars().count(), MAX_SEARCH_DESCRIPTION_CHARS);
        assert_eq!(
            cut,
            format!("{}…", &at[..2 * (MAX_SEARCH_DESCRIPTION_CHARS - 1)])
        );
    }
}
