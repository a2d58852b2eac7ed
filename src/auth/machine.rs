//! One server's authorization as a state machine without I/O, in the manner of a TLS
//! handshake's states: [`Machine::step`] takes where a run stands ([`State`]) and what the
//! last I/O gave ([`Event`]), and answers the next state and the I/O to do ([`Action`]). The
//! driver (`Authorization`) does that I/O (discovery, registration, the user's part, token
//! requests, the Host's credential store) and nothing else; every decision is here, where a
//! test can take each transition without a network.
//!
//! A run starts from [`State::Idle`] with a record read from the store ([`Event::Loaded`]), a
//! token due for renewal ([`Event::Due`]) or a server's challenge ([`Event::Challenged`]), and
//! ends with [`Action::Done`]. What the Pack knows of the authorization ([`Known`]) lasts
//! across runs. Each secret the flow makes or receives is taught to the scrubber the moment
//! it exists, before the action that uses it is answered.

use std::sync::Arc;

use runvil_plugin::AuthorizationRequest;
use zeroize::Zeroizing;

use super::challenge::Challenge;
use super::current::Installed;
use super::discovery::{Discovery, ServerMetadata};
use super::dpop::DpopKey;
use super::flow::{self, Grant, Pending, Tokens};
use super::registration::ClientIdentity;
use super::{AuthError, fetch, stored};
use crate::config::Preregistered;

use crate::secret::Secret;
use crate::text::{Scrubber, log_safe};

mod known;
#[cfg(test)]
mod tests;

use self::known::Known;

/// Why the Pack asks for a login again when tokens ran out without a way to renew them.
const RAN_OUT: &str = "its access token expired or was refused, and its authorization server \
                       granted no refresh token to renew it";

/// What one server's authorization is set up with, for its whole life.
pub(crate) struct Setting {
    pub(crate) namespace: String,
    /// The server's URL as a kept record names it (`discovery::canonical`).
    pub(crate) server: String,
    pub(crate) configured: Option<Preregistered>,
    /// The Host's hint of how to log in, `{namespace}` standing for the server's name.
    pub(crate) hint: Option<String>,
    /// The Pack's scrubber, which learns each new secret the moment it exists.
    pub(crate) scrubber: Arc<Scrubber>,
    /// Finds the values `${env:...}` put into the server's URL, which nothing sent to an
    /// authorization server or shown to the user may hold.
    pub(crate) url_values: Scrubber,
}

/// What a run waits for.
pub(crate) enum State {
    /// No run under way: where each run starts and ends.
    Idle,
    /// A refresh waits for what the Host store's hold read.
    Holding(Refresh),
    /// A refresh of tokens from the store waits for their authorization server's endpoints.
    FindingTokenEndpoint(Refresh),
    /// A refresh waits for the token answer.
    Refreshing(Refresh),
    /// A failed refresh lets the store's hold go before the user is asked.
    Releasing(Authorize),
    /// An authorization waits for who authorizes the server.
    Discovering(Authorize),
    /// An authorization waits for the client registered with the authorization server.
    Registering(Plan),
    /// An authorization waits for the user's answer.
    AskingUser(Box<Asking>),
    /// An authorization waits for the token answer.
    Exchanging(Plan),
    /// New tokens wait to be installed and kept; the run then ends well.
    Keeping,
}

/// What the last I/O gave, or what starts a run.
pub(crate) enum Event {
    /// Starts a run: what the Host's store kept for the server, if anything.
    Loaded(Option<Zeroizing<String>>),
    /// Starts a run: the token is about to expire.
    Due,
    /// Starts a run: a request was refused.
    Challenged(Authorize),
    /// What the Host store's hold read.
    Held(Held),
    Released,
    Discovered(Result<Box<Discovery>, AuthError>),
    Registered(Result<ClientIdentity, AuthError>),
    /// The parameters of the redirect the Host carried back.
    UserAnswered(Result<Vec<(String, String)>, AuthError>),
    Tokens(Result<Tokens, AuthError>),
    Kept,
}

