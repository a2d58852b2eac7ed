//! `cargo run -p build-xtask -- audit`: writes `audit/dependencies.md`, the inventory of every
//! crate in `plugin_mcp`'s dependency tree with its version, license and why it is there.
//!
//! The graph is `cargo tree --package plugin_mcp --edges normal,build` for
//! [`TARGET_PLATFORM`] (dev-dependencies never ship), and each crate's license, source and
//! kind come from `cargo metadata`. Not `cargo metadata`'s own `resolve.nodes`: those unify the
//! features of the whole workspace (build-xtask's and the tests' too) and list optional
//! dependencies that only a weak feature (`dep?/feature`) names, which cargo never builds
//! (rust-lang/cargo#10801); walked from `plugin_mcp`, they add crates such as quinn that are
//! not in its tree. `cargo tree` resolves features for `plugin_mcp` alone, as a Host that
//! depends on it gets them.
//!
//! A direct dependency's reason is its line in `policy/deps.allow`; a transitive one's is the
//! direct dependencies that pull it in. [`parse_cargo_tree`], [`inventory`] and [`render`] are
//! pure functions, so the output is sorted and byte-for-byte reproducible: rerunning the
//! command on an unchanged `Cargo.lock` gives no diff, and `audit --check` (also run by
//! `cargo test -p build-xtask`) fails when the file is out of date.

// A command whose output (one summary line) is its result.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use crate::dependency_policy::{ALLOW_LISTED_PACKAGE, workspace_member_ids};
use crate::workspace::{self, DEPS_ALLOW_PATH, TARGET_PLATFORM, run_cargo};

/// The inventory, relative to the workspace root.
pub const INVENTORY_PATH: &str = "audit/dependencies.md";

/// The source of crates.io packages in `cargo metadata`.
const CRATES_IO_SOURCES: &[&str] = &[
    "registry+https://github.com/rust-lang/crates.io-index",
    "sparse+https://index.crates.io/",
];

/// Whether a crate ends up in the Pack's code or only runs while it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Use {
    /// Reached from `plugin_mcp` through normal dependencies only, never through a build
    /// script or a proc macro: its code is linked into the Pack.
    Linked,
    /// Reached only through a build dependency or a proc macro: it runs at build time.
    BuildTime,
}

/// One crate of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The package name.
    pub name: String,
    /// Its resolved version.
    pub version: String,
    /// The SPDX expression it declares, or where its license file is.
    pub license: String,
    /// `crates.io`, `workspace` (a path dependency) or the source as cargo writes it.
    pub source: String,
    /// Linked into the Pack, or build time only.
    pub used: Use,
    /// Why it is in the tree.
    pub why: String,
}

/// A crate of the graph: `(name, version)`.
pub type Key = (String, String);

/// Whether an edge of the graph is a normal or a build dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// `[dependencies]`.
    Normal,
    /// `[build-dependencies]`.
    Build,
}

/// The dependency graph of one package, as `cargo tree` resolves it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DependencyGraph {
    /// The package the tree starts from.
    pub root: Key,
    /// Every edge: `(dependent, dependency, kind)`, each once.
    pub edges: BTreeSet<(Key, Key, EdgeKind)>,
}

