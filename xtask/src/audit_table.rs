//! The audit table (`audit/README.md`) names what proves each promise; [`check_table`] fails
//! when a name no longer points at anything.
//!
//! Every backtick span in the table's "proven by" column is one of:
//!
//! - a file or folder, relative to the workspace root (`tests/config.rs`, `clippy.toml`,
//!   `.ci/run`): it contains `/` or ends with a file extension, and must exist;
//! - a test module (`secret::tests`): a path ending in `tests`, so a file `secret.rs` or
//!   `secret/mod.rs` must declare `mod tests`;
//! - a test (`policy::tests::table_matches_policy_readme`, `every_entry_rule`): a path or a
//!   plain name whose last part must be a `fn` somewhere in the workspace's `.rs` files;
//! - a command, written after `command:`: it contains a space, must read
//!   `cargo run -p build-xtask -- <subcommand>`, and the subcommand must be a row of
//!   `SUBCOMMANDS` in `xtask/src/main.rs`.
//!
//! Anything else in that column, a row that names nothing, and a README without the table are
//! violations too, so a typo cannot pass as "not a test name". [`check_table`] is a pure
//! function over the README text and a [`Tree`]; [`gather`] reads the real workspace.
//!
//! The unit tests below use made-up test names only: a real name written after `fn` in this
//! file would keep the check passing after the real test is gone.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::public_api_policy::SourceFile;

/// The audit table, relative to the workspace root.
pub const AUDIT_README_PATH: &str = "audit/README.md";

/// The xtask dispatcher whose `SUBCOMMANDS` rows the table's commands must name.
pub const XTASK_MAIN_PATH: &str = "xtask/src/main.rs";

/// The header of the column [`check_table`] checks (any letter case).
pub const PROVEN_BY_HEADER: &str = "proven by";

/// How a command in the table must start; the word after it is the xtask subcommand.
pub const XTASK_COMMAND_PREFIX: &str = "cargo run -p build-xtask -- ";

/// Folders [`gather`] does not enter (relative to the root): build output, installed tools,
/// fuzzing corpora, git's own data.
pub const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".tools",
    "target",
    "fuzz/target",
    "fuzz/corpus",
    "fuzz/artifacts",
];

/// What the table's names are checked against.
#[derive(Debug, Default)]
pub struct Tree {
    /// Every file and folder of the workspace, relative to the root, `/`-separated.
    pub paths: BTreeSet<String>,
    /// Every `.rs` file of the workspace with its text (paths relative to the root).
    pub sources: Vec<SourceFile>,
    /// The names of the xtask subcommands.
    pub subcommands: Vec<String>,
}

