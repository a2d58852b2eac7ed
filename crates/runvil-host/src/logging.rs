//! Where log lines go and which are written: stderr, filtered by `RUST_LOG`, and by an
//! allow-list that `RUST_LOG` cannot widen: only the Pack's targets (`plugin_mcp`) and
//! runvil's own (`runvil`) may write below WARN; every other crate is capped at WARN, and the
//! TLS verifier is off.
//!
//! The Pack scrubs its own lines, but every other crate in the process logs on its own, and
//! nothing scrubs its lines: at debug and trace reqwest says "starting new connection" with
//! the host (a configured URL's host can hold a secret, `https://${env:TENANT}.example/mcp`),
//! hyper-util logs its pool keys and `Http::connect` with host and port, h2 logs frames, and
//! the `webbrowser` crate that `runvil login` opens the browser with logs the command it runs,
//! the whole authorization URL with its `state`. A list of the crates known to leak would
//! miss the next one (webbrowser was such a miss), so the list is of the crates that may
//! speak. The cap is a filter of its own beside `RUST_LOG`'s (a line is written only if both
//! let it through): `RUST_LOG` can lower any level, but even a directive naming a target,
//! such as `hyper_util::client::legacy::pool=trace`, raises nothing past the cap. Warnings
//! and errors of other crates still show, and name no host; the TLS verifier's errors do
//! (the host a certificate was checked for), so it is off. SECURITY.md tells an embedding Host
//! to do the same.

use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, LevelFilter, filter_fn};
use tracing_subscriber::prelude::*;

use crate::progress;

/// The targets that may write at every level: the Pack's, which scrubs its lines of every
/// configured secret and escapes server text, and runvil's own, which name no value.
const OPEN_TARGETS: [&str; 2] = ["plugin_mcp", "runvil"];

/// Targets that write nothing at all: the TLS verifier's errors name the host a certificate
/// was checked for.
const SILENT_TARGETS: [&str; 1] = ["rustls_platform_verifier"];

/// The most any other target may write: their warnings and errors name no host.
const OTHERS_CAP: LevelFilter = LevelFilter::WARN;

/// Logs to stderr, filtered by RUST_LOG (else `default`, such as `warn`) and by the
/// allow-list, so stdout carries only results; in colour only on a terminal, so a log file
/// holds no escape codes. Lines of the `log` crate (reqwest's, webbrowser's, the TLS
/// verifier's) pass the same filters, under their module paths as targets.
pub(crate) fn init(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Two filters on one subscriber: a line is written only if both let it through.
    let cap = filter_fn(|metadata| cap(metadata.target()) >= *metadata.level());
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(progress::LogWriter::default);
    tracing_subscriber::registry()
        .with(filter)
        .with(cap)
        .with(output)
        .init();
}

/// The most `target` may write.
fn cap(target: &str) -> LevelFilter {
    if SILENT_TARGETS
        .iter()
        .any(|crate_name| within(target, crate_name))
    {
        LevelFilter::OFF
    } else if OPEN_TARGETS
        .iter()
        .any(|crate_name| within(target, crate_name))
    {
        LevelFilter::TRACE
    } else {
        OTHERS_CAP
    }
}

/// Whether `target` is the crate `crate_name` or one of its modules: `plugin_mcp` and
/// `plugin_mcp::session`, never `plugin_mcp_other` (a plain prefix would let in any crate
/// whose name starts the same way).
fn within(target: &str, crate_name: &str) -> bool {
    target
        .strip_prefix(crate_name)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pack_and_runvil_may_write_below_warn() {
        for target in [
            "plugin_mcp",
            "plugin_mcp::session",
            "runvil",
            "runvil::login",
        ] {
            assert_eq!(cap(target), LevelFilter::TRACE, "{target}");
        }
        for target in [
            "webbrowser",
            "webbrowser::common",
            "reqwest::connect",
            "hyper_util::client::legacy::pool",
            "h2",
            "rmcp",
            "plugin_mcp_other",
            "runvil_plugin",
            "",
        ] {
            assert_eq!(cap(target), LevelFilter::WARN, "{target}");
        }
        assert_eq!(cap("rustls_platform_verifier"), LevelFilter::OFF);
        assert_eq!(
            cap("rustls_platform_verifier::verification"),
            LevelFilter::OFF
        );
    }
}
