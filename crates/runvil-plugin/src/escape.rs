//! [`Escape`]: a text written where a person reads it line by line (a log line, a terminal, a
//! quoted name), with every character that could forge a line or hide itself escaped.
//!
//! Both sides of the contract print text that came from elsewhere: a Pack its logs and the
//! names it quotes, a Host the reasons and errors a Pack hands it. One wrapper does it for
//! both, borrowing the text and escaping while it is written, so no escaped copy is made
//! before it is needed and no second escaper can drift from this one. What stays as it is
//! is the caller's rule ([`Escape::with`]); every other character is written as Rust writes
//! it in a literal (`\n`, `\u{1b}`), which cannot itself start a line or an escape sequence.

use std::fmt;

/// `text` written with every character its rule does not keep escaped (see the module's
/// documentation).
#[derive(Clone, Copy)]
pub struct Escape<'a> {
    text: &'a str,
    as_is: fn(char) -> bool,
}

impl<'a> Escape<'a> {
    /// `text` with every character `as_is` refuses escaped.
    pub fn with(text: &'a str, as_is: fn(char) -> bool) -> Self {
        Self { text, as_is }
    }

    /// `text` with the characters that could end a line, move the cursor or start an escape
    /// sequence escaped: the C0 and C1 controls and DEL (tab too, which would shift what
    /// follows), and the Unicode line and paragraph separators. Nothing else changes: quotes,
    /// backslashes and every script stay readable.
    pub fn controls(text: &'a str) -> Self {
        Self::with(text, |c| {
            !c.is_control() && !matches!(c, '\u{2028}' | '\u{2029}')
        })
    }

    /// `text` with everything but printable ASCII escaped, quotes and backslashes included:
    /// for a name a reader must tell from every other one, character by character.
    pub fn ascii(text: &'a str) -> Self {
        Self::with(text, |c| {
            matches!(c, ' '..='~') && !matches!(c, '"' | '\'' | '\\')
        })
    }
}

impl fmt::Display for Escape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.text;
        // Runs of characters kept as they are are written whole.
        while let Some((at, c)) = rest.char_indices().find(|&(_, c)| !(self.as_is)(c)) {
            f.write_str(&rest[..at])?;
            fmt::Display::fmt(&c.escape_default(), f)?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

impl fmt::Debug for Escape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_nothing_else_changes() {
        let line = |text| Escape::controls(text).to_string();
        assert_eq!(
            line("nope\nrunvil: s is authorized"),
            "nope\\nrunvil: s is authorized"
        );
        assert_eq!(
            line("a\r\tb\u{1b}[2J\u{7f}\u{85}\u{2028}c"),
            "a\\r\\tb\\u{1b}[2J\\u{7f}\\u{85}\\u{2028}c"
        );
        let plain = r#"unknown namespace "nope"; C:\path — 服务器 ✓"#;
        assert_eq!(line(plain), plain);
        assert_eq!(line(""), "");
    }

    #[test]
    fn ascii_escapes_as_the_standard_library_does() {
        let text = "a\"b'c\\d\ne\u{1b}é\u{202e}~ z";
        assert_eq!(
            Escape::ascii(text).to_string(),
            text.escape_default().to_string()
        );
    }
}
