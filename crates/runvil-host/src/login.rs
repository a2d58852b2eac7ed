//! `runvil login NS` and `runvil logout NS`: the user's part of an OAuth authorization, which
//! the Pack leaves to its Host, and what is kept of it.
//!
//! `login` builds the Pack over that one server, with the loopback authorizer (`loopback`) and
//! the credentials file (`credentials`) lent, and waits up to `--wait` seconds for the server
//! to leave `loading`. Its exit code tells the truth about what the next command will find:
//! 0 only when the credentials file holds what the login obtained (or the server needed no
//! login, or was authorized already), 1 when the authorization happened but was not kept,
//! with the reason and what to do. It does not assume which tokens the Pack keeps: it reads
//! what the authorizer and the store saw (whether the user was asked, whether a save
//! succeeded, whether a record was found). A credentials file that cannot be used (corrupt,
//! readable by others) is refused before anything starts, so nobody is sent to a browser for
//! a login that could not be kept. Ctrl-C ends the wait and leaves nothing behind but what
//! was saved. `logout` forgets a server's record.

mod loopback;

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{Authorizer, BackendState, CredentialStore};

use crate::cli::{Source, StoreArgs};
use crate::credentials::{Journal, Journaled};
use crate::host::{self, EXIT_INVALID, EXIT_OK, EXIT_OTHER, EXIT_TRANSPORT};
use crate::progress::{self, End, Until, Waited};
use crate::store::{Credentials, NO_PLACE, Store};
use crate::untrusted::shown;
use crate::{discovery, signals};

use loopback::Loopback;

/// Where logins are kept, or `None` once it said why it cannot know.
async fn chosen(store: &StoreArgs) -> Option<Credentials> {
    match Store::choose(store).await.map(|store| store.credentials()) {
        Ok(Some(store)) => Some(store),
        Ok(None) => {
            eprintln!("runvil: {NO_PLACE}");
            None
        }
        Err(e) => {
            eprintln!("runvil: {e}");
            None
        }
    }
}

/// `runvil login NS`.
pub(crate) async fn login(
    namespace: String,
    source: &Source,
    wait: u64,
    no_browser: bool,
    store: &StoreArgs,
) -> u8 {
    let Some(store) = chosen(store).await else {
        return EXIT_OTHER;
    };
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    // The one server only: another server of the config must not ask for a login now.
    let servers = match host::only(config, &namespace) {
        Ok(servers) => servers,
        Err(unknown) => {
            eprintln!("runvil: {unknown}");
            return EXIT_INVALID;
        }
    };
    if let Err(e) = store.check(&namespace).await {
        eprintln!("runvil: cannot log in to {}: {e}", shown(&namespace));
        return EXIT_OTHER;
    }
    let loopback = match Loopback::bind(no_browser).await {
        Ok(loopback) => Arc::new(loopback),
        Err(e) => {
            eprintln!("runvil: cannot listen on 127.0.0.1 for the redirect: {e}");
            return EXIT_OTHER;
        }
    };
    let place = store.place();
    let journaled = Arc::new(Journaled::new(store.lent()));
    let authorizer: Arc<dyn Authorizer> = loopback.clone();
    let kept: Arc<dyn CredentialStore> = journaled.clone();
    // No pins: a login writes the credentials file only, and the first listing of `tools`,
    // `call`, `serve` or `trust` is the one trusted.
    let lent = host::Lent {
        authorizer: Some(authorizer),
        credentials: Some(kept),
        pins: None,
    };
    let pack = match host::build_pack_with(servers, lent) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let wait = Duration::from_secs(wait);
    let code = tokio::select! {
        waited = progress::wait(pack.status(), Some(&namespace), wait, Until::Settled) => {
            let seen = Seen {
                asked: loopback.asked(),
                journal: journaled.journal(&namespace),
                place: &place,
            };
            let (said, code) = verdict(&waited, &namespace, &seen);
            eprintln!("runvil: {said}");
            code
        }
        stop = signals::stopped() => {
            eprintln!("runvil: {}", stop.said());
            stop.exit_code()
        }
    };
    pack.shutdown().await;
    code
}

/// What runvil saw of a login: whether the user was asked, what the store did with the
/// server's key, and where the store keeps it.
struct Seen<'a> {
    asked: bool,
    journal: Journal,
    place: &'a str,
}

