//! `runvil audit`: the audit file's lines, filtered, as a table on a terminal and as JSON
//! lines otherwise; `--follow` goes on printing lines as they are written, across rotations.
//!
//! The file is read as untrusted text: a line that is not an audit line of format 1 is skipped
//! and counted, a line longer than [`MAX_AUDIT_LINE_BYTES`] too (without reading it whole), and
//! every value is printed escaped (`untrusted::shown` in the table; JSON escapes for every
//! control and line separator in the JSON lines), so no identity or tool name written by a
//! client can forge a line of the output.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use unicode_width::UnicodeWidthStr;

use super::file::{AUDIT_FILES_KEPT, rotated};
use super::{FORMAT_VERSION, Written, default_audit_path};
use crate::host::{EXIT_OK, EXIT_OTHER};
use crate::untrusted::shown;

/// The longest line read: far past any line runvil writes (its fields are capped), and a
/// bound on a file that is not an audit file.
pub(crate) const MAX_AUDIT_LINE_BYTES: usize = 64 * 1024;

/// How often `--follow` looks for new lines, as `tail -F` does.
pub(super) const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Which lines are printed.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    /// Lines no older than this.
    pub(crate) since: Option<Duration>,
    pub(crate) namespace: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) identity: Option<String>,
}

impl Filter {
    pub(super) fn keeps(&self, line: &Written, oldest: Option<SystemTime>) -> bool {
        let same = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().is_none_or(|want| have.as_ref() == Some(want))
        };
        same(&self.namespace, &line.namespace)
            && same(&self.tool, &line.tool)
            && same(&self.identity, &line.identity)
            && oldest.is_none_or(|oldest| time_of(line).is_some_and(|time| time >= oldest))
    }
}

fn time_of(line: &Written) -> Option<SystemTime> {
    let time = chrono::DateTime::parse_from_rfc3339(&line.time).ok()?;
    Some(SystemTime::from(time.with_timezone(&chrono::Utc)))
}

/// Runs `runvil audit` and answers its exit code.
pub(crate) fn read(path: Option<PathBuf>, follow: bool, filter: &Filter) -> u8 {
    let Some(path) = path.or_else(default_audit_path) else {
        eprintln!("runvil: no place for the audit file: set HOME or --audit");
        return EXIT_OTHER;
    };
    let oldest = filter
        .since
        .and_then(|since| SystemTime::now().checked_sub(since));
    let files: Vec<PathBuf> = (1..=AUDIT_FILES_KEPT)
        .rev()
        .map(|n| rotated(&path, n))
        .filter(|p| p.exists())
        .collect();
    let current = match File::open(&path) {
        Ok(file) => Some(file),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !files.is_empty() => None,
        Err(e) => {
            eprintln!("runvil: cannot read {}: {e}", path.display());
            return EXIT_OTHER;
        }
    };
    let mut out = Output::new(std::io::stdout().is_terminal());
    let mut current = current.map(Lines::new);
    let read = (|| {
        for file in &files {
            // Rotated away meanwhile: its lines are in the next file.
            if let Ok(opened) = File::open(file) {
                print_all(&mut Lines::new(opened), file, filter, oldest, &mut out)?;
            }
        }
        if let Some(lines) = &mut current {
            print_all(lines, &path, filter, oldest, &mut out)?;
        }
        out.settle()
    })();
    if read.is_ok() && follow {
        follow_file(&path, current, filter, oldest, &mut out);
    }
    // A closed stdout (a pipe into `head`) is no error.
    EXIT_OK
}

/// Prints every line of `lines` the filter keeps; the ones that are not audit lines are
/// counted and said once. `Err` when stdout is closed.
fn print_all(
    lines: &mut Lines,
    path: &Path,
    filter: &Filter,
    oldest: Option<SystemTime>,
    out: &mut Output,
) -> std::io::Result<()> {
    let mut skipped = 0;
    while let Some(line) = lines.next_line() {
        match line {
            Some(line) if filter.keeps(&line, oldest) => out.print(line)?,
            Some(_) => {}
            None => skipped += 1,
        }
    }
    say_skipped(path, skipped);
    Ok(())
}

fn say_skipped(path: &Path, skipped: usize) {
    if skipped > 0 {
        eprintln!(
            "runvil: {skipped} line(s) of {} are not audit lines of format {FORMAT_VERSION}; \
             skipped",
            path.display()
        );
    }
}