/// Parses the output of `cargo tree --prefix indent --charset ascii --format {p}` for one
/// package (see [`CARGO_TREE_ARGS`]): one crate a line, indented four characters a level,
/// `[build-dependencies]` lines opening the build dependencies of the crate above them, and
/// `(*)` marking a crate whose dependencies were already listed.
pub fn parse_cargo_tree(text: &str) -> Result<DependencyGraph, String> {
    let mut graph = DependencyGraph::default();
    // For each depth, the crate last seen there and the kind of the edges its children get.
    let mut stack: Vec<(Key, EdgeKind)> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let offset = line
            .find(|c: char| !matches!(c, '|' | ' ' | '-' | '`'))
            .unwrap_or(line.len());
        if !offset.is_multiple_of(4) {
            return Err(format!(
                "cargo tree line {number} is not indented by levels: {line}"
            ));
        }
        let depth = offset / 4;
        let content = &line[offset..];
        if content.starts_with('[') {
            // `[build-dependencies]` at the depth of its crate.
            let kind = match content.trim() {
                "[build-dependencies]" => EdgeKind::Build,
                "[dependencies]" => EdgeKind::Normal,
                other => return Err(format!("cargo tree line {number}: unexpected {other}")),
            };
            stack.truncate(depth + 1);
            if stack.len() != depth + 1 {
                return Err(format!("cargo tree line {number}: {content} has no crate"));
            }
            if let Some(last) = stack.last_mut() {
                last.1 = kind;
            }
            continue;
        }
        let mut words = content.split_whitespace();
        let name = words.next().unwrap_or("");
        let version = words
            .next()
            .and_then(|word| word.strip_prefix('v'))
            .ok_or_else(|| format!("cargo tree line {number} is not `name vVERSION`: {line}"))?;
        let key: Key = (name.to_owned(), version.to_owned());
        if depth == 0 {
            if !stack.is_empty() {
                return Err(format!("cargo tree line {number}: a second root {name}"));
            }
            graph.root = key.clone();
        } else {
            stack.truncate(depth);
            let Some((parent, kind)) = stack.last() else {
                return Err(format!("cargo tree line {number}: {name} has no parent"));
            };
            if stack.len() != depth {
                return Err(format!("cargo tree line {number}: {name} skips a level"));
            }
            graph.edges.insert((parent.clone(), key.clone(), *kind));
        }
        stack.truncate(depth);
        stack.push((key, EdgeKind::Normal));
    }
    if graph.root.0.is_empty() {
        return Err("cargo tree printed no crate".to_owned());
    }
    Ok(graph)
}

/// Every crate in the tree of `graph` (the root excluded), sorted by name and version, its
/// details from `metadata` (the `cargo metadata` JSON) and its direct reasons from
/// `deps_allow` (the text of `policy/deps.allow`).
pub fn inventory(
    graph: &DependencyGraph,
    metadata: &Value,
    deps_allow: &str,
) -> Result<Vec<Entry>, String> {
    let packages: BTreeMap<(&str, &str), &Value> = metadata
        .get("packages")
        .and_then(Value::as_array)
        .ok_or("cargo metadata has no `packages`")?
        .iter()
        .map(|package| ((text(package, "name"), text(package, "version")), package))
        .collect();
    let members = workspace_member_ids(metadata)?;
    let package = |key: &Key| {
        packages
            .get(&(key.0.as_str(), key.1.as_str()))
            .copied()
            .ok_or_else(|| format!("{} {} is not in cargo metadata", key.0, key.1))
    };
    let is_member = |package: &Value| members.contains(text(package, "id"));
    let reasons = allow_list_reasons(deps_allow);

    let mut children: BTreeMap<&Key, Vec<(&Key, EdgeKind)>> = BTreeMap::new();
    for (from, to, kind) in &graph.edges {
        children.entry(from).or_default().push((to, *kind));
    }
    // Proc macros run in the compiler: neither they nor what they use is linked.
    let mut proc_macros: BTreeSet<&Key> = BTreeSet::new();
    for (_, to, _) in &graph.edges {
        if is_proc_macro(package(to)?) {
            proc_macros.insert(to);
        }
    }
    let direct: Vec<&Key> = children
        .get(&graph.root)
        .into_iter()
        .flatten()
        .map(|(key, _)| *key)
        .collect();
    let everything = reachable(&children, vec![&graph.root], None);
    let linked = reachable(&children, vec![&graph.root], Some(&proc_macros));
    // For each crate, the direct dependencies whose own trees contain it.
    let mut pulled_in_by: BTreeMap<&Key, BTreeSet<&str>> = BTreeMap::new();
    for &dependency in &direct {
        for key in reachable(&children, vec![dependency], None) {
            if key != dependency {
                pulled_in_by
                    .entry(key)
                    .or_default()
                    .insert(dependency.0.as_str());
            }
        }
    }

    let mut entries = Vec::new();
    for key in everything {
        if *key == graph.root {
            continue;
        }
        let details = package(key)?;
        let via: Vec<&str> = pulled_in_by
            .get(key)
            .map(|names| names.iter().copied().collect())
            .unwrap_or_default();
        let why = if direct.contains(&key) {
            let reason = if is_member(details) {
                format!(
                    "direct; workspace crate: {} (governed by the plugin_family_deps check)",
                    text(details, "description").trim_end_matches('.')
                )
            } else if let Some(reason) = reasons.get(key.0.as_str()) {
                format!("direct: {reason}")
            } else {
                format!("direct, **not listed in {DEPS_ALLOW_PATH}**")
            };
            if via.is_empty() {
                reason
            } else {
                format!("{reason}; also via {}", via.join(", "))
            }
        } else {
            format!("via {}", via.join(", "))
        };
        entries.push(Entry {
            name: key.0.clone(),
            version: key.1.clone(),
            license: license(details),
            source: source(details, is_member(details)),
            used: if linked.contains(key) {
                Use::Linked
            } else {
                Use::BuildTime
            },
            why,
        });
    }
    entries.sort_by(|a, b| {
        (a.name.as_str(), version_key(&a.version)).cmp(&(b.name.as_str(), version_key(&b.version)))
    });
    Ok(entries)
}

