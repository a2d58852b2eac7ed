//! `policy/deps.allow`, parsed once: the crates `plugin_mcp` may depend on directly, each with
//! its reason. The allow-list check compares it with the graph; the inventory quotes its
//! reasons.
//!
//! One crate name a line, then `#` and the reason; blank lines and lines starting with `#` are
//! ignored. A line that is not `name # reason`, an entry without a reason and a duplicate are
//! [`DepsAllow::problems`], which the allow-list check reports as violations.

use std::collections::BTreeMap;
use std::path::Path;

/// The allow-list, relative to the workspace root.
pub const PATH: &str = "policy/deps.allow";

/// One entry of the allow-list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its 1-based line.
    pub line: usize,
    /// The text after `#`, trimmed.
    pub reason: String,
}

/// The parsed allow-list.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DepsAllow {
    /// Crate name → its entry (the first, for a duplicate).
    pub entries: BTreeMap<String, Entry>,
    /// Format problems, each as `policy/deps.allow:<line>: ...`.
    pub problems: Vec<String>,
}

impl DepsAllow {
    /// Parses the text of `policy/deps.allow`.
    pub fn parse(text: &str) -> DepsAllow {
        let mut parsed = DepsAllow::default();
        for (index, line) in text.lines().enumerate() {
            let (number, line) = (index + 1, line.trim());
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, reason) = line.split_once('#').unwrap_or((line, ""));
            let (name, reason) = (name.trim(), reason.trim());
            let problem = if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                format!("`{line}` is not `crate-name # reason`")
            } else if let Some(first) = parsed.entries.get(name) {
                format!("{name} is already listed on line {}", first.line)
            } else {
                let entry = Entry {
                    line: number,
                    reason: reason.to_owned(),
                };
                parsed.entries.insert(name.to_owned(), entry);
                if !reason.is_empty() {
                    continue;
                }
                format!("{name} has no reason after `#`")
            };
            parsed.problems.push(format!("{PATH}:{number}: {problem}"));
        }
        parsed
    }

    /// Reads and parses `policy/deps.allow` under `root`.
    pub fn read(root: &Path) -> Result<DepsAllow, String> {
        let path = root.join(PATH);
        std::fs::read_to_string(&path)
            .map(|text| DepsAllow::parse(&text))
            .map_err(|error| format!("cannot read {}: {error}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_keep_their_line_and_reason() {
        let parsed = DepsAllow::parse("# header\n\nserde # derive\ncc   # build script\n");
        assert_eq!(parsed.problems, Vec::<String>::new());
        let cc = &parsed.entries["cc"];
        assert_eq!((cc.line, cc.reason.as_str()), (4, "build script"));
    }

    #[test]
    fn format_errors_are_problems() {
        let parsed = DepsAllow::parse("serde\nserde # again\nnot a name # x\n");
        assert_eq!(
            parsed.problems,
            [
                "policy/deps.allow:1: serde has no reason after `#`",
                "policy/deps.allow:2: serde is already listed on line 1",
                "policy/deps.allow:3: `not a name # x` is not `crate-name # reason`",
            ]
        );
    }

    #[test]
    fn an_unreadable_list_is_an_error_naming_it() {
        let error = DepsAllow::read(Path::new("/nonexistent")).expect_err("no file");
        assert!(
            error.starts_with("cannot read /nonexistent/policy/deps.allow"),
            "{error}"
        );
    }
}
