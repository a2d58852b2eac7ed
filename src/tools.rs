//! The Pack and its two tools: `get_dynamic_tools` lists servers and their tools,
//! `call_dynamic_tool` calls one. Both take model-written arguments, so every mistake gets
//! an error that says what was wrong and what is valid.

use std::sync::Arc;

use runvil_plugin::{BoxFuture, Pack, ToolError, ToolSpec, Unavailable};
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

use crate::connector::{Ready, Server, Status};
use crate::envelope::{self, CheckedTool, Outcome};
use crate::listing::{self, Summary};
use crate::policy::{CALL_DEADLINE, MAX_ERROR_CHARS, MAX_NAMES_IN_ERROR};
use crate::secret::Scrubber;
use crate::session::SessionError;

const GET_DYNAMIC_TOOLS: &str = "get_dynamic_tools";
const CALL_DYNAMIC_TOOL: &str = "call_dynamic_tool";

/// The Pack: every configured server, in name order.
pub(crate) struct McpPack {
    id: String,
    servers: Vec<Arc<Server>>,
    tasks: Vec<JoinHandle<()>>,
    scrubber: Arc<Scrubber>,
}

impl McpPack {
    pub(crate) fn new(
        id: String,
        servers: Vec<Arc<Server>>,
        tasks: Vec<JoinHandle<()>>,
        scrubber: Arc<Scrubber>,
    ) -> Self {
        Self {
            id,
            servers,
            tasks,
            scrubber,
        }
    }

    fn server(&self, namespace: &str) -> Result<&Arc<Server>, ToolError> {
        self.servers
            .iter()
            .find(|s| s.name == namespace)
            .ok_or_else(|| {
                let known = names(self.servers.iter().map(|s| s.name.as_str()));
                ToolError::Invalid(format!(
                    "unknown namespace {}; the namespaces are: {known}",
                    quoted(namespace, &self.scrubber)
                ))
            })
    }

    fn list(&self, args: &Map<String, Value>) -> Result<String, ToolError> {
        let namespace = optional_string(args, "namespace")?;
        let tool_name = optional_string(args, "toolName")?;
        match (namespace, tool_name) {
            (None, Some(_)) => Err(ToolError::Invalid(
                "toolName needs a namespace: pass both, or call with no arguments to list \
                     the namespaces"
                    .to_owned(),
            )),
            (None, None) => {
                let statuses: Vec<Status> = self.servers.iter().map(|s| s.status()).collect();
                let servers = self.servers.iter().zip(&statuses);
                let servers = servers.map(|(server, status)| Summary::new(server, status));
                Ok(listing::every_server(servers.collect()))
            }
            (Some(namespace), None) => {
                let server = self.server(namespace)?;
                let status = server.status();
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
                let server = self.server(namespace)?;
                let (_, tool) = ready_tool(server, tool_name, &self.scrubber)?;
                Ok(listing::one_tool(&server.name, &tool))
            }
        }
    }