/// Every crate reachable from `starts` (included) in `children`; with `linked_only`, only
/// along normal edges and never into one of those proc macros.
fn reachable<'k>(
    children: &BTreeMap<&'k Key, Vec<(&'k Key, EdgeKind)>>,
    starts: Vec<&'k Key>,
    linked_only: Option<&BTreeSet<&'k Key>>,
) -> BTreeSet<&'k Key> {
    let mut seen: BTreeSet<&Key> = starts.iter().copied().collect();
    let mut queue = starts;
    while let Some(key) = queue.pop() {
        for &(child, kind) in children.get(key).into_iter().flatten() {
            if let Some(proc_macros) = linked_only
                && (kind == EdgeKind::Build || proc_macros.contains(child))
            {
                continue;
            }
            if seen.insert(child) {
                queue.push(child);
            }
        }
    }
    seen
}

fn is_proc_macro(package: &Value) -> bool {
    package
        .get("targets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|target| target.get("kind").and_then(Value::as_array))
        .flatten()
        .any(|kind| kind.as_str() == Some("proc-macro"))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn license(package: &Value) -> String {
    match (
        package.get("license").and_then(Value::as_str),
        package.get("license_file").and_then(Value::as_str),
    ) {
        (Some(license), _) => license.to_owned(),
        (None, Some(file)) => format!(
            "see its {}",
            Path::new(file)
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| file.to_owned())
        ),
        (None, None) => "none declared".to_owned(),
    }
}

fn source(package: &Value, member: bool) -> String {
    match package.get("source").and_then(Value::as_str) {
        None if member => "workspace".to_owned(),
        None => "path".to_owned(),
        Some(source) if CRATES_IO_SOURCES.contains(&source) => "crates.io".to_owned(),
        Some(source) => source.to_owned(),
    }
}

/// Sorts `1.10.0` after `1.9.0`: the numeric parts, then the whole text.
fn version_key(version: &str) -> (Vec<u64>, &str) {
    let release = version.split(['-', '+']).next().unwrap_or(version);
    (
        release
            .split('.')
            .map(|part| part.parse().unwrap_or(0))
            .collect(),
        version,
    )
}

/// `crate → reason` from the text of `policy/deps.allow` (the format the policy check
/// enforces: `name # reason`).
fn allow_list_reasons(deps_allow: &str) -> BTreeMap<&str, &str> {
    deps_allow
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let (name, reason) = line.split_once('#')?;
            Some((name.trim(), reason.trim()))
        })
        .collect()
}

