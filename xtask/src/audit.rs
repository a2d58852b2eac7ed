//! `cargo run -p build-xtask -- audit`: writes `audit/dependencies.md`, the inventory of every
//! crate in `plugin_mcp`'s dependency tree with its version, license and why it is there.
//!
//! The graph is `cargo tree --package plugin_mcp` for [`TARGET_PLATFORM`] (dev-dependencies
//! never ship), printed with `--prefix depth` so each line is `<depth><name> v<version>`; each
//! crate's license, source and description come from `cargo metadata`. Not `cargo metadata`'s
//! own `resolve.nodes`: those unify the features of the whole workspace (build-xtask's and the
//! tests' too) and list optional dependencies that only a weak feature (`dep?/feature`) names,
//! which cargo never builds (rust-lang/cargo#10801); walked from `plugin_mcp`, they add crates
//! such as quinn that are not in its tree. `cargo tree` resolves features for `plugin_mcp`
//! alone, as a Host that depends on it gets them. Two trees are read: normal and build edges
//! (everything that is built), and normal edges only, which without the proc macros' subtrees
//! is what is linked into the Pack (`--prefix depth` does not mark build edges).
//!
//! A direct dependency's reason is its line in `policy/deps.allow`; a transitive one's is the
//! direct dependencies that pull it in. [`parse_tree`], [`inventory`] and [`render`] are pure
//! functions, so the output is sorted and byte-for-byte reproducible: rerunning the command on
//! an unchanged `Cargo.lock` gives no diff, and `audit --check` (also run by
//! `cargo test -p build-xtask`) fails when the file is out of date.

// A command whose output (one summary line) is its result.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use cargo_metadata::{Metadata, Package};

use crate::dependency_policy::ALLOW_LISTED_PACKAGE;
use crate::deps_allow::{self, DepsAllow};
use crate::workspace::{self, TARGET_PLATFORM, run_cargo};

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

/// One package's tree as `cargo tree --prefix depth --format {p}` prints it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tree {
    /// The package the tree starts from.
    pub root: Key,
    /// Every edge, `(dependent, dependency)`, each once.
    pub edges: BTreeSet<(Key, Key)>,
    /// The crates marked `(proc-macro)`.
    pub proc_macros: BTreeSet<Key>,
}

/// Parses `cargo tree --prefix depth --format {p}`: one crate a line, `<depth><name>
/// v<version>` and markers such as `(proc-macro)`, `(*)` (dependencies listed above) or a
/// path, each line's parent being the nearest line above it one level up.
pub fn parse_tree(text: &str) -> Result<Tree, String> {
    let mut tree = Tree::default();
    let mut stack: Vec<Key> = Vec::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let error = |what: &str| format!("cargo tree line {}: {what}: {line}", index + 1);
        let digits = line
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(line.len());
        let depth: usize = line[..digits].parse().map_err(|_| error("no depth"))?;
        let mut words = line[digits..].split_whitespace();
        let name = words.next().unwrap_or_default();
        let version = words.next().and_then(|word| word.strip_prefix('v'));
        let key: Key = (
            name.to_owned(),
            version
                .ok_or_else(|| error("not `name vVERSION`"))?
                .to_owned(),
        );
        if words.any(|word| word == "(proc-macro)") {
            tree.proc_macros.insert(key.clone());
        }
        match (depth, stack.len()) {
            (0, 0) => tree.root = key.clone(),
            (0, _) => return Err(error("a second root")),
            (depth, levels) if depth > levels => return Err(error("skips a level")),
            (depth, _) => {
                stack.truncate(depth);
                let parent = stack.last().cloned().unwrap_or_default();
                tree.edges.insert((parent, key.clone()));
            }
        }
        stack.push(key);
    }
    if tree.root.0.is_empty() {
        return Err("cargo tree printed no crate".to_owned());
    }
    Ok(tree)
}

