//! `runvil check`: which config was read, and for each server whether the Pack accepts or
//! refuses it and why (or that it is turned off, `"disabled": true`, and left out), without any network I/O, so an `mcp.json` can be checked before it is
//! committed (or in CI, where its servers are out of reach).
//!
//! It asks the Pack itself rather than repeating its rules: the Pack parses every entry while
//! it is built, and its status shows each one at once, before any connection. The Pack is
//! built on a runtime that is never driven, so its connection tasks are dropped without having
//! run: a valid entry is `loading` at that instant, a refused one refused with its reason.

use runvil_plugin::BackendState;
use serde_json::Value;

use crate::cli::Source;
use crate::discovery;
use crate::host::{self, EXIT_OK, EXIT_OTHER};

/// One entry's verdict.
#[derive(Debug, PartialEq)]
pub(crate) struct Verdict {
    pub(crate) namespace: String,
    /// `None` when accepted, else the reason it is refused.
    pub(crate) refused: Option<String>,
}

/// Runs the check and answers the process's exit code. Needs no runtime: it makes its own
/// and never runs it.
pub(crate) fn run(source: &Source) -> u8 {
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    host::say(&format!("{} ({})", config.path.display(), config.origin));
    // Advice, not verdicts: they leave the exit code to the Pack's verdicts.
    discovery::say_warnings(&config.warnings);
    let verdicts = match verdicts(config.servers) {
        Ok(verdicts) => verdicts,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    if verdicts.is_empty() && config.disabled.is_empty() {
        // Most likely a typo in `mcpServers`: the Pack would run with nothing to offer.
        eprintln!("runvil: no servers: the file has no entries in mcpServers (or servers)");
        return EXIT_OTHER;
    }
    // Every entry in name order, those turned off among them.
    let mut lines: Vec<(String, String)> = (verdicts.iter())
        .map(|verdict| {
            let outcome = match &verdict.refused {
                None => "accepted".to_owned(),
                Some(reason) => format!("refused: {reason}"),
            };
            (verdict.namespace.clone(), outcome)
        })
        .collect();
    lines.extend((config.disabled.iter()).map(|name| (escaped(name), DISABLED.to_owned())));
    lines.sort();
    let width = lines.iter().map(|(name, _)| name.chars().count()).max();
    let width = width.unwrap_or(0);
    for (namespace, outcome) in &lines {
        host::say(&format!("  {namespace:<width$}  {outcome}"));
    }
    let accepted = verdicts.iter().filter(|v| v.refused.is_none()).count();
    let turned_off = match config.disabled.len() {
        0 => String::new(),
        n => format!(", {n} {DISABLED}"),
    };
    host::say(&format!(
        "{accepted} of {} accepted{turned_off}",
        verdicts.len()
    ));
    if accepted == verdicts.len() {
        EXIT_OK
    } else {
        EXIT_OTHER
    }
}

/// What `check` says of an entry turned off with `"disabled": true`, which runvil leaves out
/// (neither accepted nor refused: the Pack never sees it).
const DISABLED: &str = "disabled";

/// A namespace as `check` prints it: a config can hold control characters, which are not for
/// a terminal.
fn escaped(name: &str) -> String {
    name.escape_debug().to_string()
}

/// Every entry's verdict, as the Pack sees it the instant it is built.
pub(crate) fn verdicts(servers: Value) -> Result<Vec<Verdict>, String> {
    // Never driven: tasks spawned on it never run, so no socket is ever opened.
    let idle = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("cannot make a runtime: {e}"))?;
    let pack = host::build_pack(servers, idle.handle().clone())?;
    let statuses = pack.status().borrow().clone();
    Ok(statuses
        .into_iter()
        .map(|s| Verdict {
            namespace: escaped(&s.name),
            refused: match s.state {
                BackendState::Refused(reason) => Some(crate::untrusted::shown(&reason)),
                _ => None,
            },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn valid_entries_are_accepted_and_others_refused_with_the_pack_s_reason() {
        let servers = json!({
            "ok": {"url": "http://127.0.0.1:9/mcp"},
            "local": {"command": "npx"},
        });
        let verdicts = verdicts(servers).expect("verdicts");
        assert_eq!(
            verdicts,
            [
                Verdict {
                    namespace: "local".to_owned(),
                    refused: Some("local MCP servers (command) are not supported yet".to_owned()),
                },
                Verdict {
                    namespace: "ok".to_owned(),
                    refused: None,
                },
            ]
        );
    }

    #[test]
    fn a_config_that_is_not_an_object_is_the_pack_s_refusal() {
        let error = verdicts(json!([1])).expect_err("refused");
        assert!(error.contains("must be an object of servers"), "{error}");
    }
}
