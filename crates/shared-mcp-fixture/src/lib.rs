//! One configurable MCP server for everything in this workspace that needs a real one: the
//! Pack's integration tests, `runvil`'s tests and its `demo`, and the benchmark's server (many
//! fixtures in one process, [`ToolSet::Generated`], `nodelay`). It is rmcp's
//! own Streamable HTTP server (the reference Rust SDK, under `axum::serve` on 127.0.0.1) with
//! a catalog of tools declared with rmcp's macros, so each of those speaks to the same server
//! instead of a hand-written copy of its own.
//!
//! ```no_run
//! # async fn example() {
//! use shared_mcp_fixture::{Fixture, Mode, ToolSet};
//! let server = Fixture::builder().tools(ToolSet::Paged).mode(Mode::Json).held().start().await;
//! let pack = shared_mcp_fixture::pack(serde_json::json!({"paged": {"url": server.url()}}));
//! server.release();
//! let entry = shared_mcp_fixture::settled(&pack, "paged", std::time::Duration::from_secs(10)).await;
//! # }
//! ```
//!
//! - `tools.rs`: the tools; `handler.rs`: what the server lists and speaks, its handshake gate;
//! - `server.rs`: the builder and the running server; `recorder.rs`: what it saw;
//! - `pack.rs` (feature `pack`): building the Pack through `install`, and waiting for a server
//!   to settle; with the default feature `server` off, it is all the crate has, for tools that
//!   only drive the Pack.
//! - feature `hostile`, the test servers that misbehave on purpose, as rustls keeps its own in
//!   `rustls-test`: `hostile.rs` (raw HTTP/1.1, scripted answers), `oauth.rs` (an MCP server
//!   behind an OAuth authorization server, both of `hostile`'s making), `changing.rs` (a server
//!   whose tools a test changes while the Pack runs), `canaries.rs` (the canary secrets and
//!   the check that a text holds none of them in any form).
//! - feature `peers`: other SDKs' programs the tests run (`peers.rs`), installed on first use
//!   at pinned versions.
//! - feature `services`: throwaway PostgreSQL and nginx from the distribution's packages
//!   (`services.rs`), for the tests of runvil's shared state.
//! - feature `test-support`: what the black-box tests share beyond the servers
//!   (`test_support.rs`): reading the Pack's tools, a test binary's log lines, the Python
//!   SDK's server.
//! - `wait.rs`, whatever the features: the tests' one polling wait.

#![forbid(unsafe_code)]

#[cfg(feature = "hostile")]
pub mod canaries;
#[cfg(feature = "hostile")]
pub mod changing;
#[cfg(feature = "server")]
mod handler;
#[cfg(feature = "hostile")]
pub mod hostile;
#[cfg(feature = "idp")]
pub mod idp;
#[cfg(feature = "hostile")]
pub mod oauth;
#[cfg(feature = "pack")]
mod pack;
#[cfg(feature = "peers")]
pub mod peers;
#[cfg(feature = "server")]
mod recorder;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "services")]
pub mod services;
#[cfg(feature = "test-support")]
pub mod test_support;
#[cfg(feature = "server")]
mod tools;
mod wait;

#[cfg(feature = "server")]
pub use handler::{PAGED_TOOL_NAMES, Revisions, TOOL_NAMES, ToolSet, echo_schema};
#[cfg(feature = "pack")]
pub use pack::{call, listing, pack, pack_with, ready, settled, status, try_pack, wait_for};
#[cfg(feature = "server")]
pub use server::{Answers, Builder, Fixture, Mode};
#[cfg(feature = "server")]
pub use tools::ECHO_DESCRIPTION;
pub use wait::wait_until;
