//! A test identity provider: an OAuth authorization server's metadata (RFC 8414 and OpenID
//! Connect Discovery), its key set (JWKS) and tokens minted with the claims a test chooses,
//! the hostile ones included: expired, not yet valid, of another issuer or audience, unsigned
//! (`alg: none`), signed with HMAC using the public key as the secret, naming an unknown key.
//!
//! It has its own key pairs, made at start with aws-lc-rs: ES256 (`kid` [`ES256_KID`]) and
//! RS256 ([`RS256_KID`]). It serves on a loopback port through [`Hostile`], which records
//! every request, so a test counts how often its keys were fetched.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::hostile::Hostile;
use crate::oauth::json_answer;

/// The `kid` of the ES256 key.
pub const ES256_KID: &str = "es-1";
/// The `kid` of the RS256 key.
pub const RS256_KID: &str = "rs-1";
/// Where the key set is served.
pub const JWKS_PATH: &str = "/jwks";

/// Where the provider publishes its metadata.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metadata {
    /// At both RFC 8414's and OpenID Connect's well-known places.
    Both,
    /// At OpenID Connect's only: RFC 8414's answers 404.
    OpenIdOnly,
    /// A document naming another issuer, at both.
    OtherIssuer,
}

/// A running identity provider; it stops when dropped.
pub struct IdentityProvider {
    server: Hostile,
    issuer: String,
    es256: EcdsaKeyPair,
    rs256: aws_lc_rs::rsa::KeyPair,
    /// Every key the JWKS lists, as JWKs.
    published: Arc<Mutex<Vec<Value>>>,
    /// Keys made later ([`IdentityProvider::new_key`]), by kid.
    later: Mutex<Vec<(String, EcdsaKeyPair)>>,
}

impl IdentityProvider {
    /// A provider publishing its metadata at both places.
    pub async fn start() -> Self {
        Self::start_with(Metadata::Both).await
    }

    /// A provider publishing its metadata as `metadata` says.
    pub async fn start_with(metadata: Metadata) -> Self {
        let es256 = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("ES256 key");
        let rs256 =
            aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).expect("RS256 key");
        let published = Arc::new(Mutex::new(vec![
            ec_jwk(ES256_KID, &es256),
            rsa_jwk(RS256_KID, &rs256),
        ]));
        let keys = Arc::clone(&published);
        let server = Hostile::start(move |request| {
            let host = request.header("host").unwrap_or_default();
            let issuer = format!("http://{host}");
            let named = match metadata {
                Metadata::OtherIssuer => format!("http://{host}/other"),
                _ => issuer.clone(),
            };
            let document = json!({
                "issuer": named,
                "jwks_uri": format!("{issuer}{JWKS_PATH}"),
                "token_endpoint": format!("{issuer}/token"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
            });
            match request.target.as_str() {
                "/.well-known/oauth-authorization-server" if metadata != Metadata::OpenIdOnly => {
                    json_answer("200 OK", &document)
                }
                "/.well-known/openid-configuration" => json_answer("200 OK", &document),
                JWKS_PATH => {
                    let keys = keys.lock().expect("keys").clone();
                    json_answer("200 OK", &json!({"keys": keys}))
                }
                _ => json_answer("404 Not Found", &json!({"error": "not_found"})),
            }
        })
        .await;
        let issuer = format!("http://127.0.0.1:{}", server.port);
        Self {
            server,
            issuer,
            es256,
            rs256,
            published,
            later: Mutex::new(Vec::new()),
        }
    }

    /// Its issuer identifier, `http://127.0.0.1:<port>`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// How many times its key set was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.server
            .requests()
            .iter()
            .filter(|r| r.target == JWKS_PATH)
            .count()
    }

    /// Every request it answered, metadata and keys.
    pub fn requests(&self) -> usize {
        self.server.requests().len()
    }

    /// The claims of a good token for `resource` of `sub`: this issuer, valid from a minute ago
    /// for five minutes more.
    pub fn claims(&self, resource: &str, sub: &str) -> Value {
        let now = now();
        json!({"iss": self.issuer, "aud": resource, "sub": sub, "iat": now, "nbf": now - 60, "exp": now + 300})
    }

    /// A token with `claims`, signed ES256 with its key, as an access token (`typ: at+jwt`).
    pub fn token(&self, claims: &Value) -> String {
        self.sign(
            &json!({"alg": "ES256", "kid": ES256_KID, "typ": "at+jwt"}),
            claims,
        )
    }

    /// A token with `claims` and exactly `header`, signed as its `alg` says (ES256 or RS256,
    /// with the key of its `kid`, else the ES256 key; `none` unsigned; HS256 with the ES256
    /// key's JWK as the secret, the public key an attacker has).
    pub fn sign(&self, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature = match header["alg"].as_str() {
            Some("none") => Vec::new(),
            Some("HS256") => {
                let public = ec_jwk(ES256_KID, &self.es256).to_string();
                let key =
                    aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, public.as_bytes());
                aws_lc_rs::hmac::sign(&key, message.as_bytes())
                    .as_ref()
                    .to_vec()
            }
            Some("RS256") => {
                let mut signature = vec![0; self.rs256.public_modulus_len()];
                self.rs256
                    .sign(&RSA_PKCS1_SHA256, &rng, message.as_bytes(), &mut signature)
                    .expect("RS256 signature");
                signature
            }
            _ => {
                let later = self.later.lock().expect("keys");
                let kid = header["kid"].as_str();
                let key = later
                    .iter()
                    .find(|(k, _)| Some(k.as_str()) == kid)
                    .map_or(&self.es256, |(_, key)| key);
                key.sign(&rng, message.as_bytes())
                    .expect("ES256 signature")
                    .as_ref()
                    .to_vec()
            }
        };
        format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// Makes a new ES256 key `kid`, published in the key set from now on when `publish`; a
    /// token names it with [`IdentityProvider::sign`] and `"kid": kid`.
    pub fn new_key(&self, kid: &str, publish: bool) {
        let key = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("ES256 key");
        if publish {
            self.published.lock().expect("keys").push(ec_jwk(kid, &key));
        }
        self.later.lock().expect("keys").push((kid.to_owned(), key));
    }

    /// Withdraws key `kid` from the key set.
    pub fn withdraw(&self, kid: &str) {
        self.published
            .lock()
            .expect("keys")
            .retain(|jwk| jwk["kid"] != kid);
    }
}

/// Seconds since the epoch, now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

fn ec_jwk(kid: &str, key: &EcdsaKeyPair) -> Value {
    // The public key is the uncompressed point: 0x04, then x and y of 32 bytes each.
    let point = key.public_key().as_ref();
    json!({
        "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    })
}

fn rsa_jwk(kid: &str, key: &aws_lc_rs::rsa::KeyPair) -> Value {
    let public = key.public_key();
    json!({
        "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
        "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
        "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
    })
}
