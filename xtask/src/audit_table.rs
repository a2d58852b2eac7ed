//! The audit table (`audit/README.md`) names what proves each promise; [`check_table`] fails
//! when a name no longer points at anything.
//!
//! Every backtick span in the table's "proven by" column is one of:
//!
//! - a file or folder, relative to the workspace root (`tests/it/config.rs`, `clippy.toml`,
//!   `.ci/run`): it contains `/` or ends with a file extension, and must exist;
//! - a test module (`secret::tests`): a path ending in `tests`, under which some test must be
//!   listed;
//! - a test (`policy::tests::table_matches_policy_readme`, `every_entry_rule`): a path or a
//!   plain name that must be a listed test's path or the end of one;
//! - a command, written after `command:`: it contains a space, must read
//!   `cargo run -p build-xtask -- <subcommand>`, and the subcommand must be one of
//!   [`crate::SUBCOMMANDS`].
//!
//! The table is read as GitHub renders it (pulldown-cmark, GFM tables). The tests are those
//! `cargo test --workspace --tests -- --list` lists (the benchmark crate excluded so as not to
//! build rmcp's client for it; the table names none of its tests), so a name is a test that
//! exists (run, or ignored with the command that runs it), not any `fn` of that name.
//! Anything else in that column, a row that names nothing, and a README without the table are
//! violations too, so a typo cannot pass as "not a test name".
//! [`check_table`] is a pure function over the README text and [`Known`]; [`check`] gathers
//! the real workspace's.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::workspace::run_cargo;

/// The audit table, relative to the workspace root.
pub const AUDIT_README_PATH: &str = "audit/README.md";

/// The header of the column [`check_table`] checks (any letter case).
pub const PROVEN_BY_HEADER: &str = "proven by";

/// How a command in the table must start; the word after it is the xtask subcommand.
pub const XTASK_COMMAND_PREFIX: &str = "cargo run -p build-xtask -- ";

/// The `cargo test` run that lists the workspace's tests.
pub const LIST_TESTS: &str =
    "test --workspace --exclude bench --tests --locked -- --list --format terse";

/// What the table's names are checked against.
pub struct Known<'a> {
    /// Every test's path, as `cargo test -- --list` prints it (`secret::tests::name`).
    pub tests: &'a BTreeSet<String>,
    /// The names of the xtask subcommands.
    pub subcommands: &'a [&'a str],
    /// Whether a file or folder (relative to the workspace root) exists.
    pub exists: &'a dyn Fn(&str) -> bool,
}

/// Checks every row of the table in `readme` (the text of `audit/README.md`) against `known`,
/// returning one violation per name that points at nothing, as `audit/README.md:<line>: ...`.
pub fn check_table(readme: &str, known: &Known<'_>) -> Vec<String> {
    let rows = match proven_by_spans(readme) {
        Ok(rows) => rows,
        Err(error) => return vec![format!("{AUDIT_README_PATH}: {error}")],
    };
    // `::` in front of every path, so that a suffix match starts at a segment.
    let tests: Vec<String> = known.tests.iter().map(|test| format!("::{test}")).collect();
    let mut violations = Vec::new();
    for (line, spans) in rows {
        let problems = match spans {
            Err(error) => vec![error],
            Ok(spans) if spans.is_empty() => vec![
                "the row names no test, file or command in backticks, so nothing proves it"
                    .to_owned(),
            ],
            Ok(spans) => spans
                .iter()
                .filter_map(|span| problem(span, known, &tests))
                .collect(),
        };
        violations.extend(
            problems
                .into_iter()
                .map(|p| format!("{AUDIT_README_PATH}:{line}: {p}")),
        );
    }
    violations
}

/// Why `span` names nothing the table may name or nothing that exists; `None` if it is fine.
/// `tests` are the known tests' paths, each after `::`.
fn problem(span: &str, known: &Known<'_>, tests: &[String]) -> Option<String> {
    if span.chars().any(char::is_whitespace) {
        let Some(rest) = span.strip_prefix(XTASK_COMMAND_PREFIX) else {
            return Some(format!(
                "`{span}`: a command in the table must be `{XTASK_COMMAND_PREFIX}<subcommand>` \
                 (name tests, files or xtask subcommands, which can be checked)"
            ));
        };
        let subcommand = rest.split_whitespace().next().unwrap_or_default();
        return (!known.subcommands.contains(&subcommand)).then(|| {
            let all = known.subcommands.join(", ");
            format!("`{span}`: `{subcommand}` is not a subcommand of build-xtask (known: {all})")
        });
    }
    if span.contains('/') || has_file_extension(span) {
        if span.starts_with('/') || span.split('/').any(|part| part == "..") {
            return Some(format!(
                "`{span}`: a file must be relative to the workspace root, inside it"
            ));
        }
        return (!(known.exists)(span.trim_end_matches('/')))
            .then(|| format!("`{span}`: no such file or folder in the workspace"));
    }
    let parts: Vec<&str> = span.split("::").collect();
    // A Rust identifier, as syn (already the public-API check's parser) reads one.
    if !parts
        .iter()
        .all(|part| syn::parse_str::<syn::Ident>(part).is_ok())
    {
        return Some(format!(
            "`{span}` is not a test, test module, file or command"
        ));
    }
    let (found, missing) = match parts.as_slice() {
        ["tests"] => return Some(format!("`{span}`: name the module that holds the tests")),
        [.., "tests"] => {
            let inside = format!("::{span}::");
            (
                tests.iter().any(|test| test.contains(&inside)),
                "no test in it",
            )
        }
        _ => {
            let end = format!("::{span}");
            (
                tests.iter().any(|test| test.ends_with(&end)),
                "no such test",
            )
        }
    };
    (!found).then(|| format!("`{span}`: `cargo test -- --list` lists {missing}"))
}

