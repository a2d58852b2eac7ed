//! What a script pays to spawn `runvil` per call: the whole-process time of
//! `runvil call bench echo ARGS --config FILE` against the benchmark's 2026-07-28 server,
//! against a raw client process making the same three requests (`server/discover`,
//! `tools/list`, `tools/call`): this binary as `bench oneshot-raw URL`, the raw client of
//! [`crate::clients`] on a tokio runtime built as runvil builds its own.
//!
//! Each run is a process spawned, its stdout read and its exit waited for, timed from the
//! spawn to the exit. The two alternate (A B, then B A), after one untimed run of each (the
//! first `runvil call` records the tool in the pins file, which later runs read, as a user's
//! do); the ratio is of the medians.

// Spawning processes and printing the raw client's answer are what this module is for.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::print_stdout
)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::clients::{NAMESPACE, Payload, Raw};
use crate::report::Results;
use crate::server::{Mode, Server};

/// `bench oneshot-raw URL`: the raw client's process.
pub(crate) const SUBCOMMAND: &str = "oneshot-raw";
/// Timed runs of each process.
const RUNS: usize = 30;
/// The server: 2026-07-28, where a call is three requests and no session.
const MODE: Mode = Mode::Modern;

/// The section: [`RUNS`] timed runs of each process, interleaved.
pub(crate) async fn oneshot(bin: &Path, results: &mut Results) -> Result<(), String> {
    eprintln!("bench: one-shot `runvil call` against a raw client process, {RUNS} runs each");
    let runvil = crate::gateway::runvil()?;
    let server = Server::start(bin, MODE, 1, 1)?;
    let files = Files::new(server.url())?;
    let payload = Payload::small();
    let arguments = Value::Object(payload.arguments.clone()).to_string();
    let text = payload.arguments["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let call = Process {
        program: runvil,
        args: [&["call", NAMESPACE, "echo", &arguments, "--config"][..]]
            .concat()
            .into_iter()
            .map(Into::into)
            .chain([files.config.clone().into_os_string()])
            .collect(),
        env: vec![
            ("RUNVIL_PINS", files.dir.join("pins.json").into_os_string()),
            (
                "RUNVIL_CREDENTIALS",
                files.dir.join("credentials.json").into_os_string(),
            ),
        ],
    };
    let raw = Process {
        program: bin.to_owned(),
        args: vec![SUBCOMMAND.into(), server.url().into()],
        env: Vec::new(),
    };
    // The untimed first runs: the binaries in the page cache, the pins file written.
    call.run(&text).await?;
    raw.run(&text).await?;
    for index in 0..RUNS {
        let order = match index % 2 {
            0 => [&call, &raw],
            _ => [&raw, &call],
        };
        for process in order {
            let ms = process.run(&text).await?.as_secs_f64() * 1e3;
            match std::ptr::eq(process, &call) {
                true => results.oneshot_runvil_ms.push(ms),
                false => results.oneshot_raw_ms.push(ms),
            }
        }
    }
    drop(server);
    Ok(())
}

/// A command to spawn: its program, arguments and the variables set for it.
#[derive(Clone)]
struct Process {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
}

impl Process {
    /// Spawns it (`RUST_LOG` and `RUNVIL_STORE` unset), reads its stdout and stderr to the
    /// end and waits for its exit, on the blocking pool; the time from the spawn to the exit,
    /// once it succeeded and said `text`.
    async fn run(&self, text: &str) -> Result<Duration, String> {
        let process = self.clone();
        let (elapsed, output) = tokio::task::spawn_blocking(move || {
            let mut command = Command::new(&process.program);
            command
                .args(&process.args)
                .envs(process.env.iter().map(|(name, value)| (name, value)))
                .env_remove("RUST_LOG")
                .env_remove("RUNVIL_STORE")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let started = Instant::now();
            let output = command.output();
            (started.elapsed(), output)
        })
        .await
        .map_err(|error| error.to_string())?;
        let name = self.program.display();
        let output = output.map_err(|error| format!("cannot run {name}: {error}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !stdout.contains(text) {
            return Err(format!(
                "{name} failed ({}): {stdout} {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(elapsed)
    }
}

/// The config (and the places of the pins and credentials files) of the `runvil` runs, in a
/// folder of their own, removed when dropped.
struct Files {
    dir: PathBuf,
    config: PathBuf,
}

impl Files {
    fn new(url: &str) -> Result<Files, String> {
        let dir = std::env::temp_dir().join(format!("bench-oneshot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
        let config = dir.join("mcp.json");
        let servers = json!({"mcpServers": {NAMESPACE: {"url": url}}});
        std::fs::write(&config, servers.to_string())
            .map_err(|error| format!("{}: {error}", config.display()))?;
        Ok(Files { dir, config })
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `bench oneshot-raw URL`: the raw client's start (`server/discover`), `tools/list` and the
/// small `echo` call, its text printed, on a runtime built as runvil's `block_on` builds its
/// own (the default multi-thread runtime).
pub(crate) fn raw_main(args: &[String]) -> ExitCode {
    let [url] = args else {
        eprintln!("usage: bench {SUBCOMMAND} URL");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("bench {SUBCOMMAND}: cannot build the tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let answer = runtime.block_on(async {
        let raw = Raw::start(Raw::http_client(true)?, url, MODE.modern()).await?;
        raw.list_tools().await?;
        raw.echo(&Payload::small()).await
    });
    runtime.shutdown_background();
    match answer {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("bench {SUBCOMMAND}: {error}");
            ExitCode::FAILURE
        }
    }
}