    async fn call_tool(&self, mut args: Map<String, Value>) -> Result<String, ToolError> {
        let arguments = args.remove("arguments");
        let namespace = optional_string(&args, "namespace")?.ok_or_else(|| {
            ToolError::Invalid(
                "namespace is required: the server's name, as get_dynamic_tools lists it"
                    .to_owned(),
            )
        })?;
        let tool_name = optional_string(&args, "toolName")?.ok_or_else(|| {
            ToolError::Invalid(
                "toolName is required: the tool's name, as get_dynamic_tools lists it".to_owned(),
            )
        })?;
        let arguments = match arguments {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(arguments @ Value::Object(_)) => arguments,
            Some(_) => return Err(ToolError::Invalid("arguments must be an object".to_owned())),
        };
        let server = self.server(namespace)?;
        let (ready, tool) = ready_tool(server, tool_name, &self.scrubber)?;
        // The checks count inside the deadline: a schema that makes them slow cannot stretch
        // a call. Dropping this future stops each step, the server's request included.
        let call = async {
            let arguments = envelope::check_arguments(&tool, arguments)
                .await
                .map_err(ToolError::Invalid)?;
            let headers = tool
                .param_headers
                .headers(&arguments)
                .map_err(ToolError::Invalid)?;
            let result = ready
                .session
                .call_tool(&tool.name, arguments, &headers)
                .await
                .map_err(session_error)?;
            match envelope::convert_result(result, &tool).await {
                Outcome::Text(text) => Ok(text),
                Outcome::ToolFailed(text) => Err(ToolError::Backend(text)),
            }
        };
        tokio::time::timeout(CALL_DEADLINE, call)
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::Transport(format!(
                    "{namespace} did not answer within {} s",
                    CALL_DEADLINE.as_secs()
                )))
            })
    }

    /// Everything leaving the Pack passes here: no configured secret gets out, whatever a
    /// server echoed.
    fn scrub(&self, outcome: Result<String, ToolError>) -> Result<String, ToolError> {
        let s = &self.scrubber;
        match outcome {
            Ok(text) => Ok(s.clean(text)),
            // Scrubbed before it is cut, so no cut can split a secret past the scrubber. A
            // backend error is a tool's own text, capped as results are.
            Err(ToolError::Invalid(m)) => Err(ToolError::Invalid(capped(s.clean(m)))),
            Err(ToolError::Backend(m)) => Err(ToolError::Backend(s.clean(m))),
            Err(ToolError::Transport(m)) => Err(ToolError::Transport(capped(s.clean(m)))),
            Err(other) => Err(other),
        }
    }
}

impl Drop for McpPack {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        for server in &self.servers {
            if let Status::Ready(ready) = server.status() {
                ready.session.close();
            }
        }
    }
}

impl Pack for McpPack {
    fn prelude(&self) -> Option<&str> {
        None
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let string = |description: &str| json!({"type": "string", "description": description});
        vec![
            ToolSpec {
                name: format!("{}/{GET_DYNAMIC_TOOLS}", self.id),
                description: "Lists the tools of the connected MCP servers. With no arguments: \
                    each server's namespace, status (ready, loading, or error with a reason) and \
                    tool names. With namespace: that server's tools with descriptions and input \
                    schemas. With namespace and toolName: that one tool. Answers JSON."
                    .to_owned(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "namespace": string("A server's namespace, exactly as listed."),
                        "toolName": string("A tool's name, exactly as listed; needs namespace."),
                    },
                    "additionalProperties": false,
                }),
            },
            ToolSpec {
                name: format!("{}/{CALL_DYNAMIC_TOOL}", self.id),
                description: "Calls a tool of a connected MCP server. Use get_dynamic_tools \
                    first to find the namespace, the tool's exact name and its input schema; \
                    arguments must match that schema."
                    .to_owned(),
                input_schema: json!({
                    "type": "object",
                    "properties": {
                        "namespace": string("The server's namespace, exactly as listed."),
                        "toolName": string("The tool's name, exactly as listed."),
                        "arguments": {"type": "object", "description": "The tool's arguments; {} when omitted."},
                    },
                    "required": ["namespace", "toolName"],
                    "additionalProperties": false,
                }),
            },
        ]
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Unavailable>> {
        // Servers keep connecting in the background; a run sees the two tools at once.
        Box::pin(async { Ok(()) })
    }

    fn call(&self, tool: &str, args: Value) -> BoxFuture<'_, Result<String, ToolError>> {
        let which = tool
            .strip_prefix(self.id.as_str())
            .and_then(|t| t.strip_prefix('/'))
            .unwrap_or_default()
            .to_owned();
        let tool = tool.to_owned();
        Box::pin(async move {
            let outcome = match arguments_object(&which, args, &self.scrubber) {
                Err(e) => Err(e),
                Ok(args) => match which.as_str() {
                    GET_DYNAMIC_TOOLS => self.list(&args),
                    CALL_DYNAMIC_TOOL => self.call_tool(args).await,
                    _ => Err(ToolError::Invalid(format!(
                        "unknown tool {}; this Pack has {}/{GET_DYNAMIC_TOOLS} and {}/{CALL_DYNAMIC_TOOL}",
                        quoted(&tool, &self.scrubber),
                        self.id,
                        self.id
                    ))),
                },
            };
            self.scrub(outcome)
        })
    }
}

