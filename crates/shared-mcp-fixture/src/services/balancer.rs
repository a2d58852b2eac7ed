//! A throwaway load balancer: Debian's nginx in the foreground, in a temporary folder, on a
//! free port of 127.0.0.1, spreading requests round robin over the upstreams it is given, with
//! no stickiness (no `ip_hash`, no cookie), as a team would put one in front of several
//! `runvil serve --http`. Responses are streamed as they come (no buffering), so server-sent
//! events pass at once, and a request that finds an upstream gone (its connection refused) is
//! sent to the next one; a request an upstream already received is never sent to another
//! (see [`config_text`]). Killed when dropped.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{Folder, absent, free_port};

/// How long the balancer may take to accept connections once started.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// A running balancer; killed and its folder removed when dropped.
pub struct Balancer {
    child: Child,
    port: u16,
    // Dropped after the child is killed (fields drop in order, after `Drop::drop`).
    folder: Folder,
}

impl Balancer {
    /// nginx in front of `upstreams`; `None` (said in one line, or a failure under `CI=true`)
    /// when nginx is not installed.
    ///
    /// # Panics
    ///
    /// If `upstreams` is empty, or nginx does not start accepting connections in time.
    pub fn start(upstreams: &[SocketAddr]) -> Option<Self> {
        assert!(!upstreams.is_empty(), "a balancer needs an upstream");
        let Some(nginx) = nginx() else {
            absent("no nginx (/usr/sbin/nginx)");
            return None;
        };
        let folder = Folder::new("runvil-nginx");
        let port = free_port();
        let config = folder.path.join("nginx.conf");
        std::fs::write(&config, config_text(&folder.path, port, upstreams)).expect("nginx.conf");
        folder.give(&config);
        let child = folder
            .command(&nginx)
            .arg("-p")
            .arg(&folder.path)
            .arg("-e")
            .arg(folder.path.join("error.log"))
            .arg("-c")
            .arg(&config)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut balancer = Self {
            child,
            port,
            folder,
        };
        balancer.wait_until_listening();
        Some(balancer)
    }

    /// Its address, `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// What nginx logged (at `warn` and above): an upstream that refused a connection, or
    /// closed one before answering, is named here.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.folder.path.join("error.log")).unwrap_or_default()
    }

    /// The URL of `path` through it (`/mcp`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn wait_until_listening(&mut self) {
        let deadline = Instant::now() + START_DEADLINE;
        while TcpStream::connect(self.addr()).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("nginx ended at its start ({status}); its config or port was refused");
            }
            assert!(Instant::now() < deadline, "nginx did not listen in time");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's nginx, where its package puts it.
fn nginx() -> Option<PathBuf> {
    let path = Path::new("/usr/sbin/nginx");
    path.is_file().then(|| path.to_path_buf())
}

/// The configuration: one process, every file in `folder`, round robin over `upstreams`.
///
/// `proxy_next_upstream error` (without nginx's default `timeout`): a request whose upstream
/// refused the connection, or closed it before the request was sent, goes to the next
/// upstream, which is the passive failover a team needs when an instance dies. A request an
/// upstream has already received is not sent again: nginx never resends a POST once sent
/// (no `non_idempotent`, and `proxy_request_buffering off` streams the body), and without
/// `timeout` a slow call is not sent to a second instance either. An MCP `tools/call` is a
/// POST that may change the world; making it twice because the first instance was slow or
/// died mid-way is worse than answering that one call with an error.
fn config_text(folder: &Path, port: u16, upstreams: &[SocketAddr]) -> String {
    let dir = folder.display();
    let servers: String = upstreams
        .iter()
        .map(|addr| format!("        server {addr} max_fails=0;\n"))
        .collect();
    format!(
        "master_process off;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log warn;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n\
         \x20   access_log off;\n\
         \x20   client_body_temp_path {dir}/body;\n\
         \x20   proxy_temp_path {dir}/proxy;\n\
         \x20   fastcgi_temp_path {dir}/fastcgi;\n\
         \x20   uwsgi_temp_path {dir}/uwsgi;\n\
         \x20   scgi_temp_path {dir}/scgi;\n\
         \x20   upstream gateways {{\n{servers}\
         \x20       keepalive 16;\n\
         \x20   }}\n\
         \x20   server {{\n\
         \x20       listen 127.0.0.1:{port};\n\
         \x20       location / {{\n\
         \x20           proxy_pass http://gateways;\n\
         \x20           proxy_http_version 1.1;\n\
         \x20           proxy_set_header Connection \"\";\n\
         \x20           proxy_set_header Host $http_host;\n\
         \x20           proxy_buffering off;\n\
         \x20           proxy_request_buffering off;\n\
         \x20           proxy_read_timeout 600s;\n\
         \x20           proxy_next_upstream error;\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n"
    )
}
