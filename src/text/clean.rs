//! Text cleaning: what a model may read of a server's text, and how much of it.
//!
//! "Clean" is this module's one verb: it removes what can deceive a reader without being seen
//! (terminal escape sequences, and the control and invisible characters [`chars`] finds by
//! their Unicode properties). Removing configured secrets is another job with another verb:
//! the scrubber's (`text::scrubber`). Text for log lines is escaped instead ([`log_safe`]),
//! since an operator must see what was there.

use super::Escape;
use serde_json::{Map, Value};

use super::chars;

/// Cuts `text` to `max` characters, saying how many were cut.
pub(crate) fn truncate(text: String, max: usize) -> String {
    // No more bytes than the limit means no more characters: nothing to count.
    if text.len() <= max {
        return text;
    }
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let cut = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    format!("{}\n[... {} characters cut]", &text[..cut], total - max)
}

/// Removes terminal escape sequences (CSI, OSC, DCS and the rest, 7- and 8-bit), control
/// characters other than newline and tab, and invisible characters, and makes every other
/// space an ordinary one (see [`chars`]).
pub(crate) fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        // Results are mostly runs of plain text: copy each run whole.
        let plain = plain_len(rest.as_bytes());
        out.push_str(&rest[..plain]);
        let mut tail = rest[plain..].chars();
        let Some(c) = tail.next() else { break };
        match c {
            '\u{1B}' => match tail.next() {
                Some('[') => skip_csi(&mut tail),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut tail),
                _ => {} // a two-character escape
            },
            '\u{9B}' => skip_csi(&mut tail),
            '\u{9D}' | '\u{90}' | '\u{98}' | '\u{9E}' | '\u{9F}' => skip_string(&mut tail),
            c => out.extend(chars::shown(c)),
        }
        rest = tail.as_str();
    }
    out
}

/// How many leading bytes are printable ASCII, newline or tab: text that needs no decision.
pub(super) fn plain_len(bytes: &[u8]) -> usize {
    // Blocks are tested without an early exit, which compiles to SIMD; a search byte by byte
    // made cleaning a 1 MiB result cost milliseconds.
    const BLOCK: usize = 32;
    let is_plain = |b: u8| matches!(b, b' '..=b'~' | b'\n' | b'\t');
    let whole = bytes
        .chunks_exact(BLOCK)
        .take_while(|block| block.iter().fold(true, |all, &b| all & is_plain(b)))
        .count()
        * BLOCK;
    let tail = &bytes[whole..];
    whole
        + tail
            .iter()
            .position(|&b| !is_plain(b))
            .unwrap_or(tail.len())
}

fn skip_csi(chars: &mut std::str::Chars<'_>) {
    // Parameters and intermediates up to a final byte in 0x40..=0x7E.
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7E}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut std::str::Chars<'_>) {
    // Up to BEL, ST (ESC \) or the 8-bit ST; an unterminated one runs to the end.
    while let Some(c) = chars.next() {
        match c {
            '\u{07}' | '\u{9C}' => break,
            '\u{1B}' if chars.as_str().starts_with('\\') => {
                chars.next();
                break;
            }
            _ => {}
        }
    }
}

/// `text` for a log line, written through the contract's one escaper: every character that
/// cleaning would change escaped, newlines included. tracing writes field values as they are,
/// so a server could otherwise move the cursor, retitle the terminal, forge a line in the
/// Host's logs or hide text in it. On cleaned text (a [`Shown`](super::Shown)) only newlines
/// and tabs are left to escape.
pub(crate) fn log_safe(text: &str) -> Escape<'_> {
    Escape::with(text, |c| !c.is_control() && chars::shown(c) == Some(c))
}

/// A copy of a schema with every key and string cleaned, for a model to read.
pub(crate) fn clean_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(clean_text(s)),
        Value::Array(items) => Value::Array(items.iter().map(clean_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (clean_text(k), clean_value(v)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}
