//! Where a command keeps what it keeps: the files (the default: one person, one machine, no
//! set-up) or, with `--store postgres://...` (or `$RUNVIL_STORE`), a PostgreSQL database that
//! several runvil processes share (`runvil-store`'s module doc says where each piece of state
//! lives in each mode). With the flag, logins, the records of trusted tools (with the reviews
//! `runvil trust --yes` approves and the servers and tools turned off) and the gateway's audit
//! trail (`gateway::audit::database`) are the database's, and a running command hears of
//! every change another process makes to a record ([`changes`]); without it, the credentials
//! and pins files and the audit file. `serve` opens the database whether or not it is there
//! ([`Store::choose_serving`]): what it already trusts stays served meanwhile; every other
//! command needs it at once.
//!
//! The connection string is parsed once, here, and never shown: runvil names the database by
//! its host, port, database and user. Credentials in the database are sealed under the key of
//! `--store-key-file` (or `$RUNVIL_STORE_KEY_FILE`, a `key_file`, made when missing), which
//! every runvil sharing the database must be given and the database never holds: that is why
//! it has no default place.

mod changes;

use std::path::Path;
use std::sync::Arc;

use runvil_plugin::{CredentialStore, Pack, PinStore};
use runvil_store::{Database, DatabasePins, Dsn, Instance, SealedCredentials, SealingKey};
use tokio_util::task::AbortOnDropHandle;

use crate::cli::StoreArgs;
use crate::credentials::FileStore;
use crate::key_file;

/// What is said when no place for the credentials file is known.
pub(crate) const NO_PLACE: &str =
    "no place for the credentials file: set HOME or RUNVIL_CREDENTIALS";

/// What `--store` without a key file is told.
const NO_KEY: &str = "--store needs --store-key-file (or $RUNVIL_STORE_KEY_FILE): the file of \
                      the key that seals credentials in the database, the same for every \
                      runvil that uses it (runvil makes it when it is missing)";

/// Where a command keeps its state: the files, or the database `--store` names.
pub(crate) enum Store {
    /// The credentials and pins files at their usual places.
    Files,
    /// The database, connected and its schema migrated.
    Database(Opened),
}

/// Whether a command needs the database at once.
#[derive(Clone, Copy)]
enum Reach {
    /// Now: a database that cannot be reached is the command's error.
    Now,
    /// Whenever it can be: `serve`, which serves what it already trusts meanwhile.
    Later,
}

/// What is kept in the database, as runvil lends it.
pub(crate) struct Opened {
    database: Arc<Database>,
    /// This process, as the database's rows name it.
    instance: Arc<Instance>,
    credentials: Arc<SealedCredentials>,
    pins: Arc<DatabasePins>,
}

impl Store {
    /// Where `args` say: the database `--store` names (connected, its schema migrated, the
    /// store key read or made), else the files. The error says what is wrong and what to do,
    /// never the connection string.
    pub(crate) async fn choose(args: &StoreArgs) -> Result<Self, String> {
        Self::open(args, Reach::Now).await
    }

    /// [`Store::choose`] for `runvil serve`, which serves whether or not the database can be
    /// reached now: when it cannot, that is said on stderr, and the Pack trusts nothing it
    /// holds no record of until it can (`runvil-store`'s `Database::start`).
    pub(crate) async fn choose_serving(args: &StoreArgs) -> Result<Self, String> {
        Self::open(args, Reach::Later).await
    }

    async fn open(args: &StoreArgs, reach: Reach) -> Result<Self, String> {
        let Some(dsn) = &args.store else {
            return Ok(Self::Files);
        };
        let dsn = Dsn::parse(dsn.text()).map_err(|e| e.to_string())?;
        let key_path = args.store_key_file.as_deref().ok_or(NO_KEY)?;
        let key = sealing_key(key_path)?;
        let database = match reach {
            Reach::Now => Database::open(dsn).await.map_err(|e| e.to_string())?,
            Reach::Later => {
                let (database, away) = Database::start(dsn).await.map_err(|e| e.to_string())?;
                if let Some(away) = away {
                    eprintln!(
                        "runvil: {away}; serving anyway: no tool is trusted until the store \
                         is reached, and runvil connects again in the background"
                    );
                }
                database
            }
        };
        let instance = Instance::current();
        let by = instance.label().to_owned();
        let credentials = SealedCredentials::new(Arc::clone(&database), key, by.clone());
        let pins = DatabasePins::new(Arc::clone(&database), by);
        Ok(Self::Database(Opened {
            database,
            instance: Arc::new(instance),
            credentials: Arc::new(credentials),
            pins: Arc::new(pins),
        }))
    }

