//! `cargo run -p build-xtask -- audit`: writes `audit/dependencies.md`, the inventory of every
//! crate in `plugin_mcp`'s dependency tree with its version, license and why it is there.
//!
//! The tree is `cargo tree --package plugin_mcp --no-dedupe --prefix depth` for
//! [`TARGET_PLATFORM`] (dev-dependencies never ship): every path from `plugin_mcp` to a crate
//! is printed, one crate a line after its depth, so the direct dependency a crate is found
//! under is its ancestor at depth 1; each line also has the crate's license (`{l}`) and
//! source. Not `cargo metadata`'s `resolve.nodes`: those unify the features of
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

use crate::dependency_policy::ALLOW_LISTED_PACKAGE;
use crate::deps_allow::{self, DepsAllow};
use crate::workspace::{self, TARGET_PLATFORM, run_cargo};

/// The inventory, relative to the workspace root.
pub const INVENTORY_PATH: &str = "audit/dependencies.md";

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
    /// The SPDX expression it declares (`{l}`), or `none declared`.
    pub license: String,
    /// `crates.io`, `workspace` (a path under the root's), `path`, or its source as cargo
    /// prints it.
    pub source: String,
}

/// Reads `cargo tree --no-dedupe --prefix depth --format {p}|{l}`: `<depth><name> v<version>`,
/// markers in parentheses (a path, another source, `proc-macro`), `|` and the license. Answers
/// the root and every other crate.
pub fn read_tree(text: &str) -> Result<(Key, BTreeMap<Key, Found>), String> {
    let mut found: BTreeMap<Key, Found> = BTreeMap::new();
    // The crates on the path to the current line, and whether each is a proc macro.
    let mut path: Vec<(Key, bool)> = Vec::new();
    let mut root_dir = String::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let error = |what: &str| format!("cargo tree line {}: {what}: {line}", index + 1);
        let (package, license) = line.split_once('|').ok_or_else(|| error("no `|`"))?;
        let digits = package.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
        let depth: usize = package[..digits].parse().map_err(|_| error("no depth"))?;
        let mut words = package[digits..].splitn(3, ' ');
        let name = words.next().unwrap_or_default().to_owned();
        let version = words.next().and_then(|word| word.strip_prefix('v'));
        let key = (
            name,
            version
                .ok_or_else(|| error("not `name vVERSION`"))?
                .to_owned(),
        );
        let markers = words.next().unwrap_or_default();
        let marker = |m: &str| markers.split(['(', ')']).any(|part| part == m);
        let dir = markers
            .split(['(', ')'])
            .find(|part| part.starts_with('/'))
            .unwrap_or("");
        if depth > path.len() || (depth == 0) != path.is_empty() {
            return Err(error("not a level below the line above"));
        }
        path.truncate(depth);
        path.push((key.clone(), marker("proc-macro")));
        if depth == 0 {
            root_dir = format!("{dir}/");
            continue;
        }
        let entry = found.entry(key).or_default();
        entry.direct |= depth == 1;
        entry.via.extend(
            path.get(1)
                .filter(|_| depth > 1)
                .map(|(key, _)| key.0.clone()),
        );
        entry.outside_proc_macros |= path[1..].iter().all(|(_, macro_)| !macro_);
        entry.license = if license.is_empty() {
            "none declared"
        } else {
            license
        }
        .to_owned();
        let other = markers.split(['(', ')']).map(str::trim);
        let other = other.filter(|m| !m.is_empty() && *m != "proc-macro" && !m.starts_with('/'));
        entry.source = match (dir, other.collect::<Vec<_>>().join(" ")) {
            ("", other) if other.is_empty() => "crates.io".to_owned(),
            ("", other) => other,
            (dir, _) if format!("{dir}/").starts_with(&root_dir) => "workspace".to_owned(),
            _ => "path".to_owned(),
        };
    }
    let root = path
        .into_iter()
        .next()
        .ok_or("cargo tree printed no crate")?
        .0;
    Ok((root, found))
}

