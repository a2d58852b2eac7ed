//! How runvil prints a text that came through the Pack (a server's status reason, a call's
//! error, a progress message) where a person reads it: on the line runvil gave it.
//!
//! The Pack cleans what servers send (escape sequences, invisible characters), but it keeps
//! newlines, which a model reads as text. Printed as it is, a reason with a newline followed
//! by `runvil: s is authorized` would be a line runvil never wrote. So every control
//! character is escaped as Rust writes it (`\n`, `\u{1b}`), and nothing else is changed: quotes
//! and backslashes stay readable. The escaping is the contract's [`Escape`], the Pack's too.
//!
//! The same place adds runvil's hint where it recognises a cause that the reason's own words
//! do not make plain: rustls' words for a TLS handshake answered by a plain-HTTP server.

use runvil_plugin::Escape;

/// What rustls says when a TLS handshake gets bytes that are no TLS record: most often an
/// `https://` URL at a port that serves plain HTTP.
const PLAIN_HTTP_ANSWER: &str = "InvalidContentType";

/// The hint added to a reason holding [`PLAIN_HTTP_ANSWER`].
const PLAIN_HTTP_HINT: &str = " (is this an http:// server? the URL says https://)";

/// `text` as runvil prints it: control characters escaped (the contract's
/// [`Escape::controls`]), and runvil's hint added where it recognises the cause.
pub(crate) fn shown(text: &str) -> String {
    let mut out = Escape::controls(text).to_string();
    if text.contains(PLAIN_HTTP_ANSWER) {
        out.push_str(PLAIN_HTTP_HINT);
    }
    out
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

    #[test]
    fn a_tls_handshake_with_a_plain_http_port_gets_its_hint() {
        let reason = "could not reach the server: connection failed: received corrupt message \
                      of type InvalidContentType";
        assert_eq!(
            shown(reason),
            format!("{reason} (is this an http:// server? the URL says https://)")
        );
    }
}