/// What `login` says, and its exit code, from where the server stood when the wait ended and
/// what runvil saw.
fn verdict(waited: &Waited, namespace: &str, seen: &Seen<'_>) -> (String, u8) {
    let name = shown(namespace);
    match waited.servers.first().map(|s| &s.state) {
        Some(BackendState::Ready { .. }) => match (&seen.journal.saved, seen.asked) {
            (Some(Err(e)), _) => (
                format!(
                    "{name} was authorized, but the credentials could not be kept: {e}; the \
                     next command will need a login again: fix that, then run `runvil login \
                     {name}` again"
                ),
                EXIT_OTHER,
            ),
            (Some(Ok(())), _) => (format!("{name} is authorized"), EXIT_OK),
            (None, true) => (
                format!(
                    "{name} was authorized for this run only: nothing was kept in {}, so the \
                     next command cannot use it",
                    seen.place
                ),
                EXIT_OTHER,
            ),
            (None, false) if seen.journal.found == Some(true) => {
                (format!("{name} is already authorized"), EXIT_OK)
            }
            (None, false) => (format!("{name} needs no authorization"), EXIT_OK),
        },
        Some(BackendState::Failed(reason) | BackendState::Refused(reason)) => (
            format!("{name} is not authorized: {}", shown(reason)),
            EXIT_TRANSPORT,
        ),
        _ if waited.end == End::Bound => {
            (format!("{name} was not authorized in time"), EXIT_TRANSPORT)
        }
        _ => (format!("{name} was not authorized"), EXIT_TRANSPORT),
    }
}

/// `runvil logout NS`: forgets the record kept for NS. Nothing kept is no error (the record is
/// gone either way, exit 0), unless the config has no such server: then it is most likely a
/// typo, said as `call` says it (exit 2).
pub(crate) async fn logout(namespace: &str, source: &Source, store: &StoreArgs) -> u8 {
    let Some(store) = chosen(store).await else {
        return EXIT_OTHER;
    };
    let name = shown(namespace);
    match store.has(namespace).await {
        Err(e) => {
            eprintln!("runvil: {e}");
            EXIT_OTHER
        }
        Ok(true) => match store.forget(namespace).await {
            Ok(()) => {
                eprintln!("runvil: forgot the credentials of {name}");
                EXIT_OK
            }
            Err(e) => {
                eprintln!("runvil: {e}");
                EXIT_OTHER
            }
        },
        Ok(false) => {
            // The config is only asked whether the name is one of its servers; one that cannot
            // be read is no obstacle to forgetting, unless it was named on the command line.
            match discovery::load(source) {
                Ok(config) => {
                    if let Err(unknown) = host::only(config, namespace) {
                        eprintln!("runvil: {unknown} (and nothing was stored for it)");
                        return EXIT_INVALID;
                    }
                }
                Err(e) if source.config.is_some() => {
                    eprintln!("runvil: {e}");
                    return EXIT_OTHER;
                }
                Err(_) => {}
            }
            eprintln!(
                "runvil: nothing was stored for {name} in {}; nothing to forget",
                store.place()
            );
            EXIT_OK
        }
    }
}

#[cfg(test)]
mod tests {
    use runvil_plugin::BackendStatus;

    use super::*;

    fn ready() -> Waited {
        Waited {
            servers: vec![BackendStatus::new(
                "s",
                BackendState::Ready {
                    tools: Arc::from(vec!["t".to_owned()]),
                },
            )],
            end: End::Settled,
        }
    }

    fn seen(asked: bool, found: Option<bool>, saved: Option<Result<(), String>>) -> Seen<'static> {
        Seen {
            asked,
            journal: Journal { found, saved },
            place: "/home/me/.local/state/runvil/credentials.json",
        }
    }

    #[test]
    fn a_ready_server_is_reported_by_what_was_kept() {
        let said = |seen: Seen<'_>| verdict(&ready(), "s", &seen);
        assert_eq!(
            said(seen(true, Some(false), Some(Ok(())))),
            ("s is authorized".to_owned(), EXIT_OK)
        );
        let (text, code) = said(seen(true, None, Some(Err("cannot write F: full".into()))));
        assert_eq!(code, EXIT_OTHER);
        assert_eq!(
            text,
            "s was authorized, but the credentials could not be kept: cannot write F: full; the \
             next command will need a login again: fix that, then run `runvil login s` again"
        );
        let (text, code) = said(seen(true, Some(false), None));
        assert_eq!(code, EXIT_OTHER);
        assert!(text.contains("nothing was kept in /home/me/"), "{text}");
        assert_eq!(
            said(seen(false, Some(true), None)),
            ("s is already authorized".to_owned(), EXIT_OK)
        );
        assert_eq!(
            said(seen(false, Some(false), None)),
            ("s needs no authorization".to_owned(), EXIT_OK)
        );
        assert_eq!(
            said(seen(false, None, None)),
            ("s needs no authorization".to_owned(), EXIT_OK)
        );
    }

    #[test]
    fn a_reason_cannot_forge_a_line() {
        let waited = Waited {
            servers: vec![BackendStatus::new(
                "s",
                BackendState::Failed("bad\nrunvil: s is authorized".into()),
            )],
            end: End::Settled,
        };
        let (text, code) = verdict(&waited, "s", &seen(true, None, None));
        assert_eq!(code, EXIT_TRANSPORT);
        assert_eq!(text, "s is not authorized: bad\\nrunvil: s is authorized");
    }
}
