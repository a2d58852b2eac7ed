//! The live catalog, through `install`, against the hostile test server in both eras: a
//! server that adds, removes and changes tools while the Pack runs is shown as it is now,
//! without a restart, and a ready server stays ready whatever a re-list meets; notices are
//! coalesced and bounded; the 2026-07-28 subscription follows its acknowledgement rules; a
//! `ttlMs` is a refetch hint that never blocks a call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use runvil_plugin::{BackendState, Pack, ToolError};
use serde_json::{Value, json};

use crate::support;
use crate::support::changing::{
    Changing, Era, SUBSCRIPTION_ID, acknowledgement, complete, event, sse_head, tool,
};
use crate::support::hostile::{
    Hostile, Request, Script, Step, http, json_reply, mcp, modern, result_for,
};
use tokio::sync::Notify;

const SETTLE: Duration = Duration::from_secs(20);

async fn ready_pack(server: &Hostile) -> Arc<dyn Pack> {
    let pack = support::pack(json!({"s": {"url": server.url}}));
    support::wait_for(&pack, "s", "ready", SETTLE).await;
    pack
}

/// Waits until the server's listing shows exactly `names`.
async fn shows(pack: &Arc<dyn Pack>, names: &[&str]) {
    support::wait_until(
        &format!("the listing shows {names:?}"),
        SETTLE,
        async || {
            let listing = support::list(pack, json!({"namespace": "s"})).await;
            support::tool_names(&listing) == names
        },
    )
    .await;
}

fn count(server: &Hostile, method: &str) -> usize {
    server.calls_of(method).len()
}

/// The `GET`s a server saw: the standalone streams the Pack asked for.
fn gets(server: &Hostile) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET")
        .count()
}

/// A Pack over the servers `named`, once each is ready.
async fn ready_pack_of(named: &[(&str, &Hostile)]) -> Arc<dyn Pack> {
    let servers: serde_json::Map<String, Value> = named
        .iter()
        .map(|(name, server)| ((*name).to_owned(), json!({"url": server.url})))
        .collect();
    let pack = support::pack(Value::Object(servers));
    for (name, _) in named {
        support::wait_for(&pack, name, "ready", SETTLE).await;
    }
    pack
}

/// The clock of a "never again" check: a server, beside the one under test in the same Pack,
/// whose channel for notices (the standalone stream at 2025-11-25, the subscription at
/// 2026-07-28) breaks off each time it is opened, so the Pack opens it again after its backoff
/// (1 s, then 2 s). The first one is held until the test starts the clock. Once the Pack opened
/// it twice more, a channel the Pack would ask for again, the one under test included, would
/// have been asked for again with two seconds to spare: the check waits for that event
/// instead of for a time.
struct Clock {
    server: Hostile,
    start: Arc<Notify>,
    era: Era,
}

impl Clock {
    async fn new(era: Era) -> Self {
        let start = Arc::new(Notify::new());
        let held = Arc::clone(&start);
        let opened = AtomicUsize::new(0);
        let handler = Changing::new(json!([tool("echo", "Echoes.")])).handler(era);
        let server = Hostile::start(move |r: &Request| {
            let channel = match era {
                Era::Legacy => r.method == "GET",
                Era::Modern => r.rpc_method() == "subscriptions/listen",
            };
            if !channel {
                return handler(r);
            }
            let first = opened.fetch_add(1, Ordering::SeqCst) == 0;
            let mut script = Script::raw(match era {
                // A failed GET is tried again.
                Era::Legacy => http("500 Internal Server Error", &[], b""),
                // An acknowledged subscription that breaks off is asked for again.
                Era::Modern => [sse_head(), event(&acknowledgement(r))].concat(),
            });
            if first {
                script.steps.insert(0, Step::Wait(Arc::clone(&held)));
            }
            script
        })
        .await;
        Self { server, start, era }
    }