/// The arguments as an object (null is no arguments), with no key the tool does not take.
fn arguments_object(
    tool: &str,
    args: Value,
    scrubber: &Scrubber,
) -> Result<Map<String, Value>, ToolError> {
    let args = match args {
        Value::Null => Map::new(),
        Value::Object(args) => args,
        _ => {
            return Err(ToolError::Invalid(
                "the arguments must be a JSON object".to_owned(),
            ));
        }
    };
    let allowed: &[&str] = match tool {
        GET_DYNAMIC_TOOLS => &["namespace", "toolName"],
        CALL_DYNAMIC_TOOL => &["namespace", "toolName", "arguments"],
        _ => return Ok(args),
    };
    if let Some(key) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ToolError::Invalid(format!(
            "unknown argument {}; {tool} takes {}",
            quoted(key, scrubber),
            allowed.join(", ")
        )));
    }
    Ok(args)
}

fn optional_string<'a>(
    args: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError::Invalid(format!("{key} must be a string"))),
    }
}

/// A ready server's tool, or the model-readable reason there is none.
fn ready_tool(
    server: &Server,
    tool_name: &str,
    scrubber: &Scrubber,
) -> Result<(Ready, Arc<CheckedTool>), ToolError> {
    let ready = match server.status() {
        Status::Ready(ready) => ready,
        Status::Loading => {
            return Err(ToolError::Invalid(format!(
                "{} is not ready: its status is loading (still connecting); try again shortly",
                server.name
            )));
        }
        Status::Error(reason) => {
            return Err(ToolError::Invalid(format!(
                "{} is not ready: its status is error: {reason}",
                server.name
            )));
        }
    };
    let tool = ready.tools.tools.get(tool_name).cloned().ok_or_else(|| {
        let known = names(ready.tools.tools.keys().map(String::as_str));
        ToolError::Invalid(format!(
            "{} has no tool {}; its tools are: {known}",
            server.name,
            quoted(tool_name, scrubber)
        ))
    })?;
    Ok((ready, tool))
}

/// An error text cut to [`MAX_ERROR_CHARS`]: errors quote names, paths and messages, and a
/// long one (a model's own argument quoted back, say) must not become a result's worth.
fn capped(text: String) -> String {
    envelope::truncate(text, MAX_ERROR_CHARS)
}

/// A JSON-RPC error is the server's answer (backend); anything else kept the answer from
/// arriving (transport).
fn session_error(e: SessionError) -> ToolError {
    match e {
        SessionError::Rpc { .. } | SessionError::InputRequired(_) => {
            ToolError::Backend(e.into_text())
        }
        other => ToolError::Transport(other.into_text()),
    }
}

/// A model-written name, quoted and escaped so it cannot pass as anything else. Scrubbed
/// first: once escaped, a secret in it (`'`, `"`, non-ASCII) would no longer be found.
fn quoted(name: &str, scrubber: &Scrubber) -> String {
    format!("\"{}\"", scrubber.scrub(name).escape_default())
}

/// Up to [`MAX_NAMES_IN_ERROR`] names, comma-separated, saying how many more there are.
fn names<'a>(all: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = all.len();
    if total == 0 {
        return "(none)".to_owned();
    }
    let shown: Vec<&str> = all.take(MAX_NAMES_IN_ERROR).collect();
    let more = total - shown.len();
    let mut text = shown.join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}
