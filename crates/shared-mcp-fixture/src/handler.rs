//! The fixture's rmcp `ServerHandler`: which tools it lists (and how, in pages or at once), the
//! protocol revisions it speaks, the gate that holds handshakes, and the cancellations it
//! records. The tools themselves are in `tools.rs`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::recorder::{Ids, Recorder};
use crate::tools;

/// Which tools a fixture lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSet {
    /// Every tool of the catalog ([`TOOL_NAMES`]), in one page.
    All,
    /// These tools of the catalog only, in one page.
    Only(&'static [&'static str]),
    /// Five tools ([`PAGED_TOOL_NAMES`]) over three `tools/list` pages of at most two; each
    /// call answers `called <name>`.
    Paged,
    /// `echo` and this many more, `tool_001`, `tool_002`, ..., each with a small schema of its
    /// own and answering `called <name>`: a stand-in for a large server's catalog.
    Generated(usize),
}

/// The names of the catalog's tools in name order, as a listing in name order shows them.
pub const TOOL_NAMES: [&str; 12] = [
    "add",
    "audio",
    "echo",
    "embedded",
    "fails",
    "image",
    "link",
    "mixed",
    "progress",
    "rpc_error",
    "slow",
    "structured",
];

/// The names of [`ToolSet::Paged`]'s tools in name order.
pub const PAGED_TOOL_NAMES: [&str; 5] = ["p1a", "p1b", "p2a", "p2b", "p3a"];

/// The pages of [`ToolSet::Paged`], each out of name order: (cursor, names, next cursor).
const PAGES: [(Option<&str>, &[&str], Option<&str>); 3] = [
    (None, &["p1b", "p1a"], Some("page-2")),
    (Some("page-2"), &["p2b", "p2a"], Some("page-3")),
    (Some("page-3"), &["p3a"], None),
];

/// The input schema of `echo`, as the fixture lists it.
pub fn echo_schema() -> Value {
    let router = tools::router();
    let echo = router
        .get("echo")
        .map(|tool| tool.input_schema.as_ref().clone());
    Value::Object(echo.unwrap_or_default())
}

/// Which protocol revisions a fixture speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revisions {
    /// Every revision rmcp knows, 2026-07-28 (which rmcp serves without a session) included.
    All,
    /// Only the session-based revisions (2025-11-25 and before), so a client shakes hands.
    SessionBased,
}

/// What every session of one fixture shares.
pub(crate) struct Settings {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) tools: ToolSet,
    pub(crate) revisions: Revisions,
    pub(crate) slow_for: Duration,
}

/// One session's handler; every session of a fixture shares its settings and router.
#[derive(Clone)]
pub(crate) struct Handler {
    settings: Arc<Settings>,
    router: Arc<ToolRouter<Handler>>,
}

impl Handler {
    /// A handler factory's product: the catalog's router cut to `settings.tools`.
    pub(crate) fn new(settings: Arc<Settings>) -> Self {
        let mut router = tools::router();
        let keep: &[&str] = match &settings.tools {
            ToolSet::All => &TOOL_NAMES,
            ToolSet::Only(names) => names,
            ToolSet::Paged => &[],
            ToolSet::Generated(_) => &["echo"],
        };
        for name in TOOL_NAMES {
            if !keep.contains(&name) {
                router.remove_route(name);
            }
        }
        Self {
            settings,
            router: Arc::new(router),
        }
    }

    pub(crate) fn recorder(&self) -> &Recorder {
        &self.settings.recorder
    }

    pub(crate) fn slow_for(&self) -> Duration {
        self.settings.slow_for
    }

    /// Whether `name` is one of the listed tools that answer with their own name.
    fn answers_by_name(&self, name: &str) -> bool {
        match self.settings.tools {
            ToolSet::Paged => PAGED_TOOL_NAMES.contains(&name),
            ToolSet::Generated(more) => name
                .strip_prefix("tool_")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| (1..=more).contains(&n)),
            ToolSet::All | ToolSet::Only(_) => false,
        }
    }

    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, ErrorData> {
        let (tools, next) = match self.settings.tools {
            ToolSet::Paged => {
                let Some((_, names, next)) = PAGES.iter().find(|(at, ..)| *at == cursor) else {
                    let message = format!("unknown cursor {}", cursor.unwrap_or_default());
                    return Err(ErrorData::invalid_params(message, None));
                };
                let tools = names
                    .iter()
                    .map(|name| Tool::new(*name, format!("Tool {name}."), no_arguments()))
                    .collect();
                (tools, next.map(str::to_owned))
            }
            ToolSet::Generated(more) => {
                let mut tools = self.router.list_all();
                tools.extend((1..=more).map(generated));
                (tools, None)
            }
            // Reversed, so a listing in name order is the client's doing.
            ToolSet::All | ToolSet::Only(_) => {
                (self.router.list_all().into_iter().rev().collect(), None)
            }
        };
        let mut page = ListToolsResult::with_all_items(tools);
        page.next_cursor = next;
        Ok(page)
    }
}

/// `tool_<index>` of [`ToolSet::Generated`]: a schema of the size real catalog entries have.
fn generated(index: usize) -> Tool {
    let schema = object(json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        "required": ["query"],
    }));
    Tool::new(
        format!("tool_{index:03}"),
        format!("Tool number {index}: a stand-in for a real server's catalog entry."),
        schema,
    )
}

fn no_arguments() -> Arc<JsonObject> {
    object(json!({"type": "object", "properties": {}}))
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.settings.revisions {
            Revisions::All => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            Revisions::SessionBased => {
                Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
            }
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.recorder().pass_gate().await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.page(request.and_then(|r| r.cursor).as_deref())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.router.has_route(&request.name) {
            return self
                .router
                .call(ToolCallContext::new(self, request, context))
                .await;
        }
        if self.answers_by_name(&request.name) {
            let text = format!("called {}", request.name);
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        let message = format!("no tool {}", request.name);
        Err(ErrorData::invalid_params(message, None))
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let id = notification.request_id.as_ref().map_or(Value::Null, |id| {
            serde_json::to_value(id).unwrap_or(Value::Null)
        });
        self.recorder().record(Ids::CancelNotifications, id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_is_the_routed_tools_in_name_order() {
        let names: Vec<_> = tools::router()
            .list_all()
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect();
        assert_eq!(names, TOOL_NAMES);
    }

    #[test]
    fn echo_lists_its_text_as_required() {
        let schema = echo_schema();
        assert_eq!(schema["required"], json!(["text"]), "{schema}");
        assert_eq!(schema["properties"]["text"]["type"], "string", "{schema}");
    }
}