/// What one backtick span of the "proven by" column names.
#[derive(Debug, PartialEq, Eq)]
pub enum Reference<'a> {
    /// A file or folder relative to the workspace root.
    File(&'a str),
    /// A test module: the module that holds it (`secret` for `secret::tests`).
    TestModule(&'a str),
    /// A test function, by its name (the last part of a path).
    Test(&'a str),
    /// An xtask subcommand, by its name.
    Command(&'a str),
}

/// Checks every row of the table in `readme` (the text of `audit/README.md`) against `tree`,
/// returning one violation per name that points at nothing, as `audit/README.md:<line>: ...`.
pub fn check_table(readme: &str, tree: &Tree) -> Vec<String> {
    let rows = match proven_by_cells(readme) {
        Ok(rows) => rows,
        Err(error) => return vec![format!("{AUDIT_README_PATH}: {error}")],
    };
    let functions: BTreeSet<&str> = tree
        .sources
        .iter()
        .flat_map(|source| fn_names(&source.text))
        .collect();
    let mut violations = Vec::new();
    for (line, cell) in rows {
        let spans = match backtick_spans(cell) {
            Ok(spans) => spans,
            Err(error) => {
                violations.push(format!("{AUDIT_README_PATH}:{line}: {error}"));
                continue;
            }
        };
        if spans.is_empty() {
            violations.push(format!(
                "{AUDIT_README_PATH}:{line}: the row names no test, file or command in \
                 backticks, so nothing proves it"
            ));
        }
        for span in spans {
            let problem = match classify(span) {
                Err(error) => Some(error),
                Ok(Reference::File(path)) => (!tree.paths.contains(path.trim_end_matches('/')))
                    .then(|| format!("`{span}`: no such file or folder in the workspace")),
                Ok(Reference::TestModule(module)) => (!has_test_module(tree, module)).then(|| {
                    format!(
                        "`{span}`: no `{module}.rs` or `{module}/mod.rs` in the workspace \
                         declares `mod tests`"
                    )
                }),
                Ok(Reference::Test(name)) => (!functions.contains(name))
                    .then(|| format!("`{span}`: no `fn {name}` in the workspace's .rs files")),
                Ok(Reference::Command(subcommand)) => (!tree
                    .subcommands
                    .iter()
                    .any(|known| known == subcommand))
                .then(|| {
                    format!(
                        "`{span}`: `{subcommand}` is not a subcommand of build-xtask (known: {})",
                        tree.subcommands.join(", ")
                    )
                }),
            };
            if let Some(problem) = problem {
                violations.push(format!("{AUDIT_README_PATH}:{line}: {problem}"));
            }
        }
    }
    violations
}

/// The "proven by" cell of every data row of every table in `readme` that has such a column,
/// with its 1-based line number. `Err` if there is no such table or it has no rows.
pub fn proven_by_cells(readme: &str) -> Result<Vec<(usize, &str)>, String> {
    let mut cells = Vec::new();
    let mut tables = 0;
    // The index of the "proven by" column of the table being read, if it has one.
    let mut column: Option<usize> = None;
    let mut in_table = false;
    let mut header_seen = false;
    for (index, line) in readme.lines().enumerate() {
        let trimmed = line.trim();
        if !trimmed.starts_with('|') {
            in_table = false;
            column = None;
            continue;
        }
        let row = split_row(trimmed);
        if !in_table {
            in_table = true;
            header_seen = false;
            column = row
                .iter()
                .position(|cell| cell.trim().eq_ignore_ascii_case(PROVEN_BY_HEADER));
            if column.is_some() {
                tables += 1;
            }
            continue;
        }
        if !header_seen {
            // The delimiter row (`|---|---|`) follows the header.
            header_seen = true;
            if row
                .iter()
                .all(|cell| cell.trim().chars().all(|c| matches!(c, '-' | ':')))
            {
                continue;
            }
        }
        let Some(column) = column else { continue };
        match row.get(column) {
            Some(cell) => cells.push((index + 1, *cell)),
            None => {
                return Err(format!(
                    "line {}: the row has no \"{PROVEN_BY_HEADER}\" cell (column {})",
                    index + 1,
                    column + 1
                ));
            }
        }
    }
    if tables == 0 {
        return Err(format!(
            "no table with a \"{PROVEN_BY_HEADER}\" column (the audit table is missing)"
        ));
    }
    if cells.is_empty() {
        return Err(format!("the \"{PROVEN_BY_HEADER}\" table has no rows"));
    }
    Ok(cells)
}

/// The cells of a Markdown table row (`| a | b |`), splitting at `|` outside backticks and
/// not escaped as `\|`.
fn split_row(row: &str) -> Vec<&str> {
    let inner = row.strip_prefix('|').unwrap_or(row);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    let mut previous = None;
    for (index, c) in inner.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '|' if !in_code && previous != Some('\\') => {
                cells.push(&inner[start..index]);
                start = index + 1;
            }
            _ => {}
        }
        previous = Some(c);
    }
    cells.push(&inner[start..]);
    cells
}

/// The text of every `` `span` `` in `cell`, trimmed. `Err` on an unclosed backtick.
pub fn backtick_spans(cell: &str) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = cell.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return Err(format!("unclosed backtick in `{}`", cell.trim()));
    }
    Ok(parts
        .into_iter()
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .collect())
}