/// A row of the table: its 1-based line, and its "proven by" spans or why they cannot be read.
pub type Row<'a> = (usize, Result<Vec<&'a str>, String>);

/// The backtick spans of the "proven by" cell of every body row of every table that has such
/// a column (tables as GitHub reads them), each row with its 1-based line, or why its spans
/// cannot be read (a backtick that opens no span). `Err` if there is no such table or row.
pub fn proven_by_spans(readme: &str) -> Result<Vec<Row<'_>>, String> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    let (mut column, mut cell, mut in_head) = (None, 0, false);
    let parser = Parser::new_ext(readme, Options::ENABLE_TABLES).into_offset_iter();
    for (event, range) in parser {
        let in_column = !in_head && Some(cell) == column;
        match (event, rows.last_mut()) {
            (Event::Start(Tag::Table(_)), _) => column = None,
            (Event::Start(Tag::TableHead), _) => (in_head, cell) = (true, 0),
            (Event::End(TagEnd::TableHead), _) => in_head = false,
            (Event::Start(Tag::TableRow), _) if column.is_some() => {
                cell = 0;
                rows.push((readme[..range.start].lines().count() + 1, Ok(Vec::new())));
            }
            (Event::End(TagEnd::TableCell), _) => cell += 1,
            (Event::Text(text), _)
                if in_head && text.trim().eq_ignore_ascii_case(PROVEN_BY_HEADER) =>
            {
                column = Some(cell);
            }
            (Event::Code(_), Some((_, Ok(spans)))) if in_column => {
                spans.push(readme[range].trim_matches('`').trim());
            }
            (Event::Text(text), Some((_, spans))) if in_column && text.contains('`') => {
                *spans = Err(format!("unclosed backtick in `{}`", text.trim()));
            }
            _ => {}
        }
    }
    if rows.is_empty() {
        return Err(format!(
            "no table with a \"{PROVEN_BY_HEADER}\" column and rows (the audit table is missing)"
        ));
    }
    Ok(rows)
}

/// `name.ext` with an extension of letters (`clippy.toml`, `deps.allow`), not a version
/// number or a sentence.
fn has_file_extension(span: &str) -> bool {
    span.rsplit_once('.').is_some_and(|(stem, extension)| {
        !stem.is_empty()
            && !extension.is_empty()
            && extension.chars().all(|c| c.is_ascii_alphabetic())
    })
}

