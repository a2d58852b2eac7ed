//! The taint type: server data no model may see before the envelope checks it.
//!
//! Its field is private, so the only ways out of an [`Untrusted`] are [`Untrusted::show`] (the
//! one way to text: scrubbed, cleaned and cut), [`Untrusted::peek`], which is for protocol
//! plumbing, and [`Untrusted::for_check`], which only the envelope's checks call
//! (build-xtask refuses it anywhere else).

/// Data from a server that no model may see before the envelope checks it. Its `Debug` shows
/// nothing of it: a server may have echoed a secret there.
pub(crate) struct Untrusted<T>(T);

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

    /// The data itself, for one of the envelope's checks, which makes checked types or
    /// [`Shown`](super::Shown) text of it. build-xtask refuses a call outside `src/envelope/`.
    pub(crate) fn for_check(&self) -> &T {
        &self.0
    }

    /// [`Untrusted::for_check`], by value: for a check that rewrites the data in place.
    pub(crate) fn into_for_check(self) -> T {
        self.0
    }

    /// A look for protocol plumbing (a cursor, a version); nothing read through it may reach
    /// a model or a log line.
    pub(crate) fn peek(&self) -> &T {
        &self.0
    }
}
