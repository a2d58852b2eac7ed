//! Every refusal, limit and timeout of the client, in one place an auditor can read.
//!
//! Nothing here does anything: the other modules ask this one what to refuse and how far to
//! go. `policy/README.md` at the top of the repository holds the same values as a table, and
//! the `table_matches_policy_readme` test fails when the two disagree.

use std::fmt;
use std::time::Duration;

/// Declares each named value once: its doc comment, type and value, and after `=>` how
/// `policy/README.md` shows it (a function of `shown`). The same declarations make the rows
/// `table_matches_policy_readme` checks, so no value can be declared without its row.
macro_rules! policy {
    ($($(#[$doc:meta])* const $name:ident: $ty:ty = $value:expr => $shown:ident;)*) => {
        $(
            $(#[$doc])*
            pub(crate) const $name: $ty = $value;
        )*

        /// Every value declared by `policy!`, rendered as `policy/README.md` shows it.
        #[cfg(test)]
        fn values() -> Vec<(&'static str, String)> {
            vec![$((stringify!($name), shown::$shown(&$name))),*]
        }
    };
}

policy! {
    /// The protocol version the client offers in `initialize`.
    const PROTOCOL_VERSION: &str = "2025-11-25" => plain;

    /// Versions the client accepts in the server's answer. `2025-03-26` is what older servers and
    /// the conformance suite's `sse-retry` server answer; the wire rules the client follows are the
    /// same for all three.
    const ACCEPTED_PROTOCOL_VERSIONS: [&str; 3] = [
        "2025-11-25",
        "2025-06-18",
        "2025-03-26",
    ] => list;

    /// The handshake-free revisions the client speaks, preferred first: tried before any handshake,
    /// and chosen from a server's `supportedVersions` or its list of supported versions in an
    /// unsupported-version error.
    const MODERN_PROTOCOL_VERSIONS: [&str; 1] = ["2026-07-28"] => list;

    /// Headers the client sets itself: a configured value would break the protocol (`accept`, and
    /// the revision, method and name headers of 2026-07-28, which must mirror the body), the
    /// session (`mcp-session-id`, `last-event-id`) or a DPoP proof (`dpop`). Compared without
    /// regard to letter case.
    const RESERVED_HEADERS: [&str; 7] = [
        "accept",
        "mcp-session-id",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "dpop",
    ] => list;

    /// Prefixes of headers the client sets itself: `Mcp-Param-*` carry a tool's `x-mcp-header`
    /// arguments (2026-07-28) and must mirror them.
    const RESERVED_HEADER_PREFIXES: [&str; 1] = ["mcp-param-"] => list;

    /// URL schemes a server may be reached by.
    const ALLOWED_SCHEMES: [&str; 2] = ["http", "https"] => list;

    /// One attempt to start a server: connect, handshake and every page of tools.
    const START_ATTEMPT_DEADLINE: Duration = Duration::from_secs(120) => secs;

    /// How long a `tools/call` may take, resumptions included.
    const CALL_DEADLINE: Duration = Duration::from_secs(300) => secs;

    /// The wait after a server's first failed start; it doubles after each further failure.
    const RETRY_FIRST_DELAY: Duration = Duration::from_secs(1) => secs;

    /// The longest wait between two starts of a failing server.
    const RETRY_MAX_DELAY: Duration = Duration::from_secs(60) => secs;

    /// TCP and TLS connection set-up. Short, because a server that accepts no connection in this
    /// time is down; the operation deadlines above bound everything after it.
    const CONNECT_TIMEOUT: Duration = Duration::from_secs(10) => secs;

    /// Ending a session (DELETE) and telling a server a request was abandoned: best effort, and
    /// never allowed to keep a task alive for long after the Pack is gone.
    const FAREWELL_TIMEOUT: Duration = Duration::from_secs(5) => secs;

    /// How long the rest of an answered SSE stream is read in the background, so its connection
    /// carries the next request instead of being closed: a server ends the stream right after
    /// the answer. One that keeps it open longer has its connection closed, which at 2026-07-28
    /// cancels nothing, since the request was answered.
    const STREAM_DRAIN_TIMEOUT: Duration = Duration::from_secs(1) => secs;

    /// How long a start-up or listing request (`server/discover`, `initialize`, each page of
    /// `tools/list`) waits after its answer for its stream to end, so the request that follows
    /// (the next one of the start, or the first call) takes the same connection instead of
    /// opening a second one. A server ends the stream right after the answer, so the wait is
    /// that of a packet; one that keeps the stream open costs each such request this once,
    /// about what a new connection to a distant server costs, and the rest is read in the
    /// background as any answered stream's. A tool call never waits for its stream's end.
    const STREAM_END_WAIT: Duration = Duration::from_millis(100) => ms;

    /// The most bytes read from an answered SSE stream after its answer before its connection is
    /// closed instead: the end of a stream is a few bytes, and nothing after the answer is used.
    const MAX_STREAM_DRAIN_BYTES: usize = 64 * 1024 => plain;

    /// Answered streams one Pack reads to their end at once; past it an answered stream's
    /// connection is closed at once, so a server that never ends its streams holds at most this
    /// many connections and tasks.
    const MAX_DRAINING_STREAMS: usize = 256 => plain;

    /// The largest JSON response body. At least 8 MiB so one `tools/list` page can carry a large
    /// but legitimate catalog; past it the operation fails and nothing more is buffered.
    const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024 => plain;

    /// The largest single SSE event (its data lines together, or one line). An SSE answer is read
    /// event by event, so this bounds its memory however long the stream runs; a `tools/list` page
    /// sent as one event has the same room as a JSON body.
    const MAX_SSE_EVENT_BYTES: usize = 16 * 1024 * 1024 => plain;

    /// The largest answer read from an authorization server or a protected resource's metadata
    /// (metadata, registration, tokens, errors). Such documents are a few kilobytes; past this the
    /// authorization fails and nothing more is buffered.
    const MAX_OAUTH_RESPONSE_BYTES: usize = 64 * 1024 => plain;

    /// One request to an authorization server or for metadata, its body read included. These
    /// servers answer at once; a slow one must not hold a start attempt for long.
    const OAUTH_REQUEST_DEADLINE: Duration = Duration::from_secs(10) => secs;

    /// How long the user may take in the browser for one authorization (a login with a second
    /// factor, a consent screen). This wait is not counted in [`START_ATTEMPT_DEADLINE`], which
    /// bounds the server, not the person.
    const AUTHORIZATION_DEADLINE: Duration = Duration::from_secs(600) => secs;

    /// The longest part of an authorization server's text (an error and its description, a token
    /// type) that a reason quotes, after cleaning: enough to say what went wrong, too little to
    /// carry a payload.
    const MAX_OAUTH_QUOTED_CHARS: usize = 200 => plain;

    /// The most time before an access token expires that it is refreshed: a request must not leave
    /// with a token that expires on the way.
    const REFRESH_AHEAD_MAX: Duration = Duration::from_secs(60) => secs;

    /// A token is refreshed once this part of its lifetime is left (one tenth), but never more than
    /// [`REFRESH_AHEAD_MAX`] early: a token that lives five seconds is used for four and a half,
    /// not refreshed on every request.
    const REFRESH_AHEAD_DIVISOR: u32 = 10 => plain;

    /// Authorizations one request to an MCP server may set off (a first one, then step-ups for more
    /// scopes) before it fails: the specification asks clients to stop after a few, so a server
    /// that never accepts a token cannot send the user to log in again and again.
    const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3 => plain;

    /// The most bytes of `WWW-Authenticate` values read from one answer; the parameters a client
    /// uses (`resource_metadata`, `scope`, `error`) fit many times over.
    const MAX_CHALLENGE_BYTES: usize = 8 * 1024 => plain;

    /// The longest `DPoP-Nonce` a proof carries back (RFC 9449 nonces are short opaque strings); a
    /// longer one is not used, and the request fails as the server decides.
    const MAX_DPOP_NONCE_BYTES: usize = 256 => plain;

    /// The wait before resuming an SSE stream whose server sent no `retry` field.
    const SSE_DEFAULT_RETRY: Duration = Duration::from_secs(1) => ms;

    /// The least wait before resuming: `retry: 0` must not become a busy loop.
    const SSE_MIN_RETRY: Duration = Duration::from_millis(100) => ms;

    /// The most wait before resuming: a huge `retry` must not stall a call for hours.
    const SSE_MAX_RETRY: Duration = Duration::from_secs(30) => ms;

    /// Resumptions of one request in a row that bring no new event before the request fails.
    const MAX_IDLE_RESUMPTIONS: u32 = 5 => plain;

    /// The most `tools/list` pages one server may send. With [`MAX_RESPONSE_BYTES`] it bounds the
    /// memory a catalog takes, and it ends a server whose cursors never end.
    const MAX_TOOL_PAGES: usize = 100 => plain;

    /// The longest `MCP-Session-Id` accepted (the specification allows visible ASCII only).
    const MAX_SESSION_ID_BYTES: usize = 1024 => plain;

    /// The longest tool name, as the MCP specification recommends.
    const MAX_TOOL_NAME_CHARS: usize = 128 => plain;

    /// The longest tool description shown to a model; the rest is cut with a marker.
    const MAX_DESCRIPTION_CHARS: usize = 4096 => plain;

    /// The longest tool title shown: a display name, twice the longest tool name; the rest is cut
    /// with a marker.
    const MAX_TITLE_CHARS: usize = 256 => plain;

    /// The largest input or output schema, serialized. A bigger one drops its tool.
    const MAX_SCHEMA_BYTES: usize = 256 * 1024 => plain;

    /// The deepest nesting of a schema. serde_json already stops at 128; 32 is far beyond any real
    /// schema and keeps validation's recursion shallow.
    const MAX_SCHEMA_DEPTH: usize = 32 => plain;

    /// The most `x-mcp-header` parameters one tool may declare; a tool with more is rejected. Each
    /// one is a header on every call of the tool, and HTTP servers commonly refuse requests with
    /// about 100 headers (hyper's default) or 8 KiB of them; real tools mirror a routing key or
    /// two.
    const MAX_PARAM_HEADERS: usize = 32 => plain;

    /// The longest `{Name}` of an `Mcp-Param-{Name}` header a tool may declare, in bytes (it is
    /// ASCII). It is sent on every call; a routing key's name is a word.
    const MAX_PARAM_HEADER_NAME_BYTES: usize = 64 => plain;

    /// The longest result text handed to a model; the rest is cut with a marker.
    const MAX_RESULT_CHARS: usize = 2 * 1024 * 1024 => plain;

    /// Names listed in one model-readable error (known namespaces, a server's tools).
    const MAX_NAMES_IN_ERROR: usize = 50 => plain;

    /// The most edits between a misspelled namespace or tool name and the name an error suggests
    /// (`did you mean echo?`): the contract's, which runvil uses too, so both suggest alike.
    const MAX_SUGGESTION_EDITS: usize = runvil_plugin::MAX_SUGGESTION_EDITS => plain;

    /// Argument-schema violations listed in one model-readable error.
    const MAX_VIOLATIONS_IN_ERROR: usize = 5 => plain;

    /// The `tools/list` results of one server, all pages together, as JSON text. One page may be as
    /// large as [`MAX_RESPONSE_BYTES`], so a whole catalog gets that room too; past it the server
    /// fails to start with a reason. It bounds what listing a server can cost in memory: fields the
    /// Pack does not read are skipped as they are parsed, never kept.
    const MAX_TOOLS_LIST_BYTES: usize = 16 * 1024 * 1024 => plain;

    /// Tools kept for one server; those past it are dropped with a reason. Far beyond any real
    /// server, and it bounds what one server's checked tools hold however small each one is.
    const MAX_TOOLS_PER_SERVER: usize = 10_000 => plain;

    /// Dropped tools kept with their reason for one server (the listing and the log show them); the
    /// rest are only counted. A page of millions of `{}` must not become millions of entries.
    const MAX_REJECTED_KEPT: usize = 100 => plain;

    /// The most tools one `get_dynamic_tools` search answers, best first: a model picks among a
    /// few, and the rest of a large catalog stays out of its context.
    const MAX_SEARCH_RESULTS: usize = 20 => plain;

    /// The longest description a search result shows, whitespace folded; a longer one is cut and
    /// ends with `…`. Enough to tell tools apart; `get_dynamic_tools` with the namespace and the
    /// tool's name shows all of it.
    const MAX_SEARCH_DESCRIPTION_CHARS: usize = 200 => plain;

    /// The longest search query: a few words say what a tool should do; a longer one is refused
    /// with an error saying so.
    const MAX_SEARCH_QUERY_CHARS: usize = 256 => plain;

    /// The terms of each description (a tool's, and each of its parameters') that search matches
    /// a query against: the first ones, where a description says what the tool does. A server
    /// stuffing keywords after them gains nothing. On the evaluation set, 24 found the most tools
    /// first; 16 let poisoned tools win fewer queries but found fewer, 32 let them win more.
    const MAX_INDEXED_DESCRIPTION_TERMS: usize = 24 => plain;

    /// How many times a term repeated in one field of a tool counts for search: the weight of a
    /// repeated word saturates, so a description that says a keyword ten times scores as one
    /// that says it this often.
    const MAX_COUNTED_TERM_REPEATS: u8 = 2 => plain;

    /// What a search match of a word's stem only is worth, against 1 for the word itself
    /// (`reviewers` for a query's `review`): enough that a tool saying the query's words in
    /// another form is found, less than one saying them as the query does. On the evaluation
    /// set's queries, 0.3 to 1 found as many tools among the first five, and 0.5 and 0.7 the
    /// most first (0.3 one fewer, 1 two fewer).
    const SEARCH_STEM_WEIGHT: f64 = 0.5 => plain;

    /// The shortest word search reads a stem of; a shorter one is its own stem. The English
    /// stemmer's cuts of short words are mostly no cut or a wrong one, and an unfinished word
    /// of a query (`sende`) would match by its stem every tool that says the word it starts.
    const MIN_STEMMED_CHARS: usize = 6 => plain;

    /// The longest `get_dynamic_tools` answer, in bytes. Tools or names that would not fit are left
    /// out, counted, and the answer says so; one tool at its largest always fits.
    const MAX_LISTING_BYTES: usize = 2 * 1024 * 1024 => plain;

    /// The longest error text of invalid arguments or a transport failure handed to a model, and of
    /// a server's `error` status reason (which may quote what the server sent); the rest is cut
    /// with a marker. A server's own error is its tool's text and has the room of a result.
    const MAX_ERROR_CHARS: usize = 64 * 1024 => plain;

    /// The most bytes of an error answer's body read (a `4xx` or `5xx`), to quote what the server
    /// said of it: an error message is a line; past this the rest is not read.
    const MAX_ERROR_BODY_BYTES: usize = 4096 => plain;

    /// The longest part of what a server said of an error status that a reason quotes, after
    /// cleaning: enough to explain it ("No valid session ID provided"), too little to carry a
    /// payload.
    const MAX_STATUS_MESSAGE_CHARS: usize = 200 => plain;

    /// The longest `message` of a call's progress notice a Host is handed: a status line, not a
    /// result; the rest is cut with a marker.
    const MAX_PROGRESS_MESSAGE_CHARS: usize = 1024 => plain;

    // Schema work. Validation walks the schema with its references expanded once for every value it
    // checks, so a schema of a few hundred bytes whose definitions each refer twice to the next
    // costs 2^40 steps. These bound that work; the checks run on the blocking pool, inside the
    // call's deadline (see `envelope::off_runtime`).

    /// The most nodes a schema may have with every reference expanded (a reference back into itself
    /// counts once). As many as a schema of [`MAX_SCHEMA_BYTES`] could have without any reference,
    /// so only references can pass it; one value checked against it takes a few milliseconds. Past
    /// it the tool is dropped when listed.
    const MAX_SCHEMA_EXPANSION: u64 = MAX_SCHEMA_BYTES as u64 => plain;

    /// The deepest nesting of a schema with its references expanded, each reference's target a
    /// level below it. Keeps the recursion of measuring and of validating shallow: far beyond real
    /// schemas, and several times [`MAX_SCHEMA_DEPTH`] for references between definitions.
    const MAX_SCHEMA_EXPANDED_DEPTH: usize = 128 => plain;

    /// The most work one check may take: the values of the checked JSON times the schema's
    /// expansion, an upper bound of the steps the validator takes. About half a second at worst; a
    /// million values against a simple schema pass. Past it nothing is checked: the arguments are
    /// not sent, or the result is not shown, and the error says why.
    const MAX_VALIDATION_WORK: u64 = 1 << 25 => plain;

    /// The most work a call's check may do on a runtime worker rather than on the blocking pool:
    /// the values of the JSON times the schema's expansion, plus the bytes of its strings and keys
    /// (patterns read them, and a result's text is cleaned byte by byte). Handing a check to the
    /// pool and back costs two thread wake-ups, more than the whole check of a typical call; at
    /// this size a check holds a worker for tens of microseconds at most, no longer than a
    /// scheduler tick. Anything larger still goes to the pool.
    const MAX_INLINE_CHECK_WORK: u64 = 1 << 14 => plain;

    /// The longest schema violation (a path and a message) in an error; the rest is cut with a
    /// marker. Server data in either (a key, a pattern) passes the same cleaning as results.
    const MAX_VIOLATION_CHARS: usize = 1024 => plain;

    /// The least time between two listings of one server's tools (the first re-list counts from
    /// the listing the server became ready with): change notices are coalesced (one re-list at a
    /// time, at most one more waiting), and a server that floods them gets one re-list this often,
    /// bounding the work it can make the Pack do.
    const RELIST_MIN_INTERVAL: Duration = Duration::from_secs(2) => secs;

    /// The largest approved tool definition a server's pin record keeps, to show what changed later
    /// (canonical JSON, bytes). A larger one keeps only its pin; real tools are a few kilobytes,
    /// and a server cannot make the user's record grow past this per tool.
    const MAX_PINNED_DEFINITION_BYTES: usize = 64 * 1024 => plain;

    /// The most fields a held tool's changes list, counting first the fields a model reads
    /// (name, title, description, both schemas, annotations, `execution`), which are all listed
    /// whatever their number (a definition's size bounds them); the rest are counted.
    const MAX_CHANGES_SHOWN: usize = 64 => plain;

    /// The longest part of a value (or field path) a held tool's change shows, before and after,
    /// cleaned: a longer value shows this many characters of both sides from the same place,
    /// around their first difference, with where that is.
    const MAX_CHANGE_CHARS: usize = 512 => plain;

    /// How many characters before the first difference of two long values their shown parts
    /// start, so the reader sees what the change follows.
    const CHANGE_CONTEXT_CHARS: usize = 128 => plain;

    /// The least time between two reads of a server's pin record prompted by its use: a held
    /// tool listed or called waits for one (an approval made elsewhere counts at its next use),
    /// any other use starts one in the background (a rejection made elsewhere counts soon after),
    /// so calls of trusted tools never wait for it, unless the Host said the record changed.
    const PIN_RECHECK_INTERVAL: Duration = Duration::from_secs(1) => secs;

    /// The most times one change of a server's pin record is tried when other processes keep
    /// changing the record in between (each try reads it again and judges again); past it the
    /// change fails with a reason.
    const MAX_PIN_SAVE_ATTEMPTS: usize = 8 => plain;

    /// What replaces a secret wherever one would have been shown.
    const REDACTION_MARKER: &str = "[redacted]" => plain;

    /// Configured secrets shorter than this are not scrubbed from free text: replacing every `a` or
    /// `1` in a result would destroy it while hiding nothing worth hiding.
    const MIN_SCRUBBED_SECRET_CHARS: usize = 6 => plain;

    /// A path segment or host label of a configured URL this long, holding letters and digits
    /// both, is taken for a key written into the URL (`/mcp/s/<key>/mcp`) and scrubbed like a
    /// configured secret, as every query value and the userinfo are: keys are long and random,
    /// so the words of an ordinary URL (`v1`, `mcp`, `streamable-http`) stay readable.
    const MIN_KEY_SHAPED_CHARS: usize = 16 => plain;

    /// Secrets the Pack obtained while running (tokens, codes, registered clients) the scrubber
    /// keeps, the newest: a token refreshed every few minutes for weeks stays bounded, and the
    /// oldest forgotten has long expired.
    const MAX_LEARNED_SECRETS: usize = 1024 => plain;

    /// Why the whole Pack is unavailable (never because of one entry).
    const UNAVAILABLE_CONFIG: &str =
        "the mcp configuration must be an object of servers (an mcp.json mcpServers object) or null"
        => plain;

    /// The Pack needs the Host's runtime even with no servers, so a Host's mistake shows at once.
    const UNAVAILABLE_RUNTIME: &str =
        "the Host lends no tokio runtime (the contract's TOKIO_RUNTIME service)" => plain;
}

/// Why a server entry of the configuration was refused. The texts are part of the contract
/// with users, so each one is listed in `policy/README.md`. None names a value: only keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The entry is not a JSON object.
    NotAnObject,
    /// A local (stdio) server: this Pack starts no process.
    Local,
    /// `type: "sse"`, the legacy HTTP+SSE transport.
    LegacySse,
    /// No `url`.
    MissingUrl,
    /// A key whose value must be a string is something else.
    NotAString { key: String },
    /// `headers` is not an object.
    HeadersNotAnObject,
    /// `url` does not parse as a URL.
    InvalidUrl,
    /// `url` has a scheme other than http or https.
    Scheme,
    /// `${env:NAME}` names a variable that is not set.
    UnsetVariable { name: String, key: String },
    /// `${userHome}` with no home directory known.
    NoHome { key: String },
    /// A header the client owns.
    ReservedHeader { name: String },
    /// A header name HTTP cannot carry.
    InvalidHeaderName { name: String },
    /// A header value HTTP cannot carry (the value is never shown).
    InvalidHeaderValue { name: String },
    /// `oauth` is not an object.
    OAuthNotAnObject,
    /// A client's secret, key or grant without the client they belong to.
    OAuthWithoutClientId,
    /// `oauth.grantType` names a grant the Pack does not make.
    OAuthGrantType,
    /// `oauth.issuer` is not an http or https URL.
    OAuthIssuer,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("the entry is not an object"),
            Self::Local => f.write_str("local MCP servers (command) are not supported yet"),
            Self::LegacySse => f.write_str(
                "type \"sse\" is the legacy HTTP+SSE transport, which is not supported; \
                 use Streamable HTTP",
            ),
            Self::MissingUrl => f.write_str("url is missing"),
            Self::NotAString { key } => write!(f, "{key} is not a string"),
            Self::HeadersNotAnObject => f.write_str("headers is not an object"),
            Self::InvalidUrl => f.write_str("url is not a valid URL"),
            Self::Scheme => f.write_str("url must start with http:// or https://"),
            Self::UnsetVariable { name, key } => {
                write!(f, "environment variable {name} is not set (used in {key})")
            }
            Self::NoHome { key } => {
                write!(f, "${{userHome}} is used in {key} but HOME is not set")
            }
            Self::ReservedHeader { name } => {
                write!(
                    f,
                    "header {name} is set by the client and may not be configured"
                )
            }
            Self::InvalidHeaderName { name } => {
                write!(f, "header name {name} cannot be sent over HTTP")
            }
            Self::InvalidHeaderValue { name } => {
                write!(f, "the value of header {name} cannot be sent over HTTP")
            }
            Self::OAuthNotAnObject => f.write_str("oauth is not an object"),
            Self::OAuthWithoutClientId => f.write_str(
                "oauth.clientSecret, oauth.privateKey, oauth.grantType or oauth.issuer is set \
                 but oauth.clientId is not",
            ),
            Self::OAuthGrantType => f.write_str(
                "oauth.grantType must be \"authorization_code\" or \"client_credentials\"",
            ),
            Self::OAuthIssuer => f.write_str("oauth.issuer must be an http or https URL"),
        }
    }
}

