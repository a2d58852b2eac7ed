//! The canary secrets (set in `.cargo/config.toml`, so every process cargo runs has them, a
//! `runvil` child included), the forms the client sends them in, and the check that a text
//! holds none of them in any form.
//!
//! The forms sent are written out here, not derived the way the client derives them, so a
//! test compares the client with an independent account of the wire.

/// A canary in a URL's query and in headers.
pub const CANARY: &str = env!("PLUGIN_MCP_TEST_CANARY");
/// In a URL's userinfo, the user name.
pub const USER: &str = env!("PLUGIN_MCP_TEST_CANARY_USER");
/// In a URL's userinfo, the password, configured percent-encoded as a URL needs it.
pub const PASS: &str = env!("PLUGIN_MCP_TEST_CANARY_PASS");
/// In a URL's path.
pub const PATH: &str = env!("PLUGIN_MCP_TEST_CANARY_PATH");
/// In a URL's query.
pub const QUERY: &str = env!("PLUGIN_MCP_TEST_CANARY_QUERY");
/// In a URL's host.
pub const HOST: &str = env!("PLUGIN_MCP_TEST_CANARY_HOST");
/// In a header.
pub const HEADER: &str = env!("PLUGIN_MCP_TEST_CANARY_HEADER");

/// The password as reqwest decodes it.
pub const PASS_DECODED: &str = "Canary Pass'ü-9e1c";
/// The `Authorization` reqwest sends from the userinfo: base64 of `user:password`.
pub const BASIC: &str = "Basic Q2FuYXJ5LVVzZXItM2I3ZDpDYW5hcnkgUGFzcyfDvC05ZTFj";
/// The path canary as the url crate sends it.
pub const PATH_SENT: &str = "Canary%20P%C3%A4th'-4d2a";
/// The query canary as the url crate sends it.
pub const QUERY_SENT: &str = "Canary%20Q%C3%BCery%27%22-8f0b";
/// The host canary as the url crate sends it (IDNA).
pub const HOST_SENT: &str = "xn--canary-hst-7c2e-gtb";

/// The URL of a server on `port` (a number, or `${env:...}` for one) with a canary in every
/// part but the host: userinfo, path and query, each through `${env:...}`.
pub fn url_with_canaries(port: impl std::fmt::Display) -> String {
    format!(
        "http://${{env:PLUGIN_MCP_TEST_CANARY_USER}}:${{env:PLUGIN_MCP_TEST_CANARY_PASS}}\
         @127.0.0.1:{port}/${{env:PLUGIN_MCP_TEST_CANARY_PATH}}/mcp\
         ?key=${{env:PLUGIN_MCP_TEST_CANARY_QUERY}}"
    )
}

/// The URL of a server on `port` with credentials written into it as they are, not through
/// `${env:...}`: canaries as the user name and password, as two key-shaped path segments and
/// as a query token, beside ordinary words (`v1`, `mcp`, `v=v1`) that must stay readable.
pub fn url_with_literal_canaries(port: u16) -> String {
    format!("http://{USER}:{PASS}@127.0.0.1:{port}/{CANARY}/{PATH}/v1/mcp?api_key={QUERY}&v=v1")
}

/// The request target the client sends for [`url_with_literal_canaries`].
pub fn literal_target() -> String {
    format!("/{CANARY}/{PATH_SENT}/v1/mcp?api_key={QUERY_SENT}&v=v1")
}

/// Every canary, and every value the client derives from one on the wire.
pub fn secrets() -> Vec<String> {
    let credential = format!("{USER}:{PASS_DECODED}");
    let basic = BASIC.strip_prefix("Basic ").unwrap_or(BASIC);
    [
        CANARY,
        USER,
        PASS,
        PASS_DECODED,
        PATH,
        QUERY,
        HOST,
        HEADER,
        PATH_SENT,
        QUERY_SENT,
        HOST_SENT,
        basic,
        &credential,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The forms a secret could take in a text: as is or lower-cased, then escaped for JSON, for
/// Rust (`escape_default`, `escape_debug`), or percent-encoded byte by byte.
pub fn forms(secret: &str) -> Vec<String> {
    [secret.to_owned(), secret.to_lowercase()]
        .into_iter()
        .flat_map(|base| {
            let json = serde_json::to_string(&base).expect("a string");
            let percent: String = base.bytes().map(|b| format!("%{b:02X}")).collect();
            [
                json[1..json.len() - 1].to_owned(),
                base.escape_default().to_string(),
                base.escape_debug().to_string(),
                percent,
                base.replace('-', "%2D"),
                base,
            ]
        })
        .collect()
}

/// Fails naming `what` if `text` holds a canary in any form.
pub fn assert_clean(what: &str, text: &str) {
    for secret in secrets() {
        for form in forms(&secret) {
            assert!(!text.contains(&form), "{what} leaks {form}: {text}");
        }
    }
}
