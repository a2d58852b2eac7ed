//! API keys for scripts (`--api-keys FILE`): the file of `NAME SHA256HEX` lines, how a
//! presented key is found in it, and `runvil gateway-key NAME`, which makes a new key.
//!
//! The file holds each key's SHA-256, never the key, so reading it gives no one a way in. A
//! key is 32 random bytes from the system (aws-lc-rs), written as [`KEY_PREFIX`] then URL-safe
//! Base64, so a key that leaks is recognisable in a log or a repository (as GitHub's `ghp_`
//! tokens are) and the gatekeeper tells a key from a JWT without trying both. A presented key
//! is hashed and the hash compared with every hash of the file in constant time, so the time
//! an answer takes says nothing about how near a guess came.
//!
//! The file: one key a line, `NAME SHA256HEX` separated by spaces or tabs; blank lines and
//! lines starting with `#` are ignored. A malformed line refuses the whole file at start,
//! naming its line number, never its text.

use std::path::Path;

use aws_lc_rs::constant_time::verify_slices_are_equal;
use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{GatewayError, read_settings_file};

/// What every key starts with: `rvk_` (runvil key).
pub(crate) const KEY_PREFIX: &str = "rvk_";

/// The random bytes of a key: 256 bits, beyond any guessing.
const KEY_BYTES: usize = 32;

/// The longest name of a key: it is written into every audit line of the key's calls.
pub(crate) const MAX_KEY_NAME_CHARS: usize = 64;

/// The keys of the file, by the SHA-256 of each.
pub(crate) struct ApiKeys {
    keys: Vec<(String, [u8; 32])>,
}

impl ApiKeys {
    /// Reads and checks the file.
    pub(crate) fn load(path: &Path) -> Result<Self, GatewayError> {
        let text = read_settings_file(path)?;
        Self::parse(&text).map_err(|problem| GatewayError::file(path, problem))
    }

