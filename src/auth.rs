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
//! - `error`: why an authorization failed, what a party said kept untrusted until shown.
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
mod error;
mod fetch;
mod flow;
mod registration;
mod stored;

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use reqwest::header::HeaderValue;
use reqwest::{Client, Url};
use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, AuthorizationRequest, Authorizer, CLIENT_METADATA_URL,
    CREDENTIAL_STORE, CredentialHold, CredentialStore, Services,
};
use tokio::time::Instant;
use zeroize::Zeroizing;

pub(crate) use self::challenge::Challenge;
use self::discovery::ServerMetadata;
use self::dpop::DpopKey;
pub(crate) use self::dpop::nonce as dpop_nonce;
pub(crate) use self::error::AuthError;
use self::flow::{Grant, Tokens};
use self::registration::ClientIdentity;
use crate::config::Preregistered;
use crate::policy::{AUTHORIZATION_DEADLINE, MAX_ERROR_CHARS, REDACTION_MARKER};
use crate::secret::{Secret, SecretUrl};
use crate::text::{Scrubber, log_safe, show};

/// The scope that asks for a refresh token (OpenID Connect), requested only from
/// authorization servers that list it.
const OFFLINE_ACCESS: &str = "offline_access";

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
    /// The Pack's scrubber, which learns each new secret the moment it exists, and shows what
    /// a party said.
    scrubber: Arc<Scrubber>,
    /// Finds the values `${env:...}` put into the server's URL, which nothing sent to an
    /// authorization server or shown to the user may hold.
    url_values: Scrubber,
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
    refresh_at: Option<Instant>,
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
    /// The one issuer the configured client is presented to: the entry's `oauth.issuer`, else
    /// the first it was used with (kept with the login).
    configured_issuer: Option<String>,
    /// This server's DPoP key, made when an authorization server first offers DPoP.
    dpop: Option<Arc<DpopKey>>,
    /// The issuer of the authorization server the tokens are from.
    issuer: Option<String>,
    /// The last tokens were refused or ran out with no refresh token to renew them.
    ran_out: bool,
}

/// Which tokens a request was sent with, to report its `401` against: a `401` to older ones
/// is answered by the renewal that already happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Generation(u64);

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Authorization({REDACTION_MARKER})")
    }
}

/// Why the Pack asks for a login again when tokens ran out without a way to renew them.
const RAN_OUT: &str = "its access token expired or was refused, and its authorization server \
                       granted no refresh token to renew it";

