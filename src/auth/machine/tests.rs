//! Each transition of the machine, without a network: the events are what the I/O would
//! give, and each test checks the action asked for next, what the machine then knows, and
//! which secrets the scrubber learnt on the way.

use reqwest::Url;
use tokio::time::Instant;

use super::*;
use crate::auth::OFFLINE_ACCESS;
use crate::auth::registration::Method;

const NAMESPACE: &str = "s";
const SERVER: &str = "https://mcp.example/mcp";
const ISSUER: &str = "https://as.example";
const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn metadata(issuer: &str) -> ServerMetadata {
    let url = |path: &str| Url::parse(&format!("{issuer}{path}")).expect("url");
    ServerMetadata {
        issuer: issuer.to_owned(),
        authorization_endpoint: url("/authorize"),
        token_endpoint: url("/token"),
        registration_endpoint: Some(url("/register")),
        scopes_supported: vec![OFFLINE_ACCESS.to_owned()],
        token_endpoint_auth_methods: None,
        iss_parameter_supported: true,
        client_id_metadata_document_supported: false,
        pkce_s256: true,
        dpop: false,
        openid: false,
    }
}

fn found(issuer: &str) -> Event {
    Event::Discovered(Ok(Box::new(Discovery {
        metadata: metadata(issuer),
        resource: SERVER.to_owned(),
        scopes: vec!["mcp:read".to_owned()],
    })))
}

fn client(secret: &str) -> ClientIdentity {
    ClientIdentity {
        id: Secret::new("client-1".to_owned()),
        secret: Some(Secret::new(secret.to_owned())),
        private_key: None,
        method: Method::Post,
    }
}

fn tokens(access: &str, refresh: Option<&str>) -> Tokens {
    Tokens {
        access: Secret::new(access.to_owned()),
        bound: false,
        refresh: refresh.map(|r| Secret::new(r.to_owned())),
        expires_at: None,
        refresh_at: Some(Instant::now()),
    }
}

fn configured(machine: bool, issuer: Option<&str>) -> Preregistered {
    Preregistered {
        id: Secret::new("configured-1".to_owned()),
        secret: Some(Secret::new("configured-secret".to_owned())),
        private_key: None,
        machine,
        issuer: issuer.map(str::to_owned),
    }
}

/// A machine for the server `s` at [`SERVER`], and the scrubber it teaches.
fn machine_with(
    configured: Option<Preregistered>,
    url_values: &[&str],
) -> (Machine, Arc<Scrubber>) {
    let scrubber = Arc::new(Scrubber::default());
    let setting = Setting {
        namespace: NAMESPACE.to_owned(),
        server: SERVER.to_owned(),
        configured,
        hint: Some("run `login {namespace}`".to_owned()),
        scrubber: Arc::clone(&scrubber),
        url_values: Scrubber::new(url_values.iter().map(|v| Secret::new((*v).to_owned()))),
    };
    (Machine::new(setting), scrubber)
}

fn machine() -> (Machine, Arc<Scrubber>) {
    machine_with(None, &[])
}

/// A machine that logged in at [`ISSUER`], with `refresh` as its refresh token.
fn logged_in(refresh: Option<&str>) -> (Machine, Arc<Scrubber>) {
    let (mut machine, scrubber) = machine();
    let known = &mut machine.known;
    known.tokens = Some(tokens("access-1", refresh));
    known.metadata = Some(metadata(ISSUER));
    known.issuer = Some(ISSUER.to_owned());
    known.resource = SERVER.to_owned();
    known.scopes = vec!["mcp:read".to_owned()];
    known
        .clients
        .insert(ISSUER.to_owned(), client("client-secret-1"));
    (machine, scrubber)
}

fn challenged(step_up: bool, scope: Option<&str>, user: bool) -> Event {
    Event::Challenged(Authorize {
        step_up,
        challenge: Challenge {
            scope: scope.map(str::to_owned),
            resource_metadata: Some(
                "https://mcp.example/.well-known/oauth-protected-resource".to_owned(),
            ),
            ..Challenge::default()
        },
        redirect_uri: user.then(|| REDIRECT.to_owned()),
    })
}

/// The record another process (or an earlier run) kept for `server`, of `access`.
fn record_of(server: &str, access: &str) -> Zeroizing<String> {
    let client = client("client-secret-1");
    let tokens = tokens(access, Some("refresh-9"));
    stored::record(&stored::Kept {
        server,
        issuer: ISSUER,
        resource: SERVER,
        scopes: &[],
        client: &client,
        configured: false,
        tokens: &tokens,
        dpop: None,
    })
    .expect("a record")
}

