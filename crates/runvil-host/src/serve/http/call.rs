//! One `tools/call`, at either revision: the caller's view of the Pack (what the policy lets
//! it see), the call as a task of the server's (so the drain can wait for it and a client can
//! end it), its progress on an event stream when asked for, and its audit line.
//!
//! The call runs in its own task and ends in exactly one of four ways (answered, past the
//! gateway's bound, cancelled, or shut down by the drain, which is a cancellation): the task
//! writes the audit line for whichever it was, so a client that goes away still leaves its
//! line. A client ends a call by closing its response (the guard the response holds cancels
//! the task), by `notifications/cancelled` or by `DELETE` of its session (both through the
//! table of calls in flight).

use std::sync::Arc;

use runvil_plugin::{CallOptions, Progress, ToolError, View};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::Receiver;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::answer::{self, Answer, Events, Reply};
use super::in_flight::Registered;
use super::limits::Admitted;
use super::post::Accepts;
use super::record::{Ended, Facts};
use super::rpc::{self, INTERNAL_ERROR, INVALID_PARAMS};
use super::session::Session;
use super::{Revision, Server};
use crate::gateway::{Gateway, Identity};
use crate::serve::{Offered, progress_queue, tool_result};

/// A `tools/call` request, read.
pub(crate) struct ToolCall {
    pub(crate) id: Value,
    pub(crate) params: Map<String, Value>,
    /// What the client accepts in an answer.
    pub(crate) accepts: Accepts,
    pub(crate) revision: Revision,
    /// The 2025-11-25 session it belongs to, whose calls `notifications/cancelled` and
    /// `DELETE` can end.
    pub(crate) session: Option<Session>,
}

/// What an identity sees of the Pack: what the policy lets it use.
struct PolicyView {
    gateway: Arc<Gateway>,
    identity: Identity,
}

impl View for PolicyView {
    fn backend(&self, backend: &str) -> bool {
        self.gateway
            .policy
            .allows_namespace(&self.identity, backend)
    }

    fn tool(&self, backend: &str, tool: &str) -> bool {
        self.gateway.policy.allows(&self.identity, backend, tool)
    }
}

/// Answers `call` for `identity`, admitted as `admitted`.
pub(crate) async fn call(
    server: &Arc<Server>,
    identity: Identity,
    admitted: Admitted,
    call: ToolCall,
) -> Reply {
    let ToolCall {
        id,
        params,
        accepts,
        revision,
        session,
    } = call;
    let (offered, arguments) = match read(server, &identity, &params) {
        Ok(read) => read,
        Err(refused) => {
            let error = rpc::error(&id, INVALID_PARAMS, &refused, None);
            return answer::json(hyper::StatusCode::OK, &error);
        }
    };
    let facts = Facts::of(&identity, &server.gateway.policy, &offered.name, &arguments);
    if let Err(e) = server.gateway.audit.accepting() {
        tracing::warn!(target: "runvil", error = %e, "a call was refused: its audit line cannot be kept");
        let refused = Err(ToolError::Transport(format!(
            "runvil did not make this call: {e}"
        )));
        return finished(&id, revision, &refused);
    }
    let token = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_number())
        .cloned();
    // An event stream for a call whose progress was asked for, or for a client that takes
    // nothing else; any other answer is one JSON object.
    let streamed = accepts.events && (token.is_some() || !accepts.json);
    let place = match streamed.then(|| admitted.stream()).transpose() {
        Ok(place) => place,
        Err(refused) => {
            return answer::try_later(
                hyper::StatusCode::TOO_MANY_REQUESTS,
                refused.retry_after(),
                refused.text(),
            );
        }
    };
    let view: Arc<dyn View> = Arc::new(PolicyView {
        gateway: Arc::clone(&server.gateway),
        identity,
    });
    let cancel = server.ended.child_token();
    let registered = session.map(|s| server.in_flight.register(s.number, &id, cancel.clone()));
    let work = Work {
        server: Arc::clone(server),
        offered,
        arguments: Value::Object(arguments),
        view,
        facts,
        cancel,
        registered,
        id,
        revision,
    };
    match place {
        Some(place) => work.streamed(token, (admitted, place)),
        None => work.answered(admitted, accepts.events).await,
    }
}

/// The tool `params` names, as the caller's view offers it, and its arguments; else why the
/// call is refused as invalid (an unknown tool's refusal has its audit line).
fn read(
    server: &Server,
    identity: &Identity,
    params: &Map<String, Value>,
) -> Result<(Offered, Map<String, Value>), String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let offered = server.served.find(name).inspect_err(|unknown| {
        let ended = Ended::Answered(Err(ToolError::Invalid(unknown.clone())));
        let _ = server.record(Facts::unknown(identity).line(&ended, Default::default()));
    })?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Err("the arguments of tools/call are not an object".to_owned()),
    };
    Ok((offered.clone(), arguments))
}

/// A call, ready to run in its task.
struct Work {
    server: Arc<Server>,
    offered: Offered,
    arguments: Value,
    view: Arc<dyn View>,
    facts: Facts,
    cancel: CancellationToken,
    /// Its place in the table of calls a 2025-11-25 session can end, while it runs.
    registered: Option<Registered>,
    id: Value,
    revision: Revision,
}

