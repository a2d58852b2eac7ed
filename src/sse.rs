//! An incremental Server-Sent Events parser with a size cap.
//!
//! Written by hand because the SSE crates (eventsource-stream, sse-stream) put no bound on a
//! line or an event, so a hostile server could grow the client's memory without end. This
//! follows the WHATWG parsing rules the MCP transport relies on: CR, LF and CRLF line ends
//! (split across chunks too), a leading BOM, `data` lines joined by LF, events without data
//! not dispatched, `id` remembered across events, and `retry` in milliseconds.

use std::fmt;
use std::time::Duration;

/// One dispatched event whose data is the text of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) data: String,
}

/// Why a stream cannot be parsed further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line or an event's data passed the cap.
    TooLarge { limit: usize },
    /// An event's data is not UTF-8.
    InvalidUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit } => write!(f, "an SSE event is larger than {limit} bytes"),
            Self::InvalidUtf8 => f.write_str("an SSE event is not valid UTF-8"),
        }
    }
}

impl std::error::Error for SseError {}

/// Parser state for one stream.
#[derive(Debug)]
pub(crate) struct SseParser {
    limit: usize,
    /// The current line, unless it is a `data` line (see `in_data_line`).
    line: Vec<u8>,
    /// Bytes of the current line so far, for the cap.
    line_len: usize,
    /// The current line is a `data` line whose value goes straight into `data`.
    in_data_line: bool,
    data: Vec<u8>,
    has_data: bool,
    /// `event:` of the event being read; only unnamed and `message` events carry messages.
    other_type: bool,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// The previous chunk ended in CR, so a leading LF of the next one ends nothing.
    after_cr: bool,
    at_start: bool,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";
const DATA: &[u8] = b"data:";

/// The value of a line known to be a `data` line: six bytes tell whether there is a space
/// after the colon to drop.
fn data_value(line: &[u8]) -> Option<&[u8]> {
    let value = line.strip_prefix(DATA).filter(|value| !value.is_empty())?;
    Some(value.strip_prefix(b" ").unwrap_or(value))
}

impl SseParser {
    /// A parser that refuses lines and events larger than `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            line_len: 0,
            in_data_line: false,
            data: Vec::new(),
            has_data: false,
            other_type: false,
            last_event_id: None,
            retry: None,
            after_cr: false,
            at_start: true,
        }
    }

    /// The id of the last event that set one: where a resumed stream continues.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the server asked for, if any.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Parses `chunk`, appending each complete event to `out`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        // An empty chunk (an empty HTTP/2 DATA frame) must not end a CR's wait for its LF.
        if chunk.is_empty() {
            return Ok(());
        }
        if self.at_start {
            // The BOM may itself be split across chunks; wait until three bytes are known.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(());
            }
            self.at_start = false;
            let pending = std::mem::take(&mut self.line);
            let pending = pending.strip_prefix(BOM).unwrap_or(&pending);
            return self.feed_lines(pending, out);
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        self.feed_lines(chunk, out)
    }

    fn feed_lines(&mut self, mut chunk: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            self.push_line_bytes(&chunk[..end])?;
            self.line_len = 0;
            if self.in_data_line {
                self.in_data_line = false;
            } else {
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out)?;
                self.line = line;
                self.line.clear();
            }
            if chunk[end] == b'\r' {
                match chunk.get(end + 1) {
                    Some(b'\n') => chunk = &chunk[end + 2..],
                    Some(_) => chunk = &chunk[end + 1..],
                    None => {
                        self.after_cr = true;
                        chunk = &[];
                    }
                }
            } else {
                chunk = &chunk[end + 1..];
            }
        }
        self.push_line_bytes(chunk)
    }

    /// Takes the next bytes of the current line. Once the line is known to be a `data` line,
    /// its value goes straight into the event's data: a message of megabytes is then
    /// copied once, not gathered as a line first.
    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        self.line_len += bytes.len();
        if self.line_len > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        if self.in_data_line {
            return self.push_data(bytes, false);
        }
        if self.line.is_empty()
            && let Some(value) = data_value(bytes)
        {
            self.in_data_line = true;
            return self.push_data(value, true);
        }
        self.line.extend_from_slice(bytes);
        let line = std::mem::take(&mut self.line);
        let pushed = match data_value(&line) {
            Some(value) => {
                self.in_data_line = true;
                self.push_data(value, true)
            }
            None => Ok(()),
        };
        self.line = line;
        if self.in_data_line {
            self.line.clear();
        }
        pushed
    }

    /// Adds `bytes` to the event's data, after a newline when they start a second line.
    fn push_data(&mut self, bytes: &[u8], starts_line: bool) -> Result<(), SseError> {
        let joint = starts_line && self.has_data;
        if self.data.len() + usize::from(joint) + bytes.len() > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        if joint {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(bytes);
        self.has_data = true;
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return Ok(()); // a comment, often a keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            // Only a short one ("data", "data:"): longer ones go by `push_line_bytes`.
            b"data" => self.push_data(value, true)?,
            b"event" => self.other_type = !(value.is_empty() || value == b"message"),
            b"id" if !value.contains(&0) => {
                self.last_event_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so the only failure is overflow: a delay beyond any policy.
                let millis = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(millis));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) -> Result<(), SseError> {
        let data = std::mem::take(&mut self.data);
        let (has_data, other_type) = (self.has_data, self.other_type);
        self.has_data = false;
        self.other_type = false;
        if !has_data || other_type || data.is_empty() {
            return Ok(());
        }
        let data = String::from_utf8(data).map_err(|_| SseError::InvalidUtf8)?;
        out.push(Event { data });
        Ok(())
    }
}

