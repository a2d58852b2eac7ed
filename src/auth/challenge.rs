//! What a `401` or `403` from an MCP server asks for: the `Bearer` (or `DPoP`) challenge of
//! its `WWW-Authenticate` header (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).
//!
//! Written by hand because no well-kept crate parses challenges; the grammar is small. The
//! values are the server's: `resource_metadata` is only ever fetched after the URL checks of
//! `fetch`, and `scope` only ever sent back to an authorization server.

use crate::policy::MAX_CHALLENGE_BYTES;

/// The parameters of the challenge a client acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// Where the protected resource's metadata is (RFC 9728).
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated.
    pub(crate) scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, `use_dpop_nonce`, ...
    pub(crate) error: Option<String>,
    /// The answer's `DPoP-Nonce` (RFC 9449 §9), which the transport reads beside the
    /// challenge.
    pub(crate) dpop_nonce: Option<String>,
}

impl Challenge {
    /// The first `Bearer` or `DPoP` challenge in `values` (the answer's `WWW-Authenticate`
    /// headers, in order), reading at most [`MAX_CHALLENGE_BYTES`] of them. An answer
    /// without one gives the empty challenge: the client then looks for metadata itself.
    pub(crate) fn parse<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut budget = MAX_CHALLENGE_BYTES;
        for value in values {
            let Some(text) = value.get(..value.len().min(budget)) else {
                break;
            };
            budget -= text.len();
            let text = String::from_utf8_lossy(text);
            if let Some(challenge) = first_bearer(&text) {
                return challenge;
            }
            if budget == 0 {
                break;
            }
        }
        Self::default()
    }

    /// The scopes asked for, each once.
    pub(crate) fn scopes(&self) -> Vec<String> {
        scopes(self.scope.as_deref().unwrap_or_default())
    }
}

/// The space-separated scopes of `text`, each once, in order.
pub(crate) fn scopes(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for scope in text.split(' ').filter(|s| !s.is_empty()) {
        if !out.iter().any(|kept| kept == scope) {
            out.push(scope.to_owned());
        }
    }
    out
}

/// One lexical item of a challenge list: a scheme starting a challenge, or a parameter.
enum Item<'a> {
    Scheme(&'a str),
    Param(&'a str, String),
}

fn first_bearer(text: &str) -> Option<Challenge> {
    let mut current: Option<Challenge> = None;
    for item in items(text) {
        match item {
            Item::Scheme(scheme) => {
                if current.is_some() {
                    break;
                }
                if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop") {
                    current = Some(Challenge::default());
                }
            }
            Item::Param(name, value) => {
                let Some(challenge) = current.as_mut() else {
                    continue;
                };
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    _ => continue,
                };
                // A repeated parameter is ambiguous; the first one counts.
                slot.get_or_insert(value);
            }
        }
    }
    current
}

/// The items of a challenge list. A scheme is a token followed by a space or the end of an
/// element; a parameter is `token = (token | quoted-string)`. Anything else is skipped.
fn items(text: &str) -> Vec<Item<'_>> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return out;
        }
        let end = rest.find(|c: char| !is_tchar(c)).unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        if token.is_empty() {
            // Not a token: skip one character.
            let mut chars = rest.chars();
            chars.next();
            rest = chars.as_str();
            continue;
        }
        let trimmed = after.trim_start_matches([' ', '\t']);
        if let Some(value) = trimmed.strip_prefix('=')
            && !value.starts_with('=')
        {
            let value = value.trim_start_matches([' ', '\t']);
            let (parsed, remaining) = param_value(value);
            out.push(Item::Param(token, parsed));
            rest = remaining;
        } else if trimmed.starts_with('=') {
            // token68 (`abc==`): part of the scheme before it, nothing a client reads.
            rest = trimmed.trim_start_matches('=');
        } else {
            out.push(Item::Scheme(token));
            rest = after;
        }
    }
}

/// A parameter's value and what follows it.
fn param_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => return (value, &quoted[at + 1..]),
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                c => value.push(c),
            }
        }
        // Unterminated: the rest is the value.
        return (value, "");
    }
    let end = text.find(|c: char| !is_tchar(c)).unwrap_or(text.len());
    (text[..end].to_owned(), &text[end..])
}

/// RFC 9110's `tchar`, plus `/` and `:` so an unquoted URL reads as one value.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~/:".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Challenge {
        Challenge::parse(values.iter().map(|v| v.as_bytes()))
    }

    #[test]
    fn reads_the_bearer_parameters_in_any_order_quoted_or_not() {
        let challenge = parse(&[
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
        ]);
        assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(challenge.scopes(), ["mcp:basic", "mcp:write"]);
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
        let unquoted = parse(&["bearer scope=read ,resource_metadata=https://a.example/m"]);
        assert_eq!(unquoted.scope.as_deref(), Some("read"));
        assert_eq!(
            unquoted.resource_metadata.as_deref(),
            Some("https://a.example/m")
        );
    }

    #[test]
    fn finds_the_bearer_or_dpop_challenge_among_others() {
        let challenge = parse(&[
            r#"Basic realm="x", Bearer scope="a""#,
            r#"Bearer scope="b""#,
        ]);
        assert_eq!(challenge.scope.as_deref(), Some("a"));
        let dpop = parse(&[r#"Negotiate abc==, DPoP error="use_dpop_nonce""#]);
        assert_eq!(dpop.error.as_deref(), Some("use_dpop_nonce"));
        let second = parse(&[r#"Basic realm="r""#, r#"Bearer scope="s""#]);
        assert_eq!(second.scope.as_deref(), Some("s"));
    }

    #[test]
    fn escapes_repeats_and_garbage() {
        let challenge = parse(&[r#"Bearer scope="a \"b\"", scope="c", error"#]);
        assert_eq!(challenge.scope.as_deref(), Some(r#"a "b""#));
        assert_eq!(challenge.error, None);
        assert_eq!(parse(&["Basic realm=\"only\""]), Challenge::default());
        assert_eq!(parse(&["\u{0}\u{7f}ü ,,, ==="]), Challenge::default());
        assert_eq!(
            parse(&[r#"Bearer scope="unterminated"#]).scope.as_deref(),
            Some("unterminated")
        );
    }

    #[test]
    fn reads_up_to_the_byte_limit_and_no_further() {
        let pad = "x".repeat(MAX_CHALLENGE_BYTES - r#"Bearer scope="s", "#.len() - 3);
        let at_limit = format!(r#"Bearer scope="s", {pad}=ab"#);
        assert_eq!(at_limit.len(), MAX_CHALLENGE_BYTES);
        assert_eq!(parse(&[&at_limit]).scope.as_deref(), Some("s"));
        let past = format!(
            r#"{}, Bearer scope="late""#,
            "y".repeat(MAX_CHALLENGE_BYTES)
        );
        assert_eq!(parse(&[&past]), Challenge::default());
        let spread = [
            "z".repeat(MAX_CHALLENGE_BYTES),
            r#"Bearer scope="s""#.to_owned(),
        ];
        assert_eq!(parse(&[&spread[0], &spread[1]]), Challenge::default());
    }
}
