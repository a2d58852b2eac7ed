//! The Pack and its two tools: `get_dynamic_tools` lists servers and their tools,
//! `call_dynamic_tool` calls one. Both take model-written arguments, so every mistake gets
//! an error that says what was wrong and what is valid.
//!
//! `arguments` owns the two tools' schemas and checks arguments against them; this module
//! dispatches a checked call. Every text it answers, result or error, is a `Shown` made where
//! it is composed (an error from its pieces, each shown once, by `error`) and handed to the
//! contract by `Shown::leave`: nothing is scrubbed or cut a second time on the way out.

mod arguments;

use std::sync::{Arc, Mutex, PoisonError};

use runvil_plugin::{
    BoxFuture, CallOptions, HeldTool, Pack, ProgressSink, StatusReceiver, StoreError, ToolError,
    ToolSpec, Unavailable,
};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::connector::{Board, Ready, Server, Status, server_span};
use crate::edge;
use crate::envelope::{self, CheckedTool, Outcome};
use crate::lifecycle::Lifecycle;
use crate::listing::{self, Summary};
use crate::policy::{
    CALL_DEADLINE, MAX_ERROR_CHARS, MAX_NAMES_IN_ERROR, MAX_SEARCH_RESULTS, MAX_SUGGESTION_EDITS,
};
use crate::search::{self, Indexes, Query};
use crate::session::{Outbound, Report, SessionError};
use crate::text;
use crate::text::{Piece, Render, Scrubber, Shown};
use crate::view::Seen;

use self::arguments::{CallArguments, ListArguments, Schemas};

const GET_DYNAMIC_TOOLS: &str = "get_dynamic_tools";
const CALL_DYNAMIC_TOOL: &str = "call_dynamic_tool";

/// The Pack: every configured server, in name order. Its calls run as tasks on the runtime
/// the Host lent it, whatever executor polls them.
pub(crate) struct McpPack {
    context: Arc<CallContext>,
    runtime: Handle,
    board: Board,
    /// The servers' connection tasks, until shutdown takes them.
    tasks: Mutex<Vec<JoinHandle<()>>>,
    lifecycle: Arc<Lifecycle>,
}

/// What a call needs, shared with the tasks that run calls.
struct CallContext {
    id: String,
    servers: Vec<Arc<Server>>,
    scrubber: Arc<Scrubber>,
    /// The two tools' published schemas, which their arguments are checked against.
    schemas: &'static Schemas,
    /// Each server's catalog indexed for search, as of its last search.
    indexes: Indexes,
}

impl McpPack {
    pub(crate) fn new(
        id: String,
        runtime: Handle,
        (servers, board): (Vec<Arc<Server>>, Board),
        tasks: Vec<JoinHandle<()>>,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        Self {
            context: Arc::new(CallContext {
                id,
                indexes: Indexes::new(servers.len()),
                servers,
                scrubber,
                schemas: Schemas::shared(),
            }),
            runtime,
            board,
            tasks: Mutex::new(tasks),
            lifecycle: Arc::new(Lifecycle::new()),
        }
    }

    /// The call, run on the Pack's runtime. Polled there (the usual Host), it runs in place,
    /// so dropping it drops its work at once; polled by any other executor, it runs as a task
    /// of the Pack's runtime, which dropping the call aborts. Either way a dropped call tells
    /// its server, as a dropped request does.
    fn spawn_call(
        &self,
        tool: &str,
        args: Value,
        options: CallOptions,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        let Some(mut ticket) = self.lifecycle.enter() else {
            return Box::pin(async { Err(shut_down()) });
        };
        let context = Arc::clone(&self.context);
        let tool = tool.to_owned();
        let work = async move {
            tokio::select! {
                outcome = context.call(&tool, args, options) => outcome,
                () = ticket.closing() => Err(shut_down()),
            }
        };
        let runtime = self.runtime.clone();
        Box::pin(async move {
            if Handle::try_current().is_ok_and(|here| here.id() == runtime.id()) {
                return work.await;
            }
            // The call's task, aborted when the caller stops waiting for it.
            match AbortOnDropHandle::new(runtime.spawn(work)).await {
                Ok(outcome) => outcome,
                // The runtime is shutting down (an abort of ours drops this future first).
                Err(e) if e.is_cancelled() => Err(shut_down()),
                Err(_) => {
                    Err(Shown::ours("the call failed inside the Pack").leave(ToolError::Transport))
                }
            }
        })
    }
}

