//! What the machine knows of one server's authorization across runs ([`Known`]), and the
//! decisions that read or change only that: a record taken up, tokens installed and kept,
//! the DPoP key, the configured client's issuer, the scopes to ask for, the values of the URL
//! that must not leave. Each secret they make or take is learnt by the scrubber at once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use reqwest::Url;
use zeroize::Zeroizing;

use super::{Authorize, Machine};
use crate::auth::current::Installed;
use crate::auth::discovery::{Discovery, ServerMetadata};
use crate::auth::dpop::DpopKey;
use crate::auth::flow::{self, Tokens};
use crate::auth::registration::ClientIdentity;
use crate::auth::{AuthError, OFFLINE_ACCESS, stored};
use crate::secret::Secret;

/// What the Pack knows of the server's authorization, kept across runs and start attempts,
/// so a failed attempt does not send the user through again for nothing.
#[derive(Default)]
pub(crate) struct Known {
    pub(super) tokens: Option<Tokens>,
    /// The authorization server the tokens are from, and its metadata.
    pub(super) metadata: Option<ServerMetadata>,
    pub(super) resource: String,
    /// The scopes last asked for.
    pub(super) scopes: Vec<String>,
    /// Identities by issuer: one authorization server never sees another's.
    pub(super) clients: HashMap<String, ClientIdentity>,
    /// The one issuer the configured client is presented to: the entry's `oauth.issuer`, else
    /// the first it was used with (kept with the login).
    pub(super) configured_issuer: Option<String>,
    /// This server's DPoP key, made when an authorization server first offers DPoP.
    pub(super) dpop: Option<Arc<DpopKey>>,
    /// The issuer of the authorization server the tokens are from.
    pub(super) issuer: Option<String>,
    /// The last tokens were refused or ran out with no refresh token to renew them.
    pub(super) ran_out: bool,
}

impl Machine {
    /// Makes what a record kept the current authorization, unless it is of a client or an
    /// issuer the configuration no longer names, or its key does not restore.
    pub(super) fn take_up(&mut self, mut restored: stored::Restored) -> Option<Installed> {
        if restored.configured {
            // The configuration's client, with the secret or key it has now; a record of
            // another client, or of an issuer the entry no longer names, serves no more.
            let configured = self.setting.configured.as_ref()?;
            let bound = self.known.configured_issuer.as_ref();
            let same = configured.id.expose() == restored.client.id.expose();
            if !same || bound.is_some_and(|b| *b != restored.issuer) {
                return None;
            }
            restored.client.secret.clone_from(&configured.secret);
            (restored.client.private_key).clone_from(&configured.private_key);
            self.known.configured_issuer = Some(restored.issuer.clone());
        }
        let dpop = match &restored.dpop {
            Some(stored) => Some(Arc::new(DpopKey::restore(stored)?)),
            None => None,
        };
        let basic = flow::basic_credential(&restored.client);
        let dpop_secret = dpop.as_ref().map(|key| key.stored().clone());
        let client_secrets = restored.client.secret.iter().chain(&basic);
        self.learn(client_secrets.chain(&dpop_secret).cloned());
        let known = &mut self.known;
        known
            .clients
            .insert(restored.issuer.clone(), restored.client);
        if known.issuer.as_ref() != Some(&restored.issuer) {
            // Another authorization server's endpoints are looked up at the next refresh.
            known.metadata = None;
        }
        known.issuer = Some(restored.issuer);
        known.resource = restored.resource;
        known.scopes = restored.scopes;
        if dpop.is_some() {
            known.dpop = dpop;
        }
        Some(self.install(restored.tokens))
    }

    /// Makes `tokens` the current ones: learnt by the scrubbers first, then handed to the
    /// driver to send. The registered clients' secrets and the DPoP key are learnt again with
    /// them: the scrubber keeps only its newest learned secrets, and these are used at every
    /// refresh.
    pub(super) fn install(&mut self, tokens: Tokens) -> Installed {
        let clients = self.known.clients.values();
        let clients =
            clients.flat_map(|c| c.secret.iter().cloned().chain(flow::basic_credential(c)));
        let dpop = self.known.dpop.as_ref().map(|key| key.stored().clone());
        let tokens_now =
            std::iter::once(tokens.access.clone()).chain(tokens.refresh.iter().cloned());
        self.setting
            .scrubber
            .learn(tokens_now.chain(clients).chain(dpop));
        let installed = Installed {
            token: tokens.access.clone(),
            dpop: self.known.dpop.clone().filter(|_| tokens.bound),
            refresh_at: tokens.refresh_at,
        };
        self.known.tokens = Some(tokens);
        installed
    }