fn name(action: &Action) -> &'static str {
    match action {
        Action::Hold => "Hold",
        Action::Release => "Release",
        Action::Discover { .. } => "Discover",
        Action::Register { .. } => "Register",
        Action::AskUser(_) => "AskUser",
        Action::RequestTokens(_) => "RequestTokens",
        Action::Keep(_) => "Keep",
        Action::Done(Ok(())) => "Done(Ok)",
        Action::Done(Err(_)) => "Done(Err)",
    }
}

fn refused(action: Action) -> String {
    match action {
        Action::Done(Err(error)) => error.render(&Scrubber::default()).into_string(),
        other => panic!("not refused: {}", name(&other)),
    }
}

fn kept(action: Action) -> Keep {
    match action {
        Action::Keep(keep) => keep,
        other => panic!("not kept: {}", name(&other)),
    }
}

fn token_request(action: Action) -> TokenRequest {
    match action {
        Action::RequestTokens(request) => *request,
        other => panic!("no token request: {}", name(&other)),
    }
}

fn scrubs(scrubber: &Scrubber, secret: &str) -> bool {
    !scrubber.scrub(&format!("x {secret} x")).contains(secret)
}

#[test]
fn a_record_of_this_server_is_taken_up_and_another_s_is_not() {
    let (mut machine, scrubber) = machine();
    let other = record_of("https://other.example/mcp", "access-7");
    let (state, action) = machine.step(State::Idle, Event::Loaded(Some(other)));
    assert!(matches!(
        (state, &action),
        (State::Idle, Action::Done(Ok(())))
    ));
    assert!(machine.known.tokens.is_none());
    let ours = record_of(SERVER, "access-7");
    let (state, action) = machine.step(State::Idle, Event::Loaded(Some(ours)));
    let keep = kept(action);
    assert_eq!(keep.installed.token.expose(), "access-7");
    assert!(
        keep.record.is_none(),
        "what was just read is not written back"
    );
    assert!(scrubs(&scrubber, "access-7") && scrubs(&scrubber, "refresh-9"));
    assert!(scrubs(&scrubber, "client-secret-1"));
    assert_eq!(machine.known.issuer.as_deref(), Some(ISSUER));
    assert!(
        machine.known.metadata.is_none(),
        "its endpoints are looked up at the refresh"
    );
    let (_, action) = machine.step(state, Event::Kept);
    assert_eq!(name(&action), "Done(Ok)");
}

#[test]
fn a_due_refresh_without_a_refresh_token_holds_nothing() {
    let (mut machine, _) = logged_in(None);
    let (_, action) = machine.step(State::Idle, Event::Due);
    assert_eq!(refused(action), "authorization failed: no refresh token");
    assert!(
        machine.known.tokens.is_some(),
        "the token stays until a server refuses it"
    );
}

#[test]
fn a_due_refresh_holds_the_key_redeems_the_refresh_token_and_keeps_through_the_hold() {
    let (mut machine, scrubber) = logged_in(Some("refresh-1"));
    let (state, action) = machine.step(State::Idle, Event::Due);
    assert_eq!(name(&action), "Hold");
    let (state, action) = machine.step(state, Event::Held(Held::Read(None)));
    let request = token_request(action);
    assert!(matches!(&request.grant, Grant::Refresh(r) if r.expose() == "refresh-1"));
    assert_eq!(request.metadata.issuer, ISSUER);
    assert_eq!(request.client.id.expose(), "client-1");
    assert_eq!(request.resource, SERVER);
    let (state, action) = machine.step(state, Event::Tokens(Ok(tokens("access-2", None))));
    let keep = kept(action);
    assert!(keep.through_hold);
    assert_eq!(keep.installed.token.expose(), "access-2");
    let record = keep.record.expect("a record");
    let back = stored::restore(SERVER, &record).expect("this server's");
    assert_eq!(back.tokens.access.expose(), "access-2");
    assert!(scrubs(&scrubber, "access-2"));
    let (state, action) = machine.step(state, Event::Kept);
    assert!(matches!(
        (state, action),
        (State::Idle, Action::Done(Ok(())))
    ));
}

