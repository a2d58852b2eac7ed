//! What a Host's stores answer when they cannot do what a Pack asked (the credential store,
//! the pin store).

use std::fmt;

/// Why a store could not do what it was asked, in words for the person running the Host (it
/// names the store, a file for instance, never a value kept in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    /// What went wrong.
    pub reason: String,
}

impl StoreError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for StoreError {}