    fn parse(text: &str) -> Result<Self, String> {
        let mut keys: Vec<(String, [u8; 32])> = Vec::new();
        let mut lines: Vec<usize> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, hash] = fields[..] else {
                return Err(format!(
                    "line {number} is not `NAME SHA256HEX` (a name, then the key's SHA-256 in \
                     hexadecimal)"
                ));
            };
            if !is_key_name(name) {
                return Err(format!("line {number}: {}", name_rule()));
            }
            let Some(hash) = parse_hex_sha256(hash) else {
                return Err(format!(
                    "line {number}: the hash is not 64 hexadecimal digits (a SHA-256)"
                ));
            };
            if let Some(first) = keys.iter().position(|(n, _)| n == name) {
                return Err(format!(
                    "line {number}: the name is already used on line {}",
                    lines[first]
                ));
            }
            if let Some(first) = keys.iter().position(|(_, h)| *h == hash) {
                return Err(format!(
                    "line {number}: the hash is already used on line {}, so one key would have \
                     two names",
                    lines[first]
                ));
            }
            keys.push((name.to_owned(), hash));
            lines.push(number);
        }
        Ok(Self { keys })
    }

    /// Whether `token` is written as a key is (it may still be no key of the file).
    pub(crate) fn looks_like_key(token: &str) -> bool {
        token.starts_with(KEY_PREFIX)
    }

    /// The name of the key `token` is, if it is one of the file's. Every hash is compared, in
    /// constant time each.
    pub(crate) fn find(&self, token: &str) -> Option<&str> {
        let presented = digest(&SHA256, token.as_bytes());
        let mut found = None;
        for (name, hash) in &self.keys {
            if verify_slices_are_equal(presented.as_ref(), hash).is_ok() {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// Whether `name` may name a key: 1 to [`MAX_KEY_NAME_CHARS`] of `A-Z a-z 0-9 . _ -`, so
/// `key:NAME` stays one word in a log line, a policy file and a table.
pub(crate) fn is_key_name(name: &str) -> bool {
    (1..=MAX_KEY_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What [`is_key_name`] asks, in the words of an error.
pub(crate) fn name_rule() -> String {
    format!("the name is not 1 to {MAX_KEY_NAME_CHARS} of A-Z a-z 0-9 . _ -")
}

fn parse_hex_sha256(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// Lower-case hexadecimal, as `sha256sum` writes a hash.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new key named `name`: the key, and the line of the key file that admits it. `Err` when
/// the name is not one a key may have, or the system gives no random bytes.
pub(crate) fn new_key(name: &str) -> Result<(String, String), String> {
    if !is_key_name(name) {
        return Err(name_rule());
    }
    let mut bytes = [0u8; KEY_BYTES];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| "the system gave no random bytes")?;
    let key = format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let line = format!("{name} {}", hex(digest(&SHA256, key.as_bytes()).as_ref()));
    Ok((key, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_is_admitted_by_its_line_and_by_no_other() {
        let (key, line) = new_key("ci").expect("a key");
        assert!(key.starts_with("rvk_"), "{key}");
        assert_eq!(key.len(), 4 + 43, "32 bytes of Base64url: {key}");
        assert!(line.starts_with("ci "), "{line}");
        assert!(!line.contains(&key), "the line holds the hash, not the key");
        let (other, other_line) = new_key("deploy").expect("a key");
        assert_ne!(key, other, "random each time");

        let keys = ApiKeys::parse(&format!(
            "# the team's scripts\n\n{line}\n  {other_line}  \n"
        ))
        .expect("a good file");
        assert_eq!(keys.find(&key), Some("ci"));
        assert_eq!(keys.find(&other), Some("deploy"));
        assert_eq!(keys.find(&format!("{key}x")), None);
        assert_eq!(keys.find(&key[..key.len() - 1]), None);
        assert_eq!(keys.find(""), None);
        assert!(ApiKeys::looks_like_key(&key));
        assert!(!ApiKeys::looks_like_key("eyJhbGciOiJFUzI1NiJ9.e30.sig"));
    }

    #[test]
    fn a_bad_name_gets_no_key() {
        for bad in ["", "a b", "key:ci", "ci/x", "é", &"n".repeat(65)] {
            assert_eq!(
                new_key(bad),
                Err("the name is not 1 to 64 of A-Z a-z 0-9 . _ -".to_owned()),
                "{bad:?}"
            );
        }
        assert!(
            new_key(&"n".repeat(64)).is_ok(),
            "64 characters is the limit"
        );
        assert!(new_key("build.ci_2-x").is_ok());
    }

    /// Each error names the line, never its text: a line may be a key pasted by mistake.
    #[test]
    fn a_malformed_line_refuses_the_file_naming_its_number_only() {
        let hash = "a".repeat(64);
        let pasted = "rvk_secretsecretsecretsecretsecretsecretsecret1";
        for (text, want) in [
            (
                format!("ci {hash}\n{pasted}\n"),
                "line 2 is not `NAME SHA256HEX` (a name, then the key's SHA-256 in hexadecimal)",
            ),
            (
                format!("ci {hash} extra\n"),
                "line 1 is not `NAME SHA256HEX` (a name, then the key's SHA-256 in hexadecimal)",
            ),
            (
                format!("ci {pasted}\n"),
                "line 1: the hash is not 64 hexadecimal digits (a SHA-256)",
            ),
            (
                format!("ci {}\n", "g".repeat(64)),
                "line 1: the hash is not 64 hexadecimal digits (a SHA-256)",
            ),
            (
                format!("ci {}\n", "a".repeat(63)),
                "line 1: the hash is not 64 hexadecimal digits (a SHA-256)",
            ),
            (
                format!("\n# x\nkey:ci {hash}\n"),
                "line 3: the name is not 1 to 64 of A-Z a-z 0-9 . _ -",
            ),
            (
                format!("ci {hash}\nci {}\n", "b".repeat(64)),
                "line 2: the name is already used on line 1",
            ),
            (
                format!("ci {hash}\n\nother {}\n", hash.to_uppercase()),
                "line 3: the hash is already used on line 1, so one key would have two names",
            ),
        ] {
            let error = ApiKeys::parse(&text).err().expect("refused");
            assert_eq!(error, want, "{text}");
            assert!(!error.contains(pasted) && !error.contains(&hash));
        }
        assert_eq!(ApiKeys::parse("").map(|k| k.keys.len()), Ok(0));
    }

    #[test]
    fn the_file_is_read_within_its_cap() {
        let dir = std::env::temp_dir().join(format!("runvil-api-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("keys");
        let (key, line) = new_key("ci").expect("a key");
        // Padded with comment lines to exactly the cap, then one byte more.
        let cap = usize::try_from(crate::gateway::MAX_SETTINGS_FILE_BYTES).expect("fits");
        let head = format!("{line}\n");
        let padding = cap - head.len();
        let text = format!("{head}#{}", "x".repeat(padding - 1));
        assert_eq!(text.len(), cap);
        std::fs::write(&path, &text).expect("written");
        let keys = ApiKeys::load(&path).expect("a file at the cap");
        assert_eq!(keys.find(&key), Some("ci"));
        std::fs::write(&path, format!("{text}x")).expect("written");
        let error = ApiKeys::load(&path).err().expect("one byte past the cap");
        assert_eq!(
            error.to_string(),
            format!("{}: larger than 1048576 bytes", path.display())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
