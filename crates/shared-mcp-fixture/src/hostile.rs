//! A test server that speaks raw HTTP/1.1 over TCP, so a test can make it misbehave in ways a
//! real server library never would: wrong statuses, redirects, broken or endless bodies.
//!
//! Each request is read whole (headers and a `Content-Length` body), recorded, and handed to
//! the test's handler, which answers with a [`Script`]: bytes to write, pauses, and whether to
//! keep the connection. [`mcp`] answers like a small well-behaved server, so a test only
//! scripts the part it wants to break.
//!
//! Everything the server records (a connection opened, a request read, a connection closed by
//! the client) is also announced, so a test waits for what it expects with [`Hostile::until`]
//! instead of for a time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, `DELETE`.
    pub method: String,
    /// The request target as sent: path and query.
    pub target: String,
    /// The headers, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body as JSON, `null` when it is none.
    pub body: Value,
    /// The body as text, for bodies that are not JSON (forms).
    pub text: String,
    /// The connection it came on: 1 for the first the server accepted, and so on.
    pub connection: usize,
}

impl Request {
    /// The value of header `name`, compared without regard to case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC method of a POST, or "" for anything else.
    pub fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Step {
    /// Writes these bytes.
    Write(Vec<u8>),
    /// Waits this long.
    Sleep(Duration),
    /// Never answers more: the connection stays open until the test ends.
    Stall,
    /// Writes nothing more and waits for the client to close the connection, which
    /// [`Hostile::closed_by_client`] then counts.
    AwaitClose,
    /// Waits until the test says go (`notify_one`), then goes on with the next step: what a
    /// long-lived stream sends when something happens.
    Wait(Arc<tokio::sync::Notify>),
}

/// The steps of one answer; afterwards the connection is closed unless `keep_alive`.
#[derive(Debug, Clone)]
pub struct Script {
    /// What the server does, in order.
    pub steps: Vec<Step>,
    /// Whether the connection stays open for the next request.
    pub keep_alive: bool,
}

impl Script {
    /// Writes `bytes` and closes the connection. An HTTP/1.1 answer among them announces the
    /// close (`connection: close`), as a server that closes must: otherwise the client may pool
    /// the connection and race the close with its next request, which no real test wants.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            steps: vec![Step::Write(announcing_close(bytes.into()))],
            keep_alive: false,
        }
    }
}

fn announcing_close(bytes: Vec<u8>) -> Vec<u8> {
    let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n");
    let status_end = bytes.windows(2).position(|w| w == b"\r\n");
    let announced = head_end.is_some_and(|end| {
        String::from_utf8_lossy(&bytes[..end])
            .to_ascii_lowercase()
            .contains("\r\nconnection:")
    });
    match status_end {
        Some(end) if bytes.starts_with(b"HTTP/1.1 ") && head_end.is_some() && !announced => [
            &bytes[..end + 2],
            b"connection: close\r\n",
            &bytes[end + 2..],
        ]
        .concat(),
        _ => bytes,
    }
}

type Handler = Arc<dyn Fn(&Request) -> Script + Send + Sync>;