impl McpPack {
    fn server_named(&self, name: &str) -> Option<Arc<Server>> {
        self.context
            .servers
            .iter()
            .find(|s| s.name == name)
            .cloned()
    }
}

/// The answer to a call made after shutdown, or cut short by it.
const SHUT_DOWN: &str = "the Pack was shut down";

/// A call's error when the Pack was shut down.
fn shut_down() -> ToolError {
    Shown::ours(SHUT_DOWN).leave(ToolError::Transport)
}

impl CallContext {
    /// The server of `namespace`, if the caller may know it; else the error an unknown
    /// namespace gets, naming only the namespaces the caller may know.
    fn server(&self, namespace: &str, seen: Seen<'_>) -> Result<&Arc<Server>, ToolError> {
        let visible = self.servers.iter().filter(|s| seen.server(s));
        visible
            .clone()
            .find(|s| s.name == namespace)
            .ok_or_else(|| {
                // A suggestion too is only ever a name the caller may know.
                let s = &self.scrubber;
                let known: Vec<&str> = visible.map(|s| s.name.as_str()).collect();
                let (typed, known) = (quoted(namespace, s), shown_names(&known, s));
                let suggested = did_you_mean(namespace, &known);
                error(
                    ToolError::Invalid,
                    [
                        "unknown namespace ".into(),
                        (&typed).into(),
                        "; ".into(),
                        (&suggested).into(),
                        "the namespaces are: ".into(),
                        (&names(&known)).into(),
                    ],
                )
            })
    }

    async fn list(&self, args: ListArguments, seen: Seen<'_>) -> Result<String, ToolError> {
        let namespace = args.namespace.as_deref();
        // The schema's `dependentSchemas` refuses a query with a toolName.
        if let Some(query) = args.query.as_deref() {
            return self.search(query, namespace, seen).await;
        }
        match (namespace, args.tool_name.as_deref()) {
            // The schema's `dependentRequired` refuses a toolName without a namespace.
            (None, _) => {
                let visible: Vec<&Arc<Server>> =
                    self.servers.iter().filter(|s| seen.server(s)).collect();
                for server in &visible {
                    server.recheck_before_use(false).await;
                }
                let statuses: Vec<Status> = visible.iter().map(|s| seen.status(s)).collect();
                let servers = visible.into_iter().zip(&statuses);
                let servers = servers.map(|(server, status)| Summary::new(server, status));
                Ok(listing::every_server(servers.collect()))
            }
            (Some(namespace), None) => {
                let server = self.server(namespace, seen)?;
                server.used();
                server.recheck_before_use(server.holds_any()).await;
                let status = seen.status(server);
                match &status {
                    Status::Ready(ready) => Ok(listing::one_server(
                        &server.name,
                        &ready.tools,
                        ready.session.protocol_version(),
                    )),
                    _ => Ok(listing::to_json(&Summary::new(server, &status))),
                }
            }
            (Some(namespace), Some(tool_name)) => {
                let server = self.server(namespace, seen)?;
                server.recheck_before_use(server.holds(tool_name)).await;
                let (_, tool) = ready_tool(server, seen, tool_name, &self.scrubber)?;
                Ok(listing::one_tool(&server.name, &tool))
            }
        }
    }

