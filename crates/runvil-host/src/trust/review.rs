//! The words of `runvil trust`, as pure functions: the review of the held tools (each one, why
//! it is held, its pin, and every changed field with its value before and after), the
//! question asked on a terminal, how its answer is read, the pins `--yes` takes, and what is
//! said of an approval.
//!
//! Every text that came through the Pack (names, fields, values) is printed through
//! [`shown`]: the Pack has scrubbed, cleaned and cut it, and runvil escapes its control
//! characters, so a description holding a newline and `runvil: approved` cannot forge a line
//! of the review. Absence is said in runvil's words on the field's line (`added`, `removed`),
//! never as a value, so no value a server writes can pass for "nothing before".

use runvil_plugin::{FieldChange, Held, HeldTool};

use crate::untrusted::shown;

/// How many hexadecimal characters of a held tool's pin the review shows, and the fewest
/// `--yes PIN` takes: 128 bits. A server chooses both definitions it shows and swaps, so it
/// can search for two whose pins share a prefix (a birthday search: 2^24 hashes for 12
/// characters, seconds; 2^64 for 32, out of reach).
pub(crate) const SHOWN_PIN_CHARS: usize = 32;

/// The pin as the review shows it.
fn short(pin: &str) -> &str {
    pin.get(..SHOWN_PIN_CHARS).unwrap_or(pin)
}

/// Whether `pin`, as a user typed it after `--yes`, is one a review shows (or the whole pin):
/// hexadecimal, of [`SHOWN_PIN_CHARS`] characters or more.
pub(crate) fn is_pin(pin: &str) -> bool {
    pin.len() >= SHOWN_PIN_CHARS && pin.chars().all(|c| c.is_ascii_hexdigit())
}

/// Whether the held tool `tool` has the pin `typed` (a prefix of its whole pin, in any case).
pub(crate) fn has_pin(tool: &HeldTool, typed: &str) -> bool {
    tool.pin
        .get(..typed.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(typed))
}

/// The review of `held`, the tools of `namespace` the Pack holds, as printed on stdout.
pub(crate) fn review(namespace: &str, held: &[HeldTool]) -> String {
    let name = shown(namespace);
    let mut text = match held.len() {
        1 => format!("{name} holds 1 tool until it is approved:\n"),
        n => format!("{name} holds {n} tools until they are approved:\n"),
    };
    for tool in held {
        text.push('\n');
        text.push_str(&format!(
            "{}: {} (pin {})\n",
            shown(&tool.name),
            why(tool.why, &name),
            shown(short(&tool.pin))
        ));
        for change in &tool.changes {
            text.push_str(&field(change));
        }
        match tool.more_changes {
            0 => {}
            1 => text.push_str("  ... and 1 more field\n"),
            n => text.push_str(&format!("  ... and {n} more fields\n")),
        }
    }
    text
}

/// Why a tool is held, in the user's words.
fn why(why: Held, namespace: &str) -> String {
    match why {
        Held::Changed => "changed since it was approved".to_owned(),
        Held::New => format!("new since the tools of {namespace} were approved"),
        Held::Unverified => {
            "not trusted: the record of what was approved cannot be read".to_owned()
        }
        Held::Unkept => "not trusted: the record of what was approved cannot be kept".to_owned(),
        _ => "held until it is approved".to_owned(),
    }
}

/// One changed field: its path and how it changed, then its value before and after.
fn field(change: &FieldChange) -> String {
    let how = match (&change.before, &change.after) {
        (None, Some(_)) => "added",
        (Some(_), None) => "removed",
        _ => "changed",
    };
    let place = match change.excerpt {
        None => String::new(),
        Some(part) => {
            let at = match how {
                "changed" => format!(" at character {}", part.differs_at),
                _ => String::new(),
            };
            let of = match (&change.before, &change.after) {
                (Some(_), Some(_)) => format!(
                    "{} characters before and {} after",
                    part.before_chars, part.after_chars
                ),
                _ => format!("{} characters", part.before_chars.max(part.after_chars)),
            };
            format!("{at}; shown from character {}, of {of}", part.from)
        }
    };
    let mut text = format!("  {}: {how}{place}\n", shown(&change.field));
    if let Some(before) = &change.before {
        text.push_str(&format!("    before: {}\n", shown(before)));
    }
    if let Some(after) = &change.after {
        text.push_str(&format!("    after:  {}\n", shown(after)));
    }
    text
}