/// Every crate of `built` (the normal and build tree; the root excluded), sorted by name and
/// version: linked if `normal` (the normal-only tree) reaches it without going through a proc
/// macro, its details from `metadata` and its direct reasons from `allowed`.
pub fn inventory(
    built: &Tree,
    normal: &Tree,
    metadata: &Metadata,
    allowed: &DepsAllow,
) -> Result<Vec<Entry>, String> {
    let packages: BTreeMap<(&str, String), &Package> = metadata
        .packages
        .iter()
        .map(|package| {
            (
                (package.name.as_str(), package.version.to_string()),
                package,
            )
        })
        .collect();
    let package = |key: &Key| {
        packages
            .get(&(key.0.as_str(), key.1.clone()))
            .copied()
            .ok_or_else(|| format!("{} {} is not in cargo metadata", key.0, key.1))
    };
    let is_member = |package: &Package| metadata.workspace_members.contains(&package.id);
    let direct: Vec<&Key> = built
        .edges
        .iter()
        .filter(|(from, _)| *from == built.root)
        .map(|(_, to)| to)
        .collect();
    let everything = reachable(built, &built.root, &BTreeSet::new());
    let linked = reachable(normal, &normal.root, &normal.proc_macros);
    // For each crate, the direct dependencies whose own trees contain it.
    let mut pulled_in_by: BTreeMap<&Key, BTreeSet<&str>> = BTreeMap::new();
    for &dependency in &direct {
        for key in reachable(built, dependency, &BTreeSet::new()) {
            if key != dependency {
                pulled_in_by.entry(key).or_default().insert(&dependency.0);
            }
        }
    }
    let mut entries = Vec::new();
    for key in everything.into_iter().filter(|key| **key != built.root) {
        let details = package(key)?;
        let via: Vec<&str> = pulled_in_by
            .get(key)
            .into_iter()
            .flatten()
            .copied()
            .collect();
        let why = if direct.contains(&key) {
            let reason = if is_member(details) {
                format!(
                    "direct; workspace crate: {} (governed by the plugin_family_deps check)",
                    details
                        .description
                        .as_deref()
                        .unwrap_or("")
                        .trim_end_matches('.')
                )
            } else if let Some(entry) = allowed.entries.get(&key.0) {
                format!("direct: {}", entry.reason)
            } else {
                format!("direct, **not listed in {}**", deps_allow::PATH)
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
            source: match &details.source {
                None if is_member(details) => "workspace".to_owned(),
                None => "path".to_owned(),
                Some(source) if CRATES_IO_SOURCES.contains(&source.repr.as_str()) => {
                    "crates.io".to_owned()
                }
                Some(source) => source.repr.clone(),
            },
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

/// Every crate of `tree` reachable from `start` (included), never entering one of `skipped`.
fn reachable<'k>(tree: &'k Tree, start: &'k Key, skipped: &BTreeSet<Key>) -> BTreeSet<&'k Key> {
    let mut seen = BTreeSet::from([start]);
    let mut queue = vec![start];
    while let Some(key) = queue.pop() {
        let children = tree.edges.iter().filter(|(from, _)| from == key);
        for (_, child) in children {
            if !skipped.contains(child) && seen.insert(child) {
                queue.push(child);
            }
        }
    }
    seen
}

fn license(package: &Package) -> String {
    match (&package.license, &package.license_file) {
        (Some(license), _) => license.clone(),
        (None, Some(file)) => format!("see its {}", file.file_name().unwrap_or(file.as_str())),
        (None, None) => "none declared".to_owned(),
    }
}

/// Sorts `1.10.0` after `1.9.0`: the numeric parts, then the whole text.
fn version_key(version: &str) -> (Vec<u64>, &str) {
    let release = version.split(['-', '+']).next().unwrap_or(version);
    let parts = release.split('.').map(|part| part.parse().unwrap_or(0));
    (parts.collect(), version)
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
         in `{}`; a transitive one is \"via\" the direct dependencies that pull \
         it in. *linked* crates are compiled into the Pack; *build* crates only run while it is \
         built (build scripts, proc macros and what they use). The licenses are as each crate \
         declares them; `deny.toml` holds the allow list that `cargo deny check licenses` \
         enforces.\n\n\
         **{} crates**: {direct} direct, {} linked, {} build time only.\n\n",
        deps_allow::PATH,
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
    let built = parse_tree(&cargo_tree(root, "normal,build")?)?;
    let normal = parse_tree(&cargo_tree(root, "normal")?)?;
    if built.root.0 != ALLOW_LISTED_PACKAGE {
        return Err(format!(
            "cargo tree started from {}, not {ALLOW_LISTED_PACKAGE}",
            built.root.0
        ));
    }
    let metadata = workspace::cargo_metadata(root)?;
    let entries = inventory(&built, &normal, &metadata, &DepsAllow::read(root)?)?;
    Ok((render(&entries), entries))
}

/// `cargo tree` of [`ALLOW_LISTED_PACKAGE`] along `edges`, as [`parse_tree`] reads it.
fn cargo_tree(root: &Path, edges: &str) -> Result<String, String> {
    let args = [
        "tree",
        "--package",
        ALLOW_LISTED_PACKAGE,
        "--edges",
        edges,
        "--target",
        TARGET_PLATFORM,
        "--prefix",
        "depth",
        "--format",
        "{p}",
        "--locked",
    ];
    String::from_utf8(run_cargo(root, &args)?)
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
    use crate::dependency_policy::tests::{metadata, package};
    use serde_json::json;

    const REGISTRY: &str = "registry+https://github.com/rust-lang/crates.io-index";

    /// `cargo tree -e normal,build` for a crafted tree: serde's proc macro and ring's build
    /// script are build time; tokio is reached three ways; `(*)` repeats a crate listed above.
    const BUILT: &str = "\
0plugin_mcp v0.1.0 (/ws)
1reqwest v1.0.0
2bytes v1.0.0
2ring v1.0.0
3untrusted v1.0.0
3cc v1.0.0
4shlex v1.0.0
2tokio v1.0.0
3bytes v1.0.0
1runvil-plugin v0.1.0 (/ws/crates/runvil-plugin)
2tokio v1.0.0 (*)
1serde v1.0.0
2serde_derive v1.0.0 (proc-macro)
3syn v2.0.0
1tokio v1.0.0 (*)
";

    /// The same with `-e normal`: ring's build dependency is gone.
    fn normal() -> String {
        BUILT.replace("3cc v1.0.0\n4shlex v1.0.0\n", "")
    }

    /// Metadata with a package for each `(name, version, license)`.
    fn sample(packages: &[(&str, &str, Option<&str>)]) -> Metadata {
        let members = ["plugin_mcp", "runvil-plugin"];
        let json = packages.iter().map(|(name, version, license)| {
            let member = members.contains(name);
            let extra = json!({
                "license": license,
                "license_file": license.is_none().then_some("../LICENSE-MIT"),
                "description": format!("the {name} crate."),
            });
            package(name, version, (!member).then_some(REGISTRY), extra)
        });
        metadata(json.collect(), &members)
    }

    fn full() -> Metadata {
        sample(&[
            ("plugin_mcp", "0.1.0", Some("MIT")),
            ("reqwest", "1.0.0", Some("MIT OR Apache-2.0")),
            ("bytes", "1.0.0", Some("MIT")),
            ("ring", "1.0.0", Some("Apache-2.0 AND ISC")),
            ("untrusted", "1.0.0", Some("ISC")),
            ("cc", "1.0.0", Some("MIT OR Apache-2.0")),
            ("shlex", "1.0.0", None),
            ("tokio", "1.0.0", Some("MIT")),
            ("runvil-plugin", "0.1.0", Some("MIT OR Apache-2.0")),
            ("serde", "1.0.0", Some("MIT OR Apache-2.0")),
            ("serde_derive", "1.0.0", Some("MIT OR Apache-2.0")),
            ("syn", "2.0.0", Some("MIT OR Apache-2.0")),
            // In the metadata but not in the tree (a dev-dependency, a weak optional one).
            ("quinn", "1.0.0", Some("MIT")),
        ])
    }

    fn allow() -> DepsAllow {
        DepsAllow::parse("# header\nreqwest # HTTP client\nserde # derive\ntokio # runtime\n")
    }

    fn entries_with(metadata: &Metadata, allowed: &DepsAllow) -> Result<Vec<Entry>, String> {
        let built = parse_tree(BUILT).expect("tree");
        let normal = parse_tree(&normal()).expect("tree");
        inventory(&built, &normal, metadata, allowed)
    }

    fn entries() -> Vec<Entry> {
        entries_with(&full(), &allow()).expect("inventory")
    }

    fn row<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries
            .iter()
            .find(|entry| entry.name == name)
            .unwrap_or_else(|| panic!("{name} missing from {entries:#?}"))
    }

    fn key(name: &str) -> Key {
        let version = if name.contains("plugin") {
            "0.1.0"
        } else {
            "1.0.0"
        };
        (name.to_owned(), version.to_owned())
    }

    #[test]
    fn the_tree_text_becomes_edges() {
        let tree = parse_tree(BUILT).expect("tree");
        assert_eq!(tree.root, key("plugin_mcp"));
        assert_eq!(tree.edges.len(), 14, "{:#?}", tree.edges);
        for (from, to) in [
            ("ring", "cc"),
            ("cc", "shlex"),
            ("reqwest", "tokio"),
            ("runvil-plugin", "tokio"),
            ("plugin_mcp", "tokio"),
        ] {
            assert!(tree.edges.contains(&(key(from), key(to))), "{from} -> {to}");
        }
        assert_eq!(tree.proc_macros, BTreeSet::from([key("serde_derive")]));
    }

    #[test]
    fn malformed_tree_text_is_an_error() {
        for (text, error) in [
            ("", "cargo tree printed no crate"),
            ("a v1\n", "no depth"),
            ("0a v1\n2b v1\n", "skips a level"),
            ("0a v1\n1b\n", "not `name vVERSION`"),
            ("0a v1\n0b v1\n", "a second root"),
        ] {
            match parse_tree(text) {
                Err(message) => assert!(message.contains(error), "{text:?}: {message}"),
                Ok(tree) => panic!("{text:?} parsed: {tree:?}"),
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
        let entries =
            entries_with(&full(), &DepsAllow::parse("tokio # runtime\n")).expect("inventory");
        assert_eq!(
            row(&entries, "reqwest").why,
            "direct, **not listed in policy/deps.allow**"
        );
    }

    #[test]
    fn a_crate_missing_from_the_metadata_is_an_error() {
        let partial = sample(&[("reqwest", "1.0.0", Some("MIT"))]);
        match entries_with(&partial, &allow()) {
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
        let mut reversed = full();
        reversed.packages.reverse();
        assert_eq!(
            render(&entries_with(&reversed, &allow()).expect("inventory")),
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
