//! The text of the wait's display: the live frame, the final frame and the summary line.
//!
//! Pure functions of the statuses (and, for the live frame, of the terminal's size and the
//! spinner's tick), so every frame can be checked as exact text without a terminal. Where and
//! when the text is written is the business of the rest of `progress`.
//!
//! A live line is `{mark} {name}  {state}`, names padded to the widest name so the states
//! line up; on a terminal 60 columns wide:
//!
//! ```text
//! ✓ docs    ready, 12 tools
//! ⠋ github  loading
//! ✗ jira    error: could not reac…iled: client error (Connect)
//! ```
//!
//! The live frame is redrawn in place by moving the cursor up one row per line, so it must
//! never wrap: every line fits the width (counted in terminal columns: a CJK character or most
//! emoji takes two, a combining mark none), and the frame is at most one row
//! shorter than the terminal, since the cursor cannot move up past the top of the screen.
//! Lines are never padded, so text copied from the terminal has no trailing spaces. Reasons
//! are the Pack's text, printed through `untrusted::shown` so that a newline in one cannot
//! break the frame or forge a line.

use runvil_plugin::{BackendState, BackendStatus};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::End;
use crate::untrusted;

/// The spinner of a server still loading, one char per tick.
pub(super) const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The mark of a ready server.
const READY: char = '✓';

/// The mark of a server in error.
const FAILED: char = '✗';

/// The mark of a server still loading in the final frame: the spinner stops, and a frozen
/// spinner would look like a program that hung.
const STILL_LOADING: char = '…';

/// Where text was cut.
const CUT: char = '…';

/// Below this many columns a reason cut in the middle says nothing; the line's end is cut
/// instead (only on a terminal so narrow, or with names so long, that little is left).
const MIN_REASON_COLUMNS: usize = 12;

/// What comes before an error's reason.
const ERROR_PREFIX: &str = "error: ";

/// The order of the counts in the summary and in the line of servers left out.
const COUNT_ORDER: [&str; 4] = ["ready", "loading", "error", "disabled"];

/// The live frame: one line per server, each ending with a newline, at most `width` columns
/// wide and `height - 1` lines tall. `tick` turns the spinners.
///
/// When the servers do not fit, the loading ones are shown first, then the ones in error,
/// then the ready ones, each kept in the Pack's order, and one last line counts the others:
/// the wait is for the loading ones, an error is what a person may have to act on, and a
/// ready server needs nothing. Every server is in the final frame.
pub(super) fn frame(servers: &[BackendStatus], width: usize, height: usize, tick: usize) -> String {
    let rows = height.saturating_sub(1).max(1);
    let (shown, hidden) = if servers.len() <= rows {
        (servers.iter().collect(), Vec::new())
    } else {
        fitting(servers, rows - 1)
    };
    let name_width = name_width(servers);
    let mut text = String::new();
    for server in shown {
        let mark = match server.state {
            BackendState::Loading => SPINNER[tick % SPINNER.len()],
            _ => mark(&server.state),
        };
        let head = head(mark, &server.name, name_width);
        let room = width.saturating_sub(head.width());
        let state = match &server.state {
            BackendState::Failed(reason) | BackendState::Refused(reason) => {
                let reason = untrusted::shown(reason);
                if ERROR_PREFIX.len() + reason.width() > room
                    && room >= ERROR_PREFIX.len() + MIN_REASON_COLUMNS
                {
                    let cut = cut_middle(&reason, room - ERROR_PREFIX.len());
                    format!("{ERROR_PREFIX}{cut}")
                } else {
                    describe(&server.state)
                }
            }
            state => describe(state),
        };
        push_line(&mut text, &cut_end(&(head + &state), width));
    }
    if !hidden.is_empty() {
        let more = if text.is_empty() {
            summary(hidden.iter().copied())
        } else {
            let labels = hidden.iter().map(|s| s.state.label());
            format!("{CUT} and {} more: {}", hidden.len(), counts(labels))
        };
        push_line(&mut text, &cut_end(&more, width));
    }
    text
}