impl std::error::Error for Refusal {}

/// The redirect policy of the HTTP client: none. A redirect could carry the configured
/// headers to another server, so a 3xx is an error that names the status, and its
/// `Location` is never contacted.
pub(crate) fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::none()
}

/// How long before its expiry a token that lives `lifetime` is refreshed.
pub(crate) fn refresh_ahead(lifetime: Duration) -> Duration {
    (lifetime / REFRESH_AHEAD_DIVISOR).min(REFRESH_AHEAD_MAX)
}

/// The wait before start attempt `failures + 1` of a server that has failed `failures` times.
pub(crate) fn retry_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    RETRY_FIRST_DELAY
        .saturating_mul(1 << doublings)
        .min(RETRY_MAX_DELAY)
}

/// How `policy/README.md` shows each kind of value.
#[cfg(test)]
mod shown {
    use std::fmt::Display;
    use std::time::Duration;

    /// Most durations: in seconds.
    pub(super) fn secs(duration: &Duration) -> String {
        format!("{} s", duration.as_secs_f64())
    }

    /// The SSE waits: in milliseconds.
    pub(super) fn ms(duration: &Duration) -> String {
        format!("{} ms", duration.as_millis())
    }

    /// Lists: their items, joined.
    pub(super) fn list(items: &[&str]) -> String {
        items.join(", ")
    }

