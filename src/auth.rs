//! Authorization for servers behind OAuth 2.1, as the MCP specification's authorization
//! section defines it: one [`Authorization`] per server, which the transport asks for the
//! `Authorization` header of each request and tells of each `401` and `403` it meets.
//!
//! - `challenge`: what a `401` or `403` asks for (`WWW-Authenticate`).
//! - `discovery`: who authorizes the server (RFC 9728, RFC 8414, OpenID Connect Discovery).
//! - `registration`: who the Pack is to that authorization server.
//! - `flow`: the authorization code grant with PKCE, and the token requests.
//! - `assertion`: a machine client's proof of itself by its private key (`private_key_jwt`).
//! - `dpop`: tokens bound to a key of the Pack's, and the proofs that present them.
//! - `fetch`: requests to these untrusted parties, checked and bounded.
//! - `stored`: what an authorization leaves in the Host's credential store.
//!
//! The Pack runs the protocol and the Host the user's part: the authorization URL goes to the
//! Host's [`Authorizer`], which brings back the redirect's parameters. A Host without one
//! gets the server as `error` with its own hint of how to log in. Tokens, client secrets,
//! verifiers and codes are [`Secret`]s, taught to the scrubbers as soon as they exist, and
//! the access token goes only to the MCP server's own URL, through the transport.

mod assertion;
mod challenge;
mod discovery;
mod dpop;
mod fetch;
mod flow;
mod registration;
mod stored;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::{Client, Url};
use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, AuthorizationRequest, Authorizer, CLIENT_METADATA_URL,
    CREDENTIAL_STORE, CredentialStore, Services,
};
use tokio::time::Instant;
use zeroize::Zeroizing;

pub(crate) use self::challenge::Challenge;
use self::discovery::ServerMetadata;
use self::dpop::DpopKey;
pub(crate) use self::dpop::nonce as dpop_nonce;
use self::flow::{Grant, Tokens};
use self::registration::ClientIdentity;
use crate::config::Preregistered;
use crate::envelope::{clean_text, truncate};
use crate::policy::{AUTHORIZATION_DEADLINE, MAX_ERROR_CHARS};
use crate::secret::{Scrubber, Secret, SecretUrl};

/// A token this close to its expiry is refreshed before it is sent.
const REFRESH_AHEAD: Duration = Duration::from_secs(60);

/// The scope that asks for a refresh token (OpenID Connect), requested only from
/// authorization servers that list it.
const OFFLINE_ACCESS: &str = "offline_access";

/// Why a server could not be authorized. The texts hold no token, code or URL; a party's
/// error text in one was cleaned and cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthError {
    /// The server needs authorization and this Host cannot bring the user through it.
    Required(String),
    /// An authorization server or a metadata document could not be reached.
    Unreachable(String),
    /// An answer was refused, or the flow could not go on.
    Refused(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required(hint) => write!(f, "the server requires authorization: {hint}"),
            Self::Unreachable(e) => {
                write!(
                    f,
                    "authorization failed: could not reach the authorization server: {e}"
                )
            }
            Self::Refused(e) => write!(f, "authorization failed: {e}"),
        }
    }
}

/// Its texts are the whole error: a party's error is kept only as cleaned text.
impl std::error::Error for AuthError {}

/// What a Host lends for authorizations, read once from its services.
#[derive(Clone, Default)]
pub(crate) struct HostAuth {
    authorizer: Option<Arc<dyn Authorizer>>,
    metadata_url: Option<String>,
    hint: Option<String>,
    store: Option<Arc<dyn CredentialStore>>,
}

impl HostAuth {
    pub(crate) fn from_services(services: &Services) -> Self {
        Self {
            authorizer: services.get(AUTHORIZER).cloned(),
            metadata_url: services.get(CLIENT_METADATA_URL).cloned(),
            hint: services.get(AUTHORIZATION_HINT).cloned(),
            store: services.get(CREDENTIAL_STORE).cloned(),
        }
    }
}

