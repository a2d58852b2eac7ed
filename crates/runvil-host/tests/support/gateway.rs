//! `runvil serve --http` as a child process, and the HTTP a test speaks to it.
//!
//! The gateway listens on a free loopback port (`--http 127.0.0.1:0`) and says where on
//! stderr; the rest of its stderr is kept for the test to read. Dropping it kills it. A gateway
//! a whole test binary shares ([`Gateway::shared`]) runs under a shell that kills it when the
//! binary's end closes the shell's stdin, since a static is never dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Temp, runvil_command, unique_temp_path};

/// How long a gateway may take to say where it listens.
const LISTEN_WITHIN: Duration = Duration::from_secs(30);

/// A running gateway.
pub(crate) struct Gateway {
    child: Child,
    /// Held open by a shared gateway's shell: its end is the gateway's.
    _lifeline: Option<ChildStdin>,
    /// `http://127.0.0.1:PORT` (or `https://`).
    pub(crate) base: String,
    stderr: Arc<Mutex<String>>,
    /// Told of each line of stderr, for the tests that wait for one.
    said: tokio::sync::watch::Receiver<usize>,
}

impl Gateway {
    /// `runvil serve --http 127.0.0.1:0 --config config --session-key-file key` and `args`,
    /// with quiet logs.
    pub(crate) fn start(config: &Path, key: &Path, args: &[&str]) -> Gateway {
        Self::start_with(config, key, args, &[("RUST_LOG", "off")])
    }

    /// [`Gateway::start`] with these environment variables.
    pub(crate) fn start_with(
        config: &Path,
        key: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Gateway {
        let mut command = runvil_command(&serve_args(config, key, args));
        command.envs(env.iter().copied());
        Self::spawn(command, None)
    }

    /// A gateway for the whole test binary, which outlives every test.
    pub(crate) fn shared(config: &Path, key: &Path, args: &[&str]) -> Gateway {
        let runvil = runvil_command(&[]);
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#""$0" "$@" & gateway=$!; read _; kill "$gateway"; wait "$gateway""#)
            .arg(runvil.get_program())
            .args(serve_args(config, key, args))
            .envs(runvil.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("RUST_LOG", "off");
        let mut gateway = Self::spawn(command, Some(()));
        gateway._lifeline = gateway.child.stdin.take();
        gateway
    }

    fn spawn(mut command: Command, lifeline: Option<()>) -> Gateway {
        let stdin = match lifeline {
            Some(()) => Stdio::piped(),
            None => Stdio::null(),
        };
        let mut child = command
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runvil serve --http starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (sender, receiver) = mpsc::channel();
        let (lines, said) = tokio::sync::watch::channel(0);
        let kept = Arc::clone(&stderr);
        let pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("runvil: serving MCP at ") {
                    let url = rest.split(' ').next().unwrap_or_default();
                    let _ = sender.send(url.trim_end_matches("/mcp").to_owned());
                }
                let mut kept = kept.lock().expect("the stderr lock");
                kept.push_str(&line);
                kept.push('\n');
                drop(kept);
                lines.send_modify(|n| *n += 1);
            }
        });
        let base = receiver.recv_timeout(LISTEN_WITHIN);
        let mut gateway = Gateway {
            child,
            _lifeline: None,
            base: String::new(),
            stderr,
            said,
        };
        match base {
            Ok(base) => gateway.base = base,
            Err(_) => panic!("the gateway did not start: {}", gateway.stderr()),
        }
        gateway
    }

    /// The MCP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// Its stderr so far.
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().expect("the stderr lock").clone()
    }

    /// Waits until its stderr holds `what` `times` times, failing the test after `within`.
    pub(crate) async fn said(&self, what: &str, times: usize, within: Duration) {
        let mut said = self.said.clone();
        let waited = tokio::time::timeout(
            within,
            said.wait_for(|_| self.stderr().matches(what).count() >= times),
        )
        .await;
        assert!(
            matches!(waited, Ok(Ok(_))),
            "the gateway at {} did not say {what:?} {times} times: {}",
            self.base,
            self.stderr()
        );
    }

    /// How many times its stderr holds `what` so far.
    pub(crate) fn count(&self, what: &str) -> usize {
        self.stderr().matches(what).count()
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends it `signal` (`TERM`, `INT`).
    pub(crate) fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success());
    }

    /// Waits up to `within` for it to exit, and answers how it ended.
    ///
    /// # Panics
    ///
    /// If it is still running after `within`.
    pub(crate) async fn exited(&mut self, within: Duration) -> ExitStatus {
        let mut ended = None;
        super::wait_until("the gateway never exited", within, async || {
            ended = self.child.try_wait().ok().flatten();
            ended.is_some()
        })
        .await;
        ended.expect("an exit status")
    }

    /// Its resident memory, in KiB.
    pub(crate) fn resident_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("the gateway's /proc status");
        let line = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .expect("VmRSS");
        line.split_whitespace()
            .nth(1)
            .and_then(|kib| kib.parse().ok())
            .expect("a number of KiB")
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments of `runvil serve --http` on loopback with `config` and `key`, then `args`.
pub(crate) fn serve_args<'a>(config: &'a Path, key: &'a Path, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "serve",
        "--http",
        "127.0.0.1:0",
        "--config",
        config.to_str().expect("a UTF-8 path"),
        "--session-key-file",
        key.to_str().expect("a UTF-8 path"),
    ];
    all.extend_from_slice(args);
    all
}