    /// Starts the clock and waits until the Pack opened the channel twice more.
    async fn two_retries(&self) {
        let opened = |server: &Hostile| match self.era {
            Era::Legacy => gets(server),
            Era::Modern => count(server, "subscriptions/listen"),
        };
        self.server
            .until("the clock's channel is held", SETTLE, |s| opened(s) == 1)
            .await;
        self.start.notify_one();
        self.server
            .until("the clock's channel is opened twice more", SETTLE, |s| {
                opened(s) >= 3
            })
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_adds_removes_and_changes_tools_is_shown_as_it_is_now_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let changing = Changing::new(json!([tool("echo", "Echoes."), tool("old", "Old.")]));
        let server = Hostile::start(changing.handler(era)).await;
        let pack = ready_pack(&server).await;
        shows(&pack, &["echo", "old"]).await;

        changing.set(json!([
            tool("echo", "Echoes louder."),
            tool("added", "New.")
        ]));
        changing.tell();
        shows(&pack, &["added", "echo"]).await;
        let one = support::list(&pack, json!({"namespace": "s", "toolName": "echo"})).await;
        assert_eq!(one["tool"]["description"], "Echoes louder.", "{era:?}");
        assert_eq!(
            support::call(&pack, "s", "added", json!({"text": "hi"})).await,
            Ok("hi".to_owned())
        );
        let gone = support::call(&pack, "s", "old", json!({})).await;
        assert!(
            matches!(&gone, Err(ToolError::Invalid(m)) if m.starts_with("s has no tool \"old\"")),
            "{gone:?}"
        );
        // The Host sees the change on the status channel, with the new names.
        let status = pack.status().borrow().clone();
        let tools: Arc<[String]> = Arc::from(vec!["added".to_owned(), "echo".to_owned()]);
        assert_eq!(status[0].state, BackendState::Ready { tools }, "{era:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_on_a_call_s_stream_counts_too() {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let inner = changing.clone();
    let handler = changing.handler(Era::Legacy);
    let server = Hostile::start(move |r: &Request| {
        if r.rpc_method() != "tools/call" {
            return handler(r);
        }
        inner.set(json!([tool("echo", "Echoes."), tool("after_call", "New.")]));
        let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let result = result_for(r, json!({"content": [{"type": "text", "text": "done"}]}));
        let mut steps = vec![Step::Write(sse_head())];
        steps.extend([Step::Write(event(&notice)), Step::Write(event(&result))]);
        Script {
            steps,
            keep_alive: false,
        }
    })
    .await;
    let pack = ready_pack(&server).await;
    assert_eq!(
        support::call(&pack, "s", "echo", json!({})).await,
        Ok("done".to_owned())
    );
    shows(&pack, &["after_call", "echo"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_405_to_the_standalone_stream_means_there_is_none() {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let handler = changing.handler(Era::Legacy);
    let server = Hostile::start(move |r: &Request| match r.method.as_str() {
        // mcp answers 405 to anything but POST.
        "GET" => mcp(r),
        _ => handler(r),
    })
    .await;
    let clock = Clock::new(Era::Legacy).await;
    let _pack = ready_pack_of(&[("s", &server), ("clock", &clock.server)]).await;
    server
        .until("the stream is asked for", SETTLE, |s| gets(s) == 1)
        .await;
    clock.two_retries().await;
    assert_eq!(gets(&server), 1, "asked once, and never again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standalone_stream_is_resumed_with_last_event_id() {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let handler = changing.handler(Era::Legacy);
    let server = Hostile::start(move |r: &Request| {
        if r.method != "GET" || r.header("last-event-id").is_some() {
            return handler(r);
        }
        // The first stream sends one event with an id, then the server closes it.
        let mut bytes = sse_head();
        bytes.extend_from_slice(b"id: n-1\nretry: 100\ndata: \n\n");
        Script {
            steps: vec![Step::Write(bytes)],
            keep_alive: false,
        }
    })
    .await;
    let _pack = ready_pack(&server).await;
    server
        .until("the stream is resumed", SETTLE, |s| {
            s.requests()
                .iter()
                .any(|r| r.method == "GET" && r.header("last-event-id") == Some("n-1"))
        })
        .await;
    let resumed = server.requests().into_iter().rfind(|r| r.method == "GET");
    let resumed = resumed.expect("a GET");
    assert_eq!(resumed.header("mcp-session-id"), Some("s-1"));
    assert_eq!(resumed.header("accept"), Some("text/event-stream"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_notices_costs_one_relist_per_interval() {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let handler = changing.handler(Era::Legacy);
    let server = Hostile::start(move |r: &Request| {
        if r.method != "GET" {
            return handler(r);
        }
        let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let mut bytes = sse_head();
        for _ in 0..20_000 {
            bytes.extend_from_slice(&event(&notice));
        }
        Script {
            steps: vec![Step::Write(bytes), Step::Stall],
            keep_alive: false,
        }
    })
    .await;
    let clock = Clock::new(Era::Legacy).await;
    let pack = ready_pack_of(&[("s", &server), ("clock", &clock.server)]).await;
    let started = std::time::Instant::now();
    server
        .until("the notices are acted on", SETTLE, |s| {
            count(s, "tools/list") > 1
        })
        .await;
    // Long enough for the interval (2 s) to pass, and a re-list each interval to follow.
    clock.two_retries().await;
    let relists = count(&server, "tools/list") - 1;
    // One at once, then one each interval (2 s), however many notices came.
    let elapsed = started.elapsed();
    let most = 1 + (elapsed.as_secs() / 2) as usize + 1;
    assert!(
        (1..=most).contains(&relists),
        "{relists} re-lists in {elapsed:?}"
    );
    shows(&pack, &["echo"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_that_never_ends_fails_in_its_bounds_and_the_server_keeps_its_tools() {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let handler = changing.handler(Era::Legacy);
    let endless = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&endless);
    let server = Hostile::start(move |r: &Request| {
        if r.rpc_method() != "tools/list" || !flag.load(Ordering::SeqCst) {
            return handler(r);
        }
        // A different page each time, each promising one more.
        let page = r.body["params"]["cursor"].as_str().unwrap_or("0").len();
        let tools = json!([tool(&format!("t{page}"), "Another.")]);
        let cursor = "c".repeat(page + 1);
        json_reply(&result_for(
            r,
            json!({"tools": tools, "nextCursor": cursor}),
        ))
    })
    .await;
    let pack = ready_pack(&server).await;
    endless.store(true, Ordering::SeqCst);
    changing.tell();
    // A re-list's first page has no cursor: once the next re-list began (the failed one is
    // tried again), the first one has read every page it ever will.
    let first = |r: &Request| r.body["params"]["cursor"].is_null();
    server
        .until(
            "a re-list reads its 100 pages, and the next begins",
            SETTLE,
            |s| {
                let lists = s.calls_of("tools/list");
                lists.len() > 100 && lists.iter().filter(|r| first(r)).count() >= 3
            },
        )
        .await;
    // Each re-list stops at 100 pages: the pages read before the last one began, by the
    // re-lists before it (the first listing and the last re-list not counted).
    let lists = server.calls_of("tools/list");
    let last = lists.iter().rposition(first).expect("a first page");
    let relists = (lists[..last].iter().filter(|r| first(r)).count() - 1) as u64;
    let pages = last - 1;
    assert!(
        pages as u64 <= 100 * relists,
        "{pages} pages in {relists} re-lists at most"
    );
    let listing = support::list(&pack, json!({"namespace": "s"})).await;
    assert_eq!(listing["status"], "ready");
    assert_eq!(support::tool_names(&listing), ["echo"]);
}

/// A 2026-07-28 server that tells of changes, whose `subscriptions/listen` streams are what
/// `stream` makes of each request (their number counted by the test in the server's log).
async fn subscribing(stream: fn(&Request) -> Script) -> (Hostile, Changing) {
    let changing = Changing::new(json!([tool("echo", "Echoes.")]));
    let handler = changing.handler(Era::Modern);
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "subscriptions/listen" => stream(r),
        _ => handler(r),
    })
    .await;
    (server, changing)
}

/// A listen stream that sends `first`, then a notice, then stays open.
fn then_a_notice(first: Value, r: &Request) -> Script {
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                        "params": {"_meta": {SUBSCRIPTION_ID: r.body["id"]}}});
    let mut bytes = sse_head();
    bytes.extend(event(&first));
    bytes.extend(event(&notice));
    Script {
        steps: vec![Step::Write(bytes), Step::Stall],
        keep_alive: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_that_breaks_its_rules_is_ended_and_not_asked_for_again() {
    let bad: [fn(&Request) -> Script; 4] = [
        // Another subscription's id.
        |r| {
            let mut ack = acknowledgement(r);
            ack["params"]["_meta"][SUBSCRIPTION_ID] = json!(9999);
            then_a_notice(ack, r)
        },
        // More than was asked for.
        |r| {
            let mut ack = acknowledgement(r);
            ack["params"]["notifications"]["promptsListChanged"] = json!(true);
            then_a_notice(ack, r)
        },
        // A notice before the acknowledgement.
        |r| {
            let notice = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            then_a_notice(notice, r)
        },
        // The tools' notices not accepted.
        |r| {
            let mut ack = acknowledgement(r);
            ack["params"]["notifications"] = json!({});
            then_a_notice(ack, r)
        },
    ];
    // Each breaker in a server of its own, all in one Pack beside one clock.
    let mut servers = Vec::new();
    for stream in bad {
        servers.push(subscribing(stream).await.0);
    }
    let clock = Clock::new(Era::Modern).await;
    let names: Vec<String> = (0..servers.len()).map(|n| format!("s{n}")).collect();
    let mut named: Vec<(&str, &Hostile)> = names.iter().map(String::as_str).zip(&servers).collect();
    named.push(("clock", &clock.server));
    let _pack = ready_pack_of(&named).await;
    for server in &servers {
        server
            .until("the subscription is asked for", SETTLE, |s| {
                count(s, "subscriptions/listen") == 1
            })
            .await;
    }
    clock.two_retries().await;
    for server in &servers {
        assert_eq!(count(server, "subscriptions/listen"), 1, "not asked again");
        assert_eq!(
            count(server, "tools/list"),
            1,
            "its notice was not acted on"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_end_is_an_end_and_an_abrupt_one_is_followed_by_a_new_subscription() {
    let (graceful, _) = subscribing(|r| {
        let end = result_for(
            r,
            json!({"resultType": "complete",
                                        "_meta": {SUBSCRIPTION_ID: r.body["id"]}}),
        );
        let mut bytes = sse_head();
        bytes.extend(event(&acknowledgement(r)));
        bytes.extend(event(&end));
        Script {
            steps: vec![Step::Write(bytes)],
            keep_alive: false,
        }
    })
    .await;
    let clock = Clock::new(Era::Modern).await;
    let _pack = ready_pack_of(&[("s", &graceful), ("clock", &clock.server)]).await;
    graceful
        .until("the subscription is asked for", SETTLE, |s| {
            count(s, "subscriptions/listen") == 1
        })
        .await;
    clock.two_retries().await;
    assert_eq!(count(&graceful, "subscriptions/listen"), 1);

    let (abrupt, _) = subscribing(|r| {
        let mut bytes = sse_head();
        bytes.extend(event(&acknowledgement(r)));
        Script {
            steps: vec![Step::Write(bytes)],
            keep_alive: false,
        }
    })
    .await;
    let pack = ready_pack(&abrupt).await;
    abrupt
        .until("a new subscription", SETTLE, |s| {
            count(s, "subscriptions/listen") >= 2
        })
        .await;
    // Each new subscription may have missed a change: the tools are listed again.
    abrupt
        .until("a re-list", SETTLE, |s| count(s, "tools/list") >= 2)
        .await;
    shows(&pack, &["echo"]).await;
}

/// On one thread, whose clock the test moves past the freshness.
#[tokio::test]
async fn a_ttl_is_a_refetch_hint_that_never_blocks_a_call() {
    let lists = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&lists);
    let server = Hostile::start(move |r: &Request| match r.rpc_method() {
        "tools/list" => {
            if seen.fetch_add(1, Ordering::SeqCst) > 0 {
                // The re-list never answers: a call must not wait for it.
                return Script {
                    steps: vec![Step::Stall],
                    keep_alive: true,
                };
            }
            complete(r, json!({"tools": [tool("echo", "Echoes.")], "ttlMs": 200}))
        }
        _ => modern(r),
    })
    .await;
    let pack = ready_pack(&server).await;
    // Fresh: a use starts nothing.
    support::call(&pack, "s", "echo", json!({"text": "a"}))
        .await
        .expect("call");
    assert_eq!(count(&server, "tools/list"), 1);
    // Past the freshness, and past the least time between listings, so the re-list is not
    // held back.
    support::skip_clock(Duration::from_secs(2)).await;
    // Stale: the next use starts a re-list in the background, and is answered at once.
    let call = support::call(&pack, "s", "echo", json!({"text": "b"}));
    let answered = tokio::time::timeout(Duration::from_secs(5), call).await;
    assert_eq!(answered.expect("not blocked"), Ok("b".to_owned()));
    server
        .until("a re-list", SETTLE, |s| count(s, "tools/list") == 2)
        .await;
}
