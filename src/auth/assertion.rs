//! A client's proof of itself by its private key (`private_key_jwt`, RFC 7523 §2.2): a JWT
//! signed with ES256 that names the client as issuer and subject and the authorization server
//! as audience, fresh for each token request.
//!
//! The JWT is built by hand because it is three base64url parts and one signature; a JOSE
//! crate would bring algorithms, key formats and parsing the Pack never uses. The signature is
//! aws-lc-rs's (rustls' own cryptography), in the fixed `r || s` form JWS requires.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use base64::Engine as _;
use base64::prelude::{BASE64_STANDARD, BASE64_URL_SAFE_NO_PAD};
use serde_json::json;
use zeroize::Zeroizing;

use super::AuthError;
use crate::secret::Secret;

/// How long an assertion is good for: it is used at once, once.
const LIFETIME: Duration = Duration::from_secs(300);

/// The assertion type of RFC 7523 §2.2.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A signed assertion that `client_id` is asking the authorization server `audience`.
pub(crate) fn sign(key_pem: &Secret, client_id: &str, audience: &str) -> Result<Secret, AuthError> {
    let key = key_pair(key_pem)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut jti = [0u8; 16];
    aws_lc_rs::rand::fill(&mut jti)
        .map_err(|_| AuthError::refused("the system has no random numbers to give"))?;
    let header = json!({"alg": "ES256", "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME.as_secs(),
        "jti": BASE64_URL_SAFE_NO_PAD.encode(jti),
    });
    let signing_input = format!(
        "{}.{}",
        BASE64_URL_SAFE_NO_PAD.encode(header.to_string()),
        BASE64_URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key
        .sign(&SystemRandom::new(), signing_input.as_bytes())
        .map_err(|_| AuthError::refused("the client's private key could not sign"))?;
    Ok(Secret::new(format!(
        "{signing_input}.{}",
        BASE64_URL_SAFE_NO_PAD.encode(signature.as_ref())
    )))
}

/// The P-256 key of a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). The reason never quotes the
/// key.
fn key_pair(pem: &Secret) -> Result<EcdsaKeyPair, AuthError> {
    let refused = || {
        AuthError::refused(
            "oauth.privateKey is not a PKCS#8 PEM private key of the P-256 curve (ES256)",
        )
    };
    let text = pem.expose();
    let body = text
        .split("-----BEGIN PRIVATE KEY-----")
        .nth(1)
        .and_then(|rest| rest.split("-----END PRIVATE KEY-----").next())
        .ok_or_else(refused)?;
    let base64: Zeroizing<String> =
        Zeroizing::new(body.chars().filter(|c| !c.is_whitespace()).collect());
    let der = Zeroizing::new(
        BASE64_STANDARD
            .decode(base64.as_bytes())
            .map_err(|_| refused())?,
    );
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der).map_err(|_| refused())
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    use super::*;
    use crate::text::Scrubber;

    fn pem_of_new_key() -> (Secret, Vec<u8>) {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a key");
        let public = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref())
            .expect("parsed")
            .public_key()
            .as_ref()
            .to_vec();
        let body = BASE64_STANDARD.encode(pkcs8.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        (Secret::new(pem), public)
    }

    #[test]
    fn an_assertion_is_an_es256_jwt_for_the_client_and_the_audience() {
        let (pem, public) = pem_of_new_key();
        let jwt = sign(&pem, "client-7", "https://as.example").expect("signed");
        let parts: Vec<&str> = jwt.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |part: &str| -> serde_json::Value {
            serde_json::from_slice(&BASE64_URL_SAFE_NO_PAD.decode(part).expect("b64"))
                .expect("json")
        };
        assert_eq!(decode(parts[0])["alg"], "ES256");
        let claims = decode(parts[1]);
        assert_eq!(claims["iss"], "client-7");
        assert_eq!(claims["sub"], "client-7");
        assert_eq!(claims["aud"], "https://as.example");
        let iat = claims["iat"].as_u64().expect("iat");
        assert_eq!(claims["exp"].as_u64(), Some(iat + LIFETIME.as_secs()));
        let signature = BASE64_URL_SAFE_NO_PAD.decode(parts[2]).expect("b64");
        assert_eq!(signature.len(), 64, "JWS wants r || s, not DER");
        let message = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(message.as_bytes(), &signature)
            .expect("the signature verifies");
        let again = sign(&pem, "client-7", "https://as.example").expect("signed");
        assert_ne!(
            decode(again.expose().split('.').nth(1).expect("claims"))["jti"],
            claims["jti"]
        );
    }

    #[test]
    fn a_key_that_is_not_a_p256_pkcs8_pem_is_refused_without_quoting_it() {
        for bad in [
            "not a key",
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----",
        ] {
            let error = sign(&Secret::new(bad.to_owned()), "c", "a")
                .expect_err("refused")
                .render(&Scrubber::default())
                .into_string();
            assert!(error.contains("oauth.privateKey is not"), "{error}");
            assert!(
                !error.contains("c2VjcmV0") && !error.contains("!!!"),
                "{error}"
            );
        }
    }
}
