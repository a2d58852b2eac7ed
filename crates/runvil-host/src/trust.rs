//! `runvil trust NS [TOOL]`: the user's part of the Pack's pins, which the Pack leaves to its
//! Host: reviewing the tools of a server it holds (changed since they were approved, new, or
//! not trusted because the record cannot be read or kept), field by field, and approving them.
//!
//! It builds the Pack over that one server, with the pins file (`pins`) and the credentials
//! file lent, waits for the server to be ready as `tools NS` does (so its listing has been
//! judged), and asks the Pack what it holds. The review goes to stdout: it is what the command
//! was asked for, as `check`'s verdicts are. The question, and what became of the approval,
//! go to stderr, as every other word of runvil's does.
//!
//! An approval is bound to what the user read. On a terminal (stdin and stderr both one) the
//! review is followed by a question, and a `y` approves what it showed. Without one, the
//! review is recorded in the pins file (each tool's pin, which the review prints) and nothing
//! is approved (exit 2); a later `--yes` approves only the tools still as that review showed
//! them, and `--yes PIN...` the tools of those pins. The Pack approves a tool only if it is
//! still what was shown, compared with the same approved definition: one that changed again
//! meanwhile is said to have, with exit code 1, and its new review is recorded. A pins file
//! that cannot be used is refused before any server is contacted (exit 1): no approval could
//! be kept, and the file is never replaced; one whose approvals cannot be kept (a folder that
//! cannot be written) is said so, with exit code 1.

mod review;

use std::io::{BufRead, IsTerminal, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use runvil_plugin::{BackendState, HeldTool, Pack, PinStore, StoreError};

use crate::cli::{DEFAULT_WAIT_SECS, Source, StoreArgs};
use crate::host::{self, EXIT_INVALID, EXIT_OK, EXIT_OTHER, EXIT_TRANSPORT, Lent};
use crate::pins::{NO_PLACE, PinFile};
use crate::progress::{self, Until};
use crate::store::{Credentials, Store};
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
    /// `--yes`: approve without asking what the last review showed (no pins), or the tools of
    /// these pins.
    pub(crate) yes: Option<&'a [String]>,
    /// `--wait`: wait through retries until the server is ready, up to this long.
    pub(crate) wait: Option<u64>,
}