/// A running hostile server; it stops when dropped.
pub struct Hostile {
    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    /// The port it listens on.
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    connections: Arc<Mutex<usize>>,
    closed: Arc<Mutex<usize>>,
    hung_up: Arc<Mutex<Vec<usize>>>,
    /// Told of each thing recorded, for [`Hostile::until`].
    events: watch::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hostile {
    /// Serves `/mcp` on a free loopback port with `handler`.
    pub async fn start(handler: impl Fn(&Request) -> Script + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Self::serve(listener, Arc::new(handler))
    }

    /// Serves on an already bound listener (a port a test chose).
    pub fn serve(listener: TcpListener, handler: Handler) -> Self {
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let closed = Arc::new(Mutex::new(0));
        let hung_up = Arc::new(Mutex::new(Vec::new()));
        let events = watch::Sender::new(());
        let (seen, count) = (Arc::clone(&requests), Arc::clone(&connections));
        let ends = Ends {
            awaited: Arc::clone(&closed),
            hung_up: Arc::clone(&hung_up),
            events: events.clone(),
        };
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let number = {
                    let mut count = count.lock().expect("count");
                    *count += 1;
                    *count
                };
                ends.events.send_replace(());
                let (handler, seen, ends) = (Arc::clone(&handler), Arc::clone(&seen), ends.clone());
                tokio::spawn(connection(stream, number, handler, seen, ends));
            }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
            requests,
            connections,
            closed,
            hung_up,
            events,
            task,
        }
    }

    /// Waits until `done` holds of what the server recorded, looking again each time it
    /// records something (a connection, a request, a close), never on a timer.
    ///
    /// # Panics
    ///
    /// If `done` does not hold within `within` (a bound on a broken test, not a measure),
    /// naming `what` and the requests seen.
    pub async fn until(&self, what: &str, within: Duration, done: impl Fn(&Self) -> bool) {
        let mut events = self.events.subscribe();
        let waited = tokio::time::timeout(within, async {
            loop {
                events.mark_unchanged();
                if done(self) {
                    return;
                }
                // The sender lives as long as `self`: a change always comes or the bound ends.
                let _ = events.changed().await;
            }
        })
        .await;
        if waited.is_err() {
            let seen: Vec<String> = self
                .requests()
                .iter()
                .map(|r| format!("{} {} {}", r.method, r.target, r.rpc_method()))
                .collect();
            panic!("{what}, within {within:?}; the server saw {seen:?}");
        }
    }

    /// Connections the client closed while an answer waited on [`Step::AwaitClose`].
    pub fn closed_by_client(&self) -> usize {
        *self.closed.lock().expect("closed")
    }

    /// Connections the client closed while the server wrote an answer or waited for the next
    /// request (a pooled connection dropped, or one closed before the end of its answer was
    /// read); not those of [`Step::AwaitClose`].
    pub fn hung_up(&self) -> usize {
        self.hung_up.lock().expect("hung up").len()
    }

    /// The connections (as [`Request::connection`] numbers them) the client closed as
    /// [`Hostile::hung_up`] counts, in the order they were closed.
    pub fn hung_up_connections(&self) -> Vec<usize> {
        self.hung_up.lock().expect("hung up").clone()
    }

    /// Every request so far, in the order they were read.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests").clone()
    }

    /// The connections accepted so far.
    pub fn connections(&self) -> usize {
        *self.connections.lock().expect("count")
    }

    /// The requests whose JSON-RPC method is `method`.
    pub fn calls_of(&self, method: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.rpc_method() == method)
            .collect()
    }
}

/// The counters of how connections ended.
#[derive(Clone)]
struct Ends {
    /// Closed by the client on [`Step::AwaitClose`].
    awaited: Arc<Mutex<usize>>,
    /// The connections closed by the client while the server wrote or waited for a request.
    hung_up: Arc<Mutex<Vec<usize>>>,
    /// Told of each end, for [`Hostile::until`].
    events: watch::Sender<()>,
}

impl Ends {
    fn hung_up(&self, connection: usize) {
        self.hung_up.lock().expect("hung up").push(connection);
        self.events.send_replace(());
    }
}