#[test]
fn tokens_another_process_kept_are_taken_up_instead_of_redeemed() {
    let (mut machine, scrubber) = logged_in(Some("refresh-1"));
    let (state, _) = machine.step(State::Idle, Event::Due);
    let newer = record_of(SERVER, "access-9");
    let (_, action) = machine.step(state, Event::Held(Held::Read(Some(newer))));
    let keep = kept(action);
    assert_eq!(keep.installed.token.expose(), "access-9");
    assert!(keep.record.is_none());
    assert!(scrubs(&scrubber, "refresh-9"));
    // The record of our own tokens is no news: ours are redeemed.
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, _) = machine.step(State::Idle, Event::Due);
    let same = record_of(SERVER, "access-1");
    let (_, action) = machine.step(state, Event::Held(Held::Read(Some(same))));
    assert!(matches!(token_request(action).grant, Grant::Refresh(_)));
}

#[test]
fn a_record_the_hold_cannot_read_ends_the_run_naming_the_server_without_a_login() {
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, action) = machine.step(State::Idle, challenged(false, None, true));
    assert_eq!(
        name(&action),
        "Hold",
        "a 401 is answered by a refresh first"
    );
    let unreadable = Held::Unreadable("the store key does not open it".to_owned());
    let (state, action) = machine.step(state, Event::Held(unreadable));
    assert!(matches!(state, State::Idle));
    let error = refused(action);
    assert!(
        error.starts_with("authorization failed: s: the credentials the Host's store keeps"),
        "{error}"
    );
    assert!(
        error.ends_with("(the store key does not open it)"),
        "{error}"
    );
    assert!(machine.known.tokens.is_some());
}

#[test]
fn tokens_from_the_store_find_their_token_endpoint_and_must_keep_their_issuer() {
    let (mut machine, _) = logged_in(Some("refresh-1"));
    machine.known.metadata = None;
    let (state, _) = machine.step(State::Idle, Event::Due);
    let (state, action) = machine.step(state, Event::Held(Held::None));
    assert!(matches!(action, Action::Discover { announced: None }));
    let (_, action) = machine.step(state, found(ISSUER));
    assert!(matches!(token_request(action).grant, Grant::Refresh(_)));
    assert!(machine.known.metadata.is_some());
    let (mut machine, _) = logged_in(Some("refresh-1"));
    machine.known.metadata = None;
    let (state, _) = machine.step(State::Idle, Event::Due);
    let (state, _) = machine.step(state, Event::Held(Held::None));
    let (_, action) = machine.step(state, found("https://moved.example"));
    assert_eq!(refused(action), "authorization failed: no refresh token");
    assert!(
        machine.known.tokens.is_none(),
        "never offered to another server"
    );
}

#[test]
fn a_refresh_that_fails_lets_the_hold_go_and_goes_on_to_an_authorization() {
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (state, _) = machine.step(state, Event::Held(Held::Read(None)));
    let failed = Err(AuthError::refused_saying(
        "the token request answered HTTP 400",
        "invalid_grant".to_owned(),
    ));
    let (state, action) = machine.step(state, Event::Tokens(failed));
    assert_eq!(name(&action), "Release");
    assert!(machine.known.tokens.is_none());
    assert!(!machine.known.ran_out, "it had a refresh token");
    let (_, action) = machine.step(state, Event::Released);
    let Action::Discover { announced } = action else {
        panic!("no discovery: {}", name(&action));
    };
    assert_eq!(
        announced.as_deref(),
        Some("https://mcp.example/.well-known/oauth-protected-resource")
    );
    // A refresh that only renewed a due token ends with it.
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, _) = machine.step(State::Idle, Event::Due);
    let (_, action) = machine.step(state, Event::Held(Held::Failed));
    assert_eq!(
        refused(action),
        "authorization failed: the credential store failed"
    );
    assert!(machine.known.tokens.is_some());
}

#[test]
fn without_an_authorizer_the_host_s_hint_answers_and_says_when_tokens_ran_out() {
    let (mut machine, _) = machine();
    let (_, action) = machine.step(State::Idle, challenged(false, None, false));
    assert_eq!(
        refused(action),
        "the server requires authorization: run `login s`"
    );
    let (mut machine, _) = logged_in(None);
    let (_, action) = machine.step(State::Idle, challenged(false, None, false));
    let error = refused(action);
    assert!(error.contains("granted no refresh token"), "{error}");
    assert!(error.ends_with("; run `login s`"), "{error}");
}

