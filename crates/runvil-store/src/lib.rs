//! runvil's state on PostgreSQL, so that several `runvil` processes (gateways behind a load
//! balancer, a `runvil trust` on a reviewer's machine) share one truth. A Host's crate: the
//! Pack never depends on it, and reaches what it holds only through the contract's stores.
//!
//! # Where each piece of state lives
//!
//! | state | files (the default: one person, one machine) | PostgreSQL (`--store postgres://...`) |
//! |---|---|---|
//! | logins (tokens, registered clients) | `credentials.json`, `0600`, in the clear | `runvil.records`, kind `credentials`, key the namespace, the value sealed with AES-256-GCM under `--store-key-file` ([`sealed`]) |
//! | the refresh lock | a lock on `credentials.json.lock` (`flock`) | a row lock (`SELECT ... FOR UPDATE`) in a transaction held across the refresh ([`credentials`]) |
//! | pins and approvals | `pins.json`, under a lock on `pins.json.lock` | `runvil.records`, kind `pins`, key `NS#...` (the file's key), compare-and-set on `version` ([`records`], [`pins`]) |
//! | reviews `trust --yes` binds to | in the server's record in `pins.json` | in the server's `pins` record, so one compare-and-set covers both |
//! | who changed a record, when | nowhere | `changed_by`, `changed_at`, `changed_role` of its row |
//! | a change made elsewhere | read again when a held tool is used, at most once a second (the Pack's bound) | `NOTIFY runvil_records` ([`listen`]): the Host tells its Pack (`record_changed`), which reads the record again at the server's next use; the read at use stays the fallback |
//! | servers and tools turned off (`disable`) | in the server's record in `pins.json` | in the server's `pins` record |
//! | the gateway's audit trail | `audit.jsonl` (`--audit`), appended by one gateway | `runvil.audit`, a row per line with the instance that wrote it and an id of 128 random bits it chose ([`audit`]), numbered in the order kept (`seq`), for every instance |
//! | audit lines not yet kept | the file writer's queue, in the process | the Host's queue (`AUDIT_STORE_QUEUE_LINES`), in the process, while the database is away |
//! | 2025-11-25 sessions ended (`DELETE`) | in the instance that ended them only | `runvil.revoked_sessions`, the hash of each one's sealed number with its expiry ([`sessions`]), announced to every instance |
//! | the key that seals credentials | (none) | a file beside runvil, never in the database |
//!
//! # Layout
//!
//! - [`dsn`]: the connection string, parsed once, its password never shown.
//! - [`database`]: the connections (one shared, pipelined; one per hold; one listening),
//!   reconnection with a backoff ([`backoff`], which the listener keeps too) capped at
//!   [`backoff::RECONNECT_MAX`], the deadlines; a
//!   database away when `runvil serve` starts is migrated at its first statement once reached
//!   ([`Database::start`]).
//! - [`migrations`]: the schema, created and migrated by runvil, refused when newer.
//! - [`records`]: versioned records, compare-and-set. [`sealed`]: values sealed at rest.
//! - [`credentials`]: the contract's `CredentialStore` on the records, with its hold.
//! - [`pins`]: the contract's `PinStore` on the records.
//! - [`listen`]: the notices of changed records (and of ended sessions). [`audit`]: the audit
//!   table. [`sessions`]: the sessions ended on one instance, for all.
//! - [`error`]: what this boundary answers ([`Error`]).

#![forbid(unsafe_code)]
// Every dependency is used; test builds also see the dev-dependencies, which need not be.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod audit;
pub mod backoff;
pub mod credentials;
pub mod database;
pub mod dsn;
pub mod error;
pub mod listen;
pub mod migrations;
pub mod pins;
pub mod records;
pub mod sealed;
pub mod sessions;

pub use audit::{AuditQuery, AuditRow, Instance, KeptRow};
pub use backoff::Backoff;
pub use credentials::SealedCredentials;
pub use database::Database;
pub use dsn::Dsn;
pub use error::Error;
pub use listen::Change;
pub use pins::DatabasePins;
pub use records::{Kind, Record, Swapped};
pub use sealed::SealingKey;
