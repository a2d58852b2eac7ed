//! `runvil disable NS [TOOL]` and `runvil enable NS [TOOL]`: the user turns a server, or one
//! of its tools, off or on again, for every command and every process that reads the pins
//! file.
//!
//! The decision is the user's about a server's tools, as an approval is, so it is kept where
//! approvals are: in the Pack's record of the server, through the contract's pin store
//! ([`Pack::set_enabled`](runvil_plugin::Pack::set_enabled)). runvil never reads the record
//! (it is the Pack's), so any store that carries records carries the decision unchanged. The
//! Pack is built over the one server on a runtime that never runs its tasks, as `check` builds
//! one, and asked the decision on another: deciding contacts no server.

use std::sync::Arc;

use runvil_plugin::PinStore;

use crate::cli::Source;
use crate::discovery;
use crate::host::{self, EXIT_INVALID, EXIT_OK, EXIT_OTHER, Lent};
use crate::pins::{self, PinFile};
use crate::untrusted::shown;

/// Turns `namespace` (or its `tool`) on (`enabled`) or off, and answers the exit code.
pub(crate) fn run(namespace: &str, tool: Option<&str>, enabled: bool, source: &Source) -> u8 {
    let verb = if enabled { "enable" } else { "disable" };
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let servers = match host::only(config, namespace) {
        Ok(servers) => servers,
        Err(unknown) => {
            eprintln!("runvil: {unknown}");
            return EXIT_INVALID;
        }
    };
    let Some(file) = PinFile::default_place() else {
        eprintln!("runvil: cannot {verb}: {}", pins::NO_PLACE);
        return EXIT_OTHER;
    };
    // Before the Pack: a pins file that cannot be used is said as itself, once.
    if let Err(e) = file.check() {
        eprintln!("runvil: cannot {verb}: {e}");
        return EXIT_OTHER;
    }
    let runtimes = (idle_runtime(), idle_runtime());
    let (Ok(idle), Ok(deciding)) = runtimes else {
        eprintln!("runvil: cannot start the async runtime");
        return EXIT_OTHER;
    };
    let lent = Lent {
        pins: Some(Arc::new(file.quiet()) as Arc<dyn PinStore>),
        ..Lent::default()
    };
    // Never driven: the Pack's connection tasks never run.
    let pack = match host::build_pack_on(servers, idle.handle().clone(), lent) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let decided = deciding.block_on(pack.set_enabled(namespace, tool, enabled));
    let what = match tool {
        Some(tool) => format!("{} {}", shown(namespace), shown(tool)),
        None => shown(namespace),
    };
    let state = if enabled { "on" } else { "off" };
    match decided {
        Ok(true) => {
            eprintln!("runvil: {what} is turned {state}");
            EXIT_OK
        }
        Ok(false) => {
            eprintln!("runvil: {what} was turned {state} already");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("runvil: cannot {verb} {what}: {}", shown(&e.reason));
            EXIT_OTHER
        }
    }
}

/// A runtime of one thread, with timers and I/O, that runs only what is blocked on.
fn idle_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
