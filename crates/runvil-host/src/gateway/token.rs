//! Access tokens of the team's issuer: a JWT is accepted only when its signature verifies
//! against one of the issuer's keys (`issuer`), `iss` is the issuer, `aud` holds the gateway's
//! resource (RFC 8707: a token for another resource is no token here), `exp` and `nbf` hold
//! within [`MAX_CLOCK_SKEW`], it has a `sub`, and its `alg` is an asymmetric algorithm its key
//! allows (never `none`, never HMAC, so a token "signed" with the issuer's public key as an
//! HMAC secret finds no key).
//!
//! The checks are jsonwebtoken's (on aws-lc-rs), given exactly one algorithm, the token's own
//! once it is known to be accepted, and a key of that algorithm's family, which its verifier
//! checks again. RFC 9068's `typ` is checked leniently: `at+jwt` as the RFC writes it, or
//! `JWT` or none as most issuers still write it; any other type (an ID token's own, a
//! logout token's) is refused.
//!
//! A verified token is remembered until it expires, keyed by its SHA-256 (never the token),
//! in a cache of at most [`MAX_CACHED_TOKENS`]: the next request with it costs a hash and a
//! lookup instead of a signature check.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::identity::{ANONYMOUS, KEY_PREFIX};
use super::issuer::{ACCEPTED_ALGORITHMS, Issuer, KeyError};

/// The clock skew allowed between the issuer and the gateway, on `exp` and `nbf`.
pub(crate) const MAX_CLOCK_SKEW: Duration = Duration::from_secs(60);
/// The longest token looked at: far past any issuer's access token, and a bound on the work a
/// made-up one costs.
pub(crate) const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The verified tokens remembered at once.
pub(crate) const MAX_CACHED_TOKENS: usize = 10_000;

/// The `typ` values of an access token (compared without regard to case).
const ACCESS_TOKEN_TYPES: [&str; 3] = ["at+jwt", "application/at+jwt", "jwt"];

/// A token that verified.
pub(crate) struct Verified {
    pub(crate) sub: String,
    pub(crate) claims: Map<String, Value>,
    expires: SystemTime,
}

/// Why a token is not accepted.
#[derive(Debug, PartialEq)]
pub(crate) enum TokenError {
    /// The token is refused, for this reason.
    Invalid(&'static str),
    /// No token can be checked now: the issuer's keys could not be had.
    Unavailable(String),
}

/// The tokens of one issuer for one resource.
pub(crate) struct Tokens {
    issuer: Issuer,
    issuer_url: String,
    resource: String,
    cache: Mutex<Cache>,
}

impl Tokens {
    pub(crate) fn new(issuer: String, resource: String) -> Result<Self, String> {
        Ok(Self {
            issuer: Issuer::new(issuer.clone())?,
            issuer_url: issuer,
            resource,
            cache: Mutex::new(Cache::new(MAX_CACHED_TOKENS)),
        })
    }

    #[cfg(test)]
    pub(crate) fn issuer(&self) -> &Issuer {
        &self.issuer
    }

    /// The token's subject and claims, if it is a valid access token for the resource.
    pub(crate) async fn verify(&self, token: &str) -> Result<Arc<Verified>, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Invalid("the token is longer than 16384 bytes"));
        }
        let hash: [u8; 32] = digest(&SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .unwrap_or([0; 32]);
        if let Some(verified) = self.lock().get(&hash, SystemTime::now()) {
            return Ok(verified);
        }
        let (alg, kid) = header(token)?;
        let key = self
            .issuer
            .key(kid.as_deref(), alg)
            .await
            .map_err(|e| match e {
                KeyError::Refused(why) => TokenError::Invalid(why),
                KeyError::Unavailable(why) => TokenError::Unavailable(why),
            })?;
        let mut validation = Validation::new(alg);
        validation.leeway = MAX_CLOCK_SKEW.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer_url]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|e| TokenError::Invalid(refusal(e.kind())))?;
        let claims = data.claims;
        let sub = match claims.get("sub") {
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            _ => {
                return Err(TokenError::Invalid(
                    "the token's sub is not a non-empty string",
                ));
            }
        };
        if sub == ANONYMOUS || sub.starts_with(KEY_PREFIX) {
            return Err(TokenError::Invalid(
                "the token's sub reads as the anonymous identity or an API key's",
            ));
        }
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        let verified = Arc::new(Verified {
            sub,
            claims,
            expires: SystemTime::UNIX_EPOCH + Duration::from_secs(exp),
        });
        self.lock()
            .insert(hash, Arc::clone(&verified), SystemTime::now());
        Ok(verified)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The token's algorithm, if accepted, and the key it names, read from its header before any
/// key is looked for.
fn header(token: &str) -> Result<(Algorithm, Option<String>), TokenError> {
    let not_a_jwt = TokenError::Invalid("the token is not a JWT");
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(not_a_jwt);
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| TokenError::Invalid("the token is not a JWT"))?;
    let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(not_a_jwt);
    };
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(|alg| Algorithm::from_str(alg).ok())
        .filter(|alg| ACCEPTED_ALGORITHMS.contains(alg))
        .ok_or(TokenError::Invalid(
            "the token is not signed with an accepted asymmetric algorithm (RS256, RS384, \
             RS512, PS256, PS384, PS512, ES256, ES384 or EdDSA)",
        ))?;
    match header.get("typ") {
        None => {}
        Some(Value::String(typ))
            if ACCESS_TOKEN_TYPES
                .iter()
                .any(|t| t.eq_ignore_ascii_case(typ)) => {}
        Some(_) => {
            return Err(TokenError::Invalid(
                "the token's type (typ) is not an access token's (at+jwt)",
            ));
        }
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(TokenError::Invalid("the token's kid is not a string")),
    };
    Ok((alg, kid))
}