/// One server's authorization state, shared by every request to it and kept across start
/// attempts, so a failed attempt does not send the user through again for nothing.
pub(crate) struct Authorization {
    namespace: String,
    server: SecretUrl,
    host: HostAuth,
    configured: Option<Preregistered>,
    /// The scrubbers that must learn each new secret: the server's and the Pack's.
    scrubbers: Vec<Arc<Scrubber>>,
    current: RwLock<Current>,
    flow: tokio::sync::Mutex<FlowState>,
    /// Whether the Host's store has been read for this server.
    loaded: AtomicBool,
    /// Time spent waiting for the user (in a browser): the start deadline does not count it.
    user: std::sync::Mutex<UserTime>,
}

/// The time the user took, over every authorization so far.
#[derive(Default)]
struct UserTime {
    spent: Duration,
    /// When the authorization under way started waiting for the user.
    since: Option<Instant>,
}

/// What requests carry now, and which tokens it came from.
#[derive(Default)]
struct Current {
    /// The access token.
    token: Option<Secret>,
    /// The key the token is bound to, when it is a DPoP token.
    dpop: Option<Arc<DpopKey>>,
    /// The DPoP nonce the server asked for last.
    nonce: Option<String>,
    expires_at: Option<Instant>,
    generation: u64,
}

/// The headers that authorize one request.
pub(crate) struct Presented {
    pub(crate) authorization: HeaderValue,
    /// `DPoP`: the proof for this request, when the token is bound to a key.
    pub(crate) proof: Option<HeaderValue>,
}

impl Current {
    /// The headers for `method` to `url`.
    fn present(&self, method: &str, url: &Url) -> Option<Presented> {
        let token = self.token.as_ref()?.expose();
        let (scheme, proof) = match &self.dpop {
            Some(key) => {
                let proof = key.proof(method, url, Some(token), self.nonce.as_deref());
                ("DPoP", proof.ok())
            }
            None => ("Bearer", None),
        };
        let mut authorization = HeaderValue::from_str(&format!("{scheme} {token}")).ok()?;
        authorization.set_sensitive(true);
        Some(Presented {
            authorization,
            proof,
        })
    }
}

#[derive(Default)]
struct FlowState {
    tokens: Option<Tokens>,
    /// The authorization server the tokens are from, and its metadata.
    metadata: Option<ServerMetadata>,
    resource: String,
    /// The scopes last asked for.
    scopes: Vec<String>,
    /// Identities by issuer: one authorization server never sees another's.
    clients: HashMap<String, ClientIdentity>,
    /// This server's DPoP key, made when an authorization server first offers DPoP.
    dpop: Option<Arc<DpopKey>>,
    /// The issuer of the authorization server the tokens are from.
    issuer: Option<String>,
}

/// The header and generation a request was sent with, to report its `401` against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent(u64);

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authorization([redacted])")
    }
}

impl Authorization {
    pub(crate) fn new(
        namespace: String,
        server: SecretUrl,
        host: HostAuth,
        configured: Option<Preregistered>,
        scrubbers: Vec<Arc<Scrubber>>,
    ) -> Self {
        Self {
            namespace,
            server,
            host,
            configured,
            scrubbers,
            current: RwLock::default(),
            flow: tokio::sync::Mutex::default(),
            loaded: AtomicBool::new(false),
            user: std::sync::Mutex::default(),
        }
    }

