//! The fixture's tools, one per kind of answer a client must handle: text, numbers, every
//! content type, a tool error, a JSON-RPC error, a call that waits to be cancelled, a call that
//! reports progress. Declared with rmcp's `#[tool]` macros, so their input schemas are the ones
//! rmcp derives, as a real rmcp server would list them.

use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ProgressNotificationParam, Resource, ResourceContents,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::handler::Handler;
use crate::recorder::Ids;

/// The description of `echo`, as the fixture lists it.
pub const ECHO_DESCRIPTION: &str = "Echoes the text back, `repeat` times (once by default).";

/// The longest `repeat` of `echo`: 2^20 copies, enough for the benchmark's largest payloads.
const MAX_REPEAT: u64 = 1 << 20;

/// A tiny PNG (1x1, transparent), base64.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/// A few bytes standing for a WAV file, base64.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// The arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EchoArgs {
    /// The text to echo.
    text: String,
    /// How many times.
    repeat: Option<u64>,
}

/// The arguments of `add`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AddArgs {
    a: f64,
    b: f64,
}

#[tool_router(vis = "pub(crate)")]
impl Handler {
    #[tool(description = ECHO_DESCRIPTION)]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> Result<String, ErrorData> {
        let repeat = args.repeat.unwrap_or(1);
        if !(1..=MAX_REPEAT).contains(&repeat) {
            let message = format!("repeat must be an integer 1 to {MAX_REPEAT}");
            return Err(ErrorData::invalid_params(message, None));
        }
        Ok(args.text.repeat(usize::try_from(repeat).unwrap_or(1)))
    }

    #[tool(description = "Adds two numbers.")]
    async fn add(&self, Parameters(args): Parameters<AddArgs>) -> String {
        (args.a + args.b).to_string()
    }

    #[tool(description = "Returns a tiny PNG image.")]
    async fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
    }

    #[tool(description = "Returns audio.")]
    async fn audio(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")])
    }

    #[tool(description = "Returns embedded resources.")]
    async fn embedded(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::resource(ResourceContents::text(
                "embedded text",
                "file:///tmp/embedded.txt",
            )),
            ContentBlock::resource(ResourceContents::blob("AAECAw==", "file:///tmp/blob.bin")),
        ])
    }

    #[tool(description = "Returns a resource link.")]
    async fn link(&self) -> CallToolResult {
        let report = Resource::new("file:///tmp/report.txt", "report");
        CallToolResult::success(vec![ContentBlock::resource_link(report)])
    }

    #[tool(description = "Returns text, an image and text.")]
    async fn mixed(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::text("last"),
        ])
    }

    #[tool(description = "Returns structured content only.")]
    async fn structured(&self) -> CallToolResult {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(json!({"answer": 42}));
        result
    }

    #[tool(description = "Reports a tool error.")]
    async fn fails(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("the disk is full")])
    }

    #[tool(description = "Answers with a JSON-RPC error.")]
    async fn rpc_error(&self) -> Result<CallToolResult, ErrorData> {
        Err(ErrorData::invalid_params("bad thing", None))
    }

    /// Records its start and, if its token fires first, its cancellation: a test can tell a
    /// call the client dropped from one that was never sent.
    #[tool(description = "Answers when cancelled, or after a while.")]
    async fn slow(&self, context: RequestContext<RoleServer>) -> String {
        let id = serde_json::to_value(&context.id).unwrap_or(Value::Null);
        let recorder = self.recorder();
        recorder.record(Ids::SlowStarted, id.clone());
        tokio::select! {
            () = context.ct.cancelled() => {
                recorder.record(Ids::SlowCancelled, id);
                "cancelled".to_owned()
            }
            () = tokio::time::sleep(self.slow_for()) => "done".to_owned(),
        }
    }

    /// The escape in each message is there for a client to clean away.
    #[tool(description = "Reports two steps of progress.")]
    async fn progress(&self, context: RequestContext<RoleServer>) -> String {
        if let Some(token) = context.meta.get_progress_token() {
            for step in [1.0, 2.0] {
                let mut notice = ProgressNotificationParam::new(token.clone(), step);
                notice.total = Some(2.0);
                notice.message = Some(format!("step {step}\u{1b}[2J"));
                let _ = context.peer.notify_progress(notice).await;
            }
        }
        "done".to_owned()
    }
}

/// Every tool of the catalog, routed.
pub(crate) fn router() -> ToolRouter<Handler> {
    Handler::tool_router()
}

/// How long `slow` waits when nobody cancels it, unless the builder says otherwise.
pub(crate) const SLOW_DEFAULT: Duration = Duration::from_secs(60);
