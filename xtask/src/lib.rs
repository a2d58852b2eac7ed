//! build-xtask: the project's automation, kept out of the shipped crates.
//!
//! xtask owns the rules that a code review would otherwise have to remember:
//!
//! - **Policy checks** (`cargo test -p build-xtask`, or `cargo run -p build-xtask -- check`):
//!   - [`dependency_policy::plugin_family_deps`]: a `plugin_*` / `plugin-*` package depends on
//!     no workspace crate other than `runvil-plugin` and `shared-*` crates;
//!   - [`public_api_policy::only_install_is_public`]: `plugin_mcp` exports `pub fn install`
//!     and nothing else, and no `#[macro_export]` macro;
//!   - [`dependency_policy::allow_list`]: every direct dependency of `plugin_mcp` is listed,
//!     with its reason, in `policy/deps.allow`, and that list has no stale entries;
//!   - [`dependency_policy::forbidden_features`]: no feature or crate that would widen the
//!     attack surface (remote schema resolvers, response decompression, native TLS/OpenSSL,
//!     unbounded JSON depth) is in the resolved dependency graph.
//!
//! Each check is a pure function over already-parsed data (the `cargo metadata` JSON, source
//! text, the allow-list text), so its unit tests feed it crafted input; [`workspace`] does the
//! I/O that gathers the real data and [`check`] runs every check on the real workspace.
//!
//! Later subcommands (conformance, interop, benchmarks, audit) get their own modules here and
//! a row in the dispatcher in `main.rs`.

pub mod advisories;
pub mod audit;
pub mod audit_table;
pub mod bench;
pub mod browser;
pub mod check;
pub mod conformance;
pub mod dependency_policy;
pub mod interop;
pub mod pack_driver;
pub mod public_api_policy;
pub mod workspace;