    /// The ready servers' tools (or `namespace`'s) that best match `query`, best first. A
    /// search reads tools as the listing of a namespace does: a server holding tools has its
    /// pin record read again first, so a tool approved elsewhere can be found at once.
    /// Only the servers and tools the caller may see are searched.
    async fn search(
        &self,
        query: &str,
        namespace: Option<&str>,
        seen: Seen<'_>,
    ) -> Result<String, ToolError> {
        let servers = self.servers.iter().enumerate();
        let mut searched: Vec<(usize, &Arc<Server>)> =
            servers.filter(|(_, s)| seen.server(s)).collect();
        if let Some(namespace) = namespace {
            let server = self.server(namespace, seen)?;
            searched.retain(|(_, s)| Arc::ptr_eq(s, server));
        }
        let mut indexes = Vec::with_capacity(searched.len());
        let mut not_searched = Vec::new();
        for (at, server) in searched {
            server.used();
            server.recheck_before_use(server.holds_any()).await;
            match server.status() {
                Status::Ready(ready) => {
                    match self.indexes.of(at, &server.name, &ready.tools).await {
                        Some(index) => indexes.push((server, index)),
                        None => not_searched.push(server.name.as_str()),
                    }
                }
                _ => not_searched.push(server.name.as_str()),
            }
        }
        let catalogs: Vec<_> = (indexes.iter())
            .map(|(server, index)| (server.name.as_str(), &**index))
            .collect();
        let shown = |at: usize, tool: &str| seen.tool(indexes[at].0, tool);
        // Without a view every tool of the Pack is the caller's to see.
        let visible = seen.0.map(|_| &shown as &search::Visible<'_>);
        let found = search::search(&catalogs, &Query::new(query), visible, MAX_SEARCH_RESULTS);
        Ok(listing::found::answer(query, &found, not_searched))
    }

    async fn call_tool(
        &self,
        args: CallArguments,
        progress: Option<ProgressSink>,
        seen: Seen<'_>,
    ) -> Result<Shown, ToolError> {
        let (namespace, tool_name) = (args.namespace.as_str(), args.tool_name.as_str());
        let arguments = Value::Object(args.arguments);
        let server = self.server(namespace, seen)?;
        server.used();
        server.recheck_before_use(server.holds(tool_name)).await;
        let (ready, tool) = ready_tool(server, seen, tool_name, &self.scrubber)?;
        // The checks count inside the deadline: a schema that makes them slow cannot stretch
        // a call. Dropping this future stops each step, the server's request included.
        let call = async {
            let arguments = envelope::check_arguments(&tool, arguments)
                .await
                .map_err(|e| e.leave(ToolError::Invalid))?;
            let headers = (tool.param_headers.headers(&arguments))
                .map_err(|e| e.render(&self.scrubber).leave(ToolError::Invalid))?;
            let report = progress
                .as_ref()
                .map(|sink| move |noticed| sink(edge::progress(noticed, &self.scrubber)));
            let call = Outbound::tool_call(&tool.name, &arguments)
                .with_headers(&headers)
                .with_progress(report.as_ref().map(|r| r as Report<'_>));
            let result = ready
                .session
                .call_tool(call)
                .await
                .map_err(|e| session_error(&e, &self.scrubber))?;
            match envelope::convert_result(result, &tool).await {
                Outcome::Text(text) => Ok(text),
                Outcome::ToolFailed(text) => Err(text.leave(ToolError::Backend)),
            }
        };
        tokio::time::timeout(CALL_DEADLINE, call.instrument(server_span(&server.name)))
            .await
            .unwrap_or_else(|_| {
                let namespace = text::show(&self.scrubber, namespace, MAX_ERROR_CHARS);
                Err(error(
                    ToolError::Transport,
                    [
                        (&namespace).into(),
                        " did not answer within ".into(),
                        CALL_DEADLINE.as_secs().into(),
                        " s".into(),
                    ],
                ))
            })
    }
}

impl CallContext {
    /// Answers a call of one of the two tools: every text in it, and in its error, shown
    /// (scrubbed, cleaned and cut) where it was made.
    async fn call(
        &self,
        tool: &str,
        args: Value,
        options: CallOptions,
    ) -> Result<String, ToolError> {
        let seen = Seen(options.view.as_deref());
        let which = tool
            .strip_prefix(self.id.as_str())
            .and_then(|t| t.strip_prefix('/'))
            .unwrap_or_default();
        let schemas = &self.schemas;
        let answer = match which {
            GET_DYNAMIC_TOOLS => match schemas.list.parse(args, &self.scrubber) {
                Ok(args) => (self.list(args, seen).await)
                    .map(|json| text::show_listing(&self.scrubber, json)),
                Err(e) => Err(e),
            },
            // A result is a `Shown`: scrubbed once, block by block, before its cut.
            CALL_DYNAMIC_TOOL => match schemas.call.parse(args, &self.scrubber) {
                Ok(args) => self.call_tool(args, options.progress, seen).await,
                Err(e) => Err(e),
            },
            _ => {
                let (typed, id) = (quoted(tool, &self.scrubber), self.shown_id());
                Err(error(
                    ToolError::Invalid,
                    [
                        "unknown tool ".into(),
                        (&typed).into(),
                        "; this Pack has ".into(),
                        (&id).into(),
                        "/".into(),
                        GET_DYNAMIC_TOOLS.into(),
                        " and ".into(),
                        (&id).into(),
                        "/".into(),
                        CALL_DYNAMIC_TOOL.into(),
                    ],
                ))
            }
        };
        answer.map(|text| text.leave(String::from))
    }

    /// The Pack's id, as an error names it.
    fn shown_id(&self) -> Shown {
        text::show(&self.scrubber, &self.id, MAX_ERROR_CHARS)
    }
}

impl Drop for McpPack {
    /// A Pack dropped without [`Pack::shutdown`] still stops its work and ends its sessions,
    /// in the background.
    fn drop(&mut self) {
        self.lifecycle.signal();
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            task.abort();
        }
        for server in &self.context.servers {
            if let Status::Ready(ready) = server.status() {
                self.runtime
                    .spawn(async move { ready.session.close().await });
            }
        }
    }
}

impl Pack for McpPack {
    fn prelude(&self) -> Option<&str> {
        None
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let schemas = &self.context.schemas;
        vec![
            ToolSpec {
                name: format!("{}/{GET_DYNAMIC_TOOLS}", self.context.id),
                description: "Lists the tools of the connected MCP servers. With no arguments: \
                    each server's namespace, status (ready, loading, error with a reason, or \
                    disabled by the user) and \
                    tool names, and as held the number of a ready server's tools held until the \
                    user approves them (changed or new since approved). With namespace: that \
                    server's tools with descriptions and input schemas, and under rejected the \
                    ones it cannot call, each with why. With namespace and toolName: that one \
                    tool. With query (and optionally namespace): the callable tools that best \
                    match it, best first, each with a short description. Answers JSON."
                    .to_owned(),
                input_schema: schemas.list.schema.clone(),
            },
            ToolSpec {
                name: format!("{}/{CALL_DYNAMIC_TOOL}", self.context.id),
                description: "Calls a tool of a connected MCP server. Use get_dynamic_tools \
                    first to find the namespace, the tool's exact name and its input schema; \
                    arguments must match that schema."
                    .to_owned(),
                input_schema: schemas.call.schema.clone(),
            },
        ]
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Unavailable>> {
        // Servers keep connecting in the background; a run sees the two tools at once.
        Box::pin(async { Ok(()) })
    }

    fn call_with(
        &self,
        tool: &str,
        args: Value,
        options: CallOptions,
    ) -> BoxFuture<'_, Result<String, ToolError>> {
        self.spawn_call(tool, args, options)
    }

    fn status(&self) -> StatusReceiver {
        self.board.subscribe()
    }

    fn held(&self, backend: &str) -> BoxFuture<'_, Vec<HeldTool>> {
        let server = self.server_named(backend);
        // On the Pack's runtime, like a call: the store is the Host's blocking I/O.
        let held = self.runtime.spawn(async move {
            match server {
                Some(server) => server.held().await,
                None => Vec::new(),
            }
        });
        Box::pin(async move { held.await.unwrap_or_default() })
    }

    fn reviewed(&self, backend: &str, tools: &[HeldTool]) -> BoxFuture<'_, Result<(), StoreError>> {
        let server = self.server_named(backend);
        let tools = tools.to_vec();
        let recorded = self.runtime.spawn(async move {
            match server {
                Some(server) => server.reviewed(&tools).await,
                None => Ok(()),
            }
        });
        Box::pin(async move {
            recorded
                .await
                .unwrap_or_else(|_| Err(StoreError::new(SHUT_DOWN)))
        })
    }