/// A refusal in the gateway's words, for jsonwebtoken's error: none of them quotes the token.
fn refusal(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired (exp)",
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
        ErrorKind::InvalidIssuer => "the token is from another issuer (iss)",
        ErrorKind::InvalidAudience => "the token is for another resource (aud)",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(claim) => match claim.as_str() {
            "exp" => "the token has no exp",
            "iss" => "the token has no iss",
            "aud" => "the token has no aud",
            "sub" => "the token has no sub",
            _ => "the token lacks a required claim",
        },
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            "the token's algorithm is not one its key allows"
        }
        _ => "the token is not a valid JWT",
    }
}

/// Verified tokens by their SHA-256, each until it expires.
struct Cache {
    entries: HashMap<[u8; 32], Arc<Verified>>,
    capacity: usize,
}

impl Cache {
    fn new(capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity,
        }
    }

    fn get(&mut self, hash: &[u8; 32], now: SystemTime) -> Option<Arc<Verified>> {
        match self.entries.get(hash) {
            Some(verified) if verified.expires > now => Some(Arc::clone(verified)),
            Some(_) => {
                // Expired: checked again, with the skew, by the caller.
                self.entries.remove(hash);
                None
            }
            None => None,
        }
    }

    /// Keeps `verified`; when full, the expired entries go, then the one expiring first.
    fn insert(&mut self, hash: [u8; 32], verified: Arc<Verified>, now: SystemTime) {
        if verified.expires <= now {
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&hash) {
            self.entries.retain(|_, v| v.expires > now);
            if self.entries.len() >= self.capacity
                && let Some(first) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, v)| v.expires)
                    .map(|(k, _)| *k)
            {
                self.entries.remove(&first);
            }
        }
        self.entries.insert(hash, verified);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verified(expires_in: u64, now: SystemTime) -> Arc<Verified> {
        Arc::new(Verified {
            sub: "s".into(),
            claims: Map::new(),
            expires: now + Duration::from_secs(expires_in),
        })
    }

    #[test]
    fn the_cache_holds_its_capacity_and_drops_the_soonest_to_expire_past_it() {
        let now = SystemTime::now();
        let mut cache = Cache::new(3);
        cache.insert([1; 32], verified(30, now), now);
        cache.insert([2; 32], verified(10, now), now);
        cache.insert([3; 32], verified(20, now), now);
        assert_eq!(cache.entries.len(), 3, "at the capacity");
        for hash in [[1; 32], [2; 32], [3; 32]] {
            assert!(cache.get(&hash, now).is_some());
        }
        cache.insert([4; 32], verified(40, now), now);
        assert_eq!(cache.entries.len(), 3, "one past it");
        assert!(
            cache.get(&[2; 32], now).is_none(),
            "the soonest to expire went"
        );
        assert!(cache.get(&[4; 32], now).is_some());

        // Expired entries go first, and are never answered.
        let later = now + Duration::from_secs(25);
        assert!(cache.get(&[3; 32], later).is_none());
        cache.insert([5; 32], verified(10, later), later);
        assert!(cache.get(&[1; 32], later).is_some(), "not expired, kept");
        assert!(cache.get(&[4; 32], later).is_some());
        cache.insert([6; 32], verified(0, later), later);
        assert!(
            cache.get(&[6; 32], later).is_none(),
            "an expired token is not kept"
        );
    }

    #[test]
    fn a_header_must_name_an_accepted_algorithm_and_an_access_token_s_type() {
        let token = |header: &str| format!("{}.e30.c2ln", URL_SAFE_NO_PAD.encode(header));
        assert_eq!(
            header(&token(r#"{"alg":"ES256","kid":"k","typ":"at+jwt"}"#)),
            Ok((Algorithm::ES256, Some("k".into())))
        );
        assert_eq!(
            header(&token(r#"{"alg":"RS256","typ":"JWT"}"#)),
            Ok((Algorithm::RS256, None))
        );
        let algorithm = Err(TokenError::Invalid(
            "the token is not signed with an accepted asymmetric algorithm (RS256, RS384, RS512, \
             PS256, PS384, PS512, ES256, ES384 or EdDSA)",
        ));
        for header_text in [
            r#"{"alg":"none"}"#,
            r#"{"alg":"HS256"}"#,
            r#"{"alg":"HS512","kid":"k"}"#,
            r#"{"alg":"es256"}"#,
            r#"{"typ":"JWT"}"#,
            r#"{"alg":["ES256"]}"#,
        ] {
            assert_eq!(header(&token(header_text)), algorithm, "{header_text}");
        }
        assert_eq!(
            header(&token(r#"{"alg":"ES256","typ":"logout+jwt"}"#)),
            Err(TokenError::Invalid(
                "the token's type (typ) is not an access token's (at+jwt)"
            ))
        );
        assert_eq!(
            header(&token(r#"{"alg":"ES256","kid":7}"#)),
            Err(TokenError::Invalid("the token's kid is not a string"))
        );
        for not_a_jwt in ["", "abc", "a.b", "a.b.c.d", "!!.e30.x", &token("[]")] {
            assert_eq!(
                header(not_a_jwt),
                Err(TokenError::Invalid("the token is not a JWT")),
                "{not_a_jwt}"
            );
        }
    }
}
