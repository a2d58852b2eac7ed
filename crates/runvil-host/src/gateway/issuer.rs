//! The issuer's signing keys: found through its metadata (RFC 8414, else OpenID Connect
//! Discovery), fetched from its `jwks_uri`, cached, and fetched again only within bounds.
//!
//! An authorization server is a party the gateway does not trust with anything but its keys,
//! and reaching it costs every waiting request, so every fetch is bounded as the Pack bounds
//! its own requests to authorization servers: `https` only (plain `http` to a loopback address
//! alone), no redirect followed, no proxy, each answer within [`MAX_ISSUER_ANSWER_BYTES`], the
//! whole fetch (metadata and keys) within [`ISSUER_FETCH_DEADLINE`]. Nothing it sends is
//! quoted in a reason. One fetch runs at a time, and fetches are spaced:
//!
//! - a token naming a key (`kid`) the cached set lacks starts a fetch at most once per
//!   [`JWKS_REFETCH_INTERVAL`], so a flood of tokens with made-up `kid`s costs the issuer one
//!   request a minute and the gateway nothing more;
//! - while no set could be fetched yet, at most one fetch per [`JWKS_RETRY_INTERVAL`];
//! - a set older than [`JWKS_MAX_AGE`] is fetched again at its next use, so a key the issuer
//!   withdrew stops verifying tokens within the hour; if that fetch fails the old set serves
//!   on.
//!
//! A key is kept only if it is one a token may be checked with: `RSA`, `EC` on P-256 or P-384,
//! or `OKP` Ed25519, meant for signatures (`use` absent or `sig`), its `alg`, when it declares
//! one, an asymmetric algorithm. A symmetric (`oct`) key is never kept, so no token signed with
//! HMAC can find a key here whatever it claims.

use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, DecodingKey};
use reqwest::Url;
use serde_json::Value;

/// One fetch of the issuer's keys, its metadata included.
pub(crate) const ISSUER_FETCH_DEADLINE: Duration = Duration::from_secs(10);
/// One answer of the issuer's (a metadata document or the key set), as the Pack's
/// `MAX_OAUTH_RESPONSE_BYTES`.
pub(crate) const MAX_ISSUER_ANSWER_BYTES: usize = 65_536;
/// The least time between two fetches set off by a token naming an unknown key.
pub(crate) const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(60);
/// The least time between two fetches while no key set could be fetched yet.
pub(crate) const JWKS_RETRY_INTERVAL: Duration = Duration::from_secs(10);
/// The age at which a key set is fetched again at its next use.
pub(crate) const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);
/// TCP and TLS set-up, as the Pack's `CONNECT_TIMEOUT`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The algorithms a token may be signed with: asymmetric ones only, never `none` nor HMAC.
pub(crate) const ACCEPTED_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// One key of the issuer's.
pub(crate) struct Key {
    kid: Option<String>,
    /// The algorithm the key declares, if it does.
    alg: Option<Algorithm>,
    kind: Kind,
    pub(crate) decoding: DecodingKey,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Key {
    /// Whether a token signed with `alg` may be checked with this key: the algorithm its type
    /// allows, and the one it declares, if it declares one.
    fn fits(&self, alg: Algorithm) -> bool {
        let by_type = match self.kind {
            Kind::Rsa => matches!(
                alg,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
            Kind::P256 => alg == Algorithm::ES256,
            Kind::P384 => alg == Algorithm::ES384,
            Kind::Ed25519 => alg == Algorithm::EdDSA,
        };
        by_type && self.alg.is_none_or(|declared| declared == alg)
    }
}

/// The keys of one fetch.
struct KeySet {
    keys: Vec<Arc<Key>>,
    fetched: Instant,
}

/// What a set says of a token's key.
enum Selection {
    Found(Arc<Key>),
    /// No key of that `kid` (or, without one, none for the algorithm).
    Unknown,
    /// A key that the token's algorithm does not fit, or several to choose from.
    Unfit(&'static str),
}

impl KeySet {
    fn select(&self, kid: Option<&str>, alg: Algorithm) -> Selection {
        match kid {
            Some(kid) => match self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)) {
                Some(key) if key.fits(alg) => Selection::Found(Arc::clone(key)),
                Some(_) => Selection::Unfit("the token's algorithm is not one its key allows"),
                None => Selection::Unknown,
            },
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.fits(alg));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Selection::Found(Arc::clone(key)),
                    (None, _) => Selection::Unknown,
                    (Some(_), Some(_)) => Selection::Unfit(
                        "the token names no key (kid) and the issuer has several for its algorithm",
                    ),
                }
            }
        }
    }
}