    /// The record of the current authorization for the Host's store; `None` when there is
    /// nothing whole to keep.
    pub(super) fn record(&self) -> Option<Zeroizing<String>> {
        let known = &self.known;
        let (Some(issuer), Some(tokens)) = (&known.issuer, &known.tokens) else {
            return None;
        };
        let client = known.clients.get(issuer)?;
        let configured = (self.setting.configured.as_ref())
            .is_some_and(|c| c.id.expose() == client.id.expose())
            && known.configured_issuer.as_ref() == Some(issuer);
        stored::record(&stored::Kept {
            server: &self.setting.server,
            issuer,
            resource: &known.resource,
            scopes: &known.scopes,
            client,
            configured,
            tokens,
            dpop: known.dpop.as_ref().map(|key| key.stored()),
        })
    }

    /// The key that binds tokens to the Pack, when `metadata`'s server supports DPoP: the one
    /// the Pack has, else a new one, learnt at once.
    pub(super) fn dpop_key(
        &mut self,
        metadata: &ServerMetadata,
    ) -> Result<Option<Arc<DpopKey>>, AuthError> {
        if !metadata.dpop {
            return Ok(None);
        }
        if let Some(key) = &self.known.dpop {
            return Ok(Some(Arc::clone(key)));
        }
        let key = Arc::new(DpopKey::generate()?);
        self.learn(std::iter::once(key.stored().clone()));
        self.known.dpop = Some(Arc::clone(&key));
        Ok(Some(key))
    }

    /// Binds the configured client to `issuer` if it is bound to none yet; refuses to present
    /// it to any other. A client the user registered with one authorization server, and its
    /// secret or key, go to that server alone, whatever the MCP server names later.
    pub(super) fn bind_configured(&mut self, issuer: &str) -> Result<(), AuthError> {
        let Some(bound) = &self.known.configured_issuer else {
            self.known.configured_issuer = Some(issuer.to_owned());
            return Ok(());
        };
        if bound == issuer {
            return Ok(());
        }
        // By their origins; by the issuers themselves when they share one.
        let (mut was, mut now) = (origin(bound), origin(issuer));
        if was == now {
            (was, now) = (bound.clone(), issuer.to_owned());
        }
        Err(AuthError::refused(format!(
            "{}: the configured OAuth client (oauth.clientId) belongs to the authorization \
             server at {was}, but the server now sends it to the one at {now}, so its \
             credentials are not presented there; if that authorization server is the right \
             one, name its issuer in oauth.issuer",
            self.setting.namespace
        )))
    }

    /// The scopes to ask for: the challenge's, else the resource's, together with those asked
    /// for before from the same authorization server (so re-authorizing never loses a scope).
    /// A step-up that would ask for nothing new is refused: authorizing again cannot help.
    pub(super) fn scopes(
        &self,
        authorize: &Authorize,
        found: &Discovery,
    ) -> Result<Vec<String>, AuthError> {
        let challenged = authorize.challenge.scopes();
        if authorize.step_up && challenged.iter().all(|s| self.known.scopes.contains(s)) {
            return Err(AuthError::refused_saying(
                "the server refuses the token for lack of scopes it was asked with; \
                 authorizing again would not help",
                challenged.join(" "),
            ));
        }
        let wanted = match challenged.is_empty() {
            true => found.scopes.clone(),
            false => challenged,
        };
        let mut scopes = self.known.scopes.clone();
        for scope in wanted {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let supported = &found.metadata.scopes_supported;
        let offline = supported.iter().any(|s| s == OFFLINE_ACCESS);
        if offline && !scopes.is_empty() && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        Ok(scopes)
    }

    /// Refuses to send or show `text` when it holds a value expanded into the server's URL.
    pub(super) fn refuse_url_values(&self, text: &str) -> Result<(), AuthError> {
        if matches!(self.setting.url_values.scrub(text), Cow::Borrowed(_)) {
            return Ok(());
        }
        Err(AuthError::refused(
            "the server's url holds a value of ${env:...} or ${userHome} in a part an \
             authorization server would be sent or the user shown (the resource the tokens \
             are for, the address of the authorization): write that part of the url without \
             one, and send the secret in a header instead",
        ))
    }

    /// Why a refresh stops at a record the store cannot read: refreshing would overwrite it
    /// (and its refresh token, which may be another process's too) with a login of this
    /// process's, so the server is named and nothing is redeemed or saved.
    pub(super) fn unreadable(&self, reason: String) -> AuthError {
        AuthError::refused_saying(
            format!(
                "{}: the credentials the Host's store keeps for this server cannot be read, so \
                 they are not refreshed or overwritten",
                self.setting.namespace
            ),
            reason,
        )
    }

    pub(super) fn refresh_token(&self) -> Option<Secret> {
        self.known.tokens.as_ref()?.refresh.clone()
    }

    pub(super) fn machine_client(&self) -> bool {
        self.setting.configured.as_ref().is_some_and(|c| c.machine)
    }

    pub(super) fn learn(&self, secrets: impl Iterator<Item = Secret>) {
        self.setting.scrubber.learn(secrets);
    }

    pub(super) fn hint(&self) -> String {
        match &self.setting.hint {
            Some(hint) => hint.replace("{namespace}", &self.setting.namespace),
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