/// Prints the lines written to `path` from now on, and those of each file that takes its
/// place when it is rotated, until stdout is closed.
fn follow_file(
    path: &Path,
    mut current: Option<Lines>,
    filter: &Filter,
    oldest: Option<SystemTime>,
    out: &mut Output,
) {
    loop {
        if let Some(lines) = &mut current
            && print_all(lines, path, filter, oldest, out).is_err()
        {
            return;
        }
        // Rotated: the file at `path` is another one now. The old one's last lines are read
        // before the new one is opened (a writer renames, then writes anew).
        let replaced = match (&current, std::fs::metadata(path)) {
            (Some(lines), Ok(now)) => lines.inode != Some(now.ino()),
            (None, Ok(_)) => true,
            (_, Err(_)) => false,
        };
        if replaced {
            if let Some(lines) = &mut current
                && print_all(lines, path, filter, oldest, out).is_err()
            {
                return;
            }
            current = File::open(path).ok().map(Lines::new);
            continue;
        }
        if out.flush().is_err() {
            return;
        }
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

/// The lines of one file, each read within [`MAX_AUDIT_LINE_BYTES`]; a line without its
/// newline yet is kept until the rest is written.
struct Lines {
    reader: BufReader<File>,
    inode: Option<u64>,
    partial: Vec<u8>,
    /// Within a line longer than the cap, skipping to its end.
    overlong: bool,
}

impl Lines {
    fn new(file: File) -> Self {
        let inode = file.metadata().ok().map(|m| m.ino());
        Self {
            reader: BufReader::new(file),
            inode,
            partial: Vec::new(),
            overlong: false,
        }
    }

    /// The next whole line: `Some(Some(line))` for an audit line, `Some(None)` for a line that
    /// is not one, `None` when no whole line is there yet.
    fn next_line(&mut self) -> Option<Option<Written>> {
        loop {
            let room = (MAX_AUDIT_LINE_BYTES + 1).saturating_sub(self.partial.len());
            let mut limited = (&mut self.reader).take(room as u64);
            let read = limited.read_until(b'\n', &mut self.partial).ok()?;
            if read == 0 {
                return None;
            }
            let whole = self.partial.last() == Some(&b'\n');
            let text_len = self.partial.len() - usize::from(whole);
            if text_len > MAX_AUDIT_LINE_BYTES {
                // Too long: forget it, then skip to its newline.
                self.partial.clear();
                self.overlong = !whole;
                if whole {
                    return Some(None);
                }
                continue;
            }
            if !whole {
                return None;
            }
            let line = std::mem::take(&mut self.partial);
            if std::mem::take(&mut self.overlong) {
                return Some(None);
            }
            return Some(parse_line(&line[..line.len() - 1]));
        }
    }
}

/// An audit line of this format, if `bytes` is one.
fn parse_line(bytes: &[u8]) -> Option<Written> {
    let line: Written = serde_json::from_slice(bytes).ok()?;
    (line.v == FORMAT_VERSION && time_of(&line).is_some()).then_some(line)
}

/// The lines a table's column widths are taken from before it is printed: the widths fit
/// them, and the memory a table holds stays bounded however long the trail.
const TABLE_SAMPLE_LINES: usize = 1000;

/// Where lines are printed: a table on a terminal, JSON lines otherwise.
pub(super) struct Output {
    table: bool,
    /// A table's lines held until its widths are known.
    pending: Vec<Written>,
    /// The table's column widths, once known.
    widths: Option<[usize; COLUMNS]>,
    stdout: std::io::Stdout,
}

const COLUMNS: usize = 8;
const HEADER: [&str; COLUMNS] = [
    "TIME",
    "IDENTITY",
    "NAMESPACE",
    "TOOL",
    "OUTCOME",
    "MS",
    "BYTES",
    "ARGS_SHA256",
];

impl Output {
    pub(super) fn new(table: bool) -> Self {
        Self {
            table,
            pending: Vec::new(),
            widths: None,
            stdout: std::io::stdout(),
        }
    }

    pub(super) fn print(&mut self, line: Written) -> std::io::Result<()> {
        if !self.table {
            return writeln!(self.stdout.lock(), "{}", json_line(&line));
        }
        match &self.widths {
            Some(widths) => writeln!(self.stdout.lock(), "{}", row(&cells(&line), widths)),
            None => {
                self.pending.push(line);
                if self.pending.len() < TABLE_SAMPLE_LINES {
                    return Ok(());
                }
                self.settle()
            }
        }
    }

    /// Fixes a table's widths from the lines held, and prints its header and them.
    pub(super) fn settle(&mut self) -> std::io::Result<()> {
        if !self.table || self.widths.is_some() {
            return Ok(());
        }
        let widths = widths(&self.pending);
        self.widths = Some(widths);
        let mut stdout = self.stdout.lock();
        writeln!(stdout, "{}", row(&HEADER.map(str::to_owned), &widths))?;
        for line in std::mem::take(&mut self.pending) {
            writeln!(stdout, "{}", row(&cells(&line), &widths))?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        self.stdout.flush()
    }
}

/// A line's cells, each escaped.
fn cells(line: &Written) -> [String; COLUMNS] {
    let text = |value: &Option<String>| value.as_deref().map_or_else(|| "-".to_owned(), shown);
    let number = |value: Option<u64>| value.map_or_else(|| "-".to_owned(), |n| n.to_string());
    [
        shown(&line.time),
        text(&line.identity),
        text(&line.namespace),
        text(&line.tool),
        line.outcome.word().to_owned(),
        number(line.duration_ms),
        number(line.result_bytes),
        // The first 12 digits tell calls apart; the JSON lines have the whole hash.
        text(&line.args_sha256).chars().take(12).collect(),
    ]
}

fn widths(lines: &[Written]) -> [usize; COLUMNS] {
    let mut widths = HEADER.map(UnicodeWidthStr::width);
    for line in lines {
        for (width, cell) in widths.iter_mut().zip(cells(line)) {
            *width = (*width).max(cell.width());
        }
    }
    widths
}

fn row(cells: &[String; COLUMNS], widths: &[usize; COLUMNS]) -> String {
    let mut out = String::new();
    for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
        out.push_str(cell);
        if i + 1 < COLUMNS {
            out.push_str(&" ".repeat(width.saturating_sub(cell.width()) + 2));
        }
    }
    out
}

/// A line as JSON, with every control character and line separator escaped (serde_json
/// escapes only those below U+0020), so no value can end or rewrite the line it is on.
fn json_line(line: &Written) -> String {
    let json = serde_json::to_string(line).unwrap_or_default();
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::Outcome;

    fn written(identity: &str, tool: &str) -> Written {
        Written {
            v: 1,
            time: "2026-12-01T09:30:00.123Z".into(),
            identity: Some(identity.into()),
            namespace: Some("docs".into()),
            tool: Some(tool.into()),
            args_sha256: Some(crate::gateway::args_sha256(None)),
            outcome: Outcome::Ok,
            duration_ms: Some(41),
            result_bytes: None,
        }
    }

    #[test]
    fn a_table_escapes_every_value_and_aligns_its_columns() {
        let lines = [
            written("alice", "search"),
            written("mallory\nrunvil: forged", "t\u{1b}[2J"),
        ];
        let widths = widths(&lines);
        let rows: Vec<String> = lines.iter().map(|l| row(&cells(l), &widths)).collect();
        assert_eq!(
            row(&HEADER.map(str::to_owned), &widths),
            "TIME                      IDENTITY                 NAMESPACE  TOOL        OUTCOME  MS  BYTES  ARGS_SHA256"
        );
        assert_eq!(
            rows,
            [
                "2026-12-01T09:30:00.123Z  alice                    docs       search      ok       41  -      44136fa355b3",
                "2026-12-01T09:30:00.123Z  mallory\\nrunvil: forged  docs       t\\u{1b}[2J  ok       41  -      44136fa355b3",
            ]
        );
    }

    #[test]
    fn a_json_line_escapes_every_control_and_separator() {
        let line = written("a\u{85}b\u{2028}c\u{7f}\n", "t");
        let text = json_line(&line);
        assert!(
            text.contains(r#""identity":"a\u0085b\u2028c\u007f\n""#),
            "{text}"
        );
        let back: Written = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, line);
    }

    #[test]
    fn lines_are_read_within_their_cap_and_a_partial_one_waits() {
        let dir = std::env::temp_dir().join(format!("runvil-audit-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("audit.jsonl");
        let good = serde_json::to_string(&written("alice", "t")).expect("json");
        // A line padded to exactly the cap is read; one byte more is skipped, and the line
        // after it is read.
        let padded = |len: usize| {
            let mut line = written("alice", "t");
            line.tool = Some(String::new());
            let base = serde_json::to_string(&line).expect("json").len();
            line.tool = Some("x".repeat(len - base));
            serde_json::to_string(&line).expect("json")
        };
        let at_cap = padded(MAX_AUDIT_LINE_BYTES);
        assert_eq!(at_cap.len(), MAX_AUDIT_LINE_BYTES);
        let past = padded(MAX_AUDIT_LINE_BYTES + 1);
        let text = format!("{at_cap}\n{past}\nnot json\n{good}\n{{\"v\":2}}\n{good}");
        std::fs::write(&path, text).expect("written");
        let mut lines = Lines::new(File::open(&path).expect("open"));
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line() {
            seen.push(line.map(|l| l.tool.expect("tool").len()));
        }
        assert_eq!(
            seen,
            [
                Some(at_cap.len() - good.len() + 1),
                None,
                None,
                Some(1),
                None
            ],
            "the last line has no newline yet"
        );
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        file.write_all(b"\n").expect("written");
        assert_eq!(
            lines.next_line().map(|l| l.is_some()),
            Some(true),
            "now it is whole"
        );
        assert!(lines.next_line().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
