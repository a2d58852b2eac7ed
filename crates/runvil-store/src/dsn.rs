//! The connection string of `--store` (or `$RUNVIL_STORE`): parsed once, into the client's
//! configuration, and never shown. What runvil says of the database is [`Dsn::describe`]:
//! host, port, database and user. The password is kept only in the configuration, and any
//! text that could come back with it (a client's or a server's error) is scrubbed of it.
//!
//! Both of PostgreSQL's forms are accepted (`postgres://USER:PASSWORD@HOST:PORT/DATABASE?...`
//! and `host=... user=...`), with the client's options (`sslmode=disable|prefer|require`,
//! `connect_timeout`, ...). A string that does not parse is refused without the client's own
//! words, which may quote a character of it. Without `connect_timeout`,
//! [`CONNECT_DEADLINE`] bounds each attempt.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::Host;
use zeroize::Zeroizing;

use crate::Error;

/// How long one attempt to connect may take when the string does not say.
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(10);

/// The replacement of the password in a text that held it.
const REDACTED: &str = "[redacted]";

/// What the refusal of a string that does not parse says (never the string).
const NOT_A_DSN: &str = "--store (or $RUNVIL_STORE) is not a PostgreSQL connection string: write \
                         postgres://USER:PASSWORD@HOST:PORT/DATABASE (with ?sslmode=require for a \
                         database elsewhere), or its host=... form";

/// A parsed connection string. `Debug` shows what [`Dsn::describe`] does.
#[derive(Clone)]
pub struct Dsn {
    config: tokio_postgres::Config,
    /// The password as the server receives it, to scrub from texts; empty when none.
    password: Zeroizing<String>,
}

impl Dsn {
    /// Parses `text`; the error never holds any of it.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut config =
            tokio_postgres::Config::from_str(text).map_err(|_| Error::Dsn(NOT_A_DSN.to_owned()))?;
        if config.get_hosts().is_empty() {
            return Err(Error::Dsn(format!("{NOT_A_DSN} (it names no host)")));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_DEADLINE);
        }
        config.application_name("runvil");
        let password = config
            .get_password()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default();
        Ok(Self {
            config,
            password: Zeroizing::new(password),
        })
    }

    /// The client's configuration.
    pub(crate) fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The database as runvil names it: `database "D" at HOST:PORT as USER`.
    pub fn describe(&self) -> String {
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(host)) => host.clone(),
            Some(Host::Unix(path)) => path.display().to_string(),
            None => "?".to_owned(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let database = self
            .config
            .get_dbname()
            .or(self.config.get_user())
            .unwrap_or("postgres");
        let user = self.config.get_user().unwrap_or("(the system user)");
        self.scrub(&format!(
            "database \"{database}\" at {host}:{port} as {user}"
        ))
    }

    /// `text` without the password (a server or a library may say anything).
    pub fn scrub(&self, text: &str) -> String {
        match self.password.is_empty() {
            true => text.to_owned(),
            false => text.replace(self.password.as_str(), REDACTED),
        }
    }

    /// Whether the connection must be encrypted (`sslmode=require`).
    pub fn requires_tls(&self) -> bool {
        self.config.get_ssl_mode() == tokio_postgres::config::SslMode::Require
    }
}

impl fmt::Debug for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dsn({})", self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "pw-canary-91c4";

    #[test]
    fn a_string_is_described_without_its_password() {
        let dsn = Dsn::parse(&format!("postgres://ops:{CANARY}@db.example:6432/team")).expect("ok");
        assert_eq!(
            dsn.describe(),
            "database \"team\" at db.example:6432 as ops"
        );
        assert_eq!(
            format!("{dsn:?}"),
            "Dsn(database \"team\" at db.example:6432 as ops)"
        );
        assert_eq!(dsn.scrub(&format!("said {CANARY}!")), "said [redacted]!");
        assert_eq!(dsn.config().get_connect_timeout(), Some(&CONNECT_DEADLINE));
        assert!(!dsn.requires_tls());
        let dsn = Dsn::parse("host=db user=u password=x sslmode=require").expect("ok");
        assert!(dsn.requires_tls());
        assert_eq!(dsn.describe(), "database \"u\" at db:5432 as u");
    }

    #[test]
    fn a_string_that_does_not_parse_is_refused_without_any_of_it() {
        for text in [
            format!("postgres://u:{CANARY}@h/d?sslmode={CANARY}"),
            format!("host=h password='{CANARY}"),
            format!("host=h {CANARY}=1"),
            format!("user=u password={CANARY}"),
        ] {
            let error = Dsn::parse(&text).expect_err("refused").to_string();
            assert!(
                error.starts_with("--store (or $RUNVIL_STORE) is not"),
                "{error}"
            );
            assert!(
                !error.contains(CANARY) && !error.contains("canary"),
                "{error}"
            );
        }
    }
}
