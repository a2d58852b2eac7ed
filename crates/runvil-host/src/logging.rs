//! Where log lines go and which are written: stderr, filtered by `RUST_LOG`, with the HTTP
//! stack under the Pack capped whatever `RUST_LOG` says.
//!
//! The Pack scrubs its own lines, but the crates it connects through log on their own, and a
//! configured URL's host can hold a secret (`https://${env:TENANT}.example/mcp`): at debug and
//! trace, reqwest says "starting new connection" with the host, hyper-util logs its pool keys
//! (scheme and host) and `Http::connect` with host and port, h2 logs frames, and the TLS
//! verifier names the host in an error when a certificate does not match. These lines pass no
//! scrubber, so they are capped by a filter of their own: `RUST_LOG` can lower what is written
//! but never raise these crates above their cap, not even with a more specific directive such
//! as `hyper_util::client::legacy::pool=trace`. SECURITY.md tells an embedding Host to do the
//! same.

use std::io::IsTerminal;

use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::prelude::*;

use crate::progress;

/// The crates of the Pack's dependency tree that log (`cargo tree -p plugin_mcp -e normal -i
/// tracing`, and `-i log`), with the most each may write. Their warnings name no host, except
/// the TLS verifier's error, which is off. hyper, rustls and tokio-rustls log nothing in this
/// build (their logging features are off), and are capped so that turning one on cannot
/// reopen the leak.
const HTTP_STACK_CAPS: [(&str, LevelFilter); 8] = [
    ("reqwest", LevelFilter::WARN),
    ("hyper", LevelFilter::WARN),
    ("hyper_util", LevelFilter::WARN),
    ("hyper_rustls", LevelFilter::WARN),
    ("h2", LevelFilter::WARN),
    ("rustls", LevelFilter::WARN),
    ("tokio_rustls", LevelFilter::WARN),
    ("rustls_platform_verifier", LevelFilter::OFF),
];

/// Logs to stderr, filtered by RUST_LOG (else `default`, such as `warn`) and by the caps, so
/// stdout carries only results; in colour only on a terminal, so a log file holds no escape
/// codes. Lines of the `log` crate (reqwest's, the TLS verifier's) pass the same filters.
pub(crate) fn init(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Two filters on one subscriber: a line is written only if both let it through.
    let caps = Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_targets(HTTP_STACK_CAPS);
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(progress::LogWriter::default);
    tracing_subscriber::registry()
        .with(filter)
        .with(caps)
        .with(output)
        .init();
}