async fn connection(
    mut stream: TcpStream,
    number: usize,
    handler: Handler,
    seen: Arc<Mutex<Vec<Request>>>,
    ends: Ends,
) {
    let mut buffer = Vec::new();
    loop {
        let Some(mut request) = read_request(&mut stream, &mut buffer).await else {
            ends.hung_up(number);
            return;
        };
        request.connection = number;
        seen.lock().expect("requests").push(request.clone());
        ends.events.send_replace(());
        let script = handler(&request);
        for step in script.steps {
            match step {
                Step::Write(bytes) => {
                    if stream.write_all(&bytes).await.is_err() {
                        ends.hung_up(number);
                        return;
                    }
                    let _ = stream.flush().await;
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Wait(go) => go.notified().await,
                Step::Stall => std::future::pending::<()>().await,
                Step::AwaitClose => {
                    let mut byte = [0u8; 1];
                    // The client sends nothing more on this connection: a read ends only when
                    // it closes (0 bytes) or resets it (an error).
                    while let Ok(1..) = stream.read(&mut byte).await {}
                    *ends.awaited.lock().expect("closed") += 1;
                    ends.events.send_replace(());
                    return;
                }
            }
        }
        if !script.keep_alive {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Request> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let bytes = &buffer[body_start..body_start + length];
    let body = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    let text = String::from_utf8_lossy(bytes).into_owned();
    buffer.drain(..body_start + length);
    Some(Request {
        method,
        target,
        headers,
        body,
        text,
        connection: 0,
    })
}

/// An HTTP response with `status`, extra header lines, and `body`.
pub fn http(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n", body.len());
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A 200 JSON answer.
pub fn json_reply(message: &Value) -> Script {
    json_text_reply(&message.to_string())
}

/// A 200 JSON answer to `request` whose result is `result`, JSON text written as it is
/// (megabytes of it, or a shape a `Value` would not keep).
pub fn raw_result_reply(request: &Request, result: &str) -> Script {
    let id = &request.body["id"];
    json_text_reply(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

fn json_text_reply(body: &str) -> Script {
    Script {
        steps: vec![Step::Write(http(
            "200 OK",
            &[
                ("content-type", "application/json"),
                ("mcp-session-id", "s-1"),
            ],
            body.as_bytes(),
        ))],
        keep_alive: true,
    }
}

/// A 202 for notifications and responses.
pub fn accepted() -> Script {
    Script {
        steps: vec![Step::Write(http("202 Accepted", &[], b""))],
        keep_alive: true,
    }
}

/// The JSON-RPC result message answering `request`.
pub fn result_for(request: &Request, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request.body["id"], "result": result})
}

/// Answers like a small well-behaved server with one tool, `echo`, which returns its `text`
/// argument, or every request header when called with no text.
pub fn mcp(request: &Request) -> Script {
    if request.method != "POST" {
        return Script::raw(http("405 Method Not Allowed", &[], b""));
    }
    match mcp_result(request) {
        Some(result) => json_reply(&result_for(request, result)),
        None => accepted(),
    }
}

/// The result [`mcp`] answers a request with, for the methods it knows.
pub fn mcp_result(request: &Request) -> Option<Value> {
    match request.rpc_method() {
        "initialize" => Some(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        })),
        "tools/list" => Some(json!({"tools": [
            {"name": "echo", "description": "Echoes text, or the request's headers.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        ]})),
        "tools/call" => {
            let text = match request.body["params"]["arguments"]["text"].as_str() {
                Some(text) => text.to_owned(),
                None => format!("{:?}", request.headers),
            };
            Some(json!({"content": [{"type": "text", "text": text}]}))
        }
        _ => None,
    }
}

/// Answers like [`mcp`], but never answers `tools/call`: a call stays in flight until the
/// client gives it up.
pub fn stalls_calls(r: &Request) -> Script {
    match r.rpc_method() {
        "tools/call" => Script {
            steps: vec![Step::Stall],
            keep_alive: true,
        },
        _ => mcp(r),
    }
}

/// Answers like [`mcp`], but echoes the request target with the headers, lists tools named
/// after the `X-Canary` header, answers a call with a content type that echoes it, and asks
/// the client something before answering a call (`{"text": "ask"}`), answering the client's
/// answer with such a content type too: everything a server can send back of what it was
/// sent, by every way the Pack reads.
pub fn echo_everything(r: &Request) -> Script {
    let header = r.header("x-canary").unwrap_or_default().to_owned();
    let echoed_type = Script {
        steps: vec![Step::Write(http(
            "200 OK",
            &[("content-type", &format!("{header}/{}", r.target))],
            b"{}",
        ))],
        keep_alive: true,
    };
    let echo = format!("{} {:?}", r.target, r.headers);
    if r.method == "POST" && r.body.get("error").is_some() {
        return echoed_type; // the client's answer to the server's request
    }
    match (
        r.rpc_method(),
        r.body["params"]["arguments"]["text"].as_str(),
    ) {
        ("tools/list", _) => json_reply(&result_for(
            r,
            json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}},
                {"name": header, "inputSchema": {"type": "object"}},
                {"name": format!("{header}\u{7}"), "inputSchema": {"type": "object"}},
            ]}),
        )),
        ("tools/call", Some("content type")) => echoed_type,
        ("tools/call", Some("ask")) => {
            let ask = json!({"jsonrpc": "2.0", "id": "ask-1", "method": "roots/list"});
            let result = result_for(r, json!({"content": [{"type": "text", "text": echo}]}));
            let events = format!("data: {ask}\n\ndata: {result}\n\n");
            Script {
                steps: vec![Step::Write(http(
                    "200 OK",
                    &[("content-type", "text/event-stream")],
                    events.as_bytes(),
                ))],
                keep_alive: true,
            }
        }
        ("tools/call", _) => json_reply(&result_for(
            r,
            json!({"content": [{"type": "text", "text": echo}]}),
        )),
        _ => mcp(r),
    }
}

/// What `request` carried of the URL it was sent to, as a server that echoes it writes it: the
/// target as sent, its path segments and query pairs decoded, and the `Authorization` header
/// (the `Basic` credential a URL's user name and password become).
pub fn echoed_url(request: &Request) -> String {
    let target = &request.target;
    let decoded = match url::Url::parse(&format!("http://h{target}")) {
        Ok(url) => {
            let segments = url.path_segments().into_iter().flatten();
            let path: Vec<String> = segments
                .flat_map(|s| url::form_urlencoded::parse(s.as_bytes()).map(|(s, _)| s))
                .map(String::from)
                .collect();
            let query: Vec<String> = url.query_pairs().map(|(k, v)| format!("{k}={v}")).collect();
            format!("/{} ? {}", path.join("/"), query.join(" & "))
        }
        Err(_) => String::new(),
    };
    let authorization = request.header("authorization").unwrap_or_default();
    format!("{target} | {decoded} | {authorization}")
}

/// The error a 2026-07-28 server answers with HTTP 400.
pub fn refusal(request: &Request, code: i64, message: &str, data: Option<Value>) -> Script {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": request.body["id"], "error": error}).to_string();
    Script {
        steps: vec![Step::Write(http(
            "400 Bad Request",
            &[("content-type", "application/json")],
            body.as_bytes(),
        ))],
        keep_alive: true,
    }
}

/// The `_meta` every 2026-07-28 request of the Pack carries.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "plugin_mcp", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// Answers like a server of the 2026-07-28 revision only, as strict as the specification
/// lets it be: no session and no handshake (`initialize` is refused with -32022 naming the
/// versions it speaks), each request checked for `MCP-Protocol-Version`, `Mcp-Method`,
/// `Mcp-Name` and `_meta` (a mismatch is 400 with -32020), GET and DELETE refused with 405.
/// Its tools are [`mcp`]'s, with the revision's `resultType`, `ttlMs` and `cacheScope`.
pub fn modern(request: &Request) -> Script {
    if request.method != "POST" {
        return Script::raw(http("405 Method Not Allowed", &[], b""));
    }
    let method = request.rpc_method();
    let version = request.header("mcp-protocol-version");
    if method == "initialize" || version != Some("2026-07-28") {
        let supported = json!({"supported": ["2026-07-28"], "requested": version});
        return refusal(
            request,
            -32022,
            "Unsupported protocol version",
            Some(supported),
        );
    }
    let params = &request.body["params"];
    let name_matches = match method {
        "tools/call" => request.header("mcp-name") == params["name"].as_str(),
        _ => request.header("mcp-name").is_none(),
    };
    if request.header("mcp-method") != Some(method)
        || !name_matches
        || params["_meta"] != modern_meta()
        || request.header("mcp-session-id").is_some()
    {
        return refusal(request, -32020, "Header mismatch", None);
    }
    let complete = |mut result: Value| {
        result["resultType"] = json!("complete");
        json_reply(&result_for(request, result))
    };
    match method {
        "server/discover" => complete(json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "public",
        })),
        "tools/list" => {
            let mut result = mcp_result(request).unwrap_or_default();
            result["ttlMs"] = json!(60000);
            result["cacheScope"] = json!("private");
            complete(result)
        }
        "tools/call" => complete(mcp_result(request).unwrap_or_default()),
        _ => refusal(request, -32601, "Method not found", None),
    }
}