/// The Markdown of `audit/dependencies.md` for `entries`.
pub fn render(entries: &[Entry]) -> String {
    let count = |used: Use| entries.iter().filter(|entry| entry.used == used).count();
    let direct = entries
        .iter()
        .filter(|entry| entry.why.starts_with("direct"))
        .count();
    let mut licenses: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for entry in entries {
        licenses
            .entry(entry.license.as_str())
            .or_default()
            .push(entry.name.as_str());
    }
    let mut out = String::new();
    out.push_str(&format!(
        "# Dependency inventory of {ALLOW_LISTED_PACKAGE}\n\n\
         Written by `cargo run -p build-xtask -- audit`; do not edit by hand, rerun it. \
         `cargo test -p build-xtask` fails when this file no longer matches `Cargo.lock`.\n\n\
         Every crate in {ALLOW_LISTED_PACKAGE}'s dependency tree for `{TARGET_PLATFORM}`, as \
         `cargo tree --package {ALLOW_LISTED_PACKAGE} --edges normal,build --locked` resolves it \
         (its normal and build dependencies and theirs, with the features {ALLOW_LISTED_PACKAGE} \
         itself enables; dev-dependencies never ship and are left out), with each crate's \
         license from `cargo metadata`. A direct dependency's reason is its line \
         in `{DEPS_ALLOW_PATH}`; a transitive one is \"via\" the direct dependencies that pull \
         it in. *linked* crates are compiled into the Pack; *build* crates only run while it is \
         built (build scripts, proc macros and what they use). The licenses are as each crate \
         declares them; `deny.toml` holds the allow list that `cargo deny check licenses` \
         enforces.\n\n\
         **{} crates**: {direct} direct, {} linked, {} build time only.\n\n",
        entries.len(),
        count(Use::Linked),
        count(Use::BuildTime),
    ));
    out.push_str("## Licenses\n\n| license (as declared) | crates |\n|---|---|\n");
    for (license, names) in &licenses {
        let names: BTreeSet<&str> = names.iter().copied().collect();
        out.push_str(&format!(
            "| {} | {} |\n",
            escape(license),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    out.push_str(
        "\n## Crates\n\n| crate | version | license | source | use | why it is here |\n\
         |---|---|---|---|---|---|\n",
    );
    for entry in entries {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            entry.name,
            entry.version,
            escape(&entry.license),
            escape(&entry.source),
            match entry.used {
                Use::Linked => "linked",
                Use::BuildTime => "build",
            },
            escape(&entry.why),
        ));
    }
    out
}

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

/// The inventory of the real workspace at `root`, rendered.
pub fn generate(root: &Path) -> Result<(String, Vec<Entry>), String> {
    let graph = parse_cargo_tree(&cargo_tree(root)?)?;
    if graph.root.0 != ALLOW_LISTED_PACKAGE {
        return Err(format!(
            "cargo tree started from {}, not {ALLOW_LISTED_PACKAGE}",
            graph.root.0
        ));
    }
    let metadata = workspace::cargo_metadata(root)?;
    let deps_allow = workspace::read_deps_allow(root)?;
    let entries = inventory(&graph, &metadata, &deps_allow)?;
    Ok((render(&entries), entries))
}

/// The arguments of the `cargo tree` run [`parse_cargo_tree`] reads (`--offline` aside).
pub const CARGO_TREE_ARGS: [&str; 14] = [
    "tree",
    "--package",
    ALLOW_LISTED_PACKAGE,
    "--edges",
    "normal,build",
    "--target",
    TARGET_PLATFORM,
    "--prefix",
    "indent",
    "--charset",
    "ascii",
    "--format",
    "{p}",
    "--locked",
];

/// Runs `cargo tree` ([`CARGO_TREE_ARGS`]) in `root`.
fn cargo_tree(root: &Path) -> Result<String, String> {
    String::from_utf8(run_cargo(root, &CARGO_TREE_ARGS)?)
        .map_err(|error| format!("cargo tree printed invalid UTF-8: {error}"))
}

/// Whether the inventory under `root` is `rendered`.
fn is_written(root: &Path, rendered: &str) -> bool {
    fs::read_to_string(root.join(INVENTORY_PATH)).is_ok_and(|written| written == rendered)
}

/// Whether `audit/dependencies.md` under `root` is what [`generate`] writes.
pub fn is_current(root: &Path) -> Result<bool, String> {
    let (rendered, _) = generate(root)?;
    Ok(is_written(root, &rendered))
}

/// The subcommand's entry point: `audit` writes the inventory; `audit --check` only says
/// whether it is current (exit code 1 if not).
pub fn command(args: &[String]) -> ExitCode {
    let check_only = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => {
            eprintln!("usage: cargo run -p build-xtask -- audit [--check]");
            return ExitCode::from(2);
        }
    };
    let root = workspace::root();
    let (rendered, entries) = match generate(&root) {
        Ok(generated) => generated,
        Err(error) => {
            eprintln!("audit: {error}");
            return ExitCode::FAILURE;
        }
    };
    let current = is_written(&root, &rendered);
    let path = root.join(INVENTORY_PATH);
    if check_only {
        if current {
            println!(
                "audit: {INVENTORY_PATH} is current ({} crates)",
                entries.len()
            );
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "audit: {INVENTORY_PATH} is out of date; run `cargo run -p build-xtask -- audit`"
        );
        return ExitCode::FAILURE;
    }
    if !current && let Err(error) = fs::write(&path, &rendered) {
        eprintln!("audit: cannot write {}: {error}", path.display());
        return ExitCode::FAILURE;
    }
    println!(
        "audit: {} {INVENTORY_PATH}: {} crates ({} linked, {} build time only)",
        if current { "unchanged" } else { "wrote" },
        entries.len(),
        entries
            .iter()
            .filter(|entry| entry.used == Use::Linked)
            .count(),
        entries
            .iter()
            .filter(|entry| entry.used == Use::BuildTime)
            .count(),
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REGISTRY: &str = "registry+https://github.com/rust-lang/crates.io-index";

    /// `cargo tree` output for a crafted tree: serde's proc macro and ring's build script are
    /// build time; tokio is reached three ways; `(*)` repeats a crate listed above.
    const TREE: &str = "\
plugin_mcp v0.1.0 (/ws)
|-- reqwest v1.0.0
|   |-- bytes v1.0.0
|   |-- ring v1.0.0
|   |   `-- untrusted v1.0.0
|   |   [build-dependencies]
|   |   `-- cc v1.0.0
|   |       `-- shlex v1.0.0
|   `-- tokio v1.0.0
|       `-- bytes v1.0.0
|-- runvil-plugin v0.1.0 (/ws/crates/runvil-plugin)
|   `-- tokio v1.0.0 (*)
|-- serde v1.0.0
|   `-- serde_derive v1.0.0 (proc-macro)
|       `-- syn v2.0.0
`-- tokio v1.0.0 (*)
";

    /// Metadata with a package for each `(name, version, license, proc macro?)`; the
    /// workspace members are plugin_mcp and runvil-plugin.
    fn metadata(packages: &[(&str, &str, Option<&str>, bool)]) -> Value {
        let members = ["plugin_mcp", "runvil-plugin"];
        let packages: Vec<Value> = packages
            .iter()
            .map(|(name, version, license, proc_macro)| {
                let member = members.contains(name);
                json!({
                    "name": name,
                    "version": version,
                    "id": format!("{name}@{version}"),
                    "license": license,
                    "license_file": if license.is_none() { json!("../LICENSE-MIT") } else { Value::Null },
                    "description": format!("the {name} crate."),
                    "source": if member { Value::Null } else { json!(REGISTRY) },
                    "targets": [{ "kind": [if *proc_macro { "proc-macro" } else { "lib" }] }],
                })
            })
            .collect();
        json!({
            "packages": packages,
            "workspace_members": ["plugin_mcp@0.1.0", "runvil-plugin@0.1.0"],
        })
    }

    fn sample() -> Value {
        metadata(&[
            ("plugin_mcp", "0.1.0", Some("MIT"), false),
            ("reqwest", "1.0.0", Some("MIT OR Apache-2.0"), false),
            ("bytes", "1.0.0", Some("MIT"), false),
            ("ring", "1.0.0", Some("Apache-2.0 AND ISC"), false),
            ("untrusted", "1.0.0", Some("ISC"), false),
            ("cc", "1.0.0", Some("MIT OR Apache-2.0"), false),
            ("shlex", "1.0.0", None, false),
            ("tokio", "1.0.0", Some("MIT"), false),
            ("runvil-plugin", "0.1.0", Some("MIT OR Apache-2.0"), false),
            ("serde", "1.0.0", Some("MIT OR Apache-2.0"), false),
            ("serde_derive", "1.0.0", Some("MIT OR Apache-2.0"), true),
            ("syn", "2.0.0", Some("MIT OR Apache-2.0"), false),
            // In the metadata but not in the tree (a dev-dependency, a weak optional one).
            ("quinn", "1.0.0", Some("MIT"), false),
        ])
    }

    const ALLOW: &str = "# header\nreqwest # HTTP client\nserde # derive\ntokio # runtime\n";

    fn entries() -> Vec<Entry> {
        let graph = parse_cargo_tree(TREE).expect("tree");
        inventory(&graph, &sample(), ALLOW).expect("inventory")
    }

    fn row<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries
            .iter()
            .find(|entry| entry.name == name)
            .unwrap_or_else(|| panic!("{name} missing from {entries:#?}"))
    }

    fn key(name: &str, version: &str) -> Key {
        (name.to_owned(), version.to_owned())
    }

    #[test]
    fn the_tree_text_becomes_edges_with_their_kinds() {
        let graph = parse_cargo_tree(TREE).expect("tree");
        assert_eq!(graph.root, key("plugin_mcp", "0.1.0"));
        assert_eq!(graph.edges.len(), 14, "{:#?}", graph.edges);
        for (from, to, kind) in [
            ("ring", "untrusted", EdgeKind::Normal),
            ("ring", "cc", EdgeKind::Build),
            ("cc", "shlex", EdgeKind::Normal),
            ("reqwest", "tokio", EdgeKind::Normal),
            ("runvil-plugin", "tokio", EdgeKind::Normal),
            ("plugin_mcp", "tokio", EdgeKind::Normal),
        ] {
            let version = |name: &str| {
                if name == "runvil-plugin" || name == "plugin_mcp" {
                    "0.1.0"
                } else {
                    "1.0.0"
                }
            };
            let edge = (key(from, version(from)), key(to, version(to)), kind);
            assert!(graph.edges.contains(&edge), "{edge:?}");
        }
    }

    #[test]
    fn malformed_tree_text_is_an_error() {
        for (text, error) in [
            ("", "cargo tree printed no crate"),
            ("a v1\n  b v1\n", "not indented by levels"),
            ("a v1\n|   |-- b v1\n", "skips a level"),
            ("a v1\n|-- b\n", "is not `name vVERSION`"),
            ("a v1\nb v1\n", "a second root"),
            ("a v1\n|-- [weird-dependencies]\n", "unexpected"),
        ] {
            match parse_cargo_tree(text) {
                Err(message) => assert!(message.contains(error), "{text:?}: {message}"),
                Ok(graph) => panic!("{text:?} parsed: {graph:?}"),
            }
        }
    }

    #[test]
    fn only_the_crates_of_the_tree_are_listed() {
        let names: Vec<String> = entries()
            .into_iter()
            .map(|entry| format!("{} {}", entry.name, entry.version))
            .collect();
        assert_eq!(
            names,
            [
                "bytes 1.0.0",
                "cc 1.0.0",
                "reqwest 1.0.0",
                "ring 1.0.0",
                "runvil-plugin 0.1.0",
                "serde 1.0.0",
                "serde_derive 1.0.0",
                "shlex 1.0.0",
                "syn 2.0.0",
                "tokio 1.0.0",
                "untrusted 1.0.0",
            ]
        );
    }

    #[test]
    fn reasons_come_from_the_allow_list_or_name_the_direct_parents() {
        let entries = entries();
        assert_eq!(row(&entries, "reqwest").why, "direct: HTTP client");
        assert_eq!(
            row(&entries, "tokio").why,
            "direct: runtime; also via reqwest, runvil-plugin"
        );
        assert_eq!(
            row(&entries, "bytes").why,
            "via reqwest, runvil-plugin, tokio"
        );
        assert_eq!(row(&entries, "shlex").why, "via reqwest");
        assert_eq!(row(&entries, "syn").why, "via serde");
        assert_eq!(
            row(&entries, "runvil-plugin").why,
            "direct; workspace crate: the runvil-plugin crate (governed by the \
             plugin_family_deps check)"
        );
        assert_eq!(row(&entries, "runvil-plugin").source, "workspace");
        assert_eq!(row(&entries, "ring").source, "crates.io");
        assert_eq!(row(&entries, "ring").license, "Apache-2.0 AND ISC");
        assert_eq!(row(&entries, "shlex").license, "see its LICENSE-MIT");
    }

    #[test]
    fn build_scripts_and_proc_macros_are_build_time() {
        let entries = entries();
        for linked in [
            "bytes",
            "reqwest",
            "ring",
            "untrusted",
            "runvil-plugin",
            "serde",
            "tokio",
        ] {
            assert_eq!(row(&entries, linked).used, Use::Linked, "{linked}");
        }
        for build in ["cc", "shlex", "serde_derive", "syn"] {
            assert_eq!(row(&entries, build).used, Use::BuildTime, "{build}");
        }
    }

    #[test]
    fn an_unlisted_direct_dependency_is_flagged() {
        let graph = parse_cargo_tree(TREE).expect("tree");
        let entries = inventory(&graph, &sample(), "tokio # runtime\n").expect("inventory");
        assert_eq!(
            row(&entries, "reqwest").why,
            "direct, **not listed in policy/deps.allow**"
        );
    }

    #[test]
    fn a_crate_missing_from_the_metadata_is_an_error() {
        let graph = parse_cargo_tree(TREE).expect("tree");
        assert!(inventory(&graph, &json!({}), ALLOW).is_err());
        let partial = metadata(&[("reqwest", "1.0.0", Some("MIT"), false)]);
        match inventory(&graph, &partial, ALLOW) {
            Err(error) => assert!(
                error.ends_with(" 1.0.0 is not in cargo metadata"),
                "{error}"
            ),
            Ok(entries) => panic!("{entries:#?}"),
        }
    }

    #[test]
    fn rendering_is_sorted_and_repeatable() {
        let first = render(&entries());
        // The order of the metadata's packages does not matter.
        let mut reversed = sample();
        if let Some(packages) = reversed["packages"].as_array_mut() {
            packages.reverse();
        }
        let graph = parse_cargo_tree(TREE).expect("tree");
        assert_eq!(
            render(&inventory(&graph, &reversed, ALLOW).expect("inventory")),
            first
        );
        assert!(first.contains("**11 crates**: 4 direct, 7 linked, 4 build time only."));
        assert!(first.contains("| Apache-2.0 AND ISC | ring |\n"));
        assert!(
            first
                .contains("| cc | 1.0.0 | MIT OR Apache-2.0 | crates.io | build | via reqwest |\n")
        );
        let rows: Vec<&str> = first
            .lines()
            .skip_while(|line| !line.starts_with("| crate |"))
            .skip(2)
            .collect();
        assert_eq!(rows.len(), 11);
        let mut sorted = rows.clone();
        sorted.sort();
        assert_eq!(rows, sorted);
    }

    #[test]
    fn versions_sort_numerically() {
        let mut versions = ["0.10.0", "0.9.1", "0.9.1-rc.1", "1.0.0"];
        versions.sort_by_key(|version| version_key(version));
        assert_eq!(versions, ["0.9.1", "0.9.1-rc.1", "0.10.0", "1.0.0"]);
    }
}