/// The I/O the driver is to do next, then answer with the matching [`Event`].
pub(crate) enum Action {
    /// Hold the server's key in the Host's store and read it inside the hold
    /// ([`Event::Held`]).
    Hold,
    /// Let the hold go ([`Event::Released`]).
    Release,
    /// Find who authorizes the server, from the resource metadata `announced` in a challenge
    /// if any ([`Event::Discovered`]).
    Discover { announced: Option<String> },
    /// Find who the Pack is to this authorization server: the configured client, the Host's
    /// metadata document, or a registration ([`Event::Registered`]).
    Register {
        metadata: Box<ServerMetadata>,
        redirect_uri: String,
    },
    /// Send the user through this authorization request ([`Event::UserAnswered`]).
    AskUser(AuthorizationRequest),
    /// Ask the token endpoint ([`Event::Tokens`]).
    RequestTokens(Box<TokenRequest>),
    /// Make these tokens what requests carry, and keep `record` in the Host's store
    /// (through the hold when `through_hold` and one is held) ([`Event::Kept`]).
    Keep(Keep),
    /// The run is over.
    Done(Result<(), AuthError>),
}

/// New tokens to install, and the record to keep of them.
pub(crate) struct Keep {
    pub(crate) installed: Installed,
    pub(crate) record: Option<Zeroizing<String>>,
    pub(crate) through_hold: bool,
}

/// A token request to make.
pub(crate) struct TokenRequest {
    pub(crate) metadata: ServerMetadata,
    pub(crate) client: ClientIdentity,
    pub(crate) grant: Grant,
    pub(crate) resource: String,
    pub(crate) dpop: Option<Arc<DpopKey>>,
}

/// What the Host store's hold read of the server's key.
pub(crate) enum Held {
    /// The store offers no hold (or could not hold the key now): the refresh goes on without.
    None,
    /// The record under the key, if any.
    Read(Option<Zeroizing<String>>),
    /// The record under the key cannot be read (the store says why): refreshing would
    /// overwrite it.
    Unreadable(String),
    /// The store failed while it read.
    Failed,
}

/// An authorization a refused request asks for.
pub(crate) struct Authorize {
    /// A `403 insufficient_scope`: more scopes, not new tokens of the same.
    pub(crate) step_up: bool,
    pub(crate) challenge: Challenge,
    /// Where the Host's authorizer brings the user back to; `None` when the Host lent none.
    pub(crate) redirect_uri: Option<String>,
}

/// A refresh, and what follows when it fails.
pub(crate) struct Refresh {
    /// The authorization to go on to, when the refresh answers a challenge.
    then: Option<Authorize>,
}

/// An authorization once its authorization server is known.
pub(crate) struct Plan {
    authorize: Authorize,
    metadata: ServerMetadata,
    resource: String,
    scopes: Vec<String>,
}

/// An authorization once the user is asked.
pub(crate) struct Asking {
    plan: Plan,
    client: ClientIdentity,
    dpop: Option<Arc<DpopKey>>,
    pending: Pending,
    redirect_uri: String,
}

type Next = Result<(State, Action), AuthError>;

/// One server's authorization: what it is set up with, and what it knows.
pub(crate) struct Machine {
    setting: Setting,
    known: Known,
}

impl Machine {
    pub(crate) fn new(setting: Setting) -> Self {
        let known = Known {
            configured_issuer: (setting.configured.as_ref()).and_then(|c| c.issuer.clone()),
            ..Known::default()
        };
        Self { setting, known }
    }

    /// The next state, and the I/O to do, for `event` in `state`. An event the state does
    /// not wait for ends the run.
    pub(crate) fn step(&mut self, state: State, event: Event) -> (State, Action) {
        (self.transition(state, event)).unwrap_or_else(|error| done(Err(error)))
    }

