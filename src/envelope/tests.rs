//! Envelope tests.
