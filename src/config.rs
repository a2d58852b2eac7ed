//! The Pack's configuration: an `mcp.json` `mcpServers` object, each entry parsed on its own.
//!
//! An entry becomes a [`ServerSpec`] or a [`Refusal`]; a refusal never affects the other
//! entries. String values the client uses (`url` and header values) may hold `${env:NAME}`
//! and `${userHome}`; everything expanded is a [`Secret`] from here on. Parsing does no I/O:
//! the environment is read, but no file, socket or process is touched.

use std::fmt;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use percent_encoding::percent_decode_str;
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use crate::policy::{
    ALLOWED_SCHEMES, MIN_KEY_SHAPED_CHARS, MIN_SCRUBBED_SECRET_CHARS, RESERVED_HEADER_PREFIXES,
    RESERVED_HEADERS, Refusal, UNAVAILABLE_CONFIG,
};
use crate::secret::{Secret, SecretUrl};

/// Where `${env:NAME}` and `${userHome}` get their values; tests lend their own.
pub(crate) trait Environment {
    fn var(&self, name: &str) -> Option<String>;
    fn home(&self) -> Option<String>;
}

/// The process environment.
pub(crate) struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var_os(name)?.into_string().ok()
    }

    // HOME only: the password database would be a file read, and construct reads no file.
    fn home(&self) -> Option<String> {
        self.var("HOME").filter(|home| !home.is_empty())
    }
}

/// A remote server the client will connect to. What it holds stays for the Pack's life, so
/// every value in it is a secret, wiped when dropped; its `Debug` names keys only.
pub(crate) struct ServerSpec {
    /// The endpoint, expanded, parsed (here, once) and checked to be an http or https URL.
    pub(crate) url: SecretUrl,
    /// Configured headers, checked to be sendable and not reserved.
    pub(crate) headers: Vec<Header>,
    /// Every value to scrub from output: the URL and the forms it takes on the wire, header
    /// values, expanded variables.
    pub(crate) secrets: Vec<Secret>,
    /// The values `${env:...}` and `${userHome}` put into the URL: nothing derived from the URL
    /// that holds one may be shown or sent to anyone but the server.
    pub(crate) url_values: Vec<Secret>,
    /// The OAuth client the user registered for this server (`oauth.clientId` and
    /// `oauth.clientSecret`, as VS Code names them), if any.
    pub(crate) oauth: Option<Preregistered>,
}

impl fmt::Debug for ServerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|h| h.name.as_str()).collect();
        f.debug_struct("ServerSpec")
            .field("headers", &headers)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

/// A configured header: its name, and its value, a secret checked to be one HTTP can carry.
#[derive(Clone)]
pub(crate) struct Header {
    pub(crate) name: HeaderName,
    value: Secret,
}

impl Header {
    /// `value` under `name`, if HTTP can carry it.
    fn new(name: HeaderName, value: Secret) -> Option<Self> {
        HeaderValue::from_str(value.expose()).ok()?;
        Some(Self { name, value })
    }

    /// The value to send, marked sensitive (out of the `Debug` of reqwest's requests): a copy
    /// made for one request, which the HTTP stack keeps as it keeps its own and nobody wipes.
    pub(crate) fn value(&self) -> HeaderValue {
        let mut value = HeaderValue::from_str(self.value.expose())
            .expect("checked to be a header value when it was made");
        value.set_sensitive(true);
        value
    }
}

/// An OAuth client the user registered with the server's authorization server and
/// configured in the entry. Its `Debug` shows its grant only.
#[derive(Clone)]
pub(crate) struct Preregistered {
    /// `clientId`: no credential by itself, but the user's, and scrubbed as a secret.
    pub(crate) id: Secret,
    pub(crate) secret: Option<Secret>,
    /// A PKCS#8 PEM P-256 key, for `private_key_jwt` (RFC 7523).
    pub(crate) private_key: Option<Secret>,
    /// `grantType: "client_credentials"`: a machine client, which gets its tokens without a
    /// user (the client credentials grant).
    pub(crate) machine: bool,
    /// `issuer`: the authorization server this client belongs to, the only one it is ever
    /// presented to. Without it, the first one it is used with (kept with the login).
    pub(crate) issuer: Option<String>,
}

