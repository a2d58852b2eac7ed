//! `plugin_mcp`'s public surface is exactly `pub fn install`.
//!
//! A Host reaches a Plugin only through the Plugin contract (`runvil-plugin`), which `install`
//! hands over; anything else `plugin_mcp` exported would become an API that Hosts could couple
//! to. This check reads the crate root's text rather than compiling it, so it stays simple:
//!
//! - it looks only at `src/lib.rs`: items inside private modules (the other files) cannot be
//!   reached from outside, and a `pub` on them is already flagged by the workspace lint
//!   `unreachable_pub`; a private module re-exported with `pub use` is caught here;
//! - every plain `pub` in `src/lib.rs` counts, not only items (a `pub` field or an item of an
//!   inline module counts too): restricted visibility (`pub(crate)`, `pub(super)`,
//!   `pub(self)`, `pub(in path)`) is fine;
//! - `#[macro_export]` is looked for in every file under `src/`, since an exported macro is
//!   public wherever it is defined;
//! - before scanning, comments (`//` line comments, which include the `///` and `//!` doc
//!   comments, and `/* */` block comments), string literals (plain, byte, C and raw) and char
//!   literals are blanked out, so a `pub` in prose or in a string does not count.

/// One source file: its path relative to the package root (with `/`), and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// The path relative to the package root, e.g. `src/lib.rs`.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The crate root that must declare nothing public but `pub fn install`.
pub const CRATE_ROOT: &str = "src/lib.rs";

/// Returns a violation for every plain `pub` in `src/lib.rs` other than `pub fn install`, and
/// for every `#[macro_export]` in any of `files`. `files` are the `.rs` files under `src/`
/// (see [`SourceFile::path`]); a missing `src/lib.rs` is a violation too.
pub fn only_install_is_public(files: &[SourceFile]) -> Vec<String> {
    let mut violations = Vec::new();
    match files.iter().find(|file| file.path == CRATE_ROOT) {
        None => violations.push(format!("plugin_mcp has no {CRATE_ROOT} to check")),
        Some(lib) => {
            let blanked = blank_comments_and_literals(&lib.text);
            let tokens = tokens(&blanked);
            for (index, token) in tokens.iter().enumerate() {
                if token.text != "pub" {
                    continue;
                }
                let next = |offset: usize| tokens.get(index + offset).map_or("", |t| t.text);
                if next(1) == "(" || (next(1) == "fn" && next(2) == "install") {
                    continue;
                }
                violations.push(format!(
                    "{CRATE_ROOT}:{}: `pub {} {}` is public; plugin_mcp may make only \
                     `pub fn install` public (use `pub(crate)` or no `pub`)",
                    token.line,
                    next(1),
                    next(2)
                ));
            }
        }
    }
    for file in files {
        for token in tokens(&blank_comments_and_literals(&file.text)) {
            if token.text == "macro_export" {
                violations.push(format!(
                    "{}:{}: `#[macro_export]` makes a macro public; plugin_mcp exports only \
                     `pub fn install`",
                    file.path, token.line
                ));
            }
        }
    }
    violations
}

/// A word (identifier or keyword) or a single punctuation character, with its 1-based line.
#[derive(Debug, PartialEq, Eq)]
struct Token<'a> {
    text: &'a str,
    line: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits (already blanked) source into words and single punctuation characters.
fn tokens(source: &str) -> Vec<Token<'_>> {
    let mut found = Vec::new();
    let mut line = 1;
    let mut word_start: Option<usize> = None;
    for (at, c) in source.char_indices() {
        if is_word_char(c) {
            word_start.get_or_insert(at);
            continue;
        }
        if let Some(start) = word_start.take() {
            found.push(Token {
                text: &source[start..at],
                line,
            });
        }
        if c == '\n' {
            line += 1;
        } else if !c.is_whitespace() {
            found.push(Token {
                text: &source[at..at + c.len_utf8()],
                line,
            });
        }
    }
    if let Some(start) = word_start {
        found.push(Token {
            text: &source[start..],
            line,
        });
    }
    found
}