    fn transition(&mut self, state: State, event: Event) -> Next {
        match (state, event) {
            (State::Idle, Event::Loaded(text)) => Ok(self.loaded(text)),
            (State::Idle, Event::Due) => Ok(self.refresh(Refresh { then: None })),
            (State::Idle, Event::Challenged(authorize)) => self.challenged(authorize),
            (State::Holding(refresh), Event::Held(held)) => self.held(refresh, held),
            (State::FindingTokenEndpoint(refresh), Event::Discovered(found)) => {
                Ok(self.token_endpoint_found(refresh, found))
            }
            (State::Refreshing(refresh), Event::Tokens(tokens)) => {
                Ok(self.refreshed(refresh, tokens))
            }
            (State::Releasing(authorize), Event::Released) => self.authorize(authorize),
            (State::Discovering(authorize), Event::Discovered(found)) => {
                self.discovered(authorize, *found?)
            }
            (State::Registering(plan), Event::Registered(client)) => self.registered(plan, client?),
            (State::AskingUser(asking), Event::UserAnswered(params)) => {
                self.answered(*asking, params?)
            }
            (State::Exchanging(plan), Event::Tokens(tokens)) => Ok(self.exchanged(plan, tokens?)),
            (State::Keeping, Event::Kept) => Ok(done(Ok(()))),
            _ => Err(AuthError::refused("the authorization went out of order")),
        }
    }

    /// Takes up what the store kept, if it is this server's and still serves.
    fn loaded(&mut self, text: Option<Zeroizing<String>>) -> (State, Action) {
        let restored = text.and_then(|text| stored::restore(&self.setting.server, &text));
        match restored.and_then(|restored| self.take_up(restored)) {
            Some(installed) => keep(installed, None, false),
            None => done(Ok(())),
        }
    }

    /// A `401` renews the tokens by a refresh when it can, else (and after a refresh that
    /// failed) asks for a new authorization; a `403` asks for one with more scopes.
    fn challenged(&mut self, authorize: Authorize) -> Next {
        if !authorize.step_up {
            match self.known.tokens.as_ref().map(|t| t.refresh.is_some()) {
                Some(true) => {
                    return Ok(self.refresh(Refresh {
                        then: Some(authorize),
                    }));
                }
                Some(false) => self.known.ran_out = true,
                None => {}
            }
        }
        self.authorize(authorize)
    }

    /// A refresh holds the key in the Host's store first (if it can), so that a refresh
    /// token shared with other processes is redeemed once; not without a refresh token.
    fn refresh(&mut self, refresh: Refresh) -> (State, Action) {
        if self.refresh_token().is_none() {
            return refresh_failed(refresh, no_refresh());
        }
        (State::Holding(refresh), Action::Hold)
    }

    /// Inside the hold: tokens another process got since ours were read are taken up instead
    /// of redeeming ours; a record that cannot be read is not overwritten.
    fn held(&mut self, refresh: Refresh, held: Held) -> Next {
        let text = match held {
            Held::Unreadable(reason) => return Err(self.unreadable(reason)),
            Held::Failed => {
                let failed = AuthError::refused("the credential store failed");
                return Ok(refresh_failed(refresh, failed));
            }
            Held::Read(text) => text,
            Held::None => None,
        };
        let ours = (self.known.tokens.as_ref()).map(|tokens| tokens.access.expose().to_owned());
        let newer = text.and_then(|text| stored::restore(&self.setting.server, &text));
        // Tokens this Pack cannot take up (another client's, a key that does not restore)
        // are refreshed past, as if none were kept.
        let newer = newer.filter(|n| Some(n.tokens.access.expose()) != ours.as_deref());
        if let Some(installed) = newer.and_then(|newer| self.take_up(newer)) {
            tracing::debug!(server = %log_safe(&self.setting.namespace), "took up the tokens another process refreshed");
            return Ok(keep(installed, None, false));
        }
        if self.known.metadata.is_none() {
            // Tokens from the Host's store: the token endpoint is looked up again, and must
            // be the same authorization server's.
            let find = Action::Discover { announced: None };
            return Ok((State::FindingTokenEndpoint(refresh), find));
        }
        Ok(self.redeem(refresh))
    }

