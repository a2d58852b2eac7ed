//! An MCP server behind an OAuth authorization server, both of the hostile test server's
//! making on one loopback port, each bendable by a test: its protected resource metadata, its
//! authorization server's metadata, registration, an authorization endpoint that approves at
//! once, and the token endpoint. The server answers like [`mcp`] to the token it issued and
//! with a `401` challenge to anything else. [`refreshing`] is that world with refreshes a
//! test holds and counts ([`redemptions`]); [`Approver`] (with feature `pack`) plays the
//! user's browser for a Pack.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::hostile::{Request, Script, Step, http, mcp};

/// The access token the authorization server issues: a canary that must never be shown.
pub const TOKEN: &str = "tok-canary-5f1e9a7c";
/// The code it hands the user's browser.
pub const CODE: &str = "code-canary-0b3d";

/// A change to a metadata document (`host` is `127.0.0.1:<port>`).
pub type Bend = fn(&str, &mut Value);
/// An answer to a request.
pub type Answer = fn(&Request) -> Script;

/// What the authorization server and the server say, each bendable by a test.
#[derive(Clone)]
pub struct World {
    /// Changes the authorization server's metadata.
    pub metadata: Bend,
    /// Changes the protected resource metadata.
    pub resource: Bend,
    /// Answers the token request, if not with the token.
    pub token: Option<Answer>,
}

impl Default for World {
    fn default() -> Self {
        Self {
            metadata: |_, _| {},
            resource: |_, _| {},
            token: None,
        }
    }
}

/// An answer on a connection kept open, as real servers keep them: a server that closes
/// each one races the client's reuse of it, which is not what these tests are about.
pub fn answer(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Script {
    Script {
        steps: vec![Step::Write(http(status, headers, body))],
        keep_alive: true,
    }
}

/// A JSON answer with `status`, on a connection kept open.
pub fn json_answer(status: &str, body: &Value) -> Script {
    answer(
        status,
        &[("content-type", "application/json")],
        body.to_string().as_bytes(),
    )
}

impl World {
    /// The handler of the server and its authorization server, as this world bends them.
    pub fn handler(self) -> impl Fn(&Request) -> Script + Send + Sync + 'static {
        move |r: &Request| {
            let host = r.header("host").unwrap_or_default().to_owned();
            let path = r.target.split('?').next().unwrap_or_default();
            match (r.method.as_str(), path) {
                ("POST", "/mcp") => {
                    if r.header("authorization") == Some(&format!("Bearer {TOKEN}")) {
                        return mcp(r);
                    }
                    let challenge = format!(
                        r#"Bearer resource_metadata="http://{host}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
                    );
                    answer("401 Unauthorized", &[("www-authenticate", &challenge)], b"")
                }
                ("GET", "/.well-known/oauth-protected-resource/mcp") => {
                    let mut body = json!({
                        "resource": format!("http://{host}/mcp"),
                        "authorization_servers": [format!("http://{host}/as")],
                    });
                    (self.resource)(&host, &mut body);
                    json_answer("200 OK", &body)
                }
                ("GET", "/.well-known/oauth-authorization-server/as") => {
                    let mut body = json!({
                        "issuer": format!("http://{host}/as"),
                        "authorization_endpoint": format!("http://{host}/as/authorize"),
                        "token_endpoint": format!("http://{host}/as/token"),
                        "registration_endpoint": format!("http://{host}/as/register"),
                        "code_challenge_methods_supported": ["S256"],
                        "authorization_response_iss_parameter_supported": true,
                    });
                    (self.metadata)(&host, &mut body);
                    json_answer("200 OK", &body)
                }
                ("GET", "/as/authorize") => {
                    // Approves at once, as the suite's authorization servers do: back to the
                    // redirect URI with the code, the state and the issuer.
                    let query: Vec<(String, String)> = url::form_urlencoded::parse(
                        r.target.split_once('?').map_or("", |q| q.1).as_bytes(),
                    )
                    .into_owned()
                    .collect();
                    let param = |name: &str| {
                        query
                            .iter()
                            .find(|(k, _)| k == name)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default()
                    };
                    let mut back = url::Url::parse(&param("redirect_uri")).expect("a redirect URI");
                    back.query_pairs_mut()
                        .append_pair("code", CODE)
                        .append_pair("state", &param("state"))
                        .append_pair("iss", &format!("http://{host}/as"));
                    answer("302 Found", &[("location", back.as_str())], b"")
                }
                ("POST", "/as/register") => {
                    json_answer("201 Created", &json!({"client_id": "client-1"}))
                }
                ("POST", "/as/token") => match self.token {
                    Some(answer) => answer(r),
                    None => json_answer(
                        "200 OK",
                        &json!({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600}),
                    ),
                },
                _ => answer("404 Not Found", &[], b""),
            }
        }
    }
}