/// `runvil trust NS [TOOL]`.
pub(crate) async fn trust(asked: Asked<'_>, source: &Source, store: &StoreArgs) -> u8 {
    if let Some(typed) = asked
        .yes
        .unwrap_or_default()
        .iter()
        .find(|p| !review::is_pin(p))
    {
        eprintln!(
            "runvil: --yes takes pins as a review shows them ({} or more hexadecimal \
             characters), not \"{}\"; a tool's name goes before --yes",
            review::SHOWN_PIN_CHARS,
            shown(typed)
        );
        return EXIT_INVALID;
    }
    let config = match discovery::load(source) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    discovery::say_warnings(&config.warnings);
    let servers = match host::only(config, asked.namespace) {
        Ok(servers) => servers,
        Err(unknown) => {
            eprintln!("runvil: {unknown}");
            return EXIT_INVALID;
        }
    };
    let store = match Store::choose(store).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("runvil: {e}");
            return EXIT_OTHER;
        }
    };
    let lent = match store.database_pins() {
        Some(pins) => Lent {
            pins: Some(pins),
            credentials: store.credentials().as_ref().map(Credentials::lent),
            authorizer: None,
        },
        None => match pins_file(asked.namespace) {
            Ok(pins) => Lent {
                pins: Some(pins),
                ..Lent::credentials()
            },
            Err(code) => return code,
        },
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

/// The pins file, its failures left to this command to say; an exit code once it said why
/// it cannot be used.
fn pins_file(namespace: &str) -> Result<Arc<dyn PinStore>, u8> {
    let Some(pins) = PinFile::default_place() else {
        eprintln!("runvil: {NO_PLACE}");
        return Err(EXIT_OTHER);
    };
    let pins = pins.quiet();
    if let Err(e) = pins.check() {
        let name = shown(namespace);
        eprintln!("runvil: cannot review the tools of {name}: {e}");
        return Err(EXIT_OTHER);
    }
    Ok(Arc::new(pins))
}

/// Waits for the server, shows what it holds, and approves what the user says to. Each step
/// returns the exit code once it has said why the command ends there.
async fn review_and_approve(pack: &Arc<dyn Pack>, asked: &Asked<'_>) -> u8 {
    let steps = async {
        let callable = ready_tools(pack, asked).await?;
        let chosen = choose(pack, asked, &callable).await?;
        host::say(&review::review(asked.namespace, &chosen));
        let (approving, refused) = decide(pack, asked, &chosen).await?;
        approve(pack, asked, chosen, &approving, refused).await
    };
    steps.await.unwrap_or_else(|code| code)
}

/// The server's callable tools once it is ready: held tools come from a complete listing, so
/// a server that has none yet has nothing to show.
async fn ready_tools(pack: &Arc<dyn Pack>, asked: &Asked<'_>) -> Result<Arc<[String]>, u8> {
    let namespace = asked.namespace;
    let name = shown(namespace);
    // As `tools NS`: `--wait` waits through retries for the server to be ready.
    let until = match asked.wait {
        Some(_) => Until::Ready,
        None => Until::Settled,
    };
    let bound = Duration::from_secs(asked.wait.unwrap_or(DEFAULT_WAIT_SECS));
    let waited = progress::wait(pack.status(), Some(namespace), bound, until).await;
    let (why, code) = match waited.servers.first().map(|s| &s.state) {
        Some(BackendState::Ready { tools }) => return Ok(Arc::clone(tools)),
        Some(BackendState::Failed(reason)) => {
            (format!("it is in error: {}", shown(reason)), EXIT_TRANSPORT)
        }
        Some(BackendState::Refused(reason)) => (
            format!("its entry is refused: {}", shown(reason)),
            EXIT_INVALID,
        ),
        Some(BackendState::Disabled) => (
            format!("it is turned off (run `runvil enable {name}`)"),
            EXIT_INVALID,
        ),
        _ => (
            "it is still loading; give it longer with --wait SECS".to_owned(),
            EXIT_INVALID,
        ),
    };
    eprintln!("runvil: cannot review the tools of {name}: {why}");
    Err(code)
}

/// The held tools to review: every one, or the one named, once it is known to be held.
async fn choose(
    pack: &Arc<dyn Pack>,
    asked: &Asked<'_>,
    callable: &[String],
) -> Result<Vec<HeldTool>, u8> {
    let name = shown(asked.namespace);
    let held = pack.held(asked.namespace).await;
    let Some(tool) = asked.tool else {
        if held.is_empty() {
            eprintln!("runvil: no tool of {name} is held: every tool it lists is trusted");
            return Err(EXIT_OK);
        }
        return Ok(held);
    };
    if let Some(one) = held.iter().find(|t| t.name == tool) {
        return Ok(vec![one.clone()]);
    }
    let tool_name = shown(tool);
    if callable.iter().any(|t| t == tool) {
        eprintln!("runvil: {tool_name} of {name} is trusted already; nothing to approve");
        return Err(EXIT_OK);
    }
    let which = match held.len() {
        0 => "none of its tools is held".to_owned(),
        _ => format!(
            "the held ones are: {}",
            review::names(held.iter().map(|t| t.name.as_str()))
        ),
    };
    eprintln!("runvil: {name} holds no tool named {tool_name}; {which}");
    Err(EXIT_INVALID)
}

/// The command that approves what this review showed, once read.
fn again(asked: &Asked<'_>) -> String {
    let tool = (asked.tool)
        .map(|tool| format!(" {}", shown(tool)))
        .unwrap_or_default();
    format!("runvil trust {}{tool} --yes", shown(asked.namespace))
}

/// What to approve of the tools `chosen` shows, and what is said of those shown that are not:
/// what the user answers on a terminal, or what `--yes` names.
async fn decide(
    pack: &Arc<dyn Pack>,
    asked: &Asked<'_>,
    chosen: &[HeldTool],
) -> Result<(Vec<HeldTool>, Vec<String>), u8> {
    let namespace = asked.namespace;
    let again = again(asked);
    match asked.yes {
        None => {
            let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            if !terminal {
                if let Err(e) = pack.reviewed(namespace, chosen).await {
                    eprintln!("runvil: {}", review_not_kept(&shown(namespace), &e));
                    return Err(EXIT_OTHER);
                }
                eprintln!(
                    "runvil: nothing was approved: there is no terminal to ask on; once you \
                     have read the above, run `{again}`"
                );
                return Err(EXIT_INVALID);
            }
            if !ask(&review::question(namespace, chosen)).await {
                eprintln!("runvil: nothing was approved");
                return Err(EXIT_OTHER);
            }
            Ok((chosen.to_vec(), Vec::new()))
        }
        Some([]) => {
            let (reviewed, not): (Vec<HeldTool>, Vec<HeldTool>) =
                chosen.iter().cloned().partition(|tool| tool.reviewed);
            let names: Vec<&str> = not.iter().map(|tool| tool.name.as_str()).collect();
            let refused = (!names.is_empty())
                .then(|| review::not_reviewed(namespace, &names, &again))
                .into_iter()
                .collect();
            Ok((reviewed, refused))
        }
        Some(typed) => {
            let approving: Vec<HeldTool> = (chosen.iter())
                .filter(|tool| typed.iter().any(|pin| review::has_pin(tool, pin)))
                .cloned()
                .collect();
            let refused = (typed.iter())
                .filter(|pin| !chosen.iter().any(|tool| review::has_pin(tool, pin)))
                .map(|pin| review::no_tool_with_pin(namespace, pin, &again))
                .collect();
            Ok((approving, refused))
        }
    }
}

/// Approves `approving` and says what became of each tool `chosen` showed; `refused` is what
/// is said already of those not approved.
async fn approve(
    pack: &Arc<dyn Pack>,
    asked: &Asked<'_>,
    chosen: Vec<HeldTool>,
    approving: &[HeldTool],
    mut refused: Vec<String>,
) -> Result<u8, u8> {
    let namespace = asked.namespace;
    let name = shown(namespace);
    let approved = match approving {
        [] => Vec::new(),
        approving => pack.approve(namespace, approving).await.map_err(|e| {
            eprintln!(
                "runvil: the approval of {name}'s tools could not be kept: {}",
                shown(&e.reason)
            );
            EXIT_OTHER
        })?,
    };
    let (done, not_done) = review::outcome(namespace, approving, &approved);
    refused.extend(not_done);
    if asked.yes.is_some() && !refused.is_empty() {
        // What was shown and not approved is what a later `--yes` may approve, once read.
        let shown_now: Vec<HeldTool> = (chosen.into_iter())
            .filter(|tool| !approved.contains(&tool.name))
            .collect();
        if let Err(e) = pack.reviewed(namespace, &shown_now).await {
            refused.push(review_not_kept(&name, &e));
        }
    }
    for said in done.iter().chain(&refused) {
        eprintln!("runvil: {said}");
    }
    Ok(if refused.is_empty() {
        EXIT_OK
    } else {
        EXIT_OTHER
    })
}

/// What is said when the review of `name`'s tools could not be recorded: no approval of
/// them could be kept either.
fn review_not_kept(name: &str, e: &StoreError) -> String {
    format!(
        "the approvals of {name}'s tools cannot be kept (the review could not be recorded): {}",
        shown(&e.reason)
    )
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