    fn token_endpoint_found(
        &mut self,
        refresh: Refresh,
        found: Result<Box<Discovery>, AuthError>,
    ) -> (State, Action) {
        match found {
            Err(error) => refresh_failed(refresh, error),
            Ok(found) if self.known.issuer.as_ref() != Some(&found.metadata.issuer) => {
                self.known.tokens = None;
                refresh_failed(refresh, no_refresh())
            }
            Ok(found) => {
                self.known.metadata = Some(found.metadata);
                self.redeem(refresh)
            }
        }
    }

    /// Asks for new tokens with the refresh token.
    fn redeem(&mut self, refresh: Refresh) -> (State, Action) {
        let (Some(token), Some(tokens), Some(metadata)) = (
            self.refresh_token(),
            &self.known.tokens,
            &self.known.metadata,
        ) else {
            return refresh_failed(refresh, no_refresh());
        };
        let Some(client) = self.known.clients.get(&metadata.issuer).cloned() else {
            return refresh_failed(refresh, AuthError::refused("no client"));
        };
        let request = TokenRequest {
            metadata: metadata.clone(),
            client,
            grant: Grant::Refresh(token),
            resource: self.known.resource.clone(),
            dpop: self.known.dpop.clone().filter(|_| tokens.bound),
        };
        let action = Action::RequestTokens(Box::new(request));
        (State::Refreshing(refresh), action)
    }

    fn refreshed(
        &mut self,
        refresh: Refresh,
        tokens: Result<Tokens, AuthError>,
    ) -> (State, Action) {
        match tokens {
            Ok(tokens) => {
                let installed = self.install(tokens);
                keep(installed, self.record(), true)
            }
            Err(error) => {
                let error = error.render(&self.setting.scrubber);
                tracing::debug!(server = %log_safe(&self.setting.namespace), error = %error.line(), "the refresh failed");
                self.known.tokens = None;
                refresh_failed(refresh, no_refresh())
            }
        }
    }

    /// Starts an authorization: refused at once when no user can take part and the client
    /// is no machine client; else it finds who authorizes the server, each time, since the
    /// server may have moved to another authorization server.
    fn authorize(&mut self, authorize: Authorize) -> Next {
        if authorize.redirect_uri.is_none() && !self.machine_client() {
            return Err(AuthError::Required {
                hint: self.hint(),
                why: self.known.ran_out.then_some(RAN_OUT),
            });
        }
        let announced = authorize.challenge.resource_metadata.clone();
        Ok((
            State::Discovering(authorize),
            Action::Discover { announced },
        ))
    }

    fn discovered(&mut self, authorize: Authorize, found: Discovery) -> Next {
        self.refuse_url_values(&found.resource)?;
        if self.known.issuer.as_ref() != Some(&found.metadata.issuer) {
            // Tokens of one authorization server are never offered to another.
            self.known.tokens = None;
            self.known.scopes.clear();
        }
        let scopes = self.scopes(&authorize, &found)?;
        let plan = Plan {
            authorize,
            metadata: found.metadata,
            resource: found.resource,
            scopes,
        };
        if let Some(client) = self.known.clients.get(&plan.metadata.issuer) {
            let client = client.clone();
            return self.grant(plan, client);
        }
        if self.setting.configured.is_some() {
            self.bind_configured(&plan.metadata.issuer)?;
        }
        let register = Action::Register {
            metadata: Box::new(plan.metadata.clone()),
            redirect_uri: plan.authorize.redirect_uri.clone().unwrap_or_default(),
        };
        Ok((State::Registering(plan), register))
    }

