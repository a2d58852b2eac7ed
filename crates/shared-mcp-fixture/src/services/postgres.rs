//! A throwaway PostgreSQL cluster: Debian's server binaries (`/usr/lib/postgresql/*/bin`, the
//! newest version there), `initdb` in a temporary folder, one superuser (`runvil`) that logs in
//! with a password (SCRAM), listening on a free port of 127.0.0.1 only. It can be stopped at
//! once (`pg_ctl stop -m immediate`, as a crash would) and started again on the same port,
//! for the tests of what runvil does while its database is away; it is stopped and removed
//! when dropped.
//!
//! Durability against the machine's loss is off (`fsync`, `full_page_writes`): the cluster
//! lives for one test. A commit still writes the write-ahead log (`synchronous_commit` stays
//! on), so an immediate stop, which kills the server as a crash would, loses nothing committed:
//! the operating system keeps what was written.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use super::{Folder, absent, free_port, run};

/// The superuser the tests log in as.
pub const USER: &str = "runvil";

/// A running cluster; stopped and removed when dropped.
pub struct Postgres {
    folder: Folder,
    bin: PathBuf,
    port: u16,
    password: String,
}

impl Postgres {
    /// A new cluster whose superuser's password is random; `None` (said in one line, or a
    /// failure under `CI=true`) when PostgreSQL is not installed.
    pub fn start() -> Option<Self> {
        Self::start_with_password(&random_hex())
    }

    /// A new cluster whose superuser's password is `password` (a canary, for the tests that
    /// prove it is never shown).
    pub fn start_with_password(password: &str) -> Option<Self> {
        let Some(bin) = server_binaries() else {
            absent("no PostgreSQL server (initdb, pg_ctl, postgres in /usr/lib/postgresql/*/bin)");
            return None;
        };
        let folder = Folder::new("runvil-postgres");
        let pwfile = folder.path.join("password");
        std::fs::write(&pwfile, password).expect("the password file");
        folder.give(&pwfile);
        let mut initdb = folder.command(&bin.join("initdb"));
        initdb
            .arg("--pgdata")
            .arg(folder.path.join("data"))
            .args(["--username", USER, "--auth", "scram-sha-256", "--no-sync"])
            .args(["--encoding", "UTF8", "--locale", "C"])
            .arg("--pwfile")
            .arg(&pwfile);
        run(initdb, "initdb");
        let _ = std::fs::remove_file(&pwfile);
        let port = free_port();
        let settings = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\n\
             fsync = off\nfull_page_writes = off\n\
             shared_buffers = 16MB\nmax_connections = 40\n",
            folder.path.display()
        );
        let conf = folder.path.join("data/postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("postgresql.conf");
        text.push_str(&settings);
        std::fs::write(&conf, text).expect("postgresql.conf written");
        let postgres = Self {
            folder,
            bin,
            port,
            password: password.to_owned(),
        };
        postgres.start_again();
        Some(postgres)
    }

    /// The connection string of the cluster's `postgres` database, as the superuser.
    pub fn dsn(&self) -> String {
        format!(
            "postgres://{USER}:{}@127.0.0.1:{}/postgres",
            percent_encoded(&self.password),
            self.port
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`): every
    /// connection is dropped mid-way.
    pub fn stop(&self) {
        let mut stop = self.pg_ctl();
        stop.args(["stop", "-m", "immediate", "-w"]);
        run(stop, "pg_ctl stop");
    }

    /// Starts the server (again, after [`Postgres::stop`]) on its port, and waits until it
    /// accepts connections.
    pub fn start_again(&self) {
        let mut start = self.pg_ctl();
        start
            .args(["start", "-w", "-t", "60", "-l"])
            .arg(self.folder.path.join("log"));
        run(start, "pg_ctl start");
    }

    /// Runs `sql` with `psql` as the superuser and answers what it printed (rows unaligned,
    /// `|` between fields, no headers).
    ///
    /// # Panics
    ///
    /// If the statement fails.
    pub fn psql(&self, sql: &str) -> String {
        let mut psql = std::process::Command::new(self.bin.join("psql"));
        psql.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
        ])
        .args([
            "-p",
            &self.port.to_string(),
            "-U",
            USER,
            "-d",
            "postgres",
            "-c",
            sql,
        ])
        .env("PGPASSWORD", &self.password)
        .env("PGCONNECT_TIMEOUT", "10");
        run(psql, "psql")
    }

    fn pg_ctl(&self) -> std::process::Command {
        let mut pg_ctl = self.folder.command(&self.bin.join("pg_ctl"));
        pg_ctl.arg("-D").arg(self.folder.path.join("data"));
        pg_ctl
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut stop = self.pg_ctl();
        stop.args(["stop", "-m", "immediate", "-w"]);
        let _ = stop.output();
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` that has the server's binaries.
fn server_binaries() -> Option<PathBuf> {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            let complete = ["initdb", "pg_ctl", "postgres", "psql"]
                .iter()
                .all(|name| bin.join(name).is_file());
            complete.then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// 16 random bytes in hex, from the system's generator.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .expect("random bytes");
    bytes.iter().fold(String::new(), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

/// `text` percent-encoded for a URL's userinfo (everything but unreserved characters).
fn percent_encoded(text: &str) -> String {
    text.bytes().fold(String::new(), |mut out, byte| {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
        out
    })
}