#[test]
fn a_step_up_asks_for_every_scope_so_far_and_refuses_to_ask_for_nothing_new() {
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, action) = machine.step(State::Idle, challenged(true, Some("mcp:write"), true));
    assert_eq!(name(&action), "Discover", "a step-up is no refresh");
    let (state, action) = machine.step(state, found(ISSUER));
    let Action::AskUser(request) = action else {
        panic!("the user is not asked: {}", name(&action));
    };
    let State::AskingUser(asking) = state else {
        panic!("not asking");
    };
    assert_eq!(
        asking.plan.scopes,
        ["mcp:read", "mcp:write", OFFLINE_ACCESS]
    );
    assert!(
        request
            .url
            .contains("scope=mcp%3Aread+mcp%3Awrite+offline_access"),
        "{}",
        request.url
    );
    assert_eq!(request.namespace, NAMESPACE);
    let (mut machine, _) = logged_in(Some("refresh-1"));
    let (state, _) = machine.step(State::Idle, challenged(true, Some("mcp:read"), true));
    let (_, action) = machine.step(state, found(ISSUER));
    let error = refused(action);
    assert!(
        error.contains("authorizing again would not help (mcp:read)"),
        "{error}"
    );
}

#[test]
fn a_login_registers_asks_the_user_and_exchanges_the_code_learning_each_secret_at_once() {
    let (mut machine, scrubber) = machine();
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (state, action) = machine.step(state, found(ISSUER));
    let Action::Register {
        metadata,
        redirect_uri,
    } = action
    else {
        panic!("no registration: {}", name(&action));
    };
    assert_eq!(
        (metadata.issuer.as_str(), redirect_uri.as_str()),
        (ISSUER, REDIRECT)
    );
    let (state, action) = machine.step(state, Event::Registered(Ok(client("registered-secret"))));
    assert!(scrubs(&scrubber, "registered-secret"));
    let Action::AskUser(request) = action else {
        panic!("the user is not asked: {}", name(&action));
    };
    let url = Url::parse(&request.url).expect("url");
    let state_param = url
        .query_pairs()
        .find(|(k, _)| k == "state")
        .expect("state")
        .1;
    assert!(
        scrubs(&scrubber, &state_param),
        "the state is a secret before the Host sees it"
    );
    let params = vec![
        ("code".to_owned(), "code-1".to_owned()),
        ("state".to_owned(), state_param.into_owned()),
        ("iss".to_owned(), ISSUER.to_owned()),
    ];
    let (state, action) = machine.step(state, Event::UserAnswered(Ok(params)));
    assert!(scrubs(&scrubber, "code-1"));
    let request = token_request(action);
    assert!(matches!(&request.grant, Grant::Code { code, .. } if code.expose() == "code-1"));
    let (state, action) = machine.step(
        state,
        Event::Tokens(Ok(tokens("access-3", Some("refresh-3")))),
    );
    let keep = kept(action);
    assert!(!keep.through_hold && keep.record.is_some());
    assert!(scrubs(&scrubber, "access-3") && scrubs(&scrubber, "refresh-3"));
    assert_eq!(machine.known.issuer.as_deref(), Some(ISSUER));
    assert_eq!(machine.known.scopes, ["mcp:read", OFFLINE_ACCESS]);
    assert!(matches!(
        machine.step(state, Event::Kept).1,
        Action::Done(Ok(()))
    ));
}

#[test]
fn an_answer_not_carrying_the_request_s_state_is_refused() {
    let (mut machine, _) = logged_in(None);
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (state, _) = machine.step(state, found(ISSUER));
    let forged = vec![
        ("code".to_owned(), "code-1".to_owned()),
        ("state".to_owned(), "forged".to_owned()),
    ];
    let (_, action) = machine.step(state, Event::UserAnswered(Ok(forged)));
    assert!(refused(action).contains("state"));
}

#[test]
fn a_machine_client_asks_for_its_own_tokens_without_a_user() {
    let (mut machine, _) = machine_with(Some(configured(true, None)), &[]);
    let (state, _) = machine.step(State::Idle, challenged(false, None, false));
    let (state, action) = machine.step(state, found(ISSUER));
    assert_eq!(name(&action), "Register");
    assert_eq!(
        machine.known.configured_issuer.as_deref(),
        Some(ISSUER),
        "bound from now on"
    );
    let identity = ClientIdentity {
        id: Secret::new("configured-1".to_owned()),
        secret: Some(Secret::new("configured-secret".to_owned())),
        private_key: None,
        method: Method::Basic,
    };
    let (_, action) = machine.step(state, Event::Registered(Ok(identity)));
    let request = token_request(action);
    assert!(matches!(&request.grant, Grant::ClientCredentials(scopes)
            if scopes == &["mcp:read", OFFLINE_ACCESS]));
}

#[test]
fn a_configured_client_is_never_presented_to_another_issuer() {
    let (mut machine, _) = machine_with(Some(configured(false, Some(ISSUER))), &[]);
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (_, action) = machine.step(state, found("https://other.example"));
    let error = refused(action);
    assert!(
        error.contains(
            "belongs to the authorization server at https://as.example, but the server now \
             sends it to the one at https://other.example"
        ),
        "{error}"
    );
}

