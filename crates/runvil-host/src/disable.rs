//! `runvil disable NS [TOOL]` and `runvil enable NS [TOOL]`: the user turns a server, or one
//! of its tools, off or on again, for every command and every process that reads the same
//! records: the pins file, or with `--store` the database's.
//!
//! The decision is the user's about a server's tools, as an approval is, so it is kept where
//! approvals are: in the Pack's record of the server, through the contract's pin store
//! ([`Pack::set_enabled`](runvil_plugin::Pack::set_enabled)). runvil never reads the record
//! (it is the Pack's), so any store that carries records carries the decision unchanged: the
//! pins file, or the database's record of the server (`DatabasePins`), whose change every
//! `runvil serve --store` hears of (a tool's counts at its next use, a server's at its next
//! start, as with the file). The Pack is built over the one server on a runtime that never
//! runs its tasks, as `check` builds one, and asked the decision on another: deciding
//! contacts no server. The database's connections run on a third runtime, of their own.

use std::sync::Arc;

use runvil_plugin::PinStore;

use crate::cli::{Source, StoreArgs};
use crate::discovery;
use crate::host::{self, EXIT_INVALID, EXIT_OK, EXIT_OTHER, Lent};
use crate::pins::{self, PinFile};
use crate::store::Store;
use crate::untrusted::shown;

/// Turns `namespace` (or its `tool`) on (`enabled`) or off where `store` says, and answers the
/// exit code.
pub(crate) fn run(
    namespace: &str,
    tool: Option<&str>,
    enabled: bool,
    source: &Source,
    store: &StoreArgs,
) -> u8 {
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
    let runtimes = (idle_runtime(), idle_runtime());
    let (Ok(idle), Ok(deciding)) = runtimes else {
        eprintln!("runvil: cannot start the async runtime");
        return EXIT_OTHER;
    };
    // Held to the end: the database's connections run on its runtime.
    let (pins, _kept) = match records(store) {
        Ok(records) => records,
        Err(e) => {
            eprintln!("runvil: cannot {verb}: {e}");
            return EXIT_OTHER;
        }
    };
    let lent = Lent {
        pins: Some(pins),
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

/// The database, open on the runtime its connections run on.
type Opened = (Store, tokio::runtime::Runtime);

/// Where the records are, as the Pack's pin store, with what must live as long as it: the
/// pins file (checked first, so a file that cannot be used is said as itself, once), or the
/// database `--store` names, opened on a runtime of its own.
fn records(store: &StoreArgs) -> Result<(Arc<dyn PinStore>, Option<Opened>), String> {
    if store.store.is_none() {
        let file = PinFile::default_place().ok_or(pins::NO_PLACE)?;
        file.check()?;
        return Ok((Arc::new(file.quiet()), None));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let opened = runtime.block_on(Store::choose(store))?;
    let pins = opened
        .database_pins()
        .ok_or("the store keeps no records of trusted tools")?;
    Ok((pins, Some((opened, runtime))))
}

/// A runtime of one thread, with timers and I/O, that runs only what is blocked on.
fn idle_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
