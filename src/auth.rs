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
//! - `machine`: the flow as a state machine without I/O: every decision, step by step.
//! - `current`: what requests carry now (the token, its DPoP key and nonce).
//!
//! This file is the driver: it does the I/O each of the machine's steps asks for and nothing
//! else.
//!
//! The Pack runs the protocol and the Host the user's part: the authorization URL goes to the
//! Host's [`Authorizer`], which brings back the redirect's parameters. A Host without one
//! gets the server as `error` with its own hint of how to log in. Tokens, client secrets,
//! verifiers and codes are [`Secret`]s, taught to the scrubbers as soon as they exist, and
//! the access token goes only to the MCP server's own URL, through the transport.

mod assertion;
mod challenge;
mod current;
mod discovery;
mod dpop;
mod error;
mod fetch;
mod flow;
mod machine;
mod registration;
mod stored;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use reqwest::{Client, Url};
use runvil_plugin::{
    AUTHORIZATION_HINT, AUTHORIZER, AuthorizationRequest, Authorizer, CLIENT_METADATA_URL,
    CREDENTIAL_STORE, CredentialHold, CredentialStore, Services,
};
use tokio::time::Instant;
use zeroize::Zeroizing;

pub(crate) use self::challenge::Challenge;
use self::current::Current;
pub(crate) use self::current::{Generation, Presented};
pub(crate) use self::dpop::nonce as dpop_nonce;
pub(crate) use self::error::AuthError;
use self::machine::{Action, Authorize, Event, Held, Keep, Machine, Setting, State};
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

/// One server's authorization, shared by every request to it and kept across start
/// attempts: the driver of its [`Machine`], and what its requests carry.
pub(crate) struct Authorization {
    namespace: String,
    server: SecretUrl,
    host: HostAuth,
    configured: Option<Preregistered>,
    /// The Pack's scrubber, which shows what the Host's store says.
    scrubber: Arc<Scrubber>,
    current: RwLock<Current>,
    /// The flow, one run at a time.
    machine: tokio::sync::Mutex<Machine>,
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

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Authorization({REDACTION_MARKER})")
    }
}

impl Authorization {
    /// `url_values` are the values expanded into `server`'s URL, which nothing sent to an
    /// authorization server or shown to the user may hold.
    pub(crate) fn new(
        namespace: String,
        server: SecretUrl,
        url_values: &[Secret],
        host: HostAuth,
        configured: Option<Preregistered>,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        let setting = Setting {
            namespace: namespace.clone(),
            server: discovery::canonical(server.expose()),
            configured: configured.clone(),
            hint: host.hint.clone(),
            scrubber: Arc::clone(&scrubber),
            url_values: Scrubber::new(url_values.iter().cloned()),
        };
        Self {
            namespace,
            server,
            host,
            configured,
            scrubber,
            current: RwLock::default(),
            machine: tokio::sync::Mutex::new(Machine::new(setting)),
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
            Box::pin(self.load(http)).await;
        }
        let (refresh_at, generation) = {
            let current = self.current();
            (current.refresh_at, current.generation())
        };
        if refresh_at.is_some_and(|at| at <= Instant::now()) {
            let mut machine = self.machine.lock().await;
            if self.current().generation() == generation {
                // A failed refresh leaves the token as it is: the server's 401 then starts
                // a new authorization.
                let _ = Box::pin(self.run(http, &mut machine, Event::Due)).await;
            }
        }
        let current = self.current();
        (current.present(method, url), current.generation())
    }

    /// Takes up what the Host's store kept of this server's authorization, once.
    async fn load(&self, http: &Client) {
        let mut machine = self.machine.lock().await;
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
        let _ = self.run(http, &mut machine, Event::Loaded(text)).await;
    }

    /// The headers for `method` to `url` as they are, for requests that cannot wait for a
    /// refresh.
    pub(crate) fn present_now(&self, method: &str, url: &Url) -> Option<Presented> {
        self.current().present(method, url)
    }