    /// The database and this instance, for the audit trail (`None`: the files).
    pub(crate) fn database(&self) -> Option<(Arc<Database>, Arc<Instance>)> {
        match self {
            Self::Files => None,
            Self::Database(opened) => {
                Some((Arc::clone(&opened.database), Arc::clone(&opened.instance)))
            }
        }
    }

    /// Where logins are kept (`None`: the file's place is unknown, [`NO_PLACE`]).
    pub(crate) fn credentials(&self) -> Option<Credentials> {
        match self {
            Self::Files => FileStore::default_place().map(|file| Credentials::File(Arc::new(file))),
            Self::Database(opened) => Some(Credentials::Database(Arc::clone(&opened.credentials))),
        }
    }

    /// The database's records of trusted tools; `None` for the files, whose pins file each
    /// command opens in its own way (`host::Lent::pinned`, `trust`).
    pub(crate) fn database_pins(&self) -> Option<Arc<dyn PinStore>> {
        match self {
            Self::Files => None,
            Self::Database(opened) => Some(Arc::clone(&opened.pins) as Arc<dyn PinStore>),
        }
    }

    /// Tells `pack` of each change another process makes to a record of trusted tools, until
    /// the handle is dropped ([`changes`]); nothing for the files, which the Pack reads again
    /// at use.
    pub(crate) fn follow(&self, pack: &Arc<dyn Pack>) -> Option<AbortOnDropHandle<()>> {
        match self {
            Self::Files => None,
            Self::Database(opened) => Some(changes::follow(&opened.database, pack)),
        }
    }
}

/// Where logins are kept.
pub(crate) enum Credentials {
    /// The credentials file.
    File(Arc<FileStore>),
    /// The database, sealed.
    Database(Arc<SealedCredentials>),
}

impl Credentials {
    /// The store the Pack is lent.
    pub(crate) fn lent(&self) -> Arc<dyn CredentialStore> {
        match self {
            Self::File(file) => Arc::clone(file) as Arc<dyn CredentialStore>,
            Self::Database(database) => Arc::clone(database) as Arc<dyn CredentialStore>,
        }
    }

    /// Where logins are kept, in runvil's words: the file, or the database.
    pub(crate) fn place(&self) -> String {
        match self {
            Self::File(file) => file.path().display().to_string(),
            Self::Database(database) => format!("the store ({})", database.describe()),
        }
    }

    /// Whether a login of `namespace` could be kept: the file is usable, or what the database
    /// keeps for it opens with the store key.
    pub(crate) async fn check(&self, namespace: &str) -> Result<(), String> {
        match self {
            Self::File(file) => file.check(),
            Self::Database(database) => database
                .check(namespace)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }

    /// Whether a record is kept for `namespace`.
    pub(crate) async fn has(&self, namespace: &str) -> Result<bool, String> {
        match self {
            Self::File(file) => file.has(namespace),
            Self::Database(database) => database.has(namespace).await.map_err(|e| e.to_string()),
        }
    }

    /// Forgets what is kept for `namespace`.
    pub(crate) async fn forget(&self, namespace: &str) -> Result<(), String> {
        match self {
            Self::File(file) => file.delete(namespace).map_err(|e| e.reason),
            Self::Database(database) => database
                .forget(namespace)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
        }
    }
}

/// The store key in the file at `path`, made when missing.
fn sealing_key(path: &Path) -> Result<SealingKey, String> {
    let bytes = key_file::load_or_create(path, "--store-key-file")?;
    Ok(SealingKey::new(&bytes))
}
