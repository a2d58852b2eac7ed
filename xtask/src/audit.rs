//! `cargo run -p build-xtask -- audit`: writes `audit/dependencies.md`, the inventory of every
//! crate in `plugin_mcp`'s dependency tree with its version, license and why it is there.
//!
//! The tree is `cargo tree --package plugin_mcp --no-dedupe --prefix depth` for
//! [`TARGET_PLATFORM`] (dev-dependencies never ship): every path from `plugin_mcp` to a crate
//! is printed, one crate a line after its depth, so the direct dependency a crate is found
//! under is its ancestor at depth 1. Each crate's license, source and description come from
//! `cargo metadata`. Not `cargo metadata`'s own `resolve.nodes`: those unify the features of
//! the whole workspace (build-xtask's and the tests' too) and list optional dependencies that
//! only a weak feature (`dep?/feature`) names, which cargo never builds (rust-lang/cargo#10801),
//! adding crates such as quinn that are not in the tree. `cargo tree` resolves features for
//! `plugin_mcp` alone, as a Host that depends on it gets them. Two trees are read: normal and
//! build edges (what is built), and normal edges only, where a crate found outside every proc
//! macro is linked into the Pack (`--prefix depth` does not mark build edges).
//!
//! A direct dependency's reason is its line in `policy/deps.allow`; a transitive one's is the
//! direct dependencies that pull it in. [`read_tree`], [`inventory`] and [`render`] are pure
//! functions, so the output is sorted and byte-for-byte reproducible: rerunning the command on
//! an unchanged `Cargo.lock` gives no diff, and `audit --check` (also run by
//! `cargo test -p build-xtask`) fails when the file is out of date.

// A command whose output (one summary line) is its result.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use crate::metadata::{Metadata, Package};

use crate::dependency_policy::ALLOW_LISTED_PACKAGE;
use crate::deps_allow::{self, DepsAllow};
use crate::workspace::{self, TARGET_PLATFORM, run_cargo};

/// The inventory, relative to the workspace root.
pub const INVENTORY_PATH: &str = "audit/dependencies.md";

/// The source of crates.io packages in `cargo metadata`.
const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

/// Whether a crate ends up in the Pack's code or only runs while it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A crate: `(name, version)`.
pub type Key = (String, String);

/// What a tree says about one crate.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// A direct dependency of the root.
    pub direct: bool,
    /// The direct dependencies it is found under (itself excluded).
    pub via: BTreeSet<String>,
    /// Found on a path with no proc macro on it (itself included).
    pub outside_proc_macros: bool,
}

/// Reads `cargo tree --no-dedupe --prefix depth --format {p}`: `<depth><name> v<version>` a
/// line, then markers such as a path or `(proc-macro)`. Answers the root and every other crate.
pub fn read_tree(text: &str) -> Result<(Key, BTreeMap<Key, Found>), String> {
    let mut found: BTreeMap<Key, Found> = BTreeMap::new();
    // The crates on the path to the current line, and whether each is a proc macro.
    let mut path: Vec<(Key, bool)> = Vec::new();
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
        let name = words.next().unwrap_or_default().to_owned();
        let version = words.next().and_then(|word| word.strip_prefix('v'));
        let key = (
            name,
            version
                .ok_or_else(|| error("not `name vVERSION`"))?
                .to_owned(),
        );
        let proc_macro = words.any(|word| word == "(proc-macro)");
        if depth > path.len() || (depth == 0) != path.is_empty() {
            return Err(error("not a level below the line above"));
        }
        path.truncate(depth);
        path.push((key.clone(), proc_macro));
        if depth > 0 {
            let entry = found.entry(key).or_default();
            entry.direct |= depth == 1;
            entry.via.extend(
                path.get(1)
                    .filter(|_| depth > 1)
                    .map(|(key, _)| key.0.clone()),
            );
            entry.outside_proc_macros |= path[1..].iter().all(|(_, macro_)| !macro_);
        }
    }
    let root = path
        .into_iter()
        .next()
        .ok_or("cargo tree printed no crate")?
        .0;
    Ok((root, found))
}

