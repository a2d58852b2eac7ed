//! A hostile server whose tools a test changes while the Pack runs, and which tells of each
//! change when the test says so: at 2025-11-25 on the session's standalone `GET` stream, at
//! 2026-07-28 on the stream of a `subscriptions/listen` request it acknowledges. Everything
//! else it answers as [`mcp`] and [`modern`] do.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::hostile::{Request, Script, Step, json_reply, mcp, modern, result_for};

/// The `_meta` key of a subscription's id.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How many changes one stream tells of before it stays silent.
const NOTICES_PER_STREAM: usize = 64;

/// Which revision the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: the handshake, and the session's standalone stream.
    Legacy,
    /// 2026-07-28: no handshake, and `subscriptions/listen`.
    Modern,
}

/// The server's tools, and the signal that tells of a change.
#[derive(Clone)]
pub struct Changing {
    tools: Arc<Mutex<Value>>,
    go: Arc<Notify>,
}

impl Changing {
    /// A server listing `tools` (a JSON array of tool objects).
    pub fn new(tools: Value) -> Self {
        Self {
            tools: Arc::new(Mutex::new(tools)),
            go: Arc::new(Notify::new()),
        }
    }

    /// Lists `tools` from now on, without telling.
    pub fn set(&self, tools: Value) {
        *self.tools.lock().expect("tools") = tools;
    }

    /// Tells the Pack the tools changed, on the stream open for it.
    pub fn tell(&self) {
        self.go.notify_one();
    }

    /// The handler of a server of `era` that declares `tools.listChanged`.
    pub fn handler(&self, era: Era) -> impl Fn(&Request) -> Script + Send + Sync + 'static {
        let this = self.clone();
        move |r: &Request| this.answer(era, r)
    }

    fn answer(&self, era: Era, r: &Request) -> Script {
        let tools = self.tools.lock().expect("tools").clone();
        match (era, r.method.as_str(), r.rpc_method()) {
            (Era::Legacy, "POST", "initialize") => json_reply(&result_for(
                r,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "changing", "version": "1"},
                }),
            )),
            (Era::Legacy, "POST", "tools/list") => {
                json_reply(&result_for(r, json!({"tools": tools})))
            }
            (Era::Legacy, "GET", _) => {
                let notice =
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                self.stream(&format!("data: {notice}\n\n"))
            }
            (Era::Legacy, _, _) => mcp(r),
            (Era::Modern, "POST", "server/discover") => complete(
                r,
                json!({
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {"listChanged": true}},
                }),
            ),
            (Era::Modern, "POST", "tools/list") => complete(r, json!({"tools": tools})),
            (Era::Modern, "POST", "subscriptions/listen") => {
                let id = &r.body["id"];
                let meta = json!({SUBSCRIPTION_ID: id});
                let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                                    "params": {"_meta": meta}});
                let mut script = self.stream(&format!("data: {notice}\n\n"));
                script
                    .steps
                    .insert(1, Step::Write(event(&acknowledgement(r))));
                script
            }
            (Era::Modern, _, _) => modern(r),
        }
    }

    /// An SSE stream that sends `notice` each time the test tells, then stays open.
    fn stream(&self, notice: &str) -> Script {
        let mut steps = vec![Step::Write(sse_head())];
        for _ in 0..NOTICES_PER_STREAM {
            steps.push(Step::Wait(Arc::clone(&self.go)));
            steps.push(Step::Write(notice.as_bytes().to_vec()));
        }
        steps.push(Step::Stall);
        Script {
            steps,
            keep_alive: false,
        }
    }
}

/// The head of an SSE answer, its length unknown (the body ends when the connection does).
pub fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s-1\r\n\r\n".to_vec()
}

/// One SSE event carrying `message`.
pub fn event(message: &Value) -> Vec<u8> {
    format!("data: {message}\n\n").into_bytes()
}

/// The acknowledgement a good server sends first on a `subscriptions/listen` stream.
pub fn acknowledgement(listen: &Request) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"_meta": {SUBSCRIPTION_ID: listen.body["id"]},
                      "notifications": {"toolsListChanged": true}}})
}

/// A 2026-07-28 result answering `r`.
pub fn complete(r: &Request, mut result: Value) -> Script {
    result["resultType"] = json!("complete");
    json_reply(&result_for(r, result))
}

/// A tool object named `name`, described `description`.
pub fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}
