//! What a new user trips over, through the binary: a misspelled namespace or tool says the
//! nearest name, and an invalid call's list of violations prints as lines while a server's
//! text stays on runvil's one line.

mod support;

use serde_json::{Value, json};
use shared_mcp_fixture::hostile::{self, Hostile, Request, Script};
use support::{Temp, backend, config_for, runvil_command, text, unreachable_url};

/// Runs `runvil` with `args` off the test's runtime (its servers answer on it meanwhile).
async fn run(args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        runvil_command(&args).output().expect("runvil runs")
    })
    .await
    .expect("runvil ran")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misspelled_namespace_or_tool_says_the_nearest_name_then_the_list() {
    let server = backend().await;
    let config = Temp::config(json!({
        "backend": {"url": server.url()},
        "other": {"url": unreachable_url()},
    }));
    let config = config.arg();

    // Before any server is contacted: the config's namespaces.
    for command in [&["tools", "bakend"][..], &["call", "bakcend", "echo"]] {
        let mut args = command.to_vec();
        args.extend(["--config", config]);
        let out = run(&args).await;
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        let typed = command[1];
        assert_eq!(
            text(&out.stderr),
            format!(
                "runvil: unknown namespace \"{typed}\"; did you mean backend? the namespaces \
                 are: backend, other\n"
            ),
            "{command:?}"
        );
    }
    assert_eq!(server.requests("POST"), 0, "no server was contacted");
    // Too far from any: the list alone, as before.
    let out = run(&["tools", "nope", "--config", config]).await;
    assert_eq!(
        text(&out.stderr),
        "runvil: unknown namespace \"nope\"; the namespaces are: backend, other\n"
    );
    // MAX_SUGGESTION_EDITS (3): three edits off is suggested, four is not.
    let far = Temp::config(json!({"abcdefgh": {"url": unreachable_url()}}));
    for (typed, said) in [("abcdeXYZ", "did you mean abcdefgh? "), ("abcdWXYZ", "")] {
        let out = run(&["tools", typed, "--config", far.arg()]).await;
        assert_eq!(
            text(&out.stderr),
            format!("runvil: unknown namespace \"{typed}\"; {said}the namespaces are: abcdefgh\n")
        );
    }

    // A tool: the server's names, as the Pack says them (to a model too).
    let config = config_for(&server);
    let out = run(&["call", "backend", "ecoh", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\nrunvil: backend has no tool \"ecoh\"; did you mean echo? \
         its tools are: echo, fails, progress, slow\n"
    );
    let out = run(&["tools", "backend", "slwo", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\nrunvil: backend has no tool \"slwo\"; did you mean slow? \
         its tools are: echo, fails, progress, slow\n"
    );
    let out = run(&["call", "backend", "zzzzzz", "--config", config.arg()]).await;
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\nrunvil: backend has no tool \"zzzzzz\"; its tools are: \
         echo, fails, progress, slow\n"
    );
}

/// A server with one tool, `picky`, whose schema's pattern holds a line break that spells a
/// line of runvil's, and whose calls fail with such a text.
fn forging(request: &Request) -> Script {
    match request.rpc_method() {
        "tools/list" => hostile::json_reply(&hostile::result_for(
            request,
            json!({"tools": [{
                "name": "picky",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer"},
                        "p": {"type": "string", "pattern": "^a\nrunvil: forged$"},
                    },
                    "required": ["n"],
                },
            }]}),
        )),
        "tools/call" => hostile::json_reply(&hostile::result_for(
            request,
            json!({"content": [{"type": "text", "text": "full\nrunvil: forged"}], "isError": true}),
        )),
        _ => hostile::mcp(request),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn violations_print_as_indented_lines_and_a_server_s_text_stays_escaped() {
    let server = Hostile::start(forging).await;
    let config = Temp::config(json!({"s": {"url": server.url}}));
    let config = config.arg();

    let out = run(&["call", "s", "picky", r#"{"p": "b"}"#, "--config", config]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\n\
         runvil: the arguments do not match the input schema of picky:\n  \
         - /: \"n\" is a required property\n  \
         - /p: \"b\" does not match \"^a\\nrunvil: forged$\"\n"
    );
    assert!(out.stdout.is_empty());

    let out = run(&["call", "s", "picky", r#"{"n": 1}"#, "--config", config]).await;
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        text(&out.stderr),
        "runvil: 1 server: 1 ready\n\
         runvil: the server answered with an error: full\\nrunvil: forged\n"
    );
    let listed: Vec<Value> = server
        .calls_of("tools/call")
        .iter()
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(listed.len(), 1, "the invalid call was not sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_says_whom_it_still_waits_for_and_exits_non_zero_for_a_server_not_ready() {
    // A port that accepts connections but never answers: the server stays `loading`.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let server = backend().await;
    let config = Temp::config(json!({"mute": {"url": url}, "up": {"url": server.url()}}));

    // Past STILL_WAITING_AFTER (1 s), the line; the listing is printed, and the exit code
    // says a server is still loading.
    let out = run(&["tools", "--config", config.arg(), "--wait", "2"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "runvil: still waiting for mute (up to 2 s in all; see --wait)\n\
         runvil: 2 servers: 1 ready, 1 loading\n"
    );
    let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(listing["servers"][0]["status"], "loading");
    assert_eq!(listing["servers"][1]["status"], "ready");
    // At it, the bound ends the wait first: no line.
    let out = run(&["tools", "--config", config.arg(), "--wait", "1"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "runvil: 2 servers: 1 ready, 1 loading\n");

    // A server that ended in error: the transport's exit code; every server ready: 0.
    let config =
        Temp::config(json!({"down": {"url": unreachable_url()}, "up": {"url": server.url()}}));
    let out = run(&["tools", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: 2 servers: 1 ready, 1 error\n");
    let config = config_for(&server);
    let out = run(&["tools", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "runvil: 1 server: 1 ready\n");
    drop(listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_offer_the_config_s_namespaces_and_its_servers_tools() {
    let server = backend().await;
    let config = Temp::config(json!({
        "backend": {"url": server.url()},
        "down": {"url": unreachable_url()},
        // Shell syntax in a name copied from elsewhere: never written into the script.
        "x$(touch pwned)": {"url": unreachable_url()},
        "off": {"url": unreachable_url(), "disabled": true},
    }));
    let out = run(&["completions", "bash", "--config", config.arg()]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = text(&out.stdout);
    let call = "runvil__subcmd__call)\n            \
                opts=\"-h --config --wait --pretty --compact --store --store-key-file --help \
                backend down echo fails progress slow\"\n";
    assert!(script.contains(call), "{script}");
    let disable = "runvil__subcmd__disable)\n            \
                   opts=\"-h --config --store --store-key-file --help backend down echo fails \
                   progress slow\"\n";
    assert!(script.contains(disable), "{script}");
    let login = "runvil__subcmd__login)\n            \
                 opts=\"-h --config --wait --no-browser --store --store-key-file --help backend \
                 down\"\n";
    assert!(script.contains(login), "{script}");
    assert!(
        !script.contains("pwned") && !script.contains(" off"),
        "{script}"
    );

    // Without a config: the commands only, as before.
    let empty = Temp::dir();
    let out = support::runvil_in(&empty, &empty, &["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let call = "runvil__subcmd__call)\n            \
                opts=\"-h --config --wait --pretty --compact --store --store-key-file --help\"\n";
    assert!(text(&out.stdout).contains(call), "{}", text(&out.stdout));
    // A config asked for and missing is an error.
    let out = run(&["completions", "bash", "--config", "no/such/mcp.json"]).await;
    assert_eq!(out.status.code(), Some(1));
}