    /// Numbers and texts: as they are.
    pub(super) fn plain(value: &impl Display) -> String {
        value.to_string()
    }
}

/// Every named value of this module and every refusal's template, rendered as
/// `policy/README.md` shows it; a refusal's fields are the placeholders `{key}` and `{name}`.
#[cfg(test)]
fn table() -> Vec<(&'static str, String)> {
    let key = || "{key}".to_owned();
    let name = || "{name}".to_owned();
    let refusals = [
        ("Refusal::NotAnObject", Refusal::NotAnObject),
        ("Refusal::Local", Refusal::Local),
        ("Refusal::LegacySse", Refusal::LegacySse),
        ("Refusal::MissingUrl", Refusal::MissingUrl),
        ("Refusal::NotAString", Refusal::NotAString { key: key() }),
        ("Refusal::HeadersNotAnObject", Refusal::HeadersNotAnObject),
        ("Refusal::InvalidUrl", Refusal::InvalidUrl),
        ("Refusal::Scheme", Refusal::Scheme),
        (
            "Refusal::UnsetVariable",
            Refusal::UnsetVariable {
                name: name(),
                key: key(),
            },
        ),
        ("Refusal::NoHome", Refusal::NoHome { key: key() }),
        (
            "Refusal::ReservedHeader",
            Refusal::ReservedHeader { name: name() },
        ),
        (
            "Refusal::InvalidHeaderName",
            Refusal::InvalidHeaderName { name: name() },
        ),
        (
            "Refusal::InvalidHeaderValue",
            Refusal::InvalidHeaderValue { name: name() },
        ),
        ("Refusal::OAuthNotAnObject", Refusal::OAuthNotAnObject),
        (
            "Refusal::OAuthWithoutClientId",
            Refusal::OAuthWithoutClientId,
        ),
        ("Refusal::OAuthGrantType", Refusal::OAuthGrantType),
        ("Refusal::OAuthIssuer", Refusal::OAuthIssuer),
    ];
    let mut rows = values();
    rows.extend(refusals.map(|(row, refusal)| (row, refusal.to_string())));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of the form `| `NAME` | `VALUE` | why |` in the auditors' table.
    fn readme_rows() -> Vec<(String, String)> {
        include_str!("../policy/README.md")
            .lines()
            .filter_map(|line| {
                let mut cells = line.split(" | ");
                let name = cells.next()?.strip_prefix("| `")?.strip_suffix('`')?;
                let value = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
                Some((name.to_owned(), value.to_owned()))
            })
            .collect()
    }

    #[test]
    fn table_matches_policy_readme() {
        let code: Vec<(String, String)> = table()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        let readme = readme_rows();
        for row in &code {
            assert!(
                readme.contains(row),
                "policy/README.md lacks or differs: {row:?}"
            );
        }
        for row in &readme {
            assert!(
                code.contains(row),
                "policy/README.md has a row the code lacks: {row:?}"
            );
        }
    }

    #[test]
    fn a_token_is_refreshed_a_tenth_of_its_life_early_and_at_most_a_minute() {
        let secs = Duration::from_secs;
        assert_eq!(refresh_ahead(secs(5)), Duration::from_millis(500));
        // At the cap's lifetime the tenth is the cap; a second longer, still the cap.
        assert_eq!(refresh_ahead(secs(600)), REFRESH_AHEAD_MAX);
        assert_eq!(refresh_ahead(secs(601)), REFRESH_AHEAD_MAX);
        assert_eq!(refresh_ahead(secs(599)), Duration::from_millis(59_900));
        assert_eq!(refresh_ahead(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn retry_delay_doubles_to_a_minute() {
        let waits: Vec<u64> = (1..=9).map(|n| retry_delay(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(retry_delay(u32::MAX), RETRY_MAX_DELAY);
    }
}