impl fmt::Debug for Preregistered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Preregistered")
            .field("machine", &self.machine)
            .finish_non_exhaustive()
    }
}

/// One entry of the configuration, parsed.
pub(crate) enum Entry {
    Remote(ServerSpec),
    Refused(Refusal),
}

impl fmt::Debug for Entry {
    // By hand, as the types it holds: a refusal names keys only, a spec shows keys only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Remote(spec) => f.debug_tuple("Remote").field(spec).finish(),
            Self::Refused(refusal) => f.debug_tuple("Refused").field(refusal).finish(),
        }
    }
}

/// The configuration is neither an object nor null.
#[derive(Debug)]
pub(crate) struct NotAnObject;

impl fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(UNAVAILABLE_CONFIG)
    }
}

impl std::error::Error for NotAnObject {}

/// Parses every entry of `config`, in name order. Null means no servers.
pub(crate) fn parse(
    config: &Value,
    env: &dyn Environment,
) -> Result<Vec<(String, Entry)>, NotAnObject> {
    let servers = match config {
        Value::Null => return Ok(Vec::new()),
        Value::Object(servers) => servers,
        _ => return Err(NotAnObject),
    };
    let mut entries: Vec<(String, Entry)> = servers
        .iter()
        .map(|(name, entry)| {
            let parsed = match parse_entry(entry, env) {
                Ok(spec) => Entry::Remote(spec),
                Err(refusal) => Entry::Refused(refusal),
            };
            (name.clone(), parsed)
        })
        .collect();
    // serde_json may be built with preserve_order by another crate in the tree.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

fn parse_entry(entry: &Value, env: &dyn Environment) -> Result<ServerSpec, Refusal> {
    let entry = entry.as_object().ok_or(Refusal::NotAnObject)?;
    if entry.contains_key("command") {
        return Err(Refusal::Local);
    }
    if entry.get("type").and_then(Value::as_str) == Some("sse") {
        return Err(Refusal::LegacySse);
    }
    let mut secrets = Vec::new();

    let url = match entry.get("url") {
        None => return Err(Refusal::MissingUrl),
        Some(url) => expand_string(url, "url", env, &mut secrets)?,
    };
    let parsed = Url::parse(url.expose()).map_err(|_| Refusal::InvalidUrl)?;
    if !ALLOWED_SCHEMES.contains(&parsed.scheme()) {
        return Err(Refusal::Scheme);
    }
    // So far `secrets` holds the values expanded in the URL.
    let url_values = secrets.clone();
    let sent = sent_forms(&parsed, url.expose(), &secrets);
    secrets.extend(sent);
    secrets.extend(written_credentials(&parsed).into_iter().map(Secret::new));
    secrets.push(url);

    let headers = match entry.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(headers)) => parse_headers(headers, env, &mut secrets)?,
        Some(_) => return Err(Refusal::HeadersNotAnObject),
    };
    let oauth = match entry.get("oauth") {
        None | Some(Value::Null) => None,
        Some(Value::Object(oauth)) => parse_oauth(oauth, env, &mut secrets)?,
        Some(_) => return Err(Refusal::OAuthNotAnObject),
    };
    Ok(ServerSpec {
        url: SecretUrl::new(parsed),
        headers,
        secrets,
        url_values,
        oauth,
    })
}

/// `oauth`: a client id, its secret or private key for a confidential client, and its grant
/// type. Each may use variables; the secret, the key and any expanded value are scrubbed like
/// header values.
fn parse_oauth(
    oauth: &Map<String, Value>,
    env: &dyn Environment,
    secrets: &mut Vec<Secret>,
) -> Result<Option<Preregistered>, Refusal> {
    let mut field = |key: &str| {
        oauth
            .get(key)
            .filter(|value| !value.is_null())
            .map(|value| expand_string(value, &format!("oauth.{key}"), env, secrets))
            .transpose()
    };
    let secret = field("clientSecret")?;
    let private_key = field("privateKey")?;
    let issuer = match field("issuer")? {
        None => None,
        Some(issuer) => {
            let url = Url::parse(issuer.expose()).map_err(|_| Refusal::OAuthIssuer)?;
            if !ALLOWED_SCHEMES.contains(&url.scheme()) {
                return Err(Refusal::OAuthIssuer);
            }
            Some(issuer.expose().to_owned())
        }
    };
    let machine = match field("grantType")? {
        None => false,
        Some(grant) => match grant.expose() {
            "authorization_code" => false,
            "client_credentials" => true,
            _ => return Err(Refusal::OAuthGrantType),
        },
    };
    let id = match field("clientId")? {
        Some(id) => id,
        None if secret.is_some() || private_key.is_some() || machine || issuer.is_some() => {
            return Err(Refusal::OAuthWithoutClientId);
        }
        None => return Ok(None),
    };
    // The client id is no credential by itself, but it is the user's, and an authorization
    // server quoting it beside the secret must not show which client it is.
    secrets.extend(secret.iter().chain(&private_key).chain([&id]).cloned());
    Ok(Some(Preregistered {
        id,
        secret,
        private_key,
        machine,
        issuer,
    }))
}