impl Authorization {
    /// `url_values` are the values expanded into `server`'s URL (see [`Authorization`]).
    pub(crate) fn new(
        namespace: String,
        server: SecretUrl,
        url_values: &[Secret],
        host: HostAuth,
        configured: Option<Preregistered>,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        let flow = FlowState {
            configured_issuer: configured.as_ref().and_then(|c| c.issuer.clone()),
            ..FlowState::default()
        };
        Self {
            namespace,
            server,
            host,
            configured,
            scrubber,
            url_values: Scrubber::new(url_values.iter().cloned()),
            current: RwLock::default(),
            flow: tokio::sync::Mutex::new(flow),
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
    ) -> (Option<Presented>, Generation) {
        // Loading and refreshing are boxed: rare, and large futures, which every request's
        // future would otherwise carry inline.
        if !self.loaded.load(Ordering::Acquire) {
            Box::pin(self.load()).await;
        }
        let (refresh_at, generation) = {
            let current = self.current();
            (current.refresh_at, current.generation)
        };
        if refresh_at.is_some_and(|at| at <= Instant::now()) {
            let mut flow = self.flow.lock().await;
            if self.current().generation == generation {
                // A failed refresh leaves the token as it is: the server's 401 then starts
                // a new authorization.
                let _ = Box::pin(self.refresh(http, &mut flow)).await;
            }
        }
        let current = self.current();
        (current.present(method, url), Generation(current.generation))
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
        if let Some(restored) = text.and_then(|text| self.restore(&text)) {
            self.take_up(&mut flow, restored);
        }
    }

    /// The record in `text` if it is one of this server's.
    fn restore(&self, text: &str) -> Option<stored::Restored> {
        stored::restore(&canonical(self.server.expose()), text)
    }

    /// Makes what a record kept the current authorization, unless it is of a client or an
    /// issuer the configuration no longer names.
    fn take_up(&self, flow: &mut FlowState, mut restored: stored::Restored) -> bool {
        if restored.configured {
            // The configuration's client, with the secret or key it has now; a record of
            // another client, or of an issuer the entry no longer names, serves no more.
            let Some(configured) = &self.configured else {
                return false;
            };
            let bound = flow.configured_issuer.as_ref();
            let same = configured.id.expose() == restored.client.id.expose();
            if !same || bound.is_some_and(|b| *b != restored.issuer) {
                return false;
            }
            restored.client.secret.clone_from(&configured.secret);
            restored
                .client
                .private_key
                .clone_from(&configured.private_key);
            flow.configured_issuer = Some(restored.issuer.clone());
        }
        let dpop = match &restored.dpop {
            Some(stored) => match DpopKey::restore(stored) {
                Some(key) => Some(Arc::new(key)),
                None => return false,
            },
            None => None,
        };
        let basic = flow::basic_credential(&restored.client);
        let dpop_secret = dpop.as_ref().map(|key| key.stored().clone());
        self.learn(
            restored
                .client
                .secret
                .iter()
                .chain(&basic)
                .chain(&dpop_secret)
                .cloned(),
        );
        flow.clients
            .insert(restored.issuer.clone(), restored.client);
        if flow.issuer.as_ref() != Some(&restored.issuer) {
            // Another authorization server's endpoints are looked up at the next refresh.
            flow.metadata = None;
        }
        flow.issuer = Some(restored.issuer);
        flow.resource = restored.resource;
        flow.scopes = restored.scopes;
        if dpop.is_some() {
            flow.dpop = dpop;
        }
        self.install(flow, restored.tokens);
        true
    }

    /// Keeps the current authorization in the Host's store, if it lent one, through `held`
    /// when the store holds the key (a refresh). A failure to save costs the next run a
    /// login, so it is logged, not returned (the Host's store knows it too, and a login
    /// command says so).
    async fn save(&self, flow: &FlowState, held: Option<Box<dyn CredentialHold>>) {
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
        let dpop = flow.dpop.as_ref().map(|key| key.stored());
        let configured = (self.configured.as_ref())
            .is_some_and(|c| c.id.expose() == client.id.expose())
            && flow.configured_issuer.as_ref() == Some(issuer);
        let record = stored::record(&stored::Kept {
            server: &server,
            issuer,
            resource: &flow.resource,
            scopes: &flow.scopes,
            client,
            configured,
            tokens,
            dpop,
        });
        let Some(record) = record else {
            return;
        };
        let key = self.namespace.clone();
        let saved = tokio::task::spawn_blocking(move || match held {
            Some(held) => held.save(&record),
            None => store.save(&key, &record),
        })
        .await;
        if let Ok(Err(error)) = saved {
            let error = show(&self.scrubber, &error.reason, MAX_ERROR_CHARS);
            tracing::warn!(server = %log_safe(&self.namespace), error = %error.line(), "the credentials could not be saved");
        }
    }

    /// The Host store's hold of this server's key, when it offers one; a store that cannot
    /// hold it now is logged, and the refresh goes on without.
    async fn hold(&self) -> Option<Box<dyn CredentialHold>> {
        let store = self.host.store.clone()?;
        let key = self.namespace.clone();
        match tokio::task::spawn_blocking(move || store.hold(&key)).await {
            Ok(Ok(hold)) => hold,
            Ok(Err(error)) => {
                let error = show(&self.scrubber, &error.reason, MAX_ERROR_CHARS);
                tracing::warn!(server = %log_safe(&self.namespace), error = %error.line(), "the credentials could not be held for a refresh; refreshing without");
                None
            }
            Err(_) => None,
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
        sent: Generation,
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
        if !step_up {
            match flow.tokens.as_ref().map(|tokens| tokens.refresh.is_some()) {
                Some(true) if self.refresh(http, &mut flow).await.is_ok() => return Ok(()),
                Some(false) => flow.ran_out = true,
                _ => {}
            }
        }
        self.authorize(http, &mut flow, challenge, step_up).await
    }

    /// Holds the key in the Host's store (if it can), so that a refresh token shared with
    /// other processes is redeemed once: the record is read again inside the hold, and tokens
    /// another process got since ours were read are taken up instead of redeeming ours.
    async fn refresh(&self, http: &Client, flow: &mut FlowState) -> Result<(), AuthError> {
        let mut held = self.hold().await;
        if let Some(hold) = held.take() {
            let (hold, text) = tokio::task::spawn_blocking(move || {
                let mut hold = hold;
                let text = hold.load().ok().flatten().map(Zeroizing::new);
                (hold, text)
            })
            .await
            .map_err(|_| AuthError::refused("the credential store failed"))?;
            let ours = flow.tokens.as_ref().map(|tokens| tokens.access.expose());
            let newer = text.and_then(|text| self.restore(&text));
            // Tokens this Pack cannot take up (another client's, a key that does not restore)
            // are refreshed past, as if none were kept.
            if let Some(newer) = newer.filter(|n| Some(n.tokens.access.expose()) != ours)
                && self.take_up(flow, newer)
            {
                tracing::debug!(server = %log_safe(&self.namespace), "took up the tokens another process refreshed");
                return Ok(());
            }
            held = Some(hold);
        }
        let no_refresh = || AuthError::refused("no refresh token");
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
            .ok_or_else(|| AuthError::refused("no client"))?;
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
                self.save(flow, held).await;
                Ok(())
            }
            Err(error) => {
                let error = error.render(&self.scrubber);
                tracing::debug!(server = %log_safe(&self.namespace), error = %error.line(), "the refresh failed");
                flow.tokens = None;
                Err(no_refresh())
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
            None => {
                return Err(AuthError::Required {
                    hint: self.hint(),
                    why: flow.ran_out.then_some(RAN_OUT),
                });
            }
        };
        // Looked up each time: the server may have moved to another authorization server.
        let (metadata, resource_id, resource_scopes) = self
            .discover(http, challenge.resource_metadata.as_deref())
            .await?;
        self.refuse_url_values(&resource_id)?;
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
        let client = self
            .client_for(http, flow, &metadata, &redirect_uri)
            .await?;
        let dpop = self.dpop_key(flow, &metadata)?;
        let (pending, code);
        let grant = match authorizer.filter(|_| !machine) {
            // A machine client asks for its own tokens; no user takes part.
            None => Grant::ClientCredentials(&scopes),
            Some(authorizer) => {
                pending = flow::request(&metadata, &client, &redirect_uri, &resource_id, &scopes)?;
                self.learn(pending.secrets().into_iter());
                code = self
                    .ask_user(authorizer.as_ref(), &pending, &metadata)
                    .await?;
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
        flow.ran_out = false;
        self.install(flow, tokens);
        self.save(flow, None).await;
        Ok(())
    }

    /// The client the Pack is to `metadata`'s authorization server: the one it has there, else
    /// the configured one (bound to that server from now on) or one registered now, whose
    /// secrets the scrubbers learn at once.
    async fn client_for(
        &self,
        http: &Client,
        flow: &mut FlowState,
        metadata: &ServerMetadata,
        redirect_uri: &str,
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(client) = flow.clients.get(&metadata.issuer) {
            return Ok(client.clone());
        }
        if self.configured.is_some() {
            self.bind_configured(flow, &metadata.issuer)?;
        }
        let client = registration::identify(
            http,
            metadata,
            self.configured.as_ref(),
            self.host.metadata_url.as_deref(),
            redirect_uri,
        )
        .await?;
        let basic = flow::basic_credential(&client);
        self.learn(client.secret.iter().chain(&basic).cloned());
        flow.clients.insert(metadata.issuer.clone(), client.clone());
        Ok(client)
    }

    /// The key that binds tokens to the Pack, when `metadata`'s server supports DPoP: the one
    /// the Pack has, else a new one.
    fn dpop_key(
        &self,
        flow: &mut FlowState,
        metadata: &ServerMetadata,
    ) -> Result<Option<Arc<DpopKey>>, AuthError> {
        if !metadata.dpop {
            return Ok(None);
        }
        if let Some(key) = &flow.dpop {
            return Ok(Some(Arc::clone(key)));
        }
        let key = Arc::new(DpopKey::generate()?);
        self.learn(std::iter::once(key.stored().clone()));
        flow.dpop = Some(Arc::clone(&key));
        Ok(Some(key))
    }

    /// Sends the user through `pending`'s authorization request by the Host's `authorizer`,
    /// within [`AUTHORIZATION_DEADLINE`], and answers the code the Host carried back, checked.
    async fn ask_user(
        &self,
        authorizer: &dyn Authorizer,
        pending: &flow::Pending,
        metadata: &ServerMetadata,
    ) -> Result<Secret, AuthError> {
        // The URL is the Pack's own, built on a checked endpoint; checked again as a whole
        // before a Host sees it.
        let url = fetch::checked_url(pending.url.as_str(), "the authorization URL")?;
        self.refuse_url_values(url.as_str())?;
        tracing::debug!(server = %log_safe(&self.namespace), "asking the Host to authorize");
        let request = AuthorizationRequest::new(self.namespace.clone(), url.as_str());
        self.waiting_for_user(true);
        let answer =
            tokio::time::timeout(AUTHORIZATION_DEADLINE, authorizer.authorize(request)).await;
        self.waiting_for_user(false);
        let params = answer
            .map_err(|_| {
                AuthError::refused(format!(
                    "the authorization was not completed within {} s",
                    AUTHORIZATION_DEADLINE.as_secs()
                ))
            })?
            .map_err(|e| {
                AuthError::refused_saying("the authorization did not complete", e.reason)
            })?;
        // The code is a secret from the moment it arrives, before anything reads it.
        let codes = params.iter().filter(|(k, _)| k == "code");
        self.learn(codes.map(|(_, code)| Secret::new(code.clone())));
        flow::code(pending, metadata, &params)
    }

    /// Binds the configured client to `issuer` if it is bound to none yet; refuses to present
    /// it to any other. A client the user registered with one authorization server, and its
    /// secret or key, go to that server alone, whatever the MCP server names later.
    fn bind_configured(&self, flow: &mut FlowState, issuer: &str) -> Result<(), AuthError> {
        match &flow.configured_issuer {
            None => {
                flow.configured_issuer = Some(issuer.to_owned());
                Ok(())
            }
            Some(bound) if bound == issuer => Ok(()),
            Some(bound) => {
                // By their origins; by the issuers themselves when they share one.
                let (mut was, mut now) = (origin(bound), origin(issuer));
                if was == now {
                    (was, now) = (bound.clone(), issuer.to_owned());
                }
                Err(AuthError::refused(format!(
                    "{}: the configured OAuth client (oauth.clientId) belongs to the \
                     authorization server at {was}, but the server now sends it to the one at \
                     {now}, so its credentials are not presented there; if that authorization \
                     server is the right one, name its issuer in oauth.issuer",
                    self.namespace
                )))
            }
        }
    }

    /// Refuses to send or show `text` when it holds a value expanded into the server's URL.
    fn refuse_url_values(&self, text: &str) -> Result<(), AuthError> {
        if matches!(self.url_values.scrub(text), Cow::Borrowed(_)) {
            return Ok(());
        }
        Err(AuthError::refused(
            "the server's url holds a value of ${env:...} or ${userHome} in a part an \
             authorization server would be sent or the user shown (the resource the tokens \
             are for, the address of the authorization): write that part of the url without \
             one, and send the secret in a header instead",
        ))
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
                        AuthError::refused("the authorization server publishes no metadata")
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
            return Err(AuthError::refused_saying(
                "the server refuses the token for lack of scopes it was asked with; \
                 authorizing again would not help",
                challenged.join(" "),
            ));
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

    /// Makes `tokens` the current ones: learnt by the scrubbers first, then sent. The
    /// registered clients' secrets and the DPoP key are learnt again with them: the scrubber
    /// keeps only its newest learned secrets, and these are used at every refresh.
    fn install(&self, flow: &mut FlowState, tokens: Tokens) {
        let clients = flow.clients.values();
        let clients =
            clients.flat_map(|c| c.secret.iter().cloned().chain(flow::basic_credential(c)));
        let dpop = flow.dpop.as_ref().map(|key| key.stored().clone());
        let tokens_now =
            std::iter::once(tokens.access.clone()).chain(tokens.refresh.iter().cloned());
        self.learn(tokens_now.chain(clients).chain(dpop));
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        current.token = Some(tokens.access.clone());
        current.dpop = flow.dpop.clone().filter(|_| tokens.bound);
        current.refresh_at = tokens.refresh_at;
        current.generation += 1;
        flow.tokens = Some(tokens);
    }

    fn learn(&self, secrets: impl Iterator<Item = Secret>) {
        self.scrubber.learn(secrets);
    }

    fn hint(&self) -> String {
        match &self.host.hint {
            Some(hint) => hint.replace("{namespace}", &self.namespace),
            None => "this Host cannot log in to servers".to_owned(),
        }
    }
}

/// The origin of an issuer (`https://host:port`), how a reason names an authorization server.
fn origin(issuer: &str) -> String {
    Url::parse(issuer).map_or_else(
        |_| issuer.to_owned(),
        |url| url.origin().ascii_serialization(),
    )
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
