//! The taint type: server data no model may see before the envelope checks it.
//!
//! Its field is visible to the envelope alone (`pub(super)`), so the only ways out of an
//! [`Untrusted`] are the envelope's checks and [`Untrusted::peek`], which is for protocol
//! plumbing. The type system, not a convention, keeps unchecked server text away from models.

/// Data from a server that no model may see before the envelope checks it. Its `Debug` shows
/// nothing of it: a server may have echoed a secret there.
pub(crate) struct Untrusted<T>(pub(super) T);

impl<T: Clone> Clone for Untrusted<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> std::fmt::Debug for Untrusted<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Untrusted(..)")
    }
}

impl<T> Untrusted<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(value)
    }

    /// A look for protocol plumbing (a cursor, a version); nothing read through it may reach
    /// a model or a log line.
    pub(crate) fn peek(&self) -> &T {
        &self.0
    }
}