/// What `span` names, or why it names nothing the table may name.
pub fn classify(span: &str) -> Result<Reference<'_>, String> {
    if span.chars().any(char::is_whitespace) {
        let Some(rest) = span.strip_prefix(XTASK_COMMAND_PREFIX) else {
            return Err(format!(
                "`{span}`: a command in the table must be `{XTASK_COMMAND_PREFIX}<subcommand>` \
                 (name tests, files or xtask subcommands, which can be checked)"
            ));
        };
        let subcommand = rest.split_whitespace().next().unwrap_or("");
        return if is_identifier(subcommand.replace('-', "_").as_str()) {
            Ok(Reference::Command(subcommand))
        } else {
            Err(format!("`{span}`: no subcommand after `--`"))
        };
    }
    if span.contains('/') || has_file_extension(span) {
        return if span.starts_with('/') || span.split('/').any(|part| part == "..") {
            Err(format!(
                "`{span}`: a file must be relative to the workspace root, inside it"
            ))
        } else {
            Ok(Reference::File(span))
        };
    }
    let parts: Vec<&str> = span.split("::").collect();
    if !parts.iter().all(|part| is_identifier(part)) {
        return Err(format!(
            "`{span}` is not a test, test module, file or command"
        ));
    }
    match parts.as_slice() {
        [.., module, "tests"] => Ok(Reference::TestModule(module)),
        ["tests"] => Err(format!("`{span}`: name the module that holds the tests")),
        [.., name] => Ok(Reference::Test(name)),
        [] => Err(format!("`{span}` is empty")),
    }
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

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The name of every `fn name` in `text` (any visibility, `async`, generic or not).
pub fn fn_names(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices("fn ").filter_map(|(index, _)| {
        let before = text[..index].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let rest = text[index + 3..].trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        is_identifier(name).then_some(name)
    })
}

/// Whether a file `<module>.rs` or `<module>/mod.rs` declares `mod tests` (inline, or as
/// `<module>/tests.rs`).
fn has_test_module(tree: &Tree, module: &str) -> bool {
    let file = format!("{module}.rs");
    let mod_rs = format!("{module}/mod.rs");
    tree.sources.iter().any(|source| {
        let named = source.path == file
            || source.path.ends_with(&format!("/{file}"))
            || source.path == mod_rs
            || source.path.ends_with(&format!("/{mod_rs}"));
        named && source.text.contains("mod tests")
    })
}

/// The `name: "..."` of every row of `const SUBCOMMANDS` in the text of `xtask/src/main.rs`.
pub fn subcommand_names(main_rs: &str) -> Vec<String> {
    let Some(start) = main_rs.find("const SUBCOMMANDS") else {
        return Vec::new();
    };
    let table = &main_rs[start..];
    let table = &table[..table.find("];").unwrap_or(table.len())];
    table
        .lines()
        .filter_map(|line| {
            let value = line.trim().strip_prefix("name:")?.trim();
            let value = value.strip_prefix('"')?;
            Some(value[..value.find('"')?].to_owned())
        })
        .collect()
}

/// Reads the real workspace at `root`: every file and folder (but [`SKIPPED_DIRS`]), the text
/// of every `.rs` file, and the subcommands in `xtask/src/main.rs`.
pub fn gather(root: &Path) -> Result<Tree, String> {
    let mut tree = Tree::default();
    walk(root, "", &mut tree)?;
    let main_rs = tree
        .sources
        .iter()
        .find(|source| source.path == XTASK_MAIN_PATH)
        .ok_or_else(|| format!("{XTASK_MAIN_PATH} not found under {}", root.display()))?;
    tree.subcommands = subcommand_names(&main_rs.text);
    if tree.subcommands.is_empty() {
        return Err(format!("no `SUBCOMMANDS` rows found in {XTASK_MAIN_PATH}"));
    }
    Ok(tree)
}