/// What parsing a list of chunks gave: the events' data, the error that stopped it if any, and
/// the id and retry the parser remembers. For the properties and the fuzz target, which both
/// compare a stream parsed whole with the same stream in pieces.
#[cfg(any(test, fuzzing))]
pub(crate) type Parsed = (
    Vec<String>,
    Option<SseError>,
    Option<String>,
    Option<Duration>,
);

/// Feeds `chunks` to one parser capped at `limit`, up to the first error.
#[cfg(any(test, fuzzing))]
pub(crate) fn parse_chunks(chunks: &[&[u8]], limit: usize) -> Parsed {
    let mut parser = SseParser::new(limit);
    let mut out = Vec::new();
    let mut error = None;
    for chunk in chunks {
        if let Err(e) = parser.feed(chunk, &mut out) {
            error = Some(e);
            break;
        }
    }
    let events = out.into_iter().map(|e| e.data).collect();
    let id = parser.last_event_id().map(str::to_owned);
    (events, error, id, parser.retry())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> (Result<Vec<String>, SseError>, SseParser) {
        let mut parser = SseParser::new(64);
        let mut out = Vec::new();
        for chunk in chunks {
            if let Err(e) = parser.feed(chunk, &mut out) {
                return (Err(e), parser);
            }
        }
        (Ok(out.into_iter().map(|e| e.data).collect()), parser)
    }

    #[test]
    fn parses_events_ids_and_retry() {
        let stream = b"id: e1\nretry: 500\ndata: \n\nevent: message\nid: e2\ndata: {\"a\":1}\n\n";
        let (events, parser) = parse_chunks(&[stream]);
        assert_eq!(events, Ok(vec!["{\"a\":1}".to_owned()]));
        assert_eq!(parser.last_event_id(), Some("e2"));
        assert_eq!(parser.retry(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn joins_data_lines_and_skips_comments_and_other_events() {
        let stream = b": ping\ndata: a\ndata:b\n\nevent: endpoint\ndata: /x\n\ndata: c\n\n";
        assert_eq!(
            parse_chunks(&[stream]).0,
            Ok(vec!["a\nb".to_owned(), "c".to_owned()])
        );
    }

    #[test]
    fn every_line_ending_and_split_gives_the_same_events() {
        let want = Ok(vec!["x".to_owned(), "é".to_owned()]);
        for ending in ["\n", "\r", "\r\n"] {
            let text = format!("\u{feff}data: x{ending}{ending}data: é{ending}{ending}");
            let bytes = text.as_bytes();
            for split in 0..=bytes.len() {
                let (a, b) = bytes.split_at(split);
                assert_eq!(parse_chunks(&[a, b]).0, want, "{ending:?} split at {split}");
            }
            let singles: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(parse_chunks(&singles).0, want, "{ending:?} byte by byte");
        }
    }

    #[test]
    fn a_line_at_the_limit_passes_and_one_past_it_fails() {
        let at = format!("data: {}\n\n", "a".repeat(64 - 6));
        assert_eq!(parse_chunks(&[at.as_bytes()]).0.map(|e| e.len()), Ok(1));
        let past = format!("data: {}\n\n", "a".repeat(64 - 5));
        assert_eq!(
            parse_chunks(&[past.as_bytes()]).0,
            Err(SseError::TooLarge { limit: 64 })
        );
    }

    #[test]
    fn event_data_past_the_limit_fails() {
        let line = format!("data: {}\n", "a".repeat(40));
        let stream = format!("{line}{line}\n");
        assert_eq!(
            parse_chunks(&[stream.as_bytes()]).0,
            Err(SseError::TooLarge { limit: 64 })
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_and_odd_retry_is_read_safely() {
        assert_eq!(
            parse_chunks(&[b"data: \xff\n\n"]).0,
            Err(SseError::InvalidUtf8)
        );
        let (_, parser) = parse_chunks(&[b"retry: 99999999999999999999999\nretry: x\n"]);
        assert_eq!(parser.retry(), Some(Duration::from_millis(u64::MAX)));
    }
}

#[cfg(test)]
mod proptests;
