//! A 2025-11-25 session without state: its `Mcp-Session-Id` is the session itself, sealed
//! with AES-256-GCM under the key every instance of the gateway shares (`session_key`), so
//! any instance opens it and none keeps a table of sessions.
//!
//! The sealed record says which revision the session speaks, who opened it (the SHA-256 of
//! the identity's label: a fixed size, and not the label itself even under the seal), when it
//! expires, and a random number naming it among this process's calls in flight. An id that
//! was changed, has expired, was sealed under another key, or is presented by another identity
//! opens to nothing, which the server answers with `404` as for a session it ended: the
//! client then starts a new one, as the specification tells it to.
//!
//! A session ended with `DELETE` is refused afterwards by the instance that ended it and, with
//! `--store`, by every instance sharing the database (`revoked`).
//!
//! Each id is sealed under a fresh random 96-bit nonce; AES-GCM keeps its guarantees for far
//! more ids than a key will ever seal (2^32 under NIST's bound).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{AES_256_GCM, Aad, NONCE_LEN, Nonce, RandomizedNonceKey};
use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// How long a session lives from its `initialize`: a working day. A client past it gets `404`
/// and starts a new session at once. Without `--store`, a session ended with `DELETE` on one
/// instance stays usable on another this long at most (each keeps only the ones it ended);
/// with it, every instance refuses it (`revoked`).
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 60 * 60);

/// The revisions a session may speak, by the byte that names each in a sealed record.
pub(crate) const SESSION_REVISIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The first byte of an id: the format of what follows, so a later format can be told apart.
const FORMAT: u8 = 1;
/// Bound to every seal: an id of this format opens only as one.
const AAD: &[u8] = b"runvil session id v1";
/// The sealed record: revision (1), expiry in seconds since 1970 (8), identity hash (32),
/// number (16).
const RECORD_LEN: usize = 1 + 8 + 32 + 16;
const TAG_LEN: usize = 16;
/// The bytes of an id before its Base64: format, nonce, sealed record and tag.
const ID_BYTES: usize = 1 + NONCE_LEN + RECORD_LEN + TAG_LEN;
/// The characters of an id (URL-safe Base64 without padding, all visible ASCII): anything
/// longer is refused before any work.
pub(crate) const ID_CHARS: usize = (ID_BYTES * 4).div_ceil(3);

/// The key sessions are sealed under.
pub(crate) struct SessionKey(RandomizedNonceKey);

impl SessionKey {
    /// The key of these 32 bytes.
    pub(crate) fn new(bytes: &[u8; 32]) -> Self {
        Self(RandomizedNonceKey::new(&AES_256_GCM, bytes).expect("32 bytes are an AES-256 key"))
    }
}

/// An open session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Session {
    /// The revision it speaks: one of [`SESSION_REVISIONS`].
    pub(crate) revision: &'static str,
    /// The random number that names it among this process's calls.
    pub(crate) number: [u8; 16],
    /// When it expires, in seconds since 1970.
    pub(crate) expires: u64,
}

impl Session {
    /// The name it is kept under once ended (`revoked`): the SHA-256 of its number, in hex,
    /// which tells nothing of its id.
    pub(crate) fn ended_name(&self) -> String {
        (digest(&SHA256, &self.number).as_ref().iter())
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// When it expires.
    pub(crate) fn expires_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.expires)
    }
}

/// Seals a new session of `revision` (one of [`SESSION_REVISIONS`]) for `identity` (its
/// label), opened at `now`: its id.
pub(crate) fn seal(key: &SessionKey, revision: &str, identity: &str, now: SystemTime) -> String {
    let code = SESSION_REVISIONS
        .iter()
        .position(|r| *r == revision)
        .expect("a session's revision is one of SESSION_REVISIONS");
    let mut number = [0u8; 16];
    aws_lc_rs::rand::fill(&mut number).expect("the system's random numbers");
    let expires = seconds(now) + SESSION_LIFETIME.as_secs();
    let mut record = Vec::with_capacity(RECORD_LEN + TAG_LEN);
    record.push(u8::try_from(code).expect("three revisions"));
    record.extend_from_slice(&expires.to_be_bytes());
    record.extend_from_slice(digest(&SHA256, identity.as_bytes()).as_ref());
    record.extend_from_slice(&number);
    let nonce = key
        .0
        .seal_in_place_append_tag(Aad::from(AAD), &mut record)
        .expect("sealing a record in memory");
    let mut id = Vec::with_capacity(ID_BYTES);
    id.push(FORMAT);
    id.extend_from_slice(nonce.as_ref());
    id.extend_from_slice(&record);
    URL_SAFE_NO_PAD.encode(id)
}

/// The session `id` names, if it was sealed under `key` for `identity` and has not expired at
/// `now`; `None` for anything else, without saying which (every case is a `404`).
pub(crate) fn open(key: &SessionKey, id: &str, identity: &str, now: SystemTime) -> Option<Session> {
    if id.len() != ID_CHARS {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(id).ok()?;
    let (&format, rest) = bytes.split_first()?;
    if format != FORMAT || rest.len() != NONCE_LEN + RECORD_LEN + TAG_LEN {
        return None;
    }
    let (nonce, sealed) = rest.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut sealed = sealed.to_vec();
    let record = key
        .0
        .open_in_place(nonce, Aad::from(AAD), &mut sealed)
        .ok()?;
    let (code, rest) = record.split_first()?;
    let (expires, rest) = rest.split_at(8);
    let (opened_by, number) = rest.split_at(32);
    let expires = u64::from_be_bytes(expires.try_into().ok()?);
    if seconds(now) >= expires || opened_by != digest(&SHA256, identity.as_bytes()).as_ref() {
        return None;
    }
    Some(Session {
        revision: SESSION_REVISIONS.get(usize::from(*code))?,
        number: number.try_into().ok()?,
        expires,
    })
}

fn seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SessionKey {
        SessionKey::new(&[byte; 32])
    }

    #[test]
    fn an_id_opens_for_its_identity_under_its_key_until_it_expires() {
        let now = SystemTime::now();
        let id = seal(&key(1), "2025-06-18", "alice", now);
        assert_eq!(id.len(), ID_CHARS);
        assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
        let session = open(&key(1), &id, "alice", now).expect("opens");
        assert_eq!(session.revision, "2025-06-18");
        // The last second of its life, and the first one past it.
        let last = now + SESSION_LIFETIME - Duration::from_secs(1);
        assert_eq!(open(&key(1), &id, "alice", last), Some(session));
        assert_eq!(open(&key(1), &id, "alice", now + SESSION_LIFETIME), None);
        // Another identity, another key.
        assert_eq!(open(&key(1), &id, "bob", now), None);
        assert_eq!(open(&key(2), &id, "alice", now), None);
        // Two sessions of one identity are two numbers.
        let other = seal(&key(1), "2025-06-18", "alice", now);
        assert_ne!(
            open(&key(1), &other, "alice", now).map(|s| s.number),
            Some(session.number)
        );
    }

    #[test]
    fn a_changed_id_opens_to_nothing_whichever_character_changed() {
        let now = SystemTime::now();
        let id = seal(&key(1), "2025-11-25", "alice", now);
        for at in 0..id.len() {
            let mut changed = id.clone().into_bytes();
            changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(changed).expect("ASCII");
            assert_eq!(open(&key(1), &changed, "alice", now), None, "at {at}");
        }
        for bad in ["", "x", &id[1..], &format!("{id}A"), "!!!"] {
            assert_eq!(open(&key(1), bad, "alice", now), None, "{bad:?}");
        }
    }
}