impl Work {
    /// Runs the call in its task with its progress and answer on an event stream, which holds
    /// `held` (its admission) while it is open.
    fn streamed(self, token: Option<Value>, held: impl Send + 'static) -> Reply {
        let (body, events) = Answer::events();
        // Dropped with the response (sent, or abandoned by a client that went away): the
        // call ends with it.
        let guard = self.cancel.clone().drop_guard();
        let calls = self.server.calls.clone();
        calls.spawn(async move {
            let progress = token.map(|token| (token, events.clone()));
            if let Some(answer) = self.run(progress).await {
                events.send(&answer).await;
            }
        });
        answer::holding(answer::stream(body), (held, guard))
    }

    /// Runs the call in its task and answers one JSON object (or, to a client that takes
    /// events, an empty stream once it cancelled), holding `admitted` meanwhile.
    async fn answered(self, admitted: Admitted, events: bool) -> Reply {
        let guard = self.cancel.clone().drop_guard();
        let id = self.id.clone();
        let (sender, receiver) = oneshot::channel();
        let calls = self.server.calls.clone();
        calls.spawn(async move {
            let _ = sender.send(self.run(None).await);
        });
        let answer = receiver.await.unwrap_or_else(|_| {
            let ended = "the call ended inside runvil";
            Some(rpc::error(&Value::Null, INTERNAL_ERROR, ended, None))
        });
        drop(guard);
        let reply = match answer {
            Some(answer) => answer::json(hyper::StatusCode::OK, &answer),
            // The client cancelled: it is not answered, so its stream ends empty.
            None if events => answer::stream(Answer::empty()),
            None => {
                let cancelled = "the call was cancelled";
                answer::json(
                    hyper::StatusCode::OK,
                    &rpc::error(&id, INTERNAL_ERROR, cancelled, None),
                )
            }
        };
        answer::holding(reply, admitted)
    }

    /// Runs the call to its end, with its progress on `events` under the client's token,
    /// writes its audit line, and answers the JSON-RPC message that ends it: none for a call
    /// its client cancelled.
    async fn run(self, progress: Option<(Value, Events)>) -> Option<Value> {
        let Work {
            server,
            offered,
            arguments,
            view,
            facts,
            cancel,
            registered: _registered,
            id,
            revision,
        } = self;
        let started = Instant::now();
        let mut options = CallOptions::default().with_view(view);
        let forwarding = match progress {
            Some((token, events)) => {
                let (sink, notices) = progress_queue();
                options = options.with_progress(sink);
                Some(forward(notices, token, events))
            }
            None => None,
        };
        let bound = server.call_timeout;
        let answered = async {
            let call = server.served.call(&offered, arguments, options);
            match forwarding {
                // The call drops its sink when it ends, which ends the forwarding once every
                // notice has gone out ahead of the answer.
                Some(forwarding) => tokio::join!(call, forwarding).0,
                None => call.await,
            }
        };
        let ended = tokio::select! {
            answered = tokio::time::timeout(bound, answered) => match answered {
                Ok(answered) => Ended::Answered(answered),
                Err(_) => Ended::TimedOut,
            },
            () = cancel.cancelled() => Ended::Cancelled,
        };
        let kept = server.record(facts.line(&ended, started.elapsed()));
        let outcome = match ended {
            // A call its client cancelled is not answered, as the specification asks; one
            // the drain ended is, so its client knows why.
            Ended::Cancelled if server.ended.is_cancelled() => {
                let ended = "runvil is shutting down: the call was cancelled";
                return Some(rpc::error(&id, INTERNAL_ERROR, ended, None));
            }
            Ended::Cancelled => return None,
            Ended::TimedOut => Err(ToolError::Transport(format!(
                "the call did not finish within {} s, the gateway's bound on a call",
                bound.as_secs()
            ))),
            Ended::Answered(outcome) => outcome,
        };
        let outcome = match kept {
            Ok(()) => outcome,
            Err(e) => Err(ToolError::Transport(format!(
                "runvil withheld this call's result: {e}"
            ))),
        };
        Some(finished_message(&id, revision, &outcome))
    }
}

/// Sends each progress notice of a call on `events`, under the client's `token`, until the
/// call drops its sink or the client goes away (the call's guard then ends the call).
async fn forward(mut notices: Receiver<Progress>, token: Value, events: Events) {
    while let Some(notice) = notices.recv().await {
        let mut params = json!({"progressToken": token, "progress": notice.progress});
        if let Some(total) = notice.total {
            params["total"] = json!(total);
        }
        if let Some(message) = notice.message {
            params["message"] = json!(message);
        }
        if !events
            .send(&rpc::notification("notifications/progress", params))
            .await
        {
            return;
        }
    }
}

/// The answer to request `id` for a call that ended with `outcome`.
fn finished_message(id: &Value, revision: Revision, outcome: &Result<String, ToolError>) -> Value {
    let result = serde_json::to_value(tool_result(outcome)).unwrap_or_default();
    rpc::result(id, revision.complete(result))
}

/// [`finished_message`] as a response.
fn finished(id: &Value, revision: Revision, outcome: &Result<String, ToolError>) -> Reply {
    answer::json(
        hyper::StatusCode::OK,
        &finished_message(id, revision, outcome),
    )
}