    fn record_changed(&self, backend: &str) {
        if let Some(server) = self.server_named(backend) {
            server.record_changed();
        }
    }

    fn approve(
        &self,
        backend: &str,
        tools: &[HeldTool],
    ) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        let server = self.server_named(backend);
        let tools = tools.to_vec();
        let approved = self.runtime.spawn(async move {
            match server {
                Some(server) => server.approve(&tools).await,
                None => Ok(Vec::new()),
            }
        });
        Box::pin(async move {
            approved
                .await
                .unwrap_or_else(|_| Err(StoreError::new(SHUT_DOWN)))
        })
    }

    fn set_enabled(
        &self,
        backend: &str,
        tool: Option<&str>,
        enabled: bool,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let server = self.server_named(backend);
        let tool = tool.map(str::to_owned);
        let decide = async move {
            match server {
                Some(server) => server.set_enabled(tool.as_deref(), enabled).await,
                None => Err(StoreError::new("no such server")),
            }
        };
        let runtime = self.runtime.clone();
        // Where it is polled, when that is a runtime (the store's reads are blocking I/O on
        // its pool): a Host may ask it of a Pack whose runtime never runs, to reach no server.
        // Elsewhere, on the Pack's runtime.
        Box::pin(async move {
            if Handle::try_current().is_ok() {
                return decide.await;
            }
            (runtime.spawn(decide).await).unwrap_or_else(|_| Err(StoreError::new(SHUT_DOWN)))
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        let lifecycle = Arc::clone(&self.lifecycle);
        let context = Arc::clone(&self.context);
        // On the Pack's runtime, like its calls: the farewells are HTTP requests.
        let done = self.runtime.spawn(async move {
            lifecycle.close().await;
            for task in tasks {
                task.abort();
                let _ = task.await;
            }
            let mut farewells = tokio::task::JoinSet::new();
            for server in &context.servers {
                if let Status::Ready(ready) = server.status() {
                    farewells.spawn(async move { ready.session.close().await });
                }
            }
            farewells.join_all().await;
        });
        Box::pin(async move {
            let _ = done.await;
        })
    }
}

/// A ready server's tool, or the model-readable reason there is none. A tool the caller may
/// not see is one the server does not have, and the names the error lists are the visible
/// ones.
fn ready_tool(
    server: &Server,
    seen: Seen<'_>,
    tool_name: &str,
    scrubber: &Scrubber,
) -> Result<(Ready, Arc<CheckedTool>), ToolError> {
    let name = text::show(scrubber, &server.name, MAX_ERROR_CHARS);
    let ready = match server.status() {
        Status::Ready(ready) => ready,
        Status::Loading => {
            let why = " (still connecting); try again shortly";
            return Err(not_ready(ToolError::Invalid, &name, "loading", why.into()));
        }
        // A server that could not be reached is the transport's failure; a refused entry
        // is the configuration's, which no retry of the call changes.
        Status::Failed(reason) => {
            return Err(not_ready(
                ToolError::Transport,
                &name,
                "error: ",
                (&reason).into(),
            ));
        }
        Status::Refused(reason) => {
            let reason = text::show(scrubber, &reason.to_string(), MAX_ERROR_CHARS);
            return Err(not_ready(
                ToolError::Invalid,
                &name,
                "error: ",
                (&reason).into(),
            ));
        }
        Status::Disabled => {
            let why = " (the user turned it off)";
            return Err(not_ready(ToolError::Invalid, &name, "disabled", why.into()));
        }
    };
    let visible = seen.tool(server, tool_name);
    if let Some(held) = ready.tools.held.get(tool_name).filter(|_| visible) {
        let typed = quoted(tool_name, scrubber);
        return Err(error(
            ToolError::Invalid,
            [
                (&name).into(),
                " holds the tool ".into(),
                (&typed).into(),
                ": ".into(),
                (&held.reason).into(),
            ],
        ));
    }
    let tool = ready.tools.tools.get(tool_name).filter(|_| visible);
    let tool = tool.cloned().ok_or_else(|| {
        let tools = ready.tools.tools.keys().map(String::as_str);
        let known: Vec<&str> = tools.filter(|t| seen.tool(server, t)).collect();
        let (typed, known) = (quoted(tool_name, scrubber), shown_names(&known, scrubber));
        let suggested = did_you_mean(tool_name, &known);
        error(
            ToolError::Invalid,
            [
                (&name).into(),
                " has no tool ".into(),
                (&typed).into(),
                "; ".into(),
                (&suggested).into(),
                "its tools are: ".into(),
                (&names(&known)).into(),
            ],
        )
    })?;
    Ok((ready, tool))
}

/// `<server> is not ready: its status is <status><more>`.
fn not_ready(
    kind: fn(String) -> ToolError,
    name: &Shown,
    status: &'static str,
    more: Piece<'_>,
) -> ToolError {
    let words = " is not ready: its status is ";
    error(kind, [name.into(), words.into(), status.into(), more])
}

/// The error of `kind` whose text is `pieces`, cut to [`MAX_ERROR_CHARS`]: errors quote names,
/// paths and messages, and a long one (a model's own argument quoted back, say) must not
/// become a result's worth. Each piece is shown already, or the Pack's own words.
fn error<'a>(
    kind: fn(String) -> ToolError,
    pieces: impl IntoIterator<Item = Piece<'a>>,
) -> ToolError {
    Shown::concat(pieces, MAX_ERROR_CHARS).leave(kind)
}