    /// How long the user has taken so far, the authorization under way included.
    pub(crate) fn user_time(&self) -> Duration {
        let user = self.user.lock().unwrap_or_else(PoisonError::into_inner);
        user.spent + user.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    fn waiting_for_user(&self, waiting: bool) {
        let mut user = self.user.lock().unwrap_or_else(PoisonError::into_inner);
        match (waiting, user.since.take()) {
            (true, _) => user.since = Some(Instant::now()),
            (false, Some(since)) => user.spent += since.elapsed(),
            (false, None) => {}
        }
    }

    /// The headers that authorize `method` to `url` next (the token refreshed first if it is
    /// about to expire and can be), and what to report a `401` against.
    pub(crate) async fn present(
        &self,
        http: &Client,
        method: &str,
        url: &Url,
    ) -> (Option<Presented>, Sent) {
        if !self.loaded.load(Ordering::Acquire) {
            self.load().await;
        }
        let (expires_at, generation) = {
            let current = self.current();
            (current.expires_at, current.generation)
        };
        if expires_at.is_some_and(|at| at <= Instant::now() + REFRESH_AHEAD) {
            let mut flow = self.flow.lock().await;
            if self.current().generation == generation {
                // A failed refresh leaves the token as it is: the server's 401 then starts
                // a new authorization.
                let _ = self.refresh(http, &mut flow).await;
            }
        }
        let current = self.current();
        (current.present(method, url), Sent(current.generation))
    }

    /// Takes up what the Host's store kept of this server's authorization, once.
    async fn load(&self) {
        let mut flow = self.flow.lock().await;
        if self.loaded.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(store) = self.host.store.clone() else {
            return;
        };
        let key = self.namespace.clone();
        let text = tokio::task::spawn_blocking(move || store.load(&key).map(Zeroizing::new))
            .await
            .ok()
            .flatten();
        let Some(restored) =
            text.and_then(|text| stored::restore(&canonical(self.server.expose()), &text))
        else {
            return;
        };
        let basic = flow::basic_credential(&restored.client);
        self.learn(restored.client.secret.iter().chain(&basic).cloned());
        flow.clients
            .insert(restored.issuer.clone(), restored.client);
        flow.issuer = Some(restored.issuer);
        flow.resource = restored.resource;
        flow.scopes = restored.scopes;
        self.install(&mut flow, restored.tokens);
    }

    /// Keeps the current authorization in the Host's store, if it lent one and the tokens
    /// can be kept. A failure to save costs the next run a login, so it is logged, not
    /// returned.
    async fn save(&self, flow: &FlowState) {
        let Some(store) = self.host.store.clone() else {
            return;
        };
        let (Some(issuer), Some(tokens)) = (&flow.issuer, &flow.tokens) else {
            return;
        };
        let Some(client) = flow.clients.get(issuer) else {
            return;
        };
        let server = canonical(self.server.expose());
        let record = stored::record(
            &server,
            issuer,
            &flow.resource,
            &flow.scopes,
            client,
            tokens,
        );
        let Some(record) = record else {
            return;
        };
        let key = self.namespace.clone();
        let saved = tokio::task::spawn_blocking(move || store.save(&key, &record)).await;
        if let Ok(Err(error)) = saved {
            let error = truncate(clean_text(&error), MAX_ERROR_CHARS);
            tracing::warn!(server = %self.namespace, %error, "the credentials could not be saved");
        }
    }

    /// The headers for `method` to `url` as they are, for requests that cannot wait for a
    /// refresh.
    pub(crate) fn present_now(&self, method: &str, url: &Url) -> Option<Presented> {
        self.current().present(method, url)
    }

    fn current(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers a `401` or a `403 insufficient_scope` to a request sent as `sent`: new tokens
    /// (refreshed, or from a new authorization with the scopes the challenge asks for), after
    /// which the request may be sent again; or why not.
    pub(crate) async fn respond(
        &self,
        http: &Client,
        status: u16,
        challenge: &Challenge,
        sent: Sent,
    ) -> Result<(), AuthError> {
        let mut flow = self.flow.lock().await;
        if self.current().generation != sent.0 {
            // Another request renewed the tokens since this one was sent.
            return Ok(());
        }
        if challenge.error.as_deref() == Some("use_dpop_nonce") {
            // RFC 9449 §9: not a new authorization, only a nonce for the next proofs.
            let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
            if current.dpop.is_some() && challenge.dpop_nonce.is_some() {
                current.nonce.clone_from(&challenge.dpop_nonce);
                current.generation += 1;
                return Ok(());
            }
        }
        let step_up = status == 403;
        if !step_up && flow.tokens.is_some() && self.refresh(http, &mut flow).await.is_ok() {
            return Ok(());
        }
        self.authorize(http, &mut flow, challenge, step_up).await
    }

    async fn refresh(&self, http: &Client, flow: &mut FlowState) -> Result<(), AuthError> {
        let no_refresh = || AuthError::Refused("no refresh token".to_owned());
        let refresh = flow
            .tokens
            .as_ref()
            .and_then(|tokens| tokens.refresh.clone())
            .ok_or_else(no_refresh)?;
        if flow.metadata.is_none() {
            // Tokens from the Host's store: the token endpoint is looked up again, and must
            // be the same authorization server's.
            let (metadata, _, _) = self.discover(http, None).await?;
            if flow.issuer.as_ref() != Some(&metadata.issuer) {
                flow.tokens = None;
                return Err(no_refresh());
            }
            flow.metadata = Some(metadata);
        }
        let (Some(tokens), Some(metadata)) = (&flow.tokens, &flow.metadata) else {
            return Err(no_refresh());
        };
        let client = flow
            .clients
            .get(&metadata.issuer)
            .cloned()
            .ok_or_else(|| AuthError::Refused("no client".to_owned()))?;
        let dpop = flow.dpop.clone().filter(|_| tokens.bound);
        let result = flow::tokens(
            http,
            metadata,
            &client,
            Grant::Refresh(&refresh),
            &flow.resource,
            dpop.as_deref(),
        )
        .await;
        match result {
            Ok(tokens) => {
                self.install(flow, tokens);
                self.save(flow).await;
                Ok(())
            }
            Err(error) => {
                tracing::debug!(server = %self.namespace, %error, "the refresh failed");
                flow.tokens = None;
                Err(error)
            }
        }
    }

    async fn authorize(
        &self,
        http: &Client,
        flow: &mut FlowState,
        challenge: &Challenge,
        step_up: bool,
    ) -> Result<(), AuthError> {
        let machine = self.configured.as_ref().is_some_and(|c| c.machine);
        let authorizer = match &self.host.authorizer {
            Some(authorizer) => Some(Arc::clone(authorizer)),
            None if machine => None,
            None => return Err(AuthError::Required(self.hint())),
        };
        // Looked up each time: the server may have moved to another authorization server.
        let (metadata, resource_id, resource_scopes) = self
            .discover(http, challenge.resource_metadata.as_deref())
            .await?;
        let same_server = flow.issuer.as_ref() == Some(&metadata.issuer);
        if !same_server {
            // Tokens of one authorization server are never offered to another.
            flow.tokens = None;
            flow.scopes.clear();
        }
        let scopes = self.scopes(flow, challenge, step_up, &resource_scopes, &metadata)?;
        let redirect_uri = authorizer
            .as_ref()
            .map(|authorizer| authorizer.redirect_uri())
            .unwrap_or_default();
        let client = match flow.clients.get(&metadata.issuer) {
            Some(client) => client.clone(),
            None => {
                let client = registration::identify(
                    http,
                    &metadata,
                    self.configured.as_ref(),
                    self.host.metadata_url.as_deref(),
                    &redirect_uri,
                )
                .await?;
                let basic = flow::basic_credential(&client);
                self.learn(client.secret.iter().chain(&basic).cloned());
                flow.clients.insert(metadata.issuer.clone(), client.clone());
                client
            }
        };
        let dpop = match (&flow.dpop, metadata.dpop) {
            (_, false) => None,
            (Some(key), true) => Some(Arc::clone(key)),
            (None, true) => {
                let key = Arc::new(DpopKey::generate()?);
                flow.dpop = Some(Arc::clone(&key));
                Some(key)
            }
        };
        let (pending, code);
        let grant = match authorizer.filter(|_| !machine) {
            // A machine client asks for its own tokens; no user takes part.
            None => Grant::ClientCredentials(&scopes),
            Some(authorizer) => {
                pending = flow::request(&metadata, &client, &redirect_uri, &resource_id, &scopes)?;
                // The URL is the Pack's own, built on a checked endpoint; checked again as a
                // whole before a Host sees it.
                let url = fetch::checked_url(pending.url.as_str(), "the authorization URL")?;
                tracing::debug!(server = %self.namespace, "asking the Host to authorize");
                let request = AuthorizationRequest::new(self.namespace.clone(), url.as_str());
                self.waiting_for_user(true);
                let answer =
                    tokio::time::timeout(AUTHORIZATION_DEADLINE, authorizer.authorize(request))
                        .await;
                self.waiting_for_user(false);
                let params = answer
                    .map_err(|_| {
                        AuthError::Refused(format!(
                            "the authorization was not completed within {} s",
                            AUTHORIZATION_DEADLINE.as_secs()
                        ))
                    })?
                    .map_err(|e| {
                        AuthError::Refused(format!(
                            "the authorization did not complete: {}",
                            truncate(clean_text(&e), MAX_ERROR_CHARS)
                        ))
                    })?;
                code = flow::code(&pending, &metadata, &params)?;
                Grant::Code {
                    code: &code,
                    pending: &pending,
                    redirect_uri: &redirect_uri,
                }
            }
        };
        let tokens = flow::tokens(
            http,
            &metadata,
            &client,
            grant,
            &resource_id,
            dpop.as_deref(),
        )
        .await?;
        flow.scopes = scopes;
        flow.resource = resource_id;
        flow.issuer = Some(metadata.issuer.clone());
        flow.metadata = Some(metadata);
        self.install(flow, tokens);
        self.save(flow).await;
        Ok(())
    }

    /// Who authorizes the server: its authorization server's metadata, the resource to ask
    /// tokens for, and the scopes the resource lists.
    async fn discover(
        &self,
        http: &Client,
        announced: Option<&str>,
    ) -> Result<(ServerMetadata, String, Vec<String>), AuthError> {
        match discovery::protected_resource(http, self.server.expose(), announced).await? {
            Some(resource) => {
                let metadata = discovery::authorization_server(http, &resource.issuer)
                    .await?
                    .ok_or_else(|| {
                        AuthError::Refused(
                            "the authorization server publishes no metadata".to_owned(),
                        )
                    })?;
                Ok((metadata, resource.resource, resource.scopes_supported))
            }
            None => Ok((
                discovery::legacy_authorization_server(http, self.server.expose()).await?,
                canonical(self.server.expose()),
                Vec::new(),
            )),
        }
    }

    /// The scopes to ask for: the challenge's, else the resource's, together with those asked
    /// for before from the same authorization server (so re-authorizing never loses a scope).
    /// A step-up that would ask for nothing new is refused: authorizing again cannot help.
    fn scopes(
        &self,
        flow: &FlowState,
        challenge: &Challenge,
        step_up: bool,
        resource_scopes: &[String],
        metadata: &ServerMetadata,
    ) -> Result<Vec<String>, AuthError> {
        let challenged = challenge.scopes();
        if step_up && challenged.iter().all(|s| flow.scopes.contains(s)) {
            return Err(AuthError::Refused(format!(
                "the server refuses the token for lack of scopes it was asked with ({}); \
                 authorizing again would not help",
                truncate(clean_text(&challenged.join(" ")), MAX_ERROR_CHARS)
            )));
        }
        let wanted = if challenged.is_empty() {
            resource_scopes.to_vec()
        } else {
            challenged
        };
        let mut scopes = flow.scopes.clone();
        for scope in wanted {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let offline = metadata
            .scopes_supported
            .iter()
            .any(|s| s == OFFLINE_ACCESS);
        if offline && !scopes.is_empty() && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        Ok(scopes)
    }

    /// Makes `tokens` the current ones: learnt by the scrubbers first, then sent.
    fn install(&self, flow: &mut FlowState, tokens: Tokens) {
        self.learn(std::iter::once(tokens.access.clone()).chain(tokens.refresh.iter().cloned()));
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        current.token = Some(tokens.access.clone());
        current.dpop = flow.dpop.clone().filter(|_| tokens.bound);
        current.expires_at = tokens.expires_at;
        current.generation += 1;
        flow.tokens = Some(tokens);
    }

    fn learn(&self, secrets: impl Iterator<Item = Secret> + Clone) {
        for scrubber in &self.scrubbers {
            scrubber.learn(secrets.clone());
        }
    }

    fn hint(&self) -> String {
        match &self.host.hint {
            Some(hint) => hint.replace("{namespace}", &self.namespace),
            None => "this Host cannot log in to servers".to_owned(),
        }
    }
}

/// The server's URL as a resource identifier (RFC 8707) when it publishes no metadata: no
/// query (it may hold a credential, and the authorization server has no need of it), no
/// fragment.
fn canonical(server: &Url) -> String {
    let mut url = server.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}