/// Replaces comments, string literals and char literals with spaces, keeping newlines (so line
/// numbers stay right) and everything else as it was. Lifetimes and labels (`'a`) are kept.
fn blank_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0_usize;
            while i < chars.len() {
                let pair = (chars[i], chars.get(i + 1).copied());
                if pair == ('/', Some('*')) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if pair == ('*', Some('/')) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if is_word_char(c) {
            // A whole word, so that an `r` or `b` inside an identifier is never a prefix.
            let start = i;
            while i < chars.len() && is_word_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let hashes = chars[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && chars.get(i + hashes) == Some(&'"') {
                // Raw string: ends at a `"` followed by the same number of `#`.
                let mut end = i + hashes + 1;
                while end < chars.len()
                    && !(chars[end] == '"'
                        && chars[end + 1..].iter().take_while(|&&h| h == '#').count() >= hashes)
                {
                    end += 1;
                }
                end = (end + 1 + hashes).min(chars.len());
                for &skipped in &chars[start..end] {
                    blank(&mut out, skipped);
                }
                i = end;
            } else {
                out.push_str(&word);
            }
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if let Some(&escaped) = chars.get(i) {
                    blank(&mut out, escaped);
                    i += 1;
                }
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' && next == Some('\\') {
            // Escaped char literal such as '\'' or '\u{1F600}': skip the escaped character,
            // then up to the closing quote.
            let mut end = (i + 3).min(chars.len());
            while end < chars.len() && chars[end] != '\'' {
                end += 1;
            }
            end = (end + 1).min(chars.len());
            for &skipped in &chars[i..end] {
                blank(&mut out, skipped);
            }
            i = end;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            // One-character literal such as '"'.
            out.push_str("   ");
            i += 3;
        } else {
            // Any other character, including the `'` of a lifetime or label.
            out.push(c);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(text: &str) -> Vec<SourceFile> {
        vec![SourceFile {
            path: CRATE_ROOT.to_owned(),
            text: text.to_owned(),
        }]
    }

    const CLEAN_LIB: &str = r###"//! plugin_mcp: pub fn in a doc comment is prose.
/// Installs the Pack; a `pub struct` mentioned in a doc comment does not count.
pub fn install(host: &mut dyn Host) -> Result<(), Error> {
    let text = "pub struct NotCode; pub fn x()";
    let raw = r##"pub mod "quoted" inside"##;
    let quote = '"'; let escaped = '\''; // pub use comment
    /* pub enum in a /* nested */ block comment */
    helper::<'static>(text, raw, quote, escaped)
}
mod client;
pub(crate) mod config;
pub(super) fn up() {}
pub(in crate::config) struct Narrow;
pub(self) const X: u8 = 1;
pub(crate) use config::Config;
macro_rules! local { () => {} }
"###;

    #[test]
    fn clean_crate_root_passes() {
        let mut files = lib(CLEAN_LIB);
        files.push(SourceFile {
            path: "src/client.rs".to_owned(),
            text: "// no #[macro_export] here\npub(crate) fn connect() {}\n".to_owned(),
        });
        assert_eq!(only_install_is_public(&files), Vec::<String>::new());
    }

    #[test]
    fn every_kind_of_public_item_is_reported() {
        let kinds = [
            "fn helper() {}",
            "mod client;",
            "use client::Client;",
            "struct Config;",
            "enum Mode { A }",
            "const LIMIT: usize = 1;",
            "static NAME: &str = \"x\";",
            "type Alias = u8;",
            "trait Tool {}",
            "macro m() {}",
            "async fn install() {}",
        ];
        for item in kinds {
            let text = format!("pub fn install() {{}}\npub {item}\n");
            let violations = only_install_is_public(&lib(&text));
            assert_eq!(violations.len(), 1, "{item}: {violations:?}");
            assert!(
                violations[0].starts_with("src/lib.rs:2: `pub "),
                "{violations:?}"
            );
        }
    }

    #[test]
    fn only_exactly_install_is_allowed() {
        let violations = only_install_is_public(&lib("pub fn install_all() {}\n"));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(
            violations[0].contains("`pub fn install_all`"),
            "{violations:?}"
        );
    }

    #[test]
    fn macro_export_anywhere_under_src_is_reported() {
        let mut files = lib("pub fn install() {}\nmod client;\n");
        files.push(SourceFile {
            path: "src/client/macros.rs".to_owned(),
            text: "\n#[macro_export]\nmacro_rules! leak { () => {} }\n".to_owned(),
        });
        let violations = only_install_is_public(&files);
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].starts_with("src/client/macros.rs:2: `#[macro_export]`"));
    }

    #[test]
    fn missing_crate_root_is_reported() {
        let violations = only_install_is_public(&[]);
        assert_eq!(
            violations,
            vec!["plugin_mcp has no src/lib.rs to check".to_owned()]
        );
    }

    #[test]
    fn blanking_keeps_code_lines_and_lifetimes() {
        let source = "a /* x\ny */ b // c\n\"s\\\"t\" 'q' '\\n' &'a r#\"z\"# br\"w\" d";
        let blanked = blank_comments_and_literals(source);
        let words: Vec<&str> = tokens(&blanked).iter().map(|t| t.text).collect();
        assert_eq!(words, ["a", "b", "&", "'", "a", "d"]);
        assert_eq!(blanked.lines().count(), source.lines().count());
    }
}