/// A JSON-RPC error is the server's answer (backend); anything else kept the answer from
/// arriving (transport). What the server said in it is shown scrubbed by `scrubber`.
fn session_error(e: &SessionError, scrubber: &Scrubber) -> ToolError {
    let kind = match e {
        SessionError::Rpc { .. } | SessionError::InputRequired(_) => ToolError::Backend,
        _ => ToolError::Transport,
    };
    e.render(scrubber).leave(kind)
}

/// A model-written name, quoted and escaped so it cannot pass as anything else (scrubbed
/// first, as [`text::show_escaped`] does: once escaped, a secret in it would no longer be
/// found).
fn quoted(name: &str, scrubber: &Scrubber) -> Shown {
    let escaped = text::show_escaped(scrubber, name, MAX_ERROR_CHARS);
    // Cut already: the quotes around it are not cut again.
    Shown::concat(["\"".into(), (&escaped).into(), "\"".into()], usize::MAX)
}

/// Names the caller may know (the configuration's servers, a catalog's tools), each shown.
fn shown_names(names: &[&str], scrubber: &Scrubber) -> Vec<Shown> {
    let shown = |name: &&str| text::show(scrubber, name, MAX_ERROR_CHARS);
    names.iter().map(shown).collect()
}

/// `did you mean NAME? ` of the name of `all` nearest to `typed` (within
/// [`MAX_SUGGESTION_EDITS`]), or nothing.
fn did_you_mean(typed: &str, all: &[Shown]) -> Shown {
    let texts = all.iter().map(Shown::as_str);
    let nearest = runvil_plugin::nearest(typed, texts, MAX_SUGGESTION_EDITS);
    match nearest.and_then(|name| all.iter().find(|shown| *shown == name)) {
        Some(name) => Shown::concat(
            ["did you mean ".into(), name.into(), "? ".into()],
            MAX_ERROR_CHARS,
        ),
        None => Shown::ours(""),
    }
}

/// Up to [`MAX_NAMES_IN_ERROR`] names, comma-separated, saying how many more there are.
fn names(all: &[Shown]) -> Shown {
    if all.is_empty() {
        return Shown::ours("(none)");
    }
    let shown = &all[..all.len().min(MAX_NAMES_IN_ERROR)];
    let more = all.len() - shown.len();
    let mut pieces: Vec<Piece<'_>> = Vec::with_capacity(2 * shown.len() + 3);
    for (at, name) in shown.iter().enumerate() {
        if at > 0 {
            pieces.push(", ".into());
        }
        pieces.push(name.into());
    }
    if more > 0 {
        pieces.extend::<[Piece<'_>; 3]>([" and ".into(), more.into(), " more".into()]);
    }
    Shown::concat(pieces, usize::MAX)
}