/// Every crate of `built` (the normal and build tree), sorted by name and version: linked if
/// `normal` (the normal-only tree) finds it outside every proc macro, its details from
/// `metadata` and its direct reasons from `allowed`.
pub fn inventory(
    built: &BTreeMap<Key, Found>,
    normal: &BTreeMap<Key, Found>,
    metadata: &Metadata,
    allowed: &DepsAllow,
) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    for ((name, version), found) in built {
        let package = metadata
            .packages
            .iter()
            .find(|p| p.name == *name && p.version == *version)
            .ok_or_else(|| format!("{name} {version} is not in cargo metadata"))?;
        let member = metadata.workspace_members.contains(&package.id);
        let via: Vec<&str> = found.via.iter().map(String::as_str).collect();
        let reason = match (found.direct, member, allowed.entries.get(name)) {
            (false, ..) => format!("via {}", via.join(", ")),
            (true, true, _) => format!(
                "direct; workspace crate: {} (governed by the plugin_family_deps check)",
                package
                    .description
                    .as_deref()
                    .unwrap_or("")
                    .trim_end_matches('.')
            ),
            (true, false, Some(entry)) => format!("direct: {}", entry.reason),
            (true, false, None) => format!("direct, **not listed in {}**", deps_allow::PATH),
        };
        let linked = normal
            .get(&(name.clone(), version.clone()))
            .is_some_and(|n| n.outside_proc_macros);
        entries.push(Entry {
            name: name.clone(),
            version: version.clone(),
            license: license(package),
            source: match package.source.as_deref() {
                None if member => "workspace".to_owned(),
                None => "path".to_owned(),
                Some(CRATES_IO) => "crates.io".to_owned(),
                Some(other) => other.to_owned(),
            },
            used: if linked { Use::Linked } else { Use::BuildTime },
            why: match found.direct && !via.is_empty() {
                true => format!("{reason}; also via {}", via.join(", ")),
                false => reason,
            },
        });
    }
    entries.sort_by(|a, b| {
        (a.name.as_str(), version_key(&a.version)).cmp(&(b.name.as_str(), version_key(&b.version)))
    });
    Ok(entries)
}

