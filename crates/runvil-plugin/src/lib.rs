//! The Plugin contract: the only thing a Plugin and a Host share.
//!
//! A Host keeps a [`Packs`] registry and hands it to each [`Plugin`] it installs. A Plugin
//! inserts Packs into it, each under a name and an id, with the part of the Host's
//! configuration that belongs to it and a [`PackFactory`]. When a run declares a Pack
//! (`uses: [mcp]`), the Host calls [`Packs::construct`] with its [`Services`]; the factory
//! builds the [`Pack`], whose tools the run then sees under `<id>/<tool>`.
//!
//! # Layout
//!
//! - [`Packs`], [`PackFactory`], [`Construct`], [`Config`]: the registry and how a Pack is
//!   built, its configuration handed over once and wiped when dropped.
//! - [`Pack`], [`ToolSpec`], [`ToolError`], [`Unavailable`]: what a built Pack offers.
//! - [`CallOptions`], [`View`]: how one call is made, and what its caller may see (a Host
//!   serving many callers hides from each what its policy denies).
//! - [`StatusReceiver`], [`BackendStatus`], [`BackendState`], [`Progress`], [`ProgressSink`]:
//!   what a Host observes of a running Pack (see [`Pack::status`], [`Pack::shutdown`]).
//! - [`Services`], [`Service`], [`TOKIO_RUNTIME`]: typed values a Host lends to Packs.
//! - [`Authorizer`], [`AuthorizeError`], [`AUTHORIZER`], [`CLIENT_METADATA_URL`],
//!   [`AUTHORIZATION_HINT`], [`CredentialStore`], [`CredentialHold`], [`CREDENTIAL_STORE`]: the
//!   user's part of an OAuth authorization and the storage of its outcome, which a Host lends
//!   to Packs that need them.
//! - [`PinStore`], [`Stored`], [`Version`], [`Saved`], [`PIN_STORE`], [`TRUST_HINT`],
//!   [`HeldTool`], [`Held`], [`FieldChange`], [`Excerpt`], [`StoreError`]: the user's trust in
//!   the tools of a Pack's backends, kept between runs (records saved by compare-and-set),
//!   and the tools a Pack holds until the user approves them ([`Pack::held`],
//!   [`Pack::reviewed`], [`Pack::approve`]).
//! - [`nearest`]: the name a Host and a Pack suggest for a misspelled one, alike.
//! - [`Escape`]: how a Host and a Pack write text from elsewhere on a line a person reads.
//!
//! The contract is deliberately free of async-trait machinery: futures are boxed
//! ([`BoxFuture`]), so both sides need nothing but `std`, `serde_json` and `tokio` (and the
//! contract itself `zeroize`, to wipe a configuration).

#![forbid(unsafe_code)]
// Every dependency is used; test builds also see the dev-dependencies, which need not be.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod authorization;
mod call;
mod config;
mod escape;
mod pack;
mod packs;
mod services;
mod status;
mod store;
mod suggest;
mod trust;

pub use authorization::{
    AUTHORIZATION_HINT, AUTHORIZER, AuthorizationRequest, AuthorizeError, Authorizer,
    CLIENT_METADATA_URL, CREDENTIAL_STORE, CredentialHold, CredentialStore,
};
pub use call::{CallOptions, View};
pub use config::Config;
pub use escape::Escape;
pub use pack::{BoxFuture, Pack, ToolError, ToolSpec, Unavailable};
pub use packs::{Construct, PackFactory, Packs};
pub use services::{Service, Services, TOKIO_RUNTIME};
pub use status::{BackendState, BackendStatus, Progress, ProgressSink, StatusReceiver};
pub use store::StoreError;
pub use suggest::{MAX_SUGGESTION_EDITS, nearest};
pub use trust::{
    Excerpt, FieldChange, Held, HeldTool, PIN_STORE, PinStore, Saved, Stored, TRUST_HINT, Version,
};

/// A Plugin: inserts its Packs into the Host's registry, given the Host's whole configuration.
///
/// A Plugin only registers; it must not build anything or do I/O. Building happens later, in
/// [`PackFactory::construct`], when a run asks for the Pack.
pub type Plugin = fn(&mut Packs, &serde_json::Value);