/// A key file path no other test uses (the gateway makes the file).
pub(crate) fn key_path() -> PathBuf {
    unique_temp_path("session.key")
}

/// A config naming each `(namespace, url)`.
pub(crate) fn config_of(servers: &[(&str, &str)]) -> Temp {
    let servers: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, url)| ((*name).to_owned(), json!({ "url": url })))
        .collect();
    Temp::config(Value::Object(servers))
}

/// The `_meta` of a 2026-07-28 request.
pub(crate) fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    })
}

/// An HTTP client of the MCP endpoint.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub(crate) url: String,
    /// The `Authorization` header of every request, when it has one.
    authorization: Option<String>,
}

impl Http {
    pub(crate) fn new(url: String) -> Self {
        Self {
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("a client"),
            url,
            authorization: None,
        }
    }

    /// The same client, presenting `token` as `Authorization: Bearer` on every request.
    pub(crate) fn with_token(&self, token: &str) -> Self {
        Self {
            authorization: Some(format!("Bearer {token}")),
            ..self.clone()
        }
    }

    /// POSTs `body` with the headers every MCP client sends and `headers`.
    pub(crate) async fn post(&self, headers: &[(&str, &str)], body: &Value) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(authorization) = &self.authorization {
            request = request.header("authorization", authorization);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the gateway answers")
    }

    /// A request of the session `session` (its id), as a 2025-11-25 client sends it.
    pub(crate) async fn in_session(&self, session: &str, body: &Value) -> reqwest::Response {
        let headers = [
            ("mcp-session-id", session),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        self.post(&headers, body).await
    }

    /// `initialize` at 2025-11-25 and `notifications/initialized`: the session's id.
    pub(crate) async fn initialize(&self) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}});
        let response = self.post(&[], &body).await;
        assert_eq!(response.status(), 200);
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.in_session(&session, &initialized).await.status(), 202);
        session
    }

    /// A 2026-07-28 request of `method` (calling `name`, for `tools/call`).
    pub(crate) async fn modern(
        &self,
        id: i64,
        method: &str,
        mut params: Value,
    ) -> reqwest::Response {
        params["_meta"] = match params.get("_meta") {
            Some(Value::Object(own)) => {
                let mut meta = modern_meta();
                for (key, value) in own {
                    meta[key] = value.clone();
                }
                meta
            }
            _ => modern_meta(),
        };
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if method == "tools/call" {
            headers.push(("mcp-name", &name));
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post(&headers, &body).await
    }

    /// `DELETE` of the session `session`.
    pub(crate) async fn delete(&self, session: &str) -> reqwest::Response {
        let mut request = self
            .client
            .delete(&self.url)
            .header("mcp-session-id", session);
        if let Some(authorization) = &self.authorization {
            request = request.header("authorization", authorization);
        }
        request.send().await.expect("the gateway answers")
    }
}

/// A call of the gateway's `tool` with `arguments`, as `tools/call` params.
pub(crate) fn tool_call(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

/// The JSON-RPC messages of a response: its JSON body, or each event of its stream.
pub(crate) async fn messages(response: reqwest::Response) -> Vec<Value> {
    let stream = response
        .headers()
        .get("content-type")
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    let text = response.text().await.expect("a body");
    if !stream {
        return vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))];
    }
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).expect("an event is JSON"))
        .collect()
}

/// The text of a `tools/call` answer's result and whether it is an error.
pub(crate) fn result_text(message: &Value) -> (String, bool) {
    let result = &message["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (text.to_owned(), result["isError"] == true)
}