    fn current(&self) -> RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn current_mut(&self) -> RwLockWriteGuard<'_, Current> {
        self.current.write().unwrap_or_else(PoisonError::into_inner)
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
        let mut machine = self.machine.lock().await;
        {
            let mut current = self.current_mut();
            // Another request renewed the tokens since this one was sent, or the server only
            // asks the next proofs for a nonce.
            if current.generation() != sent || current.take_nonce(challenge) {
                return Ok(());
            }
        }
        let authorize = Authorize {
            step_up: status == 403,
            challenge: challenge.clone(),
            redirect_uri: (self.host.authorizer.as_ref()).map(|a| a.redirect_uri()),
        };
        self.run(http, &mut machine, Event::Challenged(authorize))
            .await
    }

    /// Runs `machine` from `event` to the end of the run, doing the I/O each step asks for.
    /// The store's hold, when a refresh takes one, lasts until the machine lets it go or the
    /// run ends.
    async fn run(
        &self,
        http: &Client,
        machine: &mut Machine,
        event: Event,
    ) -> Result<(), AuthError> {
        let mut held = None;
        let (mut state, mut action) = machine.step(State::Idle, event);
        loop {
            let event = match action {
                Action::Done(result) => return result,
                Action::Hold => {
                    let read;
                    (held, read) = self.hold().await;
                    Event::Held(read)
                }
                Action::Release => {
                    drop(held.take());
                    Event::Released
                }
                Action::Discover { announced } => {
                    let found =
                        discovery::discover(http, self.server.expose(), announced.as_deref());
                    Event::Discovered(found.await.map(Box::new))
                }
                Action::Register {
                    metadata,
                    redirect_uri,
                } => Event::Registered(self.register(http, &metadata, &redirect_uri).await),
                Action::AskUser(request) => Event::UserAnswered(self.ask_user(request).await),
                Action::RequestTokens(request) => {
                    let request = &*request;
                    let (metadata, client) = (&request.metadata, &request.client);
                    let dpop = request.dpop.as_deref();
                    let asked = flow::tokens(
                        http,
                        metadata,
                        client,
                        &request.grant,
                        &request.resource,
                        dpop,
                    );
                    Event::Tokens(asked.await)
                }
                Action::Keep(keep) => {
                    self.keep(keep, &mut held).await;
                    Event::Kept
                }
            };
            (state, action) = machine.step(state, event);
        }
    }

    async fn register(
        &self,
        http: &Client,
        metadata: &discovery::ServerMetadata,
        redirect_uri: &str,
    ) -> Result<registration::ClientIdentity, AuthError> {
        let metadata_url = self.host.metadata_url.as_deref();
        let configured = self.configured.as_ref();
        registration::identify(http, metadata, configured, metadata_url, redirect_uri).await
    }

    /// Holds the server's key in the Host's store, if it offers a hold, and reads the record
    /// inside the hold.
    async fn hold(&self) -> (Option<Box<dyn CredentialHold>>, Held) {
        let Some(hold) = self.open_hold().await else {
            return (None, Held::None);
        };
        let read = tokio::task::spawn_blocking(move || {
            let mut hold = hold;
            let text = hold.load();
            (hold, text)
        })
        .await;
        match read {
            Ok((hold, Ok(text))) => (Some(hold), Held::Read(text.map(Zeroizing::new))),
            Ok((_, Err(error))) => (None, Held::Unreadable(error.reason)),
            Err(_) => (None, Held::Failed),
        }
    }

    /// The Host store's hold of this server's key, when it offers one; a store that cannot
    /// hold it now is logged, and the refresh goes on without.
    async fn open_hold(&self) -> Option<Box<dyn CredentialHold>> {
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

    /// Makes new tokens what requests carry, then keeps the record of them in the Host's
    /// store, if it lent one, through `held` when the record is a refresh's and the store
    /// holds the key. A failure to save costs the next run a login, so it is logged, not
    /// returned (the Host's store knows it too, and a login command says so).
    async fn keep(&self, keep: Keep, held: &mut Option<Box<dyn CredentialHold>>) {
        self.current_mut().install(keep.installed);
        let (Some(record), Some(store)) = (keep.record, self.host.store.clone()) else {
            return;
        };
        let held = held.take().filter(|_| keep.through_hold);
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

    /// Sends the user through `request` by the Host's authorizer, within
    /// [`AUTHORIZATION_DEADLINE`], and answers the parameters the Host carried back.
    async fn ask_user(
        &self,
        request: AuthorizationRequest,
    ) -> Result<Vec<(String, String)>, AuthError> {
        let Some(authorizer) = self.host.authorizer.clone() else {
            return Err(AuthError::refused("this Host lends no authorizer"));
        };
        tracing::debug!(server = %log_safe(&self.namespace), "asking the Host to authorize");
        self.waiting_for_user(true);
        let answer =
            tokio::time::timeout(AUTHORIZATION_DEADLINE, authorizer.authorize(request)).await;
        self.waiting_for_user(false);
        answer
            .map_err(|_| {
                AuthError::refused(format!(
                    "the authorization was not completed within {} s",
                    AUTHORIZATION_DEADLINE.as_secs()
                ))
            })?
            .map_err(|e| AuthError::refused_saying("the authorization did not complete", e.reason))
    }
}