/// The forms of the URL the client sends, which are not the text configured: its
/// serialization (percent-encoded, the host lowercased and in punycode), without its userinfo
/// too, since reqwest moves that into an `Authorization: Basic` header; the userinfo decoded
/// as reqwest decodes it and the credential it encodes; and every part of the URL (host,
/// path, query) that carries one of the `expanded` values.
fn sent_forms(url: &Url, configured: &str, expanded: &[Secret]) -> Vec<Secret> {
    let mut forms = vec![url.as_str().to_owned()];
    let mut bare = url.clone();
    // Both succeed for an http(s) URL, which always has a host.
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    forms.push(bare.as_str().to_owned());
    if let Some((user, password)) = userinfo(url) {
        forms.push(url.username().to_owned());
        forms.extend(url.password().map(str::to_owned));
        // As reqwest writes it: `user:` and the password, if there is one.
        let credential = format!("{user}:{}", password.as_deref().unwrap_or_default());
        forms.push(BASE64_STANDARD.encode(&credential));
        forms.extend([credential, user]);
        forms.extend(password);
    }
    let long_enough = |value: &&str| value.chars().count() >= MIN_SCRUBBED_SECRET_CHARS;
    for value in expanded.iter().map(Secret::expose).filter(long_enough) {
        forms.extend(parts_carrying(url, configured, value));
    }
    forms.into_iter().map(Secret::new).collect()
}

/// The parts of `url` that may hold a credential written into it, through `${env:...}` or
/// not: each query value (a bare item, `?<key>`, when it is shaped like a key), and each path
/// segment and host label shaped like a key ([`is_key_shaped`]), each as sent and decoded.
/// The user name and password are [`sent_forms`]'.
fn written_credentials(url: &Url) -> Vec<String> {
    // Decoded as a form is: `+` is a space.
    let decode = |sent: &str| {
        let spaced = Zeroizing::new(sent.replace('+', " "));
        percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
    };
    let mut found = Vec::new();
    for item in url.query().unwrap_or_default().split('&') {
        let value = match item.split_once('=') {
            Some((_, value)) => value,
            None if is_key_shaped(&decode(item)) => item,
            None => continue,
        };
        found.extend([value.to_owned(), decode(value)]);
    }
    let segments = url.path_segments().into_iter().flatten();
    for part in segments.chain(url.host_str().unwrap_or_default().split('.')) {
        let decoded = percent_decode_str(part).decode_utf8_lossy();
        if is_key_shaped(&decoded) {
            found.extend([part.to_owned(), decoded.into_owned()]);
        }
    }
    found
}

/// Whether `part` of a URL looks like a key: [`MIN_KEY_SHAPED_CHARS`] characters or more,
/// letters and digits among them.
fn is_key_shaped(part: &str) -> bool {
    part.chars().count() >= MIN_KEY_SHAPED_CHARS
        && part.contains(|c: char| c.is_ascii_alphabetic())
        && part.contains(|c: char| c.is_ascii_digit())
}

/// The user name and password reqwest sends as `Basic` credentials: percent-decoded, `None`
/// when there is neither or one is not UTF-8 (then reqwest sends none).
fn userinfo(url: &Url) -> Option<(String, Option<String>)> {
    let decode = |text: &str| {
        percent_decode_str(text)
            .decode_utf8()
            .ok()
            .map(String::from)
    };
    let user = decode(url.username())?;
    let password = match url.password() {
        Some(password) => Some(decode(password)?),
        None => None,
    };
    (!user.is_empty() || password.is_some()).then_some((user, password))
}

