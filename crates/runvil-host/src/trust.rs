//! `runvil trust NS [TOOL]`: the user's part of the Pack's pins, which the Pack leaves to its
//! Host: reviewing the tools of a server it holds (changed since they were approved, new, or
//! not trusted because the record cannot be read), field by field, and approving them.
//!
//! It builds the Pack over that one server, with the pins file (`pins`) and the credentials
//! file lent, waits for the server to be ready as `tools NS` does (so its listing has been
//! judged), and asks the Pack what it holds. The review goes to stdout: it is what the command
//! was asked for, as `check`'s verdicts are. The question, and what became of the approval,
//! go to stderr, as every other word of runvil's does. A tool is approved only after a `y` on
//! a terminal (stdin and stderr both one), or with `--yes`; without either nothing is approved
//! and it exits 2, so a script cannot approve by accident. The Pack approves only a tool whose
//! definition is still the one shown: one that changed again meanwhile is said to have, with
//! exit code 1. A pins file that cannot be used is refused before any server is contacted
//! (exit 1): no approval could be kept, and the file is never replaced.

mod review;

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use runvil_plugin::{BackendState, HeldTool, Pack, PinStore};

use crate::cli::{DEFAULT_WAIT_SECS, Source};
use crate::host::{self, EXIT_INVALID, EXIT_OK, EXIT_OTHER, EXIT_TRANSPORT, Lent};
use crate::pins::{NO_PLACE, PinFile};
use crate::progress::{self, Until};
use crate::untrusted::shown;
use crate::{discovery, signals};

/// The most read of the answer to the question: far more than `yes`, and a bound on a
/// terminal's line.
const MAX_ANSWER_BYTES: u64 = 1024;

/// What `runvil trust` was asked.
pub(crate) struct Asked<'a> {
    pub(crate) namespace: &'a str,
    /// One tool to approve, else every held one.
    pub(crate) tool: Option<&'a str>,
    /// Approve without asking.
    pub(crate) yes: bool,
    /// `--wait`: wait through retries until the server is ready, up to this long.
    pub(crate) wait: Option<u64>,
}