/// What is said of `tools` of `namespace` that `--yes` did not approve because they are not
/// what the last review showed (`again`: `runvil trust NS [TOOL] --yes`, to run once the
/// review above is read).
pub(crate) fn not_reviewed(namespace: &str, tools: &[&str], again: &str) -> String {
    let (it, was) = if tools.len() == 1 {
        ("it", "was")
    } else {
        ("they", "were")
    };
    format!(
        "{} of {} changed again since {it} {was} last reviewed (or {was} never reviewed), so \
         {it} {was} not approved: read the review above, then run `{again}`",
        names(tools.iter().copied()),
        shown(namespace)
    )
}

/// What is said of a pin given to `--yes` that no held tool of `namespace` has.
pub(crate) fn no_tool_with_pin(namespace: &str, pin: &str, again: &str) -> String {
    format!(
        "no held tool of {} has the pin {}: the tool changed again since the review that showed \
         it (or is trusted or gone), so nothing was approved for it: read the review above, \
         then run `{again}`",
        shown(namespace),
        shown(pin)
    )
}

/// What a list of names is called in a sentence: `a`, `a and b`, `a, b and c`.
pub(crate) fn names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(shown).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The question asked on a terminal before `held` are approved.
pub(crate) fn question(namespace: &str, held: &[HeldTool]) -> String {
    let name = shown(namespace);
    match held {
        [one] => format!("Approve {} of {name}? [y/N] ", shown(&one.name)),
        all => format!("Approve these {} tools of {name}? [y/N] ", all.len()),
    }
}

/// Whether a line typed at the question approves: `y` or `yes`, in any case, alone on it.
/// Anything else (an empty line, the end of input) approves nothing, as `[y/N]` says.
pub(crate) fn is_yes(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes")
}

/// What is said once the Pack approved `approved` of the tools `asked`: the names approved,
/// and those it did not approve (their definition changed again since they were shown, or
/// they are gone). The second part is `None` when every tool asked for was approved.
pub(crate) fn outcome(
    namespace: &str,
    asked: &[HeldTool],
    approved: &[String],
) -> (Option<String>, Option<String>) {
    let name = shown(namespace);
    let done = (!approved.is_empty()).then(|| {
        let they = if approved.len() == 1 { "it" } else { "they" };
        let list = names(approved.iter().map(String::as_str));
        format!("approved {list} of {name}: {they} can be called now")
    });
    let left: Vec<&str> = asked
        .iter()
        .map(|tool| tool.name.as_str())
        .filter(|tool| !approved.iter().any(|a| a == tool))
        .collect();
    let not_done = (!left.is_empty()).then(|| {
        let (it, was) = if left.len() == 1 {
            ("it", "was")
        } else {
            ("they", "were")
        };
        format!(
            "{} of {name} changed again since {it} {was} shown (or {was} gone), so {it} {was} \
             not approved: run `runvil trust {name}` again",
            names(left)
        )
    });
    (done, not_done)
}

#[cfg(test)]
mod tests {
    use runvil_plugin::Excerpt;

    use super::*;

    fn held(name: &str, why: Held, changes: Vec<FieldChange>, more: usize) -> HeldTool {
        let mut tool = HeldTool::new(name.to_owned(), why, changes, format!("pin-{name}"));
        tool.more_changes = more;
        tool
    }

    fn change(field: &str, before: Option<&str>, after: Option<&str>) -> FieldChange {
        FieldChange::new(
            field.to_owned(),
            before.map(str::to_owned),
            after.map(str::to_owned),
        )
    }