/// The refresh token [`refreshing`]'s authorization server grants with [`TOKEN`].
pub const REFRESH: &str = "refresh-canary-7b2e";
/// The access token a refresh grants, which [`refreshing`]'s server takes.
pub const REFRESHED: &str = "tok-refreshed-canary-4c91";

/// The handler of an MCP server behind an authorization server whose refreshes a test holds
/// and counts: a login gets [`TOKEN`] (an hour) with [`REFRESH`]; once `revoked` is set, the
/// server refuses [`TOKEN`] with a `401`, so a client must refresh; each refresh waits on
/// `gate` (one `notify_one` lets one through) and answers [`REFRESHED`], which the server
/// takes.
pub fn refreshing(
    gate: Arc<Notify>,
    revoked: Arc<AtomicBool>,
) -> impl Fn(&Request) -> Script + Send + Sync + 'static {
    let world = World::default().handler();
    move |r: &Request| {
        let path = r.target.split('?').next().unwrap_or_default();
        match (r.method.as_str(), path) {
            ("POST", "/as/token") if is_refresh(r) => {
                let body = json!({"access_token": REFRESHED, "token_type": "Bearer",
                                  "expires_in": 3600, "refresh_token": "refresh-canary-8d03"});
                let mut script = json_answer("200 OK", &body);
                script.steps.insert(0, Step::Wait(Arc::clone(&gate)));
                script
            }
            ("POST", "/as/token") => json_answer(
                "200 OK",
                &json!({"access_token": TOKEN, "token_type": "Bearer",
                        "expires_in": 3600, "refresh_token": REFRESH}),
            ),
            ("POST", "/mcp")
                if r.header("authorization") == Some(&format!("Bearer {REFRESHED}")) =>
            {
                mcp(r)
            }
            ("POST", "/mcp") if revoked.load(Ordering::SeqCst) => {
                let mut refused = r.clone();
                refused
                    .headers
                    .retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
                world(&refused)
            }
            _ => world(r),
        }
    }
}

fn is_refresh(r: &Request) -> bool {
    r.text.contains("grant_type=refresh_token")
}

/// How many of `requests` redeemed a refresh token.
pub fn redemptions(requests: &[Request]) -> usize {
    requests
        .iter()
        .filter(|r| r.target.starts_with("/as/token") && is_refresh(r))
        .count()
}

/// The user's browser for a Pack: approves every authorization at once, answering with
/// [`CODE`], the request's `state` and the issuer it was sent to (the fixture's `/as`).
#[cfg(feature = "pack")]
#[derive(Debug, Default)]
pub struct Approver;

#[cfg(feature = "pack")]
impl runvil_plugin::Authorizer for Approver {
    fn redirect_uri(&self) -> String {
        "http://127.0.0.1:9/callback".to_owned()
    }

    fn authorize(
        &self,
        request: runvil_plugin::AuthorizationRequest,
    ) -> runvil_plugin::BoxFuture<'_, Result<Vec<(String, String)>, runvil_plugin::AuthorizeError>>
    {
        Box::pin(async move {
            let url = url::Url::parse(&request.url)
                .map_err(|e| runvil_plugin::AuthorizeError::new(e.to_string()))?;
            let state = url
                .query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            let host = url.host_str().unwrap_or_default();
            let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
            Ok(vec![
                ("code".to_owned(), CODE.to_owned()),
                ("state".to_owned(), state),
                ("iss".to_owned(), format!("http://{host}{port}/as")),
            ])
        })
    }
}
