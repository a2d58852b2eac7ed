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

use runvil_plugin::{CallOptions, ToolError, View};
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::answer::{self, Answer, Events, Reply};
use super::endpoint::Accepts;
use super::limits::Admitted;
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
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let offered = match server.served.find(name) {
        Ok(offered) => offered,
        Err(unknown) => {
            let ended = Ended::Answered(Err(ToolError::Invalid(unknown.clone())));
            let _ = server.record(Facts::unknown(&identity).line(&ended, Default::default()));
            return answer::json(
                hyper::StatusCode::OK,
                &rpc::error(&id, INVALID_PARAMS, &unknown, None),
            );
        }
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => {
            let message = "the arguments of tools/call are not an object";
            return answer::json(
                hyper::StatusCode::OK,
                &rpc::error(&id, INVALID_PARAMS, message, None),
            );
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
    let stream = match streamed {
        true => match admitted.stream() {
            Ok(place) => Some((token, place)),
            Err(refused) => {
                return answer::try_later(
                    hyper::StatusCode::TOO_MANY_REQUESTS,
                    refused.retry_after(),
                    refused.text(),
                );
            }
        },
        false => None,
    };
    let view: Arc<dyn View> = Arc::new(PolicyView {
        gateway: Arc::clone(&server.gateway),
        identity,
    });
    let cancel = server.ended.child_token();
    let registered = session.map(|s| server.in_flight.register(s.number, &id, cancel.clone()));
    let work = Work {
        server: Arc::clone(server),
        offered: offered.clone(),
        arguments: Value::Object(arguments),
        view,
        facts,
        cancel: cancel.clone(),
    };
    // Dropped with the response (sent, or abandoned by a client that went away): the call
    // ends with it.
    let guard = cancel.drop_guard();
    match stream {
        Some((token, place)) => {
            let (body, events) = Answer::events();
            server.calls.spawn(async move {
                let _registered = registered;
                let progress = token.map(|token| (token, events.clone()));
                if let Some(answer) = work.run(progress, &id, revision).await {
                    events.send(&answer).await;
                }
            });
            let reply = answer::stream(body);
            answer::holding(reply, (admitted, place, guard))
        }
        None => {
            let (sender, receiver) = oneshot::channel();
            let id_of_call = id.clone();
            server.calls.spawn(async move {
                let _registered = registered;
                let _ = sender.send(work.run(None, &id, revision).await);
            });
            let answer = receiver.await.unwrap_or_else(|_| {
                let ended = "the call ended inside runvil";
                Some(rpc::error(&Value::Null, INTERNAL_ERROR, ended, None))
            });
            drop(guard);
            let reply = match answer {
                Some(answer) => answer::json(hyper::StatusCode::OK, &answer),
                // The client cancelled: it is not answered, so its stream ends empty.
                None if accepts.events => answer::stream(Answer::empty()),
                None => {
                    let cancelled = "the call was cancelled";
                    answer::json(
                        hyper::StatusCode::OK,
                        &rpc::error(&id_of_call, INTERNAL_ERROR, cancelled, None),
                    )
                }
            };
            answer::holding(reply, admitted)
        }
    }
}

/// A call, ready to run in its task.
struct Work {
    server: Arc<Server>,
    offered: Offered,
    arguments: Value,
    view: Arc<dyn View>,
    facts: Facts,
    cancel: CancellationToken,
}

impl Work {
    /// Runs the call to its end, with its progress on `events` under the client's token,
    /// writes its audit line, and answers the JSON-RPC message that ends it: none for a call
    /// its client cancelled.
    async fn run(
        self,
        progress: Option<(Value, Events)>,
        id: &Value,
        revision: Revision,
    ) -> Option<Value> {
        let Work {
            server,
            offered,
            arguments,
            view,
            facts,
            cancel,
        } = self;
        let started = Instant::now();
        let mut options = CallOptions::default().with_view(view);
        let mut forwarding = None;
        if let Some((token, events)) = progress {
            let (sink, mut notices) = progress_queue();
            options = options.with_progress(sink);
            forwarding = Some(async move {
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
                        return; // the client is gone; the call's guard ends it
                    }
                }
            });
        }
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
        let line = facts.line(&ended, started.elapsed());
        let kept = server.record(line);
        let outcome = match ended {
            // A call its client cancelled is not answered, as the specification asks; one
            // the drain ended is, so its client knows why.
            Ended::Cancelled if server.ended.is_cancelled() => {
                let ended = "runvil is shutting down: the call was cancelled";
                return Some(rpc::error(id, INTERNAL_ERROR, ended, None));
            }
            Ended::Cancelled => return None,
            Ended::TimedOut => Err(ToolError::Transport(format!(
                "the call did not finish within {} s, the gateway's bound on a call",
                bound.as_secs()
            ))),
            Ended::Answered(outcome) => outcome,
        };
        Some(match kept {
            Ok(()) => finished_message(id, revision, &outcome),
            Err(e) => {
                let withheld = Err(ToolError::Transport(format!(
                    "runvil withheld this call's result: {e}"
                )));
                finished_message(id, revision, &withheld)
            }
        })
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