/// `runvil trust NS [TOOL]`.
pub(crate) async fn trust(asked: Asked<'_>, source: &Source) -> u8 {
    let Some(pins) = PinFile::default_place() else {
        eprintln!("runvil: {NO_PLACE}");
        return EXIT_OTHER;
    };
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    discovery::say_warnings(&config.warnings);
    let servers = match host::only(config.servers, asked.namespace) {
        Ok(servers) => servers,
        Err(unknown) => {
            eprintln!("runvil: {unknown}");
            return EXIT_INVALID;
        }
    };
    if let Err(e) = pins.check() {
        let name = shown(asked.namespace);
        eprintln!("runvil: cannot review the tools of {name}: {e}");
        return EXIT_OTHER;
    }
    let lent = Lent {
        pins: Some(Arc::new(pins) as Arc<dyn PinStore>),
        ..Lent::credentials()
    };
    let pack = match host::build_pack_with(servers, lent) {
        Ok(pack) => pack,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let code = tokio::select! {
        code = review_and_approve(&pack, &asked) => code,
        stop = signals::stopped() => {
            if QUESTION_OPEN.load(Ordering::SeqCst) {
                // The question's line is the user's until Enter: end it before runvil's own.
                eprintln!();
            }
            eprintln!("runvil: {}", stop.said());
            stop.exit_code()
        }
    };
    pack.shutdown().await;
    code
}

/// Waits for the server, shows what it holds, and approves what the user says to.
async fn review_and_approve(pack: &Arc<dyn Pack>, asked: &Asked<'_>) -> u8 {
    let namespace = asked.namespace;
    let name = shown(namespace);
    // As `tools NS`: `--wait` waits through retries for the server to be ready.
    let until = match asked.wait {
        Some(_) => Until::Ready,
        None => Until::Settled,
    };
    let bound = Duration::from_secs(asked.wait.unwrap_or(DEFAULT_WAIT_SECS));
    let waited = progress::wait(pack.status(), Some(namespace), bound, until).await;
    // Held tools come from a complete listing: a server that has none yet has nothing to show.
    let callable = match waited.servers.first().map(|s| &s.state) {
        Some(BackendState::Ready { tools }) => Arc::clone(tools),
        Some(BackendState::Failed(reason)) => {
            eprintln!(
                "runvil: cannot review the tools of {name}: it is in error: {}",
                shown(reason)
            );
            return EXIT_TRANSPORT;
        }
        Some(BackendState::Refused(reason)) => {
            eprintln!(
                "runvil: cannot review the tools of {name}: its entry is refused: {}",
                shown(reason)
            );
            return EXIT_INVALID;
        }
        _ => {
            eprintln!(
                "runvil: cannot review the tools of {name}: it is still loading; give it \
                 longer with --wait SECS"
            );
            return EXIT_INVALID;
        }
    };
    let held = pack.held(namespace).await;
    let chosen: Vec<HeldTool> = match asked.tool {
        None if held.is_empty() => {
            eprintln!("runvil: no tool of {name} is held: every tool it lists is trusted");
            return EXIT_OK;
        }
        None => held,
        Some(tool) => match held.iter().find(|t| t.name == tool) {
            Some(one) => vec![one.clone()],
            None if callable.iter().any(|t| t == tool) => {
                let tool = shown(tool);
                eprintln!("runvil: {tool} of {name} is trusted already; nothing to approve");
                return EXIT_OK;
            }
            None => {
                let tool = shown(tool);
                let which = match held.len() {
                    0 => "none of its tools is held".to_owned(),
                    _ => format!(
                        "the held ones are: {}",
                        review::names(held.iter().map(|t| t.name.as_str()))
                    ),
                };
                eprintln!("runvil: {name} holds no tool named {tool}; {which}");
                return EXIT_INVALID;
            }
        },
    };
    host::say(&review::review(namespace, &chosen));
    if !asked.yes {
        let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        if !terminal {
            eprintln!(
                "runvil: nothing was approved: there is no terminal to ask on; once you have \
                 read the above, run `runvil trust {name}{} --yes`",
                asked
                    .tool
                    .map(|tool| format!(" {}", shown(tool)))
                    .unwrap_or_default()
            );
            return EXIT_INVALID;
        }
        if !ask(&review::question(namespace, &chosen)).await {
            eprintln!("runvil: nothing was approved");
            return EXIT_OTHER;
        }
    }
    let approved = match pack.approve(namespace, &chosen).await {
        Ok(approved) => approved,
        Err(e) => {
            eprintln!(
                "runvil: the approval of {name}'s tools could not be kept: {}",
                shown(&e.reason)
            );
            return EXIT_OTHER;
        }
    };
    let (done, not_done) = review::outcome(namespace, &chosen, &approved);
    for said in done.iter().chain(&not_done) {
        eprintln!("runvil: {said}");
    }
    if not_done.is_some() {
        EXIT_OTHER
    } else {
        EXIT_OK
    }
}

/// Whether the question is on the terminal, waiting for its answer.
static QUESTION_OPEN: AtomicBool = AtomicBool::new(false);

/// Asks `question` on stderr and reads the answer from stdin (a terminal): whether it is yes.
async fn ask(question: &str) -> bool {
    {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(question.as_bytes());
        let _ = stderr.flush();
    }
    QUESTION_OPEN.store(true, Ordering::SeqCst);
    // A blocking read: a signal ends the command meanwhile, and the runtime does not wait for it.
    let answer = tokio::task::spawn_blocking(|| {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_ANSWER_BYTES)
            .read_until(b'\n', &mut bytes)
            .map(|_| String::from_utf8_lossy(&bytes).into_owned())
    })
    .await;
    QUESTION_OPEN.store(false, Ordering::SeqCst);
    let line = match answer {
        Ok(Ok(line)) => line,
        _ => String::new(),
    };
    if !line.ends_with('\n') {
        // The end of input (Ctrl-D) left the cursor after the question.
        eprintln!();
    }
    review::is_yes(&line)
}
