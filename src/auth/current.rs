//! What the requests to one server carry now: the access token, the DPoP key it is bound to
//! and the nonce the server asked proofs to carry, and the generation that tells a `401` to
//! older tokens from one to these.
//!
//! Read by every request, so it is apart from the authorization flow, which the machine runs
//! one step at a time and which changes it only by [`Current::install`].

use std::sync::Arc;

use reqwest::Url;
use reqwest::header::HeaderValue;
use tokio::time::Instant;

use super::challenge::Challenge;
use super::dpop::DpopKey;
use crate::secret::Secret;

/// What requests carry now, and which tokens it came from.
#[derive(Default)]
pub(crate) struct Current {
    /// The access token.
    token: Option<Secret>,
    /// The key the token is bound to, when it is a DPoP token.
    dpop: Option<Arc<DpopKey>>,
    /// The DPoP nonce the server asked for last.
    nonce: Option<String>,
    pub(crate) refresh_at: Option<Instant>,
    generation: u64,
}

/// Which tokens a request was sent with, to report its `401` against: a `401` to older ones
/// is answered by the renewal that already happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Generation(u64);

/// The headers that authorize one request.
pub(crate) struct Presented {
    pub(crate) authorization: HeaderValue,
    /// `DPoP`: the proof for this request, when the token is bound to a key.
    pub(crate) proof: Option<HeaderValue>,
}

/// New tokens as requests are to carry them; the scrubbers learnt the token first.
pub(crate) struct Installed {
    pub(crate) token: Secret,
    pub(crate) dpop: Option<Arc<DpopKey>>,
    pub(crate) refresh_at: Option<Instant>,
}

impl Current {
    /// The headers for `method` to `url`.
    pub(crate) fn present(&self, method: &str, url: &Url) -> Option<Presented> {
        let token = self.token.as_ref()?.expose();
        let (scheme, proof) = match &self.dpop {
            Some(key) => {
                let proof = key.proof(method, url, Some(token), self.nonce.as_deref());
                ("DPoP", proof.ok())
            }
            None => ("Bearer", None),
        };
        let mut authorization = HeaderValue::from_str(&format!("{scheme} {token}")).ok()?;
        authorization.set_sensitive(true);
        Some(Presented {
            authorization,
            proof,
        })
    }

    pub(crate) fn generation(&self) -> Generation {
        Generation(self.generation)
    }

    /// Makes `installed` what requests carry, as a new generation.
    pub(crate) fn install(&mut self, installed: Installed) {
        self.token = Some(installed.token);
        self.dpop = installed.dpop;
        self.refresh_at = installed.refresh_at;
        self.generation += 1;
    }

    /// Takes the nonce a `use_dpop_nonce` challenge asks for (RFC 9449 §9), as a new
    /// generation: not a new authorization, only a nonce for the next proofs. Whether it did:
    /// a challenge of another kind, or to a token bound to no key, is not one to take.
    pub(crate) fn take_nonce(&mut self, challenge: &Challenge) -> bool {
        let asked = challenge.error.as_deref() == Some("use_dpop_nonce");
        if !asked || self.dpop.is_none() || challenge.dpop_nonce.is_none() {
            return false;
        }
        self.nonce.clone_from(&challenge.dpop_nonce);
        self.generation += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(dpop: bool) -> Installed {
        Installed {
            token: Secret::new("tok-1".to_owned()),
            dpop: dpop.then(|| Arc::new(DpopKey::generate().expect("key"))),
            refresh_at: None,
        }
    }

    fn nonce_challenge(error: &str) -> Challenge {
        Challenge {
            error: Some(error.to_owned()),
            dpop_nonce: Some("n-1".to_owned()),
            ..Challenge::default()
        }
    }

    #[test]
    fn installed_tokens_are_presented_as_a_new_generation() {
        let url = Url::parse("https://mcp.example/mcp").expect("url");
        let mut current = Current::default();
        assert!(current.present("POST", &url).is_none());
        let before = current.generation();
        current.install(installed(false));
        assert_ne!(current.generation(), before);
        let presented = current.present("POST", &url).expect("presented");
        assert_eq!(presented.authorization.to_str().ok(), Some("Bearer tok-1"));
        assert!(presented.authorization.is_sensitive() && presented.proof.is_none());
        current.install(installed(true));
        let presented = current.present("POST", &url).expect("presented");
        assert_eq!(presented.authorization.to_str().ok(), Some("DPoP tok-1"));
        assert!(presented.proof.is_some());
    }

    #[test]
    fn a_nonce_is_taken_only_when_asked_for_a_bound_token() {
        let mut current = Current::default();
        current.install(installed(false));
        assert!(
            !current.take_nonce(&nonce_challenge("use_dpop_nonce")),
            "a Bearer token"
        );
        current.install(installed(true));
        let before = current.generation();
        assert!(!current.take_nonce(&nonce_challenge("invalid_token")));
        assert_eq!(current.generation(), before);
        assert!(current.take_nonce(&nonce_challenge("use_dpop_nonce")));
        assert_ne!(current.generation(), before);
        assert_eq!(current.nonce.as_deref(), Some("n-1"));
        let without = Challenge {
            dpop_nonce: None,
            ..nonce_challenge("use_dpop_nonce")
        };
        assert!(!current.take_nonce(&without));
    }
}
