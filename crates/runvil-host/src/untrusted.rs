//! How runvil prints a text that came through the Pack (a server's status reason, a call's
//! error, a progress message) where a person reads it: on the line runvil gave it.
//!
//! The Pack cleans what servers send (escape sequences, invisible characters), but it keeps
//! newlines, which a model reads as text. Printed as it is, a reason with a newline followed
//! by `runvil: s is authorized` would be a line runvil never wrote. So every control
//! character is escaped as Rust writes it (`\n`, `\u{1b}`), and nothing else is changed: quotes
//! and backslashes stay readable. The escaping is the contract's [`Escape`], the Pack's too.
//!
//! A cause that a reason's own words do not make plain (a TLS handshake answered by a
//! plain-HTTP port) is named by the Pack, which knows it by its type; runvil matches no words.

use runvil_plugin::Escape;

/// `text` as runvil prints it: control characters escaped (the contract's
/// [`Escape::controls`]).
pub(crate) fn shown(text: &str) -> String {
    Escape::controls(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_nothing_else_changes() {
        assert_eq!(
            shown("nope\nrunvil: s is authorized"),
            "nope\\nrunvil: s is authorized"
        );
        assert_eq!(
            shown("a\r\tb\u{1b}[2J\u{7f}\u{85}\u{2028}c"),
            "a\\r\\tb\\u{1b}[2J\\u{7f}\\u{85}\\u{2028}c"
        );
        let plain = r#"unknown namespace "nope"; C:\path — 服务器 ✓"#;
        assert_eq!(shown(plain), plain);
        assert_eq!(shown(""), "");
    }
}
