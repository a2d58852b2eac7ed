//! A caller's view (the contract's `View`, which a team gateway passes with each call): what
//! it hides is, for that caller, a namespace or a tool the Pack does not have. Proven by
//! asking the same questions of a Pack that hides a tool and a namespace, and of a Pack whose
//! server has neither: every answer and every error must be the same, byte for byte.

use std::sync::Arc;
use std::time::Duration;

use runvil_plugin::{CallOptions, Pack, ToolError, View};
use serde_json::{Value, json};
use shared_mcp_fixture::{Fixture, ToolSet};

use crate::support;

const SETTLE: Duration = Duration::from_secs(20);

/// Sees the namespaces and `namespace/tool` names it lists; `ns/*` is every tool of `ns`.
struct Allowed(&'static [&'static str]);

impl View for Allowed {
    fn backend(&self, backend: &str) -> bool {
        self.0.iter().any(|a| a.split('/').next() == Some(backend))
    }

    fn tool(&self, backend: &str, tool: &str) -> bool {
        self.0.contains(&format!("{backend}/*").as_str())
            || self.0.contains(&format!("{backend}/{tool}").as_str())
    }
}

async fn ask(
    pack: &Arc<dyn Pack>,
    view: Option<&Arc<dyn View>>,
    tool: &str,
    args: &Value,
) -> Result<String, ToolError> {
    let options = match view {
        Some(view) => CallOptions::default().with_view(Arc::clone(view)),
        None => CallOptions::default(),
    };
    pack.call_with(&format!("mcp/{tool}"), args.clone(), options)
        .await
}

async fn ready_pack(servers: Value, namespace: &str) -> Arc<dyn Pack> {
    let pack = support::pack(servers);
    support::wait_for(&pack, namespace, "ready", SETTLE).await;
    pack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_tool_or_namespace_reads_exactly_as_one_that_does_not_exist() {
    let full = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "fails", "slow"]))
        .start()
        .await;
    let less = Fixture::builder()
        .tools(ToolSet::Only(&["fails", "slow"]))
        .start()
        .await;
    // `secret` is a refused entry: it never connects, so it is in every listing at once.
    let hiding = ready_pack(
        json!({"backend": {"url": full.url()}, "secret": {"command": "x"}}),
        "backend",
    )
    .await;
    let lacking = ready_pack(json!({"backend": {"url": less.url()}}), "backend").await;
    let view: Arc<dyn View> = Arc::new(Allowed(&["backend/fails", "backend/slow"]));

    let questions = [
        ("get_dynamic_tools", json!({})),
        ("get_dynamic_tools", json!({"namespace": "backend"})),
        (
            "get_dynamic_tools",
            json!({"namespace": "backend", "toolName": "echo"}),
        ),
        ("get_dynamic_tools", json!({"namespace": "secret"})),
        // A search ranks and names only what the caller sees, and a hidden match is no match.
        ("get_dynamic_tools", json!({"query": "echo"})),
        ("get_dynamic_tools", json!({"query": "echo fails slow"})),
        (
            "get_dynamic_tools",
            json!({"query": "slow", "namespace": "backend"}),
        ),
        (
            "get_dynamic_tools",
            json!({"query": "x", "namespace": "secret"}),
        ),
        (
            "call_dynamic_tool",
            json!({"namespace": "backend", "toolName": "echo", "arguments": {"text": "hi"}}),
        ),
        (
            "call_dynamic_tool",
            json!({"namespace": "secret", "toolName": "x"}),
        ),
        (
            "call_dynamic_tool",
            json!({"namespace": "backend", "toolName": "fails"}),
        ),
    ];
    const QUESTIONS_CALL: usize = 8;
    for (tool, args) in &questions {
        let hidden = ask(&hiding, Some(&view), tool, args).await;
        let absent = ask(&lacking, None, tool, args).await;
        assert_eq!(hidden, absent, "{tool} {args}");
    }
    // The texts themselves, so the comparison above is of the errors a model reads.
    let denied = ask(
        &hiding,
        Some(&view),
        "call_dynamic_tool",
        &questions[QUESTIONS_CALL].1,
    )
    .await;
    assert_eq!(
        denied,
        Err(ToolError::Invalid(
            "backend has no tool \"echo\"; its tools are: fails, slow".to_owned()
        ))
    );
    let denied = ask(
        &hiding,
        Some(&view),
        "call_dynamic_tool",
        &questions[QUESTIONS_CALL + 1].1,
    )
    .await;
    assert_eq!(
        denied,
        Err(ToolError::Invalid(
            "unknown namespace \"secret\"; the namespaces are: backend".to_owned()
        ))
    );
    // Without the view the same Pack shows and calls everything.
    let echoed = ask(
        &hiding,
        None,
        "call_dynamic_tool",
        &questions[QUESTIONS_CALL].1,
    )
    .await;
    assert_eq!(echoed, Ok("hi".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_views_of_one_pack_list_different_tools() {
    let server = Fixture::builder()
        .tools(ToolSet::Only(&["echo", "fails", "slow"]))
        .start()
        .await;
    let pack = ready_pack(json!({"backend": {"url": server.url()}}), "backend").await;
    let alice: Arc<dyn View> = Arc::new(Allowed(&["backend/*"]));
    let ci: Arc<dyn View> = Arc::new(Allowed(&["backend/echo"]));
    let nobody: Arc<dyn View> = Arc::new(Allowed(&[]));
    let listing = async |view: &Arc<dyn View>, args: Value| -> Value {
        let text = ask(&pack, Some(view), "get_dynamic_tools", &args).await;
        serde_json::from_str(&text.expect("a listing")).expect("JSON")
    };
    assert_eq!(
        listing(&alice, json!({})).await["servers"][0]["tools"],
        json!(["echo", "fails", "slow"])
    );
    assert_eq!(
        listing(&ci, json!({})).await["servers"][0]["tools"],
        json!(["echo"])
    );
    assert_eq!(listing(&nobody, json!({})).await, json!({"servers": []}));
    let one = listing(&ci, json!({"namespace": "backend"})).await;
    assert_eq!(support::tool_names(&one), ["echo"]);
    let call = async |view: &Arc<dyn View>| {
        let args = json!({"namespace": "backend", "toolName": "echo", "arguments": {"text": "x"}});
        ask(&pack, Some(view), "call_dynamic_tool", &args).await
    };
    assert_eq!(call(&ci).await, Ok("x".to_owned()));
    assert_eq!(
        call(&nobody).await,
        Err(ToolError::Invalid(
            "unknown namespace \"backend\"; the namespaces are: (none)".to_owned()
        ))
    );
}
