//! Waiting for servers to leave `loading`, and showing it on stderr.
//!
//! On a terminal each server gets a line that updates in place (indicatif), so a person sees
//! which server is slow and why one failed. Anywhere else (a pipe, a log file, CI) animation
//! is noise, so only one summary line is written when the wait ends:
//! `runvil: 3 servers: 2 ready, 1 error`. Log lines share stderr with the live lines, so they
//! are written through [`LogWriter`], which lifts the lines out of the way first.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use runvil_plugin::Pack;
use serde_json::{Value, json};

/// How often the wait looks at the servers' status (and moves the spinners).
const POLL: Duration = Duration::from_millis(80);

/// The live lines: one set per process, because stderr is one per process.
static LINES: LazyLock<MultiProgress> = LazyLock::new(MultiProgress::new);

/// Writes log lines to stderr around the live lines instead of through them.
pub(crate) struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LINES.suspend(|| std::io::stderr().write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// One server as the listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Server {
    pub(crate) namespace: String,
    pub(crate) status: String,
    /// `N tools` when ready, the reason when in error, empty while loading.
    pub(crate) detail: String,
}

/// Waits until no server (or `only` that one) is `loading`, or `wait` passes, showing each
/// server's status as it changes.
pub(crate) async fn wait_for_servers(pack: &Arc<dyn Pack>, only: Option<&str>, wait: Duration) {
    let mut display = if std::io::stderr().is_terminal() {
        Display::Live(Vec::new())
    } else {
        Display::Summary
    };
    // `--wait` is the user's: a wait past the clock's end has no deadline, and adding it would
    // overflow.
    let deadline = tokio::time::Instant::now().checked_add(wait);
    loop {
        let servers = servers(pack, only).await;
        let loading = servers.iter().any(|s| s.status == "loading");
        display.show(&servers);
        if !loading || deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            display.finish(&servers);
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The servers of the listing, or only the one named `only`.
async fn servers(pack: &Arc<dyn Pack>, only: Option<&str>) -> Vec<Server> {
    let Ok(text) = pack.call("mcp/get_dynamic_tools", json!({})).await else {
        return Vec::new();
    };
    let listing: Value = serde_json::from_str(&text).unwrap_or_default();
    let mut servers = listed_servers(&listing);
    servers.retain(|s| only.is_none_or(|name| s.namespace == name));
    servers
}

/// The servers of a `get_dynamic_tools {}` answer, in its order.
pub(crate) fn listed_servers(listing: &Value) -> Vec<Server> {
    let string = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    listing["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| Server {
            namespace: string(&s["namespace"]),
            status: string(&s["status"]),
            detail: match s["tools"].as_array() {
                Some(tools) if tools.len() == 1 => "1 tool".to_owned(),
                Some(tools) => format!("{} tools", tools.len()),
                None => string(&s["reason"]),
            },
        })
        .collect()
}

enum Display {
    /// One line per server, in the listing's order, made at the first look.
    Live(Vec<ProgressBar>),
    /// Nothing until the end.
    Summary,
}

impl Display {
    fn show(&mut self, servers: &[Server]) {
        let Self::Live(bars) = self else {
            return;
        };
        if bars.is_empty() {
            let width = servers.iter().map(|s| shown(&s.namespace).chars().count());
            let width = width.max().unwrap_or(0);
            *bars = servers
                .iter()
                .map(|s| {
                    let name = format!("{:<width$}", shown(&s.namespace));
                    LINES.add(ProgressBar::new_spinner().with_prefix(name))
                })
                .collect();
        }
        for (bar, server) in bars.iter().zip(servers) {
            if bar.is_finished() {
                continue;
            }
            if server.status == "loading" {
                bar.set_style(style("{spinner} {prefix}  {wide_msg}"));
                bar.set_message("loading");
                bar.tick();
            } else {
                // The spinner's column becomes the outcome's mark.
                let mark = if server.status == "ready" {
                    '✓'
                } else {
                    '✗'
                };
                bar.set_style(style(&format!("{mark} {{prefix}}  {{wide_msg}}")));
                bar.finish_with_message(line(server));
            }
        }
    }

    fn finish(self, servers: &[Server]) {
        match self {
            Self::Live(bars) => {
                for bar in bars.iter().filter(|b| !b.is_finished()) {
                    bar.abandon_with_message("still loading; stopped waiting (see --wait)");
                }
            }
            Self::Summary if servers.is_empty() => {}
            Self::Summary => eprintln!("runvil: {}", summary(servers)),
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// A namespace as it may be shown on a terminal: a config can hold control characters.
fn shown(namespace: &str) -> String {
    namespace.escape_debug().to_string()
}

/// What a live line says about a server that left `loading`.
fn line(server: &Server) -> String {
    match (server.status.as_str(), server.detail.as_str()) {
        (status, "") => status.to_owned(),
        ("ready", detail) => format!("ready, {detail}"),
        (status, detail) => format!("{status}: {detail}"),
    }
}

/// The one line written at the end when stderr is not a terminal.
fn summary(servers: &[Server]) -> String {
    let count = |status: &str| servers.iter().filter(|s| s.status == status).count();
    let counts: Vec<String> = ["ready", "loading", "error"]
        .into_iter()
        .map(|status| (count(status), status))
        .filter(|(n, _)| *n > 0)
        .map(|(n, status)| format!("{n} {status}"))
        .collect();
    let noun = if servers.len() == 1 {
        "server"
    } else {
        "servers"
    };
    format!("{} {noun}: {}", servers.len(), counts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(namespace: &str, status: &str, detail: &str) -> Server {
        Server {
            namespace: namespace.to_owned(),
            status: status.to_owned(),
            detail: detail.to_owned(),
        }
    }

    #[test]
    fn the_summary_counts_each_status() {
        let servers = [
            server("a", "ready", "2 tools"),
            server("b", "error", "url is missing"),
            server("c", "ready", "1 tool"),
        ];
        assert_eq!(summary(&servers), "3 servers: 2 ready, 1 error");
        assert_eq!(
            summary(&servers[1..2]),
            "1 server: 1 error",
            "one server, and no zero counts"
        );
        let loading = [server("a", "loading", "")];
        assert_eq!(summary(&loading), "1 server: 1 loading");
    }

    #[test]
    fn a_line_says_the_outcome_and_its_detail() {
        assert_eq!(line(&server("a", "ready", "2 tools")), "ready, 2 tools");
        assert_eq!(
            line(&server("b", "error", "url is missing")),
            "error: url is missing"
        );
        assert_eq!(shown("evil\u{1b}[2J"), "evil\\u{1b}[2J");
    }
}