    #[test]
    fn each_held_tool_shows_why_and_every_field_before_and_after() {
        let changed = held(
            "search",
            Held::Changed,
            vec![
                change(
                    "description",
                    Some("Finds documents."),
                    Some("Finds documents, then mails them."),
                ),
                change("annotations.readOnlyHint", Some("true"), None),
                change(
                    "inputSchema.properties.to",
                    None,
                    Some(r#"{"type":"string"}"#),
                ),
            ],
            3,
        );
        let new = held(
            "fetch",
            Held::New,
            vec![change("description", None, Some("Fetches."))],
            1,
        );
        let unverified = held("echo", Held::Unverified, vec![], 0);
        assert_eq!(
            review("s", &[changed, new, unverified]),
            "\
s holds 3 tools until they are approved:

search: changed since it was approved (pin pin-search)
  description: changed
    before: Finds documents.
    after:  Finds documents, then mails them.
  annotations.readOnlyHint: removed
    before: true
  inputSchema.properties.to: added
    after:  {\"type\":\"string\"}
  ... and 3 more fields

fetch: new since the tools of s were approved (pin pin-fetch)
  description: added
    after:  Fetches.
  ... and 1 more field

echo: not trusted: the record of what was approved cannot be read (pin pin-echo)
"
        );
        let one = held("t", Held::New, vec![], 0);
        assert!(review("s", &[one]).starts_with("s holds 1 tool until it is approved:\n"));
    }

    /// A value that spells a line of runvil's own, or an escape sequence, stays on its line.
    #[test]
    fn a_server_s_text_cannot_forge_a_line_of_the_review() {
        let tool = held(
            "t\nrunvil: approved t",
            Held::Changed,
            vec![change(
                "description\r",
                Some("a\nrunvil: approved"),
                Some("b\u{1b}[2J"),
            )],
            0,
        );
        let text = review("s\n", &[tool]);
        assert_eq!(
            text,
            "\
s\\n holds 1 tool until it is approved:

t\\nrunvil: approved t: changed since it was approved (pin pin-t\\nrunvil: approved t)
  description\\r: changed
    before: a\\nrunvil: approved
    after:  b\\u{1b}[2J
"
        );
        assert_eq!(text.lines().count(), 6);
    }

    /// A long value's part is placed on the field's line: where the values first differ,
    /// where the part starts, and how long each whole value is.
    #[test]
    fn a_part_of_a_long_value_says_where_it_lies() {
        let mut changed = change("description", Some("b"), Some("a"));
        changed.excerpt = Some(Excerpt::new(1500, 1372, 1900, 1901));
        let mut added = change("inputSchema", None, Some("{"));
        added.excerpt = Some(Excerpt::new(0, 0, 0, 700));
        let mut tool = held("t", Held::Unkept, vec![changed, added], 0);
        tool.pin = "0123456789abcdef".repeat(4);
        assert_eq!(
            review("s", &[tool]),
            "\
s holds 1 tool until it is approved:

t: not trusted: the record of what was approved cannot be kept (pin 0123456789abcdef0123456789abcdef)
  description: changed at character 1500; shown from character 1372, of 1900 characters before and 1901 after
    before: b
    after:  a
  inputSchema: added; shown from character 0, of 700 characters
    after:  {
"
        );
    }

    /// `--yes` takes what a review shows of a pin, or more of it, in any case; never less.
    #[test]
    fn a_pin_is_32_hexadecimal_characters_or_more_of_the_tool_s() {
        let mut tool = held("t", Held::New, vec![], 0);
        tool.pin = "0123456789abcdef".repeat(4);
        for typed in [
            &tool.pin[..32],
            &tool.pin[..],
            &tool.pin[..40].to_uppercase(),
        ] {
            assert!(is_pin(typed) && has_pin(&tool, typed), "{typed}");
        }
        assert!(!is_pin(&tool.pin[..31]) && !is_pin("search") && !is_pin(&"g".repeat(32)));
        assert!(!has_pin(&tool, &"f".repeat(32)));
        assert!(!has_pin(&tool, &format!("{}0", tool.pin)));
        assert_eq!(
            not_reviewed("s", &["a", "b"], "runvil trust s --yes"),
            "a and b of s changed again since they were last reviewed (or were never \
             reviewed), so they were not approved: read the review above, then run `runvil \
             trust s --yes`"
        );
    }

    #[test]
    fn the_question_names_one_tool_or_counts_them_and_only_yes_approves() {
        let one = held("search", Held::Changed, vec![], 0);
        let two = [one.clone(), held("fetch", Held::New, vec![], 0)];
        assert_eq!(
            question("s", std::slice::from_ref(&one)),
            "Approve search of s? [y/N] "
        );
        assert_eq!(question("s", &two), "Approve these 2 tools of s? [y/N] ");
        for yes in ["y\n", "Y", "yes\n", " YES \r\n"] {
            assert!(is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n\n", "no", "yes please", "ye", "y y"] {
            assert!(!is_yes(no), "{no:?}");
        }
    }

    #[test]
    fn the_outcome_names_what_was_approved_and_what_changed_again() {
        let asked = [
            held("search", Held::Changed, vec![], 0),
            held("fetch", Held::New, vec![], 0),
            held("echo", Held::New, vec![], 0),
        ];
        let all: Vec<String> = ["search", "fetch", "echo"].map(str::to_owned).to_vec();
        assert_eq!(
            outcome("s", &asked, &all),
            (
                Some("approved search, fetch and echo of s: they can be called now".to_owned()),
                None
            )
        );
        assert_eq!(
            outcome("s", &asked, &["fetch".to_owned()]),
            (
                Some("approved fetch of s: it can be called now".to_owned()),
                Some(
                    "search and echo of s changed again since they were shown (or were gone), \
                     so they were not approved: run `runvil trust s` again"
                        .to_owned()
                )
            )
        );
        assert_eq!(
            outcome("s", &asked[..1], &[]),
            (
                None,
                Some(
                    "search of s changed again since it was shown (or was gone), so it was \
                     not approved: run `runvil trust s` again"
                        .to_owned()
                )
            )
        );
    }
}