/// Every crate of `built` (the normal and build tree), sorted by name and version: linked if
/// `normal` (the normal-only tree) finds it outside every proc macro, its direct reasons from
/// `allowed`.
pub fn inventory(
    built: &BTreeMap<Key, Found>,
    normal: &BTreeMap<Key, Found>,
    allowed: &DepsAllow,
) -> Vec<Entry> {
    let mut entries = Vec::new();
    for ((name, version), found) in built {
        let via: Vec<&str> = found.via.iter().map(String::as_str).collect();
        let reason = match (
            found.direct,
            found.source.as_str(),
            allowed.entries.get(name),
        ) {
            (false, ..) => format!("via {}", via.join(", ")),
            (true, "workspace", _) => {
                "direct; workspace crate (governed by the plugin_family_deps check)".to_owned()
            }
            (true, _, Some(entry)) => format!("direct: {}", entry.reason),
            (true, _, None) => format!("direct, **not listed in {}**", deps_allow::PATH),
        };
        let linked = normal
            .get(&(name.clone(), version.clone()))
            .is_some_and(|n| n.outside_proc_macros);
        entries.push(Entry {
            name: name.clone(),
            version: version.clone(),
            license: found.license.clone(),
            source: found.source.clone(),
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
    entries
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
         license as `cargo tree` prints it. A direct dependency's reason is its line \
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
    let entries = inventory(&built, &normal, &DepsAllow::read(root)?);
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
        "{p}|{l}",
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

    /// `cargo tree -e normal,build --no-dedupe` of a crafted tree: ring's build script (cc)
    /// and serde's proc macro are build time; tokio and bytes are reached several ways; one
    /// crate declares no license, one comes from git and one from a path outside the root.
    const BUILT: &str = "0plugin_mcp v0.1.0 (/ws)|MIT\n1reqwest v1.0.0|MIT OR Apache-2.0\n\
        2bytes v1.0.0|MIT\n2ring v1.0.0|Apache-2.0 AND ISC\n3untrusted v1.0.0|ISC\n\
        3cc v1.0.0|MIT\n4shlex v1.0.0|\n2tokio v1.0.0|MIT\n3bytes v1.0.0|MIT\n\
        1runvil-plugin v0.1.0 (/ws/crates/runvil-plugin)|MIT\n2tokio v1.0.0|MIT\n\
        3bytes v1.0.0|MIT\n1serde v1.0.0|MIT\n2serde_derive v1.0.0 (proc-macro)|MIT\n\
        3syn v2.0.0|MIT\n1tokio v1.0.0|MIT\n2bytes v1.0.0|MIT\n\
        1forked v0.2.0 (https://example.org/forked#0c0ffee)|MIT\n1local v0.3.0 (/elsewhere)|MIT\n";

    const ALLOW: &str = "reqwest # HTTP client\nserde # derive\ntokio # runtime\nforked # f\n\
                         local # l\n";

    fn entries_with(allow: &str) -> Vec<Entry> {
        let (_, built) = read_tree(BUILT).expect("tree");
        let normal = BUILT.replace("3cc v1.0.0|MIT\n4shlex v1.0.0|\n", "");
        let (_, normal) = read_tree(&normal).expect("tree");
        inventory(&built, &normal, &DepsAllow::parse(allow))
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
        let via: BTreeSet<String> = ["reqwest", "runvil-plugin", "tokio"]
            .map(String::from)
            .into();
        assert_eq!(get("bytes").via, via);
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
            ("0a v1\n", "no `|`"),
            ("a v1|MIT\n", "no depth"),
            ("0a v1|MIT\n2b v1|MIT\n", "not a level below"),
            ("0a v1|MIT\n1b|MIT\n", "not `name vVERSION`"),
            ("0a v1|MIT\n0b v1|MIT\n", "not a level below"),
        ] {
            let message = read_tree(text).expect_err(text);
            assert!(message.contains(error), "{text:?}: {message}");
        }
    }

    #[test]
    fn every_crate_of_the_tree_is_listed_once() {
        let names: Vec<String> = entries_with(ALLOW)
            .iter()
            .map(|e| format!("{} {}", e.name, e.version))
            .collect();
        assert_eq!(
            names.join(", "),
            "bytes 1.0.0, cc 1.0.0, forked 0.2.0, local 0.3.0, reqwest 1.0.0, ring 1.0.0, \
             runvil-plugin 0.1.0, serde 1.0.0, serde_derive 1.0.0, shlex 1.0.0, syn 2.0.0, \
             tokio 1.0.0, untrusted 1.0.0"
        );
    }

    #[test]
    fn reasons_come_from_the_allow_list_or_name_the_direct_parents() {
        let entries = entries_with(ALLOW);
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
            "direct; workspace crate (governed by the plugin_family_deps check)"
        );
    }

    #[test]
    fn licenses_and_sources_come_from_each_line() {
        let entries = entries_with(ALLOW);
        let of = |name| {
            let entry = row(&entries, name);
            format!("{} / {}", entry.license, entry.source)
        };
        assert_eq!(of("ring"), "Apache-2.0 AND ISC / crates.io");
        assert_eq!(of("shlex"), "none declared / crates.io");
        assert_eq!(of("runvil-plugin"), "MIT / workspace");
        assert_eq!(of("local"), "MIT / path");
        assert_eq!(of("forked"), "MIT / https://example.org/forked#0c0ffee");
    }

    #[test]
    fn build_scripts_and_proc_macros_are_build_time() {
        for entry in &entries_with(ALLOW) {
            let build = ["cc", "shlex", "serde_derive", "syn"].contains(&entry.name.as_str());
            assert_eq!(entry.used == Use::BuildTime, build, "{}", entry.name);
        }
    }

    #[test]
    fn an_unlisted_direct_dependency_is_flagged() {
        let entries = entries_with("tokio # runtime\n");
        assert_eq!(
            row(&entries, "reqwest").why,
            "direct, **not listed in policy/deps.allow**"
        );
    }

    #[test]
    fn rendering_is_sorted_and_repeatable() {
        let first = render(&entries_with(ALLOW));
        assert_eq!(render(&entries_with(ALLOW)), first);
        assert!(first.contains("**13 crates**: 6 direct, 9 linked, 4 build time only."));
        assert!(first.contains("| Apache-2.0 AND ISC | ring |\n"));
        assert!(first.contains("| cc | 1.0.0 | MIT | crates.io | build | via reqwest |\n"));
        let rows: Vec<&str> = first
            .lines()
            .skip_while(|l| !l.starts_with("| crate |"))
            .skip(2)
            .collect();
        assert!(rows.len() == 13 && rows.is_sorted(), "{rows:#?}");
    }

    #[test]
    fn versions_sort_numerically() {
        let mut versions = ["0.10.0", "0.9.1", "0.9.1-rc.1", "1.0.0"];
        versions.sort_by_key(|version| version_key(version));
        assert_eq!(versions, ["0.9.1", "0.9.1-rc.1", "0.10.0", "1.0.0"]);
    }
}