fn license(package: &Package) -> String {
    match (&package.license, &package.license_file) {
        (Some(license), _) => license.clone(),
        (None, Some(file)) => format!("see its {}", file.rsplit('/').next().unwrap_or(file)),
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
        .filter(|e| e.why.starts_with("direct"))
        .count();
    let mut licenses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for entry in entries {
        licenses
            .entry(&entry.license)
            .or_default()
            .insert(&entry.name);
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
    for (license, names) in licenses {
        let names: Vec<&str> = names.into_iter().collect();
        out.push_str(&format!("| {} | {} |\n", escape(license), names.join(", ")));
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
            if entry.used == Use::Linked {
                "linked"
            } else {
                "build"
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
    let (top, built) = read_tree(&cargo_tree(root, "normal,build")?)?;
    let (_, normal) = read_tree(&cargo_tree(root, "normal")?)?;
    if top.0 != ALLOW_LISTED_PACKAGE {
        return Err(format!(
            "cargo tree started from {}, not {ALLOW_LISTED_PACKAGE}",
            top.0
        ));
    }
    let metadata = workspace::cargo_metadata(root)?;
    let entries = inventory(&built, &normal, &metadata, &DepsAllow::read(root)?)?;
    Ok((render(&entries), entries))
}

/// `cargo tree` of [`ALLOW_LISTED_PACKAGE`] along `edges`, as [`read_tree`] reads it.
fn cargo_tree(root: &Path, edges: &str) -> Result<String, String> {
    let args = [
        "tree",
        "--package",
        ALLOW_LISTED_PACKAGE,
        "--edges",
        edges,
        "--target",
        TARGET_PLATFORM,
        "--no-dedupe",
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
    let outcome = generate(&root).and_then(|(rendered, entries)| {
        let crates = entries.len();
        if is_written(&root, &rendered) {
            Ok(format!("{INVENTORY_PATH} is current ({crates} crates)"))
        } else if check_only {
            Err(format!(
                "{INVENTORY_PATH} is out of date; run `cargo run -p build-xtask -- audit`"
            ))
        } else {
            fs::write(root.join(INVENTORY_PATH), &rendered)
                .map(|()| format!("wrote {INVENTORY_PATH} ({crates} crates)"))
                .map_err(|error| format!("cannot write {INVENTORY_PATH}: {error}"))
        }
    });
    match outcome {
        Ok(done) => {
            println!("audit: {done}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("audit: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dependency_policy::tests::{metadata, package};
    use serde_json::json;

    /// `cargo tree -e normal,build --no-dedupe` of a crafted tree: ring's build script (cc)
    /// and serde's proc macro are build time; tokio and bytes are reached several ways.
    const BUILT: &str = "0plugin_mcp v0.1.0 (/ws)\n1reqwest v1.0.0\n2bytes v1.0.0\n\
        2ring v1.0.0\n3untrusted v1.0.0\n3cc v1.0.0\n4shlex v1.0.0\n2tokio v1.0.0\n3bytes v1.0.0\n\
        1runvil-plugin v0.1.0 (/ws/crates/runvil-plugin)\n2tokio v1.0.0\n3bytes v1.0.0\n\
        1serde v1.0.0\n2serde_derive v1.0.0 (proc-macro)\n3syn v2.0.0\n\
        1tokio v1.0.0\n2bytes v1.0.0\n";

    /// Metadata with a package for each `name version license`; no license: a license file.
    fn sample(packages: &str) -> Metadata {
        let members = ["plugin_mcp", "runvil-plugin"];
        let json = packages.lines().map(|line| {
            let [name, version, license]: [&str; 3] = line
                .splitn(3, ' ')
                .collect::<Vec<_>>()
                .try_into()
                .expect("3 words");
            let license = (!license.is_empty()).then_some(license);
            let extra = json!({ "license": license, "description": format!("the {name} crate."),
                "license_file": license.is_none().then_some("../LICENSE-MIT") });
            package(
                name,
                version,
                (!members.contains(&name)).then_some(CRATES_IO),
                extra,
            )
        });
        metadata(json.collect(), &members)
    }

    /// quinn is in the metadata but not in the tree (a dev-dependency, a weak optional one).
    const FULL: &str = "plugin_mcp 0.1.0 MIT\nreqwest 1.0.0 MIT OR Apache-2.0\nbytes 1.0.0 MIT\n\
        ring 1.0.0 Apache-2.0 AND ISC\nuntrusted 1.0.0 ISC\ncc 1.0.0 MIT OR Apache-2.0\n\
        shlex 1.0.0 \ntokio 1.0.0 MIT\nrunvil-plugin 0.1.0 MIT OR Apache-2.0\n\
        serde 1.0.0 MIT OR Apache-2.0\nserde_derive 1.0.0 MIT OR Apache-2.0\n\
        syn 2.0.0 MIT OR Apache-2.0\nquinn 1.0.0 MIT";

    fn entries_with(metadata: &Metadata, allow: &str) -> Result<Vec<Entry>, String> {
        let (_, built) = read_tree(BUILT).expect("tree");
        let (_, normal) =
            read_tree(&BUILT.replace("3cc v1.0.0\n4shlex v1.0.0\n", "")).expect("tree");
        inventory(&built, &normal, metadata, &DepsAllow::parse(allow))
    }

    fn entries() -> Vec<Entry> {
        let allow = "reqwest # HTTP client\nserde # derive\ntokio # runtime\n";
        entries_with(&sample(FULL), allow).expect("inventory")
    }

    fn row<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries
            .iter()
            .find(|entry| entry.name == name)
            .expect("a row")
    }

    #[test]
    fn the_tree_says_where_each_crate_is_found() {
        let (root, found) = read_tree(BUILT).expect("tree");
        assert_eq!(root, ("plugin_mcp".to_owned(), "0.1.0".to_owned()));
        let get = |name: &str| {
            found
                .iter()
                .find(|(key, _)| key.0 == name)
                .expect("found")
                .1
        };
        assert!(get("tokio").direct && !get("bytes").direct);
        assert_eq!(
            get("bytes").via,
            ["reqwest", "runvil-plugin", "tokio"]
                .map(String::from)
                .into()
        );
        assert!(get("syn").via.contains("serde") && !get("syn").outside_proc_macros);
        assert!(
            get("cc").outside_proc_macros,
            "a build edge is not a proc macro"
        );
    }

    #[test]
    fn malformed_tree_text_is_an_error() {
        for (text, error) in [
            ("", "cargo tree printed no crate"),
            ("a v1\n", "no depth"),
            ("0a v1\n2b v1\n", "not a level below"),
            ("0a v1\n1b\n", "not `name vVERSION`"),
            ("0a v1\n0b v1\n", "not a level below"),
        ] {
            let message = read_tree(text).expect_err(text);
            assert!(message.contains(error), "{text:?}: {message}");
        }
    }

    #[test]
    fn only_the_crates_of_the_tree_are_listed() {
        let names: Vec<String> = entries()
            .iter()
            .map(|e| format!("{} {}", e.name, e.version))
            .collect();
        assert_eq!(
            names.join(", "),
            "bytes 1.0.0, cc 1.0.0, reqwest 1.0.0, ring 1.0.0, runvil-plugin 0.1.0, serde 1.0.0, \
             serde_derive 1.0.0, shlex 1.0.0, syn 2.0.0, tokio 1.0.0, untrusted 1.0.0"
        );
    }

    #[test]
    fn reasons_come_from_the_allow_list_or_name_the_direct_parents() {
        let entries = entries();
        let why = |name| row(&entries, name).why.as_str();
        assert_eq!(why("reqwest"), "direct: HTTP client");
        assert_eq!(
            why("tokio"),
            "direct: runtime; also via reqwest, runvil-plugin"
        );
        assert_eq!(why("bytes"), "via reqwest, runvil-plugin, tokio");
        assert_eq!((why("shlex"), why("syn")), ("via reqwest", "via serde"));
        assert_eq!(
            why("runvil-plugin"),
            "direct; workspace crate: the runvil-plugin crate (governed by the \
             plugin_family_deps check)"
        );
        let ring = row(&entries, "ring");
        assert_eq!(
            (ring.source.as_str(), ring.license.as_str()),
            ("crates.io", "Apache-2.0 AND ISC")
        );
        assert_eq!(row(&entries, "runvil-plugin").source, "workspace");
        assert_eq!(row(&entries, "shlex").license, "see its LICENSE-MIT");
    }

    #[test]
    fn build_scripts_and_proc_macros_are_build_time() {
        let entries = entries();
        for entry in &entries {
            let build = ["cc", "shlex", "serde_derive", "syn"].contains(&entry.name.as_str());
            assert_eq!(entry.used == Use::BuildTime, build, "{}", entry.name);
        }
    }

    #[test]
    fn an_unlisted_direct_dependency_is_flagged() {
        let entries = entries_with(&sample(FULL), "tokio # runtime\n").expect("inventory");
        assert_eq!(
            row(&entries, "reqwest").why,
            "direct, **not listed in policy/deps.allow**"
        );
    }

    #[test]
    fn a_crate_missing_from_the_metadata_is_an_error() {
        let error = entries_with(&sample("reqwest 1.0.0 MIT"), "").expect_err("missing crates");
        assert!(error.ends_with(" is not in cargo metadata"), "{error}");
    }

    #[test]
    fn rendering_is_sorted_and_repeatable() {
        let first = render(&entries());
        // The order of the metadata's packages does not matter.
        let mut reversed = sample(FULL);
        reversed.packages.reverse();
        let allow = "reqwest # HTTP client\nserde # derive\ntokio # runtime\n";
        assert_eq!(
            render(&entries_with(&reversed, allow).expect("inventory")),
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
            .skip_while(|l| !l.starts_with("| crate |"))
            .skip(2)
            .collect();
        assert!(rows.len() == 11 && rows.is_sorted(), "{rows:#?}");
    }

    #[test]
    fn versions_sort_numerically() {
        let mut versions = ["0.10.0", "0.9.1", "0.9.1-rc.1", "1.0.0"];
        versions.sort_by_key(|version| version_key(version));
        assert_eq!(versions, ["0.9.1", "0.9.1-rc.1", "0.10.0", "1.0.0"]);
    }
}