/// The parts of `url` as sent (host, path, query) that `value` went into: those that change
/// when `value` is replaced in the configured text. The url crate may have transformed it
/// there in ways no encoding of `value` alone shows (a host label in punycode, a resolved
/// `..`). A URL that no longer parses without it is all `value`'s.
fn parts_carrying(url: &Url, configured: &str, value: &str) -> Vec<String> {
    let without = Url::parse(&configured.replace(value, "x")).ok();
    let parts: [fn(&Url) -> Option<&str>; 3] = [Url::host_str, |u| Some(u.path()), Url::query];
    parts
        .into_iter()
        .filter_map(|part| {
            let sent = part(url)?;
            (without.as_ref().and_then(part) != Some(sent)).then(|| sent.to_owned())
        })
        .collect()
}

fn parse_headers(
    headers: &Map<String, Value>,
    env: &dyn Environment,
    secrets: &mut Vec<Secret>,
) -> Result<Vec<Header>, Refusal> {
    let mut parsed = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let shown = name.escape_default().to_string();
        let lower = name.to_ascii_lowercase();
        let prefixed = RESERVED_HEADER_PREFIXES
            .iter()
            .any(|p| lower.starts_with(p));
        if prefixed || RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(Refusal::ReservedHeader { name: shown });
        }
        let header =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| Refusal::InvalidHeaderName {
                name: shown.clone(),
            })?;
        let expanded = expand_string(value, &format!("headers.{shown}"), env, secrets)?;
        secrets.push(expanded.clone());
        let header =
            Header::new(header, expanded).ok_or(Refusal::InvalidHeaderValue { name: shown })?;
        parsed.push(header);
    }
    Ok(parsed)
}

/// Expands a string value of the entry at `key`, keeping each expanded variable's value as a
/// secret of its own (a token inside a URL is scrubbed even where the whole URL is not).
fn expand_string(
    value: &Value,
    key: &str,
    env: &dyn Environment,
    secrets: &mut Vec<Secret>,
) -> Result<Secret, Refusal> {
    let raw = value.as_str().ok_or_else(|| Refusal::NotAString {
        key: key.to_owned(),
    })?;
    expand(raw, key, env, secrets).map(Secret::new)
}

/// Replaces `${env:NAME}` and `${userHome}` in `raw`; any other `${...}`, `${env:}` and an
/// unterminated `${` are left as they are.
fn expand(
    raw: &str,
    key: &str,
    env: &dyn Environment,
    secrets: &mut Vec<Secret>,
) -> Result<String, Refusal> {
    // It holds expanded values: wiped when it is dropped, a refusal included.
    let mut out = Zeroizing::new(String::with_capacity(raw.len()));
    let mut rest = raw;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        push_wiped(&mut out, &rest[..start]);
        let inner = &after[..end];
        match inner.strip_prefix("env:") {
            Some(name) if !name.is_empty() => {
                let value = env.var(name).ok_or_else(|| Refusal::UnsetVariable {
                    name: name.escape_default().to_string(),
                    key: key.to_owned(),
                })?;
                push_wiped(&mut out, &value);
                secrets.push(Secret::new(value));
            }
            _ if inner == "userHome" => {
                let home = env.home().ok_or_else(|| Refusal::NoHome {
                    key: key.to_owned(),
                })?;
                push_wiped(&mut out, &home);
            }
            _ => push_wiped(&mut out, &rest[start..start + 2 + end + 1]),
        }
        rest = &after[end + 1..];
    }
    // Whatever is left has no complete `${...}`: an unterminated `${` passes through.
    push_wiped(&mut out, rest);
    // The text itself moves out; the empty string left behind has nothing to wipe.
    Ok(std::mem::take(&mut *out))
}

/// Appends to a buffer that holds secrets. A `String` that grows by itself frees its old
/// buffer unwiped, so a full one is copied here into a larger one and wiped instead.
fn push_wiped(out: &mut Zeroizing<String>, text: &str) {
    if out.capacity() - out.len() < text.len() {
        let needed = out.len() + text.len();
        let mut larger = Zeroizing::new(String::with_capacity(needed.max(2 * out.capacity())));
        larger.push_str(out);
        *out = larger;
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