/// The tests `cargo test -- --list --format terse` printed: its `<path>: test` lines.
pub fn listed_tests(list: &str) -> BTreeSet<String> {
    list.lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Checks the real `audit/README.md` under `root`, listing the workspace's tests with
/// [`LIST_TESTS`] (which builds the test targets that are not built yet). `Err` if the
/// workspace cannot be read or the tests cannot be listed.
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let path = root.join(AUDIT_README_PATH);
    let readme = fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let list = String::from_utf8_lossy(&run_cargo(root, LIST_TESTS)?).into_owned();
    let subcommands: Vec<&str> = crate::SUBCOMMANDS.iter().map(|s| s.name).collect();
    let exists = |relative: &str| root.join(relative).exists();
    let known = Known {
        tests: &listed_tests(&list),
        subcommands: &subcommands,
        exists: &exists,
    };
    Ok(check_table(&readme, &known))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "crafted_entry_rule: test\ncrafted_async_test: test\n\
                        secret::tests::crafted_debug_test: test\n\
                        conformance::verdict::tests::crafted_verdict: test\n\
                        12 tests, 0 benchmarks\n";

    const PATHS: &[&str] = &[
        "tests",
        "tests/config.rs",
        "src",
        "src/secret.rs",
        "clippy.toml",
        ".ci/run",
    ];

    fn check_with(readme: &str) -> Vec<String> {
        let exists = |path: &str| PATHS.contains(&path);
        let known = Known {
            tests: &listed_tests(LIST),
            subcommands: &["check", "audit"],
            exists: &exists,
        };
        check_table(readme, &known)
    }

    fn readme(rows: &[&str]) -> String {
        let mut text = String::from("# Audit\n\nIntro.\n\n| promise | proven by |\n|---|---|\n");
        for row in rows {
            text.push_str(row);
            text.push('\n');
        }
        text.push_str("\nAfter the table.\n");
        text
    }

    #[test]
    fn every_form_passes_when_its_target_exists() {
        let text = readme(&[
            "| a | `tests/config.rs` `crafted_entry_rule`, `crafted_async_test` |",
            "| b | `secret::tests`, `secret::tests::crafted_debug_test`, `crafted_debug_test` |",
            "| c | the root `clippy.toml`; `tests/` and `.ci/run`; `verdict::tests` |",
            "| d | command: `cargo run -p build-xtask -- audit` (run by hand) |",
        ]);
        assert_eq!(check_with(&text), Vec::<String>::new());
    }

    #[test]
    fn a_removed_test_fails_with_its_line() {
        let text = readme(&[
            "| a | `tests/config.rs` `a_test_that_was_renamed`, `crafted_entry_rule` |",
            "| b | `policy::tests::a_fictional_test`, `other::tests::crafted_debug_test` |",
        ]);
        assert_eq!(
            check_with(&text),
            [
                "audit/README.md:7: `a_test_that_was_renamed`: `cargo test -- --list` lists no \
                 such test",
                "audit/README.md:8: `policy::tests::a_fictional_test`: `cargo test -- --list` \
                 lists no such test",
                "audit/README.md:8: `other::tests::crafted_debug_test`: `cargo test -- --list` \
                 lists no such test",
            ]
        );
    }

    #[test]
    fn a_missing_file_module_or_subcommand_fails() {
        let text = readme(&[
            "| a | `tests/gone.rs`; `sse::tests`, `ecret::tests` |",
            "| b | command: `cargo run -p build-xtask -- benchmarks`; `deny.toml` |",
        ]);
        assert_eq!(
            check_with(&text),
            [
                "audit/README.md:7: `tests/gone.rs`: no such file or folder in the workspace",
                "audit/README.md:7: `sse::tests`: `cargo test -- --list` lists no test in it",
                "audit/README.md:7: `ecret::tests`: `cargo test -- --list` lists no test in it",
                "audit/README.md:8: `cargo run -p build-xtask -- benchmarks`: `benchmarks` is \
                 not a subcommand of build-xtask (known: check, audit)",
                "audit/README.md:8: `deny.toml`: no such file or folder in the workspace",
            ]
        );
    }

    #[test]
    fn a_test_name_must_match_whole_segments() {
        // A prefix, a suffix inside a segment, and a name that is only a module are not tests.
        let text =
            readme(&["| a | `crafted_entry`, `entry_rule`, `rafted_entry_rule`, `secret` |"]);
        assert_eq!(check_with(&text).len(), 4);
        assert_eq!(
            listed_tests("a::b: test\nc: bench\n\n1 test, 1 benchmark\n"),
            BTreeSet::from(["a::b".to_owned()])
        );
    }

    #[test]
    fn unrecognised_spans_empty_rows_and_broken_backticks_fail() {
        let text = readme(&[
            "| a | `cargo test --workspace` |",
            "| b | proven by careful reading |",
            "| c | `tests/config.rs` `crafted_entry_rule |",
            "| d | `not a::name!` `/etc/passwd` `../other/tests.rs` `tests` `v1.2` |",
        ]);
        let violations = check_with(&text);
        let expected = [
            "audit/README.md:7: `cargo test --workspace`: a command in the table must be",
            "audit/README.md:8: the row names no test, file or command",
            "audit/README.md:9: unclosed backtick",
            "audit/README.md:10: `not a::name!`: a command in the table must be",
            "audit/README.md:10: `/etc/passwd`: a file must be relative",
            "audit/README.md:10: `../other/tests.rs`: a file must be relative",
            "audit/README.md:10: `tests`: name the module that holds the tests",
            // A version number is not a file, and not a test either.
            "audit/README.md:10: `v1.2` is not a test, test module, file or command",
        ];
        assert_eq!(violations.len(), expected.len(), "{violations:#?}");
        for (violation, prefix) in violations.iter().zip(expected) {
            assert!(violation.starts_with(prefix), "{violation:?} vs {prefix:?}");
        }
    }

    #[test]
    fn a_readme_without_the_table_fails() {
        let missing = [
            "audit/README.md: no table with a \"proven by\" column and rows (the audit \
                        table is missing)",
        ];
        assert_eq!(
            check_with("# Audit\n\n| a | b |\n|---|---|\n| `x` | `y` |\n"),
            missing
        );
        assert_eq!(
            check_with("| promise | proven by |\n|---|---|\n\ntext\n"),
            missing
        );
    }

    #[test]
    fn only_the_proven_by_column_is_read() {
        // `nowhere` in the first column is prose; an escaped `|` does not split cells.
        let text = readme(&["| `nowhere` and `a \\| b` | `crafted_entry_rule` |"]);
        assert_eq!(check_with(&text), Vec::<String>::new());
        let two_rows = readme(&["| x | `a` |", "| y | `b` `c` |"]);
        assert_eq!(
            proven_by_spans(&two_rows),
            Ok(vec![(7, Ok(vec!["a"])), (8, Ok(vec!["b", "c"]))])
        );
    }
}
