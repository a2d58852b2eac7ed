//! The Pack's integration tests, one module per concern, in one test binary: one link and one
//! process instead of one per file. Tests that need a process of their own stay beside this
//! folder: those that install the global log subscriber (`authorization`, `python_sdk`,
//! `redaction`, `schema_work`) and those that measure the process's memory (`catalog_memory`,
//! `load`).

use shared_mcp_fixture::test_support as support;

mod catalog;
mod client;
mod config;
mod construct;
mod deadline;
mod envelope;
mod eras;
mod hostile;
mod invisible;
mod lifecycle;
mod live;
mod pins;
mod protocol;
mod search;
mod view;