/// The frame left on the terminal when the wait ends: every server, every reason in full
/// (the terminal wraps long lines; nothing is redrawn over this frame), and what stopped the
/// wait for the servers still loading.
pub(super) fn final_frame(servers: &[BackendStatus], end: End) -> String {
    let name_width = name_width(servers);
    let mut text = String::new();
    for server in servers {
        let line = match server.state {
            BackendState::Loading => {
                head(STILL_LOADING, &server.name, name_width) + still_loading(end)
            }
            _ => head(mark(&server.state), &server.name, name_width) + &describe(&server.state),
        };
        push_line(&mut text, &line);
    }
    text
}

/// The one line written instead of frames where stderr is no terminal:
/// `3 servers: 2 ready, 1 error`.
pub(super) fn summary<'a>(servers: impl IntoIterator<Item = &'a BackendStatus>) -> String {
    let labels: Vec<&str> = servers.into_iter().map(|s| s.state.label()).collect();
    let noun = if labels.len() == 1 {
        "server"
    } else {
        "servers"
    };
    match counts(labels.iter().copied()) {
        counts if counts.is_empty() => format!("{} {noun}", labels.len()),
        counts => format!("{} {noun}: {counts}", labels.len()),
    }
}

/// The one line said off a terminal when a wait has lasted
/// [`STILL_WAITING_AFTER`](crate::policy::STILL_WAITING_AFTER): whom it still waits for, and
/// for how long at most: `still waiting for mute, slow (up to 30 s in all; see --wait)`.
pub(super) fn still_waiting(waited: &[&BackendStatus], bound: std::time::Duration) -> String {
    let names: Vec<String> = waited.iter().map(|s| untrusted::shown(&s.name)).collect();
    format!(
        "still waiting for {} (up to {} s in all; see --wait)",
        names.join(", "),
        bound.as_secs()
    )
}

/// `1 tool`, `2 tools`.
pub(super) fn tools(count: usize) -> String {
    if count == 1 {
        "1 tool".to_owned()
    } else {
        format!("{count} tools")
    }
}

/// What the final frame says of a server still loading, by what ended the wait.
fn still_loading(end: End) -> &'static str {
    match end {
        End::Bound => "still loading; stopped waiting (see --wait)",
        End::Interrupted => "still loading when interrupted",
        End::Closed => "still loading; no more news of it will come",
        // Not reached: the wait settles only when nothing it waits for is loading.
        End::Settled => "loading",
    }
}

/// The `count` servers shown when not all fit (see [`frame`]), in the Pack's order, and the
/// others.
fn fitting(servers: &[BackendStatus], count: usize) -> (Vec<&BackendStatus>, Vec<&BackendStatus>) {
    let rank = |server: &BackendStatus| match server.state.label() {
        "loading" => 0,
        "error" => 1,
        _ => 2,
    };
    let mut order: Vec<usize> = (0..servers.len()).collect();
    // Stable: within a rank, the Pack's order.
    order.sort_by_key(|&i| rank(&servers[i]));
    let mut kept = vec![false; servers.len()];
    for &i in &order[..count] {
        kept[i] = true;
    }
    let pick = |wanted: bool| {
        servers
            .iter()
            .zip(&kept)
            .filter(|(_, kept)| **kept == wanted)
            .map(|(s, _)| s)
            .collect()
    };
    (pick(true), pick(false))
}