    /// The client the Pack now is to the authorization server: its secrets are learnt at
    /// once, and it is kept for that issuer alone.
    fn registered(&mut self, plan: Plan, client: ClientIdentity) -> Next {
        let basic = flow::basic_credential(&client);
        self.learn(client.secret.iter().chain(&basic).cloned());
        let issuer = plan.metadata.issuer.clone();
        self.known.clients.insert(issuer, client.clone());
        self.grant(plan, client)
    }

    /// The grant to ask tokens by: a machine client's own credentials, else the user's
    /// authorization, whose request's secrets are learnt before the Host sees its URL.
    fn grant(&mut self, plan: Plan, client: ClientIdentity) -> Next {
        let dpop = self.dpop_key(&plan.metadata)?;
        let by_user = plan.authorize.redirect_uri.clone();
        let Some(redirect_uri) = by_user.filter(|_| !self.machine_client()) else {
            let grant = Grant::ClientCredentials(plan.scopes.clone());
            return Ok(exchange(plan, client, grant, dpop));
        };
        let (metadata, resource) = (&plan.metadata, &plan.resource);
        let pending = flow::request(metadata, &client, &redirect_uri, resource, &plan.scopes)?;
        self.learn(pending.secrets().into_iter());
        // The URL is the Pack's own, built on a checked endpoint; checked again as a whole
        // before a Host sees it.
        let url = fetch::checked_url(pending.url.as_str(), "the authorization URL")?;
        self.refuse_url_values(url.as_str())?;
        let request = AuthorizationRequest::new(self.setting.namespace.clone(), url.as_str());
        let asking = Asking {
            plan,
            client,
            dpop,
            pending,
            redirect_uri,
        };
        Ok((
            State::AskingUser(Box::new(asking)),
            Action::AskUser(request),
        ))
    }

    /// The code the Host carried back: a secret from the moment it arrives, before anything
    /// reads it; exchanged once the answer is known to be this request's.
    fn answered(&mut self, asking: Asking, params: Vec<(String, String)>) -> Next {
        let codes = params.iter().filter(|(k, _)| k == "code");
        self.learn(codes.map(|(_, code)| Secret::new(code.clone())));
        let code = flow::code(&asking.pending, &asking.plan.metadata, &params)?;
        let grant = Grant::Code {
            code,
            pending: asking.pending,
            redirect_uri: asking.redirect_uri,
        };
        Ok(exchange(asking.plan, asking.client, grant, asking.dpop))
    }

    fn exchanged(&mut self, plan: Plan, tokens: Tokens) -> (State, Action) {
        self.known.scopes = plan.scopes;
        self.known.resource = plan.resource;
        self.known.issuer = Some(plan.metadata.issuer.clone());
        self.known.metadata = Some(plan.metadata);
        self.known.ran_out = false;
        let installed = self.install(tokens);
        keep(installed, self.record(), false)
    }
}

/// A failed refresh: the end of a run that only refreshed, else the authorization the
/// challenge asks for, once the hold is let go.
fn refresh_failed(refresh: Refresh, error: AuthError) -> (State, Action) {
    match refresh.then {
        None => done(Err(error)),
        Some(authorize) => (State::Releasing(authorize), Action::Release),
    }
}

fn exchange(
    plan: Plan,
    client: ClientIdentity,
    grant: Grant,
    dpop: Option<Arc<DpopKey>>,
) -> (State, Action) {
    let request = TokenRequest {
        metadata: plan.metadata.clone(),
        client,
        grant,
        resource: plan.resource.clone(),
        dpop,
    };
    let action = Action::RequestTokens(Box::new(request));
    (State::Exchanging(plan), action)
}

fn keep(
    installed: Installed,
    record: Option<Zeroizing<String>>,
    through_hold: bool,
) -> (State, Action) {
    let keep = Keep {
        installed,
        record,
        through_hold,
    };
    (State::Keeping, Action::Keep(keep))
}

fn done(result: Result<(), AuthError>) -> (State, Action) {
    (State::Idle, Action::Done(result))
}

fn no_refresh() -> AuthError {
    AuthError::refused("no refresh token")
}
