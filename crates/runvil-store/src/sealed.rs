//! Values sealed at rest: a credential in the store is AES-256-GCM ciphertext under the store
//! key (`--store-key-file`), which the database never holds, so whoever reads the table
//! (an administrator, a backup) reads no token. The record's kind and key are the associated
//! data: a sealed value moved to another row does not open, so rows cannot be swapped. A value
//! that does not open is [`Error::Sealed`], naming the key, never "no value".
//!
//! A sealed value is text: `v1:` then the base64 of the 96-bit random nonce, the ciphertext
//! and the 128-bit tag.

use aws_lc_rs::aead::{AES_256_GCM, Aad, NONCE_LEN, Nonce, RandomizedNonceKey};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

use crate::{Error, Kind};

/// The form's version, first in every sealed value.
const FORM: &str = "v1:";

/// The key that seals and opens values. `Debug` shows nothing of it.
pub struct SealingKey(RandomizedNonceKey);

impl SealingKey {
    /// The key of these 32 bytes.
    pub fn new(bytes: &[u8; 32]) -> Self {
        // A 32-byte key is always one AES-256-GCM accepts.
        match RandomizedNonceKey::new(&AES_256_GCM, bytes) {
            Ok(key) => Self(key),
            Err(_) => unreachable!("AES-256-GCM takes any 32-byte key"),
        }
    }

    /// `value` sealed for the record of `kind` under `key`.
    pub fn seal(&self, kind: Kind, key: &str, value: &str) -> Result<String, Error> {
        let mut bytes = value.as_bytes().to_vec();
        let nonce = self
            .0
            .seal_in_place_append_tag(Aad::from(associated(kind, key)), &mut bytes)
            .map_err(|_| Error::Query("cannot seal a value".to_owned()))?;
        let mut sealed = nonce.as_ref().to_vec();
        sealed.extend_from_slice(&bytes);
        Ok(format!("{FORM}{}", STANDARD.encode(sealed)))
    }

    /// The value `sealed` holds, if it was sealed with this key for the record of `kind`
    /// under `key`.
    pub fn open(&self, kind: Kind, key: &str, sealed: &str) -> Result<Zeroizing<String>, Error> {
        let refused = || Error::Sealed {
            key: key.to_owned(),
        };
        let bytes = sealed
            .strip_prefix(FORM)
            .and_then(|text| STANDARD.decode(text).ok())
            .filter(|bytes| bytes.len() >= NONCE_LEN)
            .ok_or_else(refused)?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| refused())?;
        let mut buffer = Zeroizing::new(ciphertext.to_vec());
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(associated(kind, key)), &mut buffer)
            .map_err(|_| refused())?;
        let text = std::str::from_utf8(plain).map_err(|_| refused())?;
        Ok(Zeroizing::new(text.to_owned()))
    }
}

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey([redacted])")
    }
}

/// What binds a sealed value to its row: `runvil`, the kind and the key.
fn associated(kind: Kind, key: &str) -> Vec<u8> {
    format!("runvil\0{}\0{key}", kind.as_str()).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = r#"{"access_token":"tok-canary-3e8f"}"#;

    #[test]
    fn a_value_opens_only_with_its_key_for_its_row_as_sealed() {
        let key = SealingKey::new(&[7; 32]);
        let sealed = key.seal(Kind::Credentials, "docs", TOKEN).expect("sealed");
        assert!(
            sealed.starts_with("v1:") && !sealed.contains("canary"),
            "{sealed}"
        );
        assert_ne!(
            sealed,
            key.seal(Kind::Credentials, "docs", TOKEN).expect("sealed"),
            "a new nonce each time"
        );
        let opened = key
            .open(Kind::Credentials, "docs", &sealed)
            .expect("opened");
        assert_eq!(opened.as_str(), TOKEN);

        let refused = |result: Result<Zeroizing<String>, Error>, key: &str| {
            let error = result.expect_err("refused");
            assert_eq!(
                error,
                Error::Sealed {
                    key: key.to_owned()
                }
            );
        };
        refused(
            SealingKey::new(&[8; 32]).open(Kind::Credentials, "docs", &sealed),
            "docs",
        );
        refused(key.open(Kind::Credentials, "github", &sealed), "github");
        refused(key.open(Kind::Pins, "docs", &sealed), "docs");
        let mut tampered = sealed.into_bytes();
        let at = tampered.len() - 5;
        tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
        refused(
            key.open(
                Kind::Credentials,
                "docs",
                &String::from_utf8(tampered).expect("text"),
            ),
            "docs",
        );
        for broken in ["", "v1:", "v1:AAAA", "v2:AAAAAAAAAAAAAAAAAAAAAAAA", TOKEN] {
            refused(key.open(Kind::Credentials, "docs", broken), "docs");
        }
        assert_eq!(format!("{key:?}"), "SealingKey([redacted])");
    }
}
