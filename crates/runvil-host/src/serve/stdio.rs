//! `runvil serve` on stdio: one client, the process that started runvil (Claude Desktop,
//! Cursor, Codex, VS Code), spoken to with rmcp's server. stdout carries nothing but the
//! protocol: logs and the start-up line go to stderr.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use runvil_plugin::CallOptions;
use serde_json::Value;

use super::{Served, Waits, progress_queue, say_held, start, tool_result};
use crate::cli::{Source, StoreArgs};
use crate::discovery;
use crate::host::{EXIT_OK, EXIT_OTHER};
use crate::signals;

#[derive(Clone)]
struct Stdio {
    served: Served,
    tools: Arc<[Tool]>,
}

impl Stdio {
    fn new(served: Served) -> Self {
        Self {
            tools: served.tools().into(),
            served,
        }
    }
}

/// Hands a call's progress to the client under the token its request carried.
fn forward_progress(
    context: &RequestContext<RoleServer>,
) -> Option<(CallOptions, impl Future<Output = ()> + use<>)> {
    let token = context.meta.get_progress_token()?;
    let (sink, mut notices) = progress_queue();
    let peer = context.peer.clone();
    let forward = async move {
        while let Some(notice) = notices.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), notice.progress);
            param.total = notice.total;
            param.message = notice.message;
            if peer.notify_progress(param).await.is_err() {
                return; // the client is gone
            }
        }
    };
    Some((CallOptions::default().with_progress(sink), forward))
}

impl ServerHandler for Stdio {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("runvil", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let offered = self
            .served
            .find(&request.name)
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let answer = async {
            match forward_progress(&context) {
                None => {
                    self.served
                        .call(offered, args, CallOptions::default())
                        .await
                }
                Some((options, forward)) => {
                    // The call drops its sink when it ends, which ends the forwarding once
                    // every notice has been sent ahead of the answer.
                    let call = self.served.call(offered, args, options);
                    let (outcome, ()) = tokio::join!(call, forward);
                    outcome
                }
            }
        };
        let outcome = tokio::select! {
            outcome = answer => outcome,
            // The client cancelled: dropping the Pack's call cancels it on its server too.
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        Ok(tool_result(&outcome).into())
    }
}

/// Serves until the client closes stdin (exit 0) or a signal (128 + the signal); either way
/// the Pack is shut down first, so every session it opened is ended.
pub(crate) async fn run(source: &Source, store: &StoreArgs, waits: Waits) -> u8 {
    let (config, store, pack) = match start(source, store).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    // Another process's approval or rejection counts at the next call.
    let _following = store.follow(&pack);
    // On stderr, which clients keep in their logs: which file this gateway serves, and what
    // in it runvil does not honour as other clients do (as `runvil check` says it).
    eprintln!(
        "runvil: serving MCP on stdio for {} ({})",
        config.path.display(),
        config.origin
    );
    discovery::say_warnings(&config.warnings);
    let serving = async {
        match Stdio::new(Served::new(Arc::clone(&pack), waits))
            .serve(rmcp::transport::stdio_pipes())
            .await
        {
            Ok(service) => {
                let _ = service.waiting().await;
                EXIT_OK
            }
            Err(e) => {
                eprintln!("runvil: the MCP client's handshake failed: {e}");
                EXIT_OTHER
            }
        }
    };
    let code = tokio::select! {
        code = serving => code,
        stop = signals::stopped() => stop.exit_code(),
        () = say_held(pack.status()) => unreachable!("say_held never ends"),
    };
    pack.shutdown().await;
    code
}