/// The counts of each status, in [`COUNT_ORDER`], zeros left out: `2 ready, 1 error`.
fn counts<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
    let labels: Vec<&str> = labels.into_iter().collect();
    COUNT_ORDER
        .into_iter()
        .map(|label| (labels.iter().filter(|l| **l == label).count(), label))
        .filter(|(n, _)| *n > 0)
        .map(|(n, label)| format!("{n} {label}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The mark of a server that left `loading`.
fn mark(state: &BackendState) -> char {
    match state {
        BackendState::Disabled => TURNED_OFF,
        _ if state.label() == "error" => FAILED,
        _ => READY,
    }
}

/// The mark of a server the user turned off: neither done nor failed.
const TURNED_OFF: char = '-';

/// What a line says of a server's state.
fn describe(state: &BackendState) -> String {
    match state {
        BackendState::Ready { tools: names } => format!("ready, {}", tools(names.len())),
        // An empty reason would leave `error: ` with a trailing space.
        BackendState::Failed(reason) | BackendState::Refused(reason) if !reason.is_empty() => {
            format!("{ERROR_PREFIX}{}", untrusted::shown(reason))
        }
        state => state.label().to_owned(),
    }
}

/// `{mark} {name}  `, the name padded to `name_width` columns: the part of a line before its
/// state.
fn head(mark: char, name: &str, name_width: usize) -> String {
    let name = shown(name);
    let padding = " ".repeat(name_width.saturating_sub(name.width()));
    format!("{mark} {name}{padding}  ")
}

/// The width of the name column: the widest name of all servers, shown or not, so the column
/// stays put while servers move in and out of a frame that cannot hold them all.
fn name_width(servers: &[BackendStatus]) -> usize {
    servers
        .iter()
        .map(|s| shown(&s.name).width())
        .max()
        .unwrap_or(0)
}

/// A name as it may be written to a terminal: a config can hold control characters.
fn shown(name: &str) -> String {
    name.escape_debug().to_string()
}

/// `text` in at most `room` columns, its middle replaced by [`CUT`]: a reason says what failed
/// first and why last (`could not reach the server: connection failed: …`), so the end,
/// the cause, gets two thirds of the room.
fn cut_middle(text: &str, room: usize) -> String {
    if text.width() <= room {
        return text.to_owned();
    }
    let Some(kept) = room.checked_sub(1) else {
        return String::new();
    };
    let start = kept / 3;
    format!(
        "{}{CUT}{}",
        fit_start(text, start),
        fit_end(text, kept - start)
    )
}

/// `line` in at most `width` columns, its end replaced by [`CUT`] when it does not fit.
pub(super) fn cut_end(line: &str, width: usize) -> String {
    if line.width() <= width {
        return line.to_owned();
    }
    let Some(kept) = width.checked_sub(1) else {
        return String::new();
    };
    // The cut may land in a name's padding; the line still ends with no space.
    format!("{}{CUT}", fit_start(line, kept).trim_end())
}

/// The longest start of `text` that fits in `room` columns.
fn fit_start(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (index, c) in text.char_indices() {
        used += c.width().unwrap_or(0);
        if used > room {
            return &text[..index];
        }
    }
    text
}

/// The longest end of `text` that fits in `room` columns.
fn fit_end(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (index, c) in text.char_indices().rev() {
        used += c.width().unwrap_or(0);
        if used > room {
            return &text[index + c.len_utf8()..];
        }
    }
    text
}

/// Adds `line` and its newline to `text`.
fn push_line(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, state: BackendState) -> BackendStatus {
        BackendStatus::new(name, state)
    }

    fn failed(name: &str, reason: &str) -> BackendStatus {
        server(name, BackendState::Failed(reason.to_owned()))
    }

    fn ready(name: &str, tools: usize) -> BackendStatus {
        let tools = (0..tools).map(|n| format!("t{n}")).collect();
        server(name, BackendState::Ready { tools })
    }

    fn loading(name: &str) -> BackendStatus {
        server(name, BackendState::Loading)
    }

    const CAUSE: &str = "could not reach the server: connection failed: client error (Connect)";

    /// Every line of `text` fits `width` columns and ends with no space.
    fn assert_fits(text: &str, width: usize) {
        for line in text.lines() {
            assert!(line.width() <= width, "{line:?} is wider than {width}");
            assert_eq!(line, line.trim_end(), "{line:?} ends with a space");
        }
    }

    #[test]
    fn a_frame_has_one_aligned_line_per_server() {
        let servers = [
            ready("docs", 12),
            loading("github"),
            failed("jira", "url is missing"),
            server(
                "one",
                BackendState::Refused("the entry is not an object".to_owned()),
            ),
            ready("x", 1),
        ];
        let text = frame(&servers, 80, 24, 0);
        assert_eq!(
            text,
            "✓ docs    ready, 12 tools\n\
             ⠋ github  loading\n\
             ✗ jira    error: url is missing\n\
             ✗ one     error: the entry is not an object\n\
             ✓ x       ready, 1 tool\n"
        );
        assert_eq!(
            frame(&servers, 80, 24, 11).lines().nth(1),
            Some("⠙ github  loading")
        );
        assert_eq!(frame(&[], 80, 24, 0), "");
    }

    #[test]
    fn a_narrow_terminal_cuts_a_reason_in_the_middle_keeping_its_cause() {
        let module_doc = [ready("docs", 12), loading("github"), failed("jira", CAUSE)];
        assert_eq!(
            frame(&module_doc, 60, 24, 0),
            "✓ docs    ready, 12 tools\n\
             ⠋ github  loading\n\
             ✗ jira    error: could not reac…iled: client error (Connect)\n"
        );
        let servers = [ready("docs", 2), failed("jira", CAUSE)];
        let text = frame(&servers, 50, 24, 0);
        assert_eq!(
            text,
            "✓ docs  ready, 2 tools\n\
             ✗ jira  error: could not r… client error (Connect)\n"
        );
        assert_eq!(text.lines().nth(1).map(UnicodeWidthStr::width), Some(50));
        // So narrow that a cut reason would say nothing: the line's end goes instead.
        assert_eq!(
            frame(&servers, 24, 24, 0),
            "✓ docs  ready, 2 tools\n✗ jira  error: could no…\n"
        );
        assert_fits(&frame(&servers, 5, 24, 0), 5);
        assert_eq!(
            frame(&servers, 0, 24, 0),
            "\n\n",
            "no width, no text, still one row each"
        );
    }

    #[test]
    fn servers_beyond_the_terminal_s_rows_are_counted_on_one_line() {
        let mut servers: Vec<BackendStatus> = (0..10).map(|i| ready(&format!("r{i}"), 1)).collect();
        servers.insert(3, loading("slow"));
        servers.push(failed("bad", "url is missing"));
        servers.push(loading("late"));
        // 5 rows: the frame keeps one free for the cursor, and its last says what is left out.
        let text = frame(&servers, 80, 5, 0);
        assert_eq!(
            text,
            "⠋ slow  loading\n\
             ✗ bad   error: url is missing\n\
             ⠋ late  loading\n\
             … and 10 more: 10 ready\n"
        );
        let text = frame(&servers, 80, 4, 0);
        assert_eq!(
            text,
            "⠋ slow  loading\n⠋ late  loading\n… and 11 more: 10 ready, 1 error\n"
        );
        assert_eq!(
            frame(&servers, 80, 2, 0),
            "13 servers: 10 ready, 2 loading, 1 error\n"
        );
        assert_eq!(
            frame(&servers, 12, 0, 0),
            "13 servers:…\n",
            "even the last line fits"
        );
        assert_eq!(frame(&servers, 80, 14, 0).lines().count(), 13, "all fit");
    }

    #[test]
    fn the_final_frame_has_every_server_and_full_reasons() {
        let servers = [ready("docs", 2), loading("github"), failed("jira", CAUSE)];
        assert_eq!(
            final_frame(&servers, End::Interrupted),
            "✓ docs    ready, 2 tools\n\
             … github  still loading when interrupted\n\
             ✗ jira    error: could not reach the server: connection failed: client error (Connect)\n"
        );
        assert_eq!(
            final_frame(&servers[1..2], End::Bound),
            "… github  still loading; stopped waiting (see --wait)\n"
        );
        assert_eq!(final_frame(&[], End::Settled), "");
    }

    #[test]
    fn names_are_escaped_and_their_width_is_the_escaped_one() {
        let servers = [loading("evil\u{1b}[2J\nx"), ready("ok", 3)];
        let text = frame(&servers, 80, 24, 0);
        assert_eq!(
            text,
            "⠋ evil\\u{1b}[2J\\nx  loading\n✓ ok                ready, 3 tools\n"
        );
        assert_eq!(
            text.lines().count(),
            2,
            "a newline in a name stays on its line"
        );
        assert_eq!(
            final_frame(&servers, End::Closed),
            "… evil\\u{1b}[2J\\nx  still loading; no more news of it will come\n\
             ✓ ok                ready, 3 tools\n"
        );
    }

    #[test]
    fn a_reason_s_newline_and_escapes_stay_on_its_line() {
        let servers = [failed("s", "nope\nrunvil: s is authorized\u{1b}[2J")];
        let want = "✗ s  error: nope\\nrunvil: s is authorized\\u{1b}[2J\n";
        assert_eq!(frame(&servers, 80, 24, 0), want);
        assert_eq!(final_frame(&servers, End::Settled), want);
    }

    #[test]
    fn no_line_ends_with_a_space() {
        let servers = [
            ready("a-long-name", 1),
            failed("b", ""),
            failed("c", CAUSE),
            loading("d"),
        ];
        assert_eq!(
            frame(&servers[1..2], 80, 24, 0),
            "✗ b  error\n",
            "no reason, no `error: `"
        );
        for width in 0..100 {
            for height in 0..6 {
                assert_fits(&frame(&servers, width, height, 0), width);
            }
        }
        // A cut in the padding of a short name ends the line at the name.
        assert_eq!(frame(&servers[..2], 16, 24, 0), "✓ a-long-name…\n✗ b…\n");
        for end in [End::Settled, End::Bound, End::Interrupted, End::Closed] {
            assert_fits(&final_frame(&servers, end), usize::MAX);
        }
    }

    #[test]
    fn wide_characters_take_two_columns_and_never_make_a_line_wrap() {
        let reason = "服务器无法访问：连接失败 🔌 client error (Connect)";
        let servers = [ready("文档", 3), failed("jira", reason), loading("x")];
        assert_eq!(
            frame(&servers, 80, 24, 0),
            format!("✓ 文档  ready, 3 tools\n✗ jira  error: {reason}\n⠋ x     loading\n")
        );
        assert_eq!(
            frame(&servers[1..2], 40, 24, 0),
            "✗ jira  error: 服务器无… error (Connect)\n",
            "40 columns: the head 8, `error: ` 7, the reason cut to 25"
        );
        for width in 0..70 {
            assert_fits(&frame(&servers, width, 24, 0), width);
        }
        assert_eq!(cut_middle("一二三四五六七八九十", 7), "一…九十");
        assert_eq!(cut_middle("一二三四五六七八九十", 6), "…九十");
        assert_eq!(cut_end("一二三", 4), "一…");
        // A combining mark takes no column: `é` written as `e` and U+0301 is one.
        assert_eq!(cut_end("cafe\u{301}s", 5), "cafe\u{301}s");
    }

    #[test]
    fn the_summary_counts_each_status() {
        let servers = [ready("a", 2), failed("b", "url is missing"), ready("c", 1)];
        assert_eq!(summary(&servers), "3 servers: 2 ready, 1 error");
        assert_eq!(
            summary(&servers[1..2]),
            "1 server: 1 error",
            "one server, and no zero counts"
        );
        assert_eq!(summary(&[loading("a")]), "1 server: 1 loading");
        assert_eq!(summary(&[]), "0 servers");
    }

    #[test]
    fn a_cut_keeps_both_ends() {
        assert_eq!(cut_middle("abcdefghij", 10), "abcdefghij");
        assert_eq!(cut_middle("abcdefghij", 7), "ab…ghij");
        assert_eq!(cut_middle("abcdefghij", 1), "…");
        assert_eq!(cut_middle("abcdefghij", 0), "");
        assert_eq!(cut_end("abc def", 5), "abc…");
        assert_eq!(cut_end("abc", 3), "abc");
    }
}