fn walk(root: &Path, relative: &str, tree: &mut Tree) -> Result<(), String> {
    let dir = root.join(relative);
    let entries =
        fs::read_dir(&dir).map_err(|error| format!("cannot list {}: {error}", dir.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| format!("cannot list {}: {error}", dir.display()))?;
        names.push((
            entry.file_name().to_string_lossy().into_owned(),
            entry.path().is_dir(),
        ));
    }
    names.sort();
    for (name, is_dir) in names {
        let path = if relative.is_empty() {
            name.clone()
        } else {
            format!("{relative}/{name}")
        };
        if is_dir {
            if SKIPPED_DIRS.contains(&path.as_str()) || name == "node_modules" {
                continue;
            }
            walk(root, &path, tree)?;
        } else if name.ends_with(".rs") {
            let text = fs::read_to_string(root.join(&path))
                .map_err(|error| format!("cannot read {path}: {error}"))?;
            tree.sources.push(SourceFile {
                path: path.clone(),
                text,
            });
        }
        tree.paths.insert(path);
    }
    Ok(())
}

/// Checks the real `audit/README.md` under `root`. `Err` if the workspace cannot be read.
pub fn check(root: &Path) -> Result<Vec<String>, String> {
    let path = root.join(AUDIT_README_PATH);
    let readme = fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(check_table(&readme, &gather(root)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Tree {
        let source = |path: &str, text: &str| SourceFile {
            path: path.to_owned(),
            text: text.to_owned(),
        };
        Tree {
            paths: [
                "tests",
                "tests/config.rs",
                "src",
                "src/secret.rs",
                "src/sse.rs",
                "clippy.toml",
                ".ci",
                ".ci/run",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect(),
            sources: vec![
                source(
                    "tests/config.rs",
                    "#[test]\nfn crafted_entry_rule() {}\n#[tokio::test]\nasync fn crafted_async_test() {}\n",
                ),
                source(
                    "src/secret.rs",
                    "pub(crate) fn scrub<'a>(x: &'a str) {}\n#[cfg(test)]\nmod tests {\n    \
                     #[test]\n    fn crafted_debug_test() {}\n}\n",
                ),
                // A module without tests: naming `sse::tests` must fail.
                source("src/sse.rs", "pub fn parse() {}\n"),
            ],
            subcommands: vec!["check".to_owned(), "audit".to_owned()],
        }
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
            "| b | `secret::tests`, `secret::tests::crafted_debug_test`, `crate::secret::scrub` |",
            "| c | the root `clippy.toml`; `tests/` and `.ci/run` |",
            "| d | command: `cargo run -p build-xtask -- audit` (run by hand) |",
        ]);
        assert_eq!(check_table(&text, &tree()), Vec::<String>::new());
    }

    #[test]
    fn a_removed_test_fails_with_its_line() {
        let text = readme(&[
            "| a | `tests/config.rs` `crafted_entry_rule` |",
            "| b | `tests/config.rs` `a_test_that_was_renamed` |",
            "| c | `policy::tests::a_fictional_test` |",
        ]);
        assert_eq!(
            check_table(&text, &tree()),
            [
                "audit/README.md:8: `a_test_that_was_renamed`: no `fn a_test_that_was_renamed` \
                 in the workspace's .rs files",
                "audit/README.md:9: `policy::tests::a_fictional_test`: no \
                 `fn a_fictional_test` in the workspace's .rs files",
            ]
        );
    }

    #[test]
    fn a_missing_file_module_or_subcommand_fails() {
        let text = readme(&[
            "| a | `tests/gone.rs` `crafted_entry_rule` |",
            "| b | `sse::tests`, `config::tests` |",
            "| c | command: `cargo run -p build-xtask -- benchmarks` |",
            "| d | `deny.toml` |",
        ]);
        let violations = check_table(&text, &tree());
        let expected = [
            "audit/README.md:7: `tests/gone.rs`: no such file or folder",
            "audit/README.md:8: `sse::tests`: no `sse.rs` or `sse/mod.rs` in the workspace \
             declares `mod tests`",
            "audit/README.md:8: `config::tests`: no `config.rs`",
            "audit/README.md:9: `cargo run -p build-xtask -- benchmarks`: `benchmarks` is not a \
             subcommand of build-xtask (known: check, audit)",
            "audit/README.md:10: `deny.toml`: no such file or folder",
        ];
        assert_eq!(violations.len(), expected.len(), "{violations:#?}");
        for (violation, prefix) in violations.iter().zip(expected) {
            assert!(violation.starts_with(prefix), "{violation:?} vs {prefix:?}");
        }
    }

    #[test]
    fn a_fn_name_must_match_whole() {
        // `crafted_entry` is a prefix of a real test and `entry_rule` a suffix: neither exists.
        let text = readme(&["| a | `crafted_entry`, `entry_rule`, `rafted_entry_rule` |"]);
        assert_eq!(check_table(&text, &tree()).len(), 3);
        let names: Vec<&str> =
            fn_names("fn a() {}\nasync fn b<T>() {}\npub(crate) fn c(){}\nfn_d\nxfn e").collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn unrecognised_spans_empty_rows_and_broken_backticks_fail() {
        let text = readme(&[
            "| a | `cargo test --workspace` |",
            "| b | proven by careful reading |",
            "| c | `tests/config.rs` `crafted_entry_rule |",
            "| d | `not a::name!` `/etc/passwd` `../other/tests.rs` `tests` |",
        ]);
        let violations = check_table(&text, &tree());
        let expected = [
            "audit/README.md:7: `cargo test --workspace`: a command in the table must be",
            "audit/README.md:8: the row names no test, file or command",
            "audit/README.md:9: unclosed backtick",
            "audit/README.md:10: `not a::name!`: a command in the table must be",
            "audit/README.md:10: `/etc/passwd`: a file must be relative",
            "audit/README.md:10: `../other/tests.rs`: a file must be relative",
            "audit/README.md:10: `tests`: name the module that holds the tests",
        ];
        assert_eq!(violations.len(), expected.len(), "{violations:#?}");
        for (violation, prefix) in violations.iter().zip(expected) {
            assert!(violation.starts_with(prefix), "{violation:?} vs {prefix:?}");
        }
    }

    #[test]
    fn a_readme_without_the_table_fails() {
        let no_table = "# Audit\n\n| a | b |\n|---|---|\n| `x` | `y` |\n";
        assert_eq!(
            check_table(no_table, &tree()),
            [
                "audit/README.md: no table with a \"proven by\" column (the audit table is \
                 missing)"
            ]
        );
        let no_rows = "| promise | proven by |\n|---|---|\n\ntext\n";
        assert_eq!(
            check_table(no_rows, &tree()),
            ["audit/README.md: the \"proven by\" table has no rows"]
        );
    }

    #[test]
    fn only_the_proven_by_column_is_read() {
        // `nowhere` in the first column is prose; `|` inside backticks does not split cells.
        let text = readme(&["| `nowhere` and `a | b` | `crafted_entry_rule` |"]);
        assert_eq!(check_table(&text, &tree()), Vec::<String>::new());
        assert_eq!(
            proven_by_cells(&readme(&["| x | `a` |", "| y | `b` |"])),
            Ok(vec![(7, " `a` "), (8, " `b` ")])
        );
    }

    #[test]
    fn subcommands_are_read_from_the_dispatcher_table() {
        let main_rs = "struct Subcommand { name: &'static str }\n\
                       const SUBCOMMANDS: &[Subcommand] = &[\n    Subcommand {\n        \
                       name: \"check\",\n        about: \"x\",\n    },\n    Subcommand {\n        \
                       name: \"audit\",\n    },\n];\nfn main() { let name: \"no\"; }\n";
        assert_eq!(subcommand_names(main_rs), ["check", "audit"]);
        assert_eq!(subcommand_names("fn main() {}"), Vec::<String>::new());
    }

    #[test]
    fn the_real_dispatcher_has_the_audit_subcommands() {
        let main_rs = include_str!("main.rs");
        let names = subcommand_names(main_rs);
        for expected in ["check", "audit", "advisories"] {
            assert!(names.iter().any(|name| name == expected), "{names:?}");
        }
    }
}