#[test]
fn a_resource_holding_a_value_of_the_url_is_neither_sent_nor_shown() {
    let (mut machine, _) = machine_with(None, &["mcp.example"]);
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (_, action) = machine.step(state, found(ISSUER));
    assert!(refused(action).contains("${env:...}"));
}

#[test]
fn another_authorization_server_gets_none_of_the_tokens_or_scopes() {
    let (mut machine, _) = logged_in(None);
    machine.known.scopes = vec!["old:scope".to_owned()];
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    assert!(machine.known.ran_out, "no refresh token to renew them");
    let (_, action) = machine.step(state, found("https://moved.example"));
    assert_eq!(name(&action), "Register", "a client of its own there");
    assert!(machine.known.tokens.is_none() && machine.known.scopes.is_empty());
}

#[test]
fn an_event_out_of_order_ends_the_run() {
    let (mut machine, _) = machine();
    let (state, action) = machine.step(State::Idle, Event::Kept);
    assert!(matches!(state, State::Idle));
    assert!(refused(action).contains("out of order"));
}

#[test]
fn an_i_o_that_failed_ends_the_run_with_its_error() {
    let failed = || AuthError::refused("it failed");
    let (mut machine, _) = machine();
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (_, action) = machine.step(state, Event::Discovered(Err(failed())));
    assert_eq!(refused(action), "authorization failed: it failed");
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (state, _) = machine.step(state, found(ISSUER));
    let (_, action) = machine.step(state, Event::Registered(Err(failed())));
    assert_eq!(refused(action), "authorization failed: it failed");
    let (mut machine, _) = logged_in(None);
    let (state, _) = machine.step(State::Idle, challenged(false, None, true));
    let (state, _) = machine.step(state, found(ISSUER));
    let (_, action) = machine.step(state, Event::UserAnswered(Err(failed())));
    assert_eq!(refused(action), "authorization failed: it failed");
    let (mut machine, _) = machine_with(Some(configured(true, None)), &[]);
    machine.known.clients.insert(ISSUER.to_owned(), client("c"));
    let (state, _) = machine.step(State::Idle, challenged(false, None, false));
    let (state, action) = machine.step(state, found(ISSUER));
    assert_eq!(name(&action), "RequestTokens");
    let (_, action) = machine.step(state, Event::Tokens(Err(failed())));
    assert_eq!(refused(action), "authorization failed: it failed");
    assert!(
        machine.known.issuer.is_none(),
        "nothing of a failed login is kept"
    );
    // Tokens from the store whose authorization server cannot be reached stay as they are.
    let (mut machine, _) = logged_in(Some("refresh-1"));
    machine.known.metadata = None;
    let (state, _) = machine.step(State::Idle, Event::Due);
    let (state, _) = machine.step(state, Event::Held(Held::None));
    let (_, action) = machine.step(state, Event::Discovered(Err(failed())));
    assert_eq!(refused(action), "authorization failed: it failed");
    assert!(machine.known.tokens.is_some());
}

#[test]
fn an_authorization_server_offering_dpop_gets_tokens_bound_to_one_learnt_key() {
    let (mut machine, scrubber) = machine_with(Some(configured(true, None)), &[]);
    let (state, _) = machine.step(State::Idle, challenged(false, None, false));
    let Event::Discovered(Ok(mut discovery)) = found(ISSUER) else {
        panic!("found");
    };
    discovery.metadata.dpop = true;
    let (state, _) = machine.step(state, Event::Discovered(Ok(discovery)));
    let (state, action) = machine.step(state, Event::Registered(Ok(client("c"))));
    let key = token_request(action).dpop.expect("a key");
    assert!(
        scrubs(&scrubber, key.stored().expose()),
        "the key is a secret at once"
    );
    let bound = Tokens {
        bound: true,
        ..tokens("access-5", Some("refresh-5"))
    };
    let (_, action) = machine.step(state, Event::Tokens(Ok(bound)));
    let keep = kept(action);
    assert!(
        keep.installed.dpop.is_some(),
        "requests present the token with proofs"
    );
    let record = keep.record.expect("kept with its key");
    assert!(
        stored::restore(SERVER, &record)
            .expect("restored")
            .dpop
            .is_some()
    );
    // Its refresh is proven by the same key.
    let (state, _) = machine.step(State::Idle, Event::Due);
    let (_, action) = machine.step(state, Event::Held(Held::None));
    let again = token_request(action).dpop.expect("the key");
    assert!(Arc::ptr_eq(&key, &again));
}