/// Why no key was found for a token.
#[derive(Debug, PartialEq)]
pub(crate) enum KeyError {
    /// The token's key is not the issuer's: it is refused.
    Refused(&'static str),
    /// The issuer's keys could not be had: no token can be checked now.
    Unavailable(String),
}

/// The issuer, and what the gateway holds of its keys.
pub(crate) struct Issuer {
    issuer: String,
    client: reqwest::Client,
    keys: RwLock<Option<Arc<KeySet>>>,
    /// Held across a fetch, so one runs at a time.
    fetching: tokio::sync::Mutex<Fetching>,
}

#[derive(Default)]
struct Fetching {
    jwks_uri: Option<Url>,
    last_attempt: Option<Instant>,
}

impl Issuer {
    /// The issuer `issuer` (checked by the gatekeeper), whose keys are fetched on first use.
    pub(crate) fn new(issuer: String) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {}", e.without_url()))?;
        Ok(Self {
            issuer,
            client,
            keys: RwLock::new(None),
            fetching: tokio::sync::Mutex::new(Fetching::default()),
        })
    }

    fn current(&self) -> Option<Arc<KeySet>> {
        self.keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The key to check a token of `kid` and `alg` with, fetching the issuer's keys when the
    /// bounds above allow.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<Key>, KeyError> {
        let unknown = KeyError::Refused("the token's key (kid) is not among the issuer's keys");
        let seen = self.current();
        if let Some(set) = seen
            .as_ref()
            .filter(|set| set.fetched.elapsed() < JWKS_MAX_AGE)
        {
            match set.select(kid, alg) {
                Selection::Found(key) => return Ok(key),
                Selection::Unfit(why) => return Err(KeyError::Refused(why)),
                Selection::Unknown => {}
            }
        }
        let mut fetching = self.fetching.lock().await;
        let mut current = self.current();
        // Another request fetched while this one waited: its set may have the key.
        let fresh = match (&seen, &current) {
            (Some(seen), Some(now)) => !Arc::ptr_eq(seen, now),
            (None, now) => now.is_some(),
            (Some(_), None) => false,
        };
        if !fresh {
            let interval = if current.is_some() {
                JWKS_REFETCH_INTERVAL
            } else {
                JWKS_RETRY_INTERVAL
            };
            let due = fetching
                .last_attempt
                .is_none_or(|last| last.elapsed() >= interval);
            if due {
                fetching.last_attempt = Some(Instant::now());
                match tokio::time::timeout(ISSUER_FETCH_DEADLINE, self.fetch(&mut fetching)).await {
                    Ok(Ok(set)) => {
                        let set = Arc::new(set);
                        *self
                            .keys
                            .write()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) =
                            Some(Arc::clone(&set));
                        current = Some(set);
                    }
                    Ok(Err(why)) => return self.without_fetch(current, kid, alg, why),
                    Err(_) => {
                        let why = format!(
                            "the issuer's keys did not come within {} s",
                            ISSUER_FETCH_DEADLINE.as_secs()
                        );
                        return self.without_fetch(current, kid, alg, why);
                    }
                }
            }
        }
        drop(fetching);
        match current.map(|set| set.select(kid, alg)) {
            Some(Selection::Found(key)) => Ok(key),
            Some(Selection::Unfit(why)) => Err(KeyError::Refused(why)),
            Some(Selection::Unknown) => Err(unknown),
            None => Err(KeyError::Unavailable(format!(
                "the issuer's keys could not be fetched yet; the next try is at most {} s away",
                JWKS_RETRY_INTERVAL.as_secs()
            ))),
        }
    }

    /// After a failed fetch: the set held before, if any, serves on; the failure is logged.
    fn without_fetch(
        &self,
        current: Option<Arc<KeySet>>,
        kid: Option<&str>,
        alg: Algorithm,
        why: String,
    ) -> Result<Arc<Key>, KeyError> {
        tracing::warn!(target: "runvil::gateway", "cannot fetch the issuer's keys: {why}");
        match current.map(|set| set.select(kid, alg)) {
            Some(Selection::Found(key)) => Ok(key),
            Some(Selection::Unfit(why)) => Err(KeyError::Refused(why)),
            Some(Selection::Unknown) => Err(KeyError::Refused(
                "the token's key (kid) is not among the issuer's keys",
            )),
            None => Err(KeyError::Unavailable(why)),
        }
    }

    /// Metadata (once), then the key set.
    async fn fetch(&self, fetching: &mut Fetching) -> Result<KeySet, String> {
        let jwks_uri = match &fetching.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover().await?;
                fetching.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let (status, body) = self.get(&jwks_uri).await?;
        if status != 200 {
            return Err(format!(
                "the issuer's key set (jwks_uri) answered HTTP {status}"
            ));
        }
        let set = parse_jwks(&body)?;
        tracing::debug!(target: "runvil::gateway", keys = set.len(), "fetched the issuer's keys");
        Ok(KeySet {
            keys: set.into_iter().map(Arc::new).collect(),
            fetched: Instant::now(),
        })
    }

    /// The `jwks_uri` of the issuer's metadata, from the first place that has it, in the order
    /// the MCP specification gives clients: RFC 8414, then OpenID Connect Discovery with the
    /// path inserted, then appended. A document naming another issuer is not the issuer's.
    async fn discover(&self) -> Result<Url, String> {
        let mut tried = Vec::new();
        for place in metadata_places(&self.issuer)? {
            let (status, body) = self.get(&place).await?;
            if status != 200 {
                tried.push(format!("HTTP {status}"));
                continue;
            }
            let Ok(Value::Object(metadata)) = serde_json::from_slice::<Value>(&body) else {
                tried.push("not a JSON object".to_owned());
                continue;
            };
            if metadata.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                tried.push("a document of another issuer".to_owned());
                continue;
            }
            let Some(uri) = metadata.get("jwks_uri").and_then(Value::as_str) else {
                return Err("the issuer's metadata has no jwks_uri".into());
            };
            return checked_url(uri).map_err(|why| format!("the issuer's jwks_uri {why}"));
        }
        Err(format!(
            "the issuer publishes no metadata (RFC 8414 or OpenID Connect) at its well-known \
             places ({})",
            tried.join("; ")
        ))
    }

    /// GETs `url`: its status and body, within [`MAX_ISSUER_ANSWER_BYTES`].
    async fn get(&self, url: &Url) -> Result<(u16, Vec<u8>), String> {
        let mut response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("the issuer could not be reached: {}", described(e)))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("the issuer's answer broke off: {}", described(e)))?
        {
            if body.len() + chunk.len() > MAX_ISSUER_ANSWER_BYTES {
                return Err(format!(
                    "an answer of the issuer's is larger than {MAX_ISSUER_ANSWER_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }

    #[cfg(test)]
    /// Makes the last fetch `ago` older, as if the clock had moved on.
    pub(crate) async fn age(&self, ago: Duration) {
        let mut fetching = self.fetching.lock().await;
        let back = |instant: Instant| instant.checked_sub(ago).unwrap_or(instant);
        fetching.last_attempt = fetching.last_attempt.map(back);
        let mut keys = self.keys.write().expect("keys");
        if let Some(set) = keys.as_ref() {
            *keys = Some(Arc::new(KeySet {
                keys: set.keys.clone(),
                fetched: back(set.fetched),
            }));
        }
    }
}

/// A reqwest error without its URL, with its causes.
fn described(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `text` as a URL the gateway may fetch from: `https`, or `http` to a loopback address; no
/// user name, password or fragment. The `Err` says what is wrong, never the URL.
pub(crate) fn checked_url(text: &str) -> Result<Url, &'static str> {
    let url = Url::parse(text).map_err(|_| "is not a URL")?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        _ => return Err("is not an https URL (plain http is allowed to a loopback address only)"),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("carries a user name or password");
    }
    if url.fragment().is_some() {
        return Err("has a fragment");
    }
    Ok(url)
}

/// Whether `url`'s host is this machine: `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Where the issuer's metadata may be, in order.
fn metadata_places(issuer: &str) -> Result<Vec<Url>, String> {
    let url = Url::parse(issuer).map_err(|_| "the issuer is not a URL".to_owned())?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let places = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    places
        .iter()
        .map(|place| Url::parse(place).map_err(|_| "the issuer's metadata URL is not a URL".into()))
        .collect()
}

/// The keys of a JWKS document that tokens may be checked with (see the module's doc).
fn parse_jwks(body: &[u8]) -> Result<Vec<Key>, String> {
    let not_a_set = || "the issuer's key set is not a JWKS (a JSON object with `keys`)".to_owned();
    let document: Value = serde_json::from_slice(body).map_err(|_| not_a_set())?;
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(not_a_set)?;
    let usable: Vec<Key> = keys.iter().filter_map(parse_key).collect();
    if usable.is_empty() {
        return Err(
            "the issuer's key set holds no key a token may be checked with (RSA, EC P-256 or \
             P-384, Ed25519, for signatures)"
                .into(),
        );
    }
    Ok(usable)
}

fn parse_key(jwk: &Value) -> Option<Key> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    if text("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let alg = match text("alg") {
        None => None,
        Some(alg) => Some(
            Algorithm::from_str(alg)
                .ok()
                .filter(|alg| ACCEPTED_ALGORITHMS.contains(alg))?,
        ),
    };
    let (kind, decoding) = match (text("kty")?, text("crv")) {
        ("RSA", _) => (
            Kind::Rsa,
            DecodingKey::from_rsa_components(text("n")?, text("e")?).ok()?,
        ),
        ("EC", Some(crv @ ("P-256" | "P-384"))) => {
            let kind = if crv == "P-256" {
                Kind::P256
            } else {
                Kind::P384
            };
            (
                kind,
                DecodingKey::from_ec_components(text("x")?, text("y")?).ok()?,
            )
        }
        ("OKP", Some("Ed25519")) => (
            Kind::Ed25519,
            DecodingKey::from_ed_components(text("x")?).ok()?,
        ),
        _ => return None,
    };
    Some(Key {
        kid: text("kid").map(str::to_owned),
        alg,
        kind,
        decoding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_is_looked_for_where_the_specification_says() {
        let places = |issuer: &str| -> Vec<String> {
            metadata_places(issuer)
                .expect("places")
                .iter()
                .map(|u| u.to_string())
                .collect()
        };
        assert_eq!(
            places("https://id.example"),
            [
                "https://id.example/.well-known/oauth-authorization-server",
                "https://id.example/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            places("https://id.example/tenant1/"),
            [
                "https://id.example/.well-known/oauth-authorization-server/tenant1",
                "https://id.example/.well-known/openid-configuration/tenant1",
                "https://id.example/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn urls_must_be_https_or_loopback_http_without_userinfo_or_fragment() {
        for good in [
            "https://id.example/jwks",
            "http://localhost:3000/a",
            "http://127.0.0.1/t",
            "http://[::1]:8/t",
        ] {
            assert!(checked_url(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            (
                "http://id.example/jwks",
                "is not an https URL (plain http is allowed to a loopback address only)",
            ),
            (
                "http://127.0.0.1.example/",
                "is not an https URL (plain http is allowed to a loopback address only)",
            ),
            (
                "file:///etc/passwd",
                "is not an https URL (plain http is allowed to a loopback address only)",
            ),
            ("https://u:p@id.example/", "carries a user name or password"),
            ("https://id.example/#k", "has a fragment"),
            ("not a url", "is not a URL"),
        ] {
            assert_eq!(checked_url(bad).err(), Some(why), "{bad}");
        }
    }

    /// Only keys a token may be checked with are kept; a symmetric one never.
    #[test]
    fn a_key_set_keeps_signature_keys_of_asymmetric_types_only() {
        let ec = json!({"kty": "EC", "crv": "P-256", "kid": "ec",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let keys = json!({"keys": [
            ec,
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc", "x": ec["x"], "y": ec["y"]},
            {"kty": "EC", "crv": "P-256", "kid": "hs", "alg": "HS256", "x": ec["x"], "y": ec["y"]},
            {"kty": "EC", "crv": "P-521", "kid": "p521", "x": ec["x"], "y": ec["y"]},
            {"kty": "RSA", "kid": "broken"},
            "not a key"
        ]});
        let set = parse_jwks(keys.to_string().as_bytes()).expect("a set");
        let kids: Vec<_> = set.iter().map(|k| k.kid.clone()).collect();
        assert_eq!(kids, [Some("ec".to_owned())]);
        assert!(set[0].fits(Algorithm::ES256));
        for alg in [
            Algorithm::ES384,
            Algorithm::RS256,
            Algorithm::HS256,
            Algorithm::EdDSA,
        ] {
            assert!(!set[0].fits(alg), "{alg:?}");
        }
        let only_hmac = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]});
        assert_eq!(
            parse_jwks(only_hmac.to_string().as_bytes())
                .err()
                .as_deref(),
            Some(
                "the issuer's key set holds no key a token may be checked with (RSA, EC P-256 or \
                 P-384, Ed25519, for signatures)"
            )
        );
        assert_eq!(
            parse_jwks(b"[]").err().as_deref(),
            Some("the issuer's key set is not a JWKS (a JSON object with `keys`)")
        );
    }
}
