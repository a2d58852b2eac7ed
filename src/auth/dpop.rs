//! DPoP (RFC 9449): tokens bound to a key of the Pack's, so a token that leaks is useless
//! without the key. Used when the authorization server lists ES256 among its
//! `dpop_signing_alg_values_supported`.
//!
//! One P-256 key per server, made when first needed and kept with the login in the Host's
//! store (its PKCS#8 form, a secret the scrubbers learn), signs a fresh proof for every request: the token request (`htm`/`htu` of the token endpoint) and every
//! request to the server (with `ath`, the token's hash). A server or authorization server that
//! asks for a nonce (`use_dpop_nonce` with `DPoP-Nonce`) gets it in the next proofs. Built by
//! hand for the reason `assertion` gives: a proof is a small JWT.

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine as _;
use base64::prelude::{BASE64_STANDARD, BASE64_URL_SAFE_NO_PAD};
use reqwest::Url;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};

use zeroize::Zeroizing;

use super::AuthError;
use crate::policy::MAX_DPOP_NONCE_BYTES;
use crate::secret::Secret;

/// The algorithm the Pack signs proofs with.
pub(crate) const ALGORITHM: &str = "ES256";

/// One server's DPoP key.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The key in PKCS#8, base64: how a login keeps it.
    stored: Secret,
    /// The public key as a JWK (RFC 7517), in every proof's header.
    jwk: Value,
}

impl DpopKey {
    pub(crate) fn generate() -> Result<Self, AuthError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthError::refused("no DPoP key could be made"))?;
        Self::from_pkcs8(Zeroizing::new(pkcs8.as_ref().to_vec()))
            .ok_or_else(|| AuthError::refused("no DPoP key could be made"))
    }

    /// The key a login kept ([`DpopKey::stored`]); `None` when it is not one.
    pub(crate) fn restore(stored: &Secret) -> Option<Self> {
        let pkcs8 = BASE64_STANDARD.decode(stored.expose()).ok()?;
        Self::from_pkcs8(Zeroizing::new(pkcs8))
    }

    /// The key as a login keeps it: a secret, which the scrubbers must learn.
    pub(crate) fn stored(&self) -> &Secret {
        &self.stored
    }

    fn from_pkcs8(pkcs8: Zeroizing<Vec<u8>>) -> Option<Self> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8).ok()?;
        let stored = Secret::new(BASE64_STANDARD.encode(&*pkcs8));
        // An uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = pair.public_key().as_ref();
        let (x, y) = point.get(1..33).zip(point.get(33..65))?;
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": BASE64_URL_SAFE_NO_PAD.encode(x),
            "y": BASE64_URL_SAFE_NO_PAD.encode(y),
        });
        Some(Self { pair, stored, jwk })
    }

    /// A proof for one request: `method` to `url` (its query and fragment left out, as
    /// RFC 9449 §4.2 says), bound to `token` when the request carries one, with the nonce the
    /// receiver asked for.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &Url,
        token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<HeaderValue, AuthError> {
        let failed = || AuthError::refused("the DPoP proof could not be signed");
        let mut jti = [0u8; 16];
        aws_lc_rs::rand::fill(&mut jti).map_err(|_| failed())?;
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let mut target = url.clone();
        target.set_query(None);
        target.set_fragment(None);
        let mut claims = json!({
            "jti": BASE64_URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": target.as_str(),
            "iat": iat,
        });
        if let Some(token) = token {
            claims["ath"] = json!(BASE64_URL_SAFE_NO_PAD.encode(digest(&SHA256, token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let input = format!(
            "{}.{}",
            BASE64_URL_SAFE_NO_PAD.encode(header.to_string()),
            BASE64_URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| failed())?;
        let proof = format!(
            "{input}.{}",
            BASE64_URL_SAFE_NO_PAD.encode(signature.as_ref())
        );
        HeaderValue::from_str(&proof).map_err(|_| failed())
    }
}

/// A `DPoP-Nonce` header's value, if it is one a proof can carry.
pub(crate) fn nonce(value: Option<&HeaderValue>) -> Option<String> {
    let value = value?.to_str().ok()?;
    let fits = !value.is_empty()
        && value.len() <= MAX_DPOP_NONCE_BYTES
        && value
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
    fits.then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    use super::*;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&BASE64_URL_SAFE_NO_PAD.decode(part).expect("b64")).expect("json")
    }

    #[test]
    fn a_proof_is_a_signed_dpop_jwt_for_one_request() {
        let key = DpopKey::generate().expect("key");
        let url = Url::parse("https://mcp.example/mcp?key=secret#f").expect("url");
        let proof = key
            .proof("POST", &url, Some("tok"), Some("n-1"))
            .expect("proof");
        let text = proof.to_str().expect("ascii");
        let parts: Vec<&str> = text.split('.').collect();
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "the private key stays");
        let claims = decode(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(
            claims["ath"],
            BASE64_URL_SAFE_NO_PAD.encode(digest(&SHA256, b"tok"))
        );
        let signature = BASE64_URL_SAFE_NO_PAD.decode(parts[2]).expect("b64");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.pair.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("verifies");
        let restored = DpopKey::restore(key.stored()).expect("restored");
        assert_eq!(restored.jwk, key.jwk, "the kept key is the same key");
        assert!(DpopKey::restore(&Secret::new("bm90IGEga2V5".to_owned())).is_none());
        let again = key.proof("POST", &url, None, None).expect("proof");
        let again = decode(
            again
                .to_str()
                .expect("ascii")
                .split('.')
                .nth(1)
                .expect("claims"),
        );
        assert_ne!(again["jti"], claims["jti"]);
        assert!(again.get("ath").is_none() && again.get("nonce").is_none());
    }

    #[test]
    fn nonces_are_short_visible_ascii_up_to_the_limit() {
        let at = "n".repeat(MAX_DPOP_NONCE_BYTES);
        let past = "n".repeat(MAX_DPOP_NONCE_BYTES + 1);
        let header = |text: &str| HeaderValue::from_str(text).expect("header");
        assert_eq!(nonce(Some(&header(&at))), Some(at.clone()));
        assert_eq!(nonce(Some(&header(&past))), None);
        assert_eq!(nonce(Some(&header("a b"))), None);
        assert_eq!(nonce(Some(&header("a\"b"))), None);
        assert_eq!(nonce(None), None);
    }
}
