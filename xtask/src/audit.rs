//! `cargo run -p build-xtask -- audit`: writes `audit/dependencies.md`, the inventory of every
//! crate in `plugin_mcp`'s dependency tree with its version, license and why it is there.
//!
//! The tree is `cargo tree --package plugin_mcp --no-dedupe --prefix depth` for
//! [`TARGET_PLATFORM`] (dev-dependencies never ship): every path from `plugin_mcp` to a crate
//! is printed, one crate a line after its depth, so the direct dependency a crate is found
//! under is its ancestor at depth 1; each line also has the crate's license (`{l}`) and
//! source. Not `cargo metadata`'s `resolve.nodes`: those unify the features of the whole
//! workspace (build-xtask's and the tests' too) and list optional dependencies that only a weak
//! feature (`dep?/feature`) names, which cargo never builds (rust-lang/cargo#10801), adding
//! crates such as quinn that are not in the tree. `cargo tree` resolves features for
//! `plugin_mcp` alone, as a Host that depends on it gets them. Two trees are read: normal and
//! build edges (what is built), and normal edges without proc macros (what is linked into the
//! Pack).
//!
//! A direct dependency's reason is its line in `policy/deps.allow`; a transitive one's is the
//! direct dependencies that pull it in. [`read_tree`] and [`render`] are pure functions, so the
//! output is sorted and byte-for-byte reproducible: rerunning the command on an unchanged
//! `Cargo.lock` gives no diff, and `cargo test -p build-xtask` fails when the file is out of
//! date ([`is_current`]).

// A command whose output (one summary line) is its result.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use crate::dependency_policy::ALLOW_LISTED_PACKAGE;
use crate::deps_allow::{self, DepsAllow};
use crate::workspace::{self, TARGET_PLATFORM, run_cargo};

/// The inventory, relative to the workspace root.
pub const INVENTORY_PATH: &str = "audit/dependencies.md";

/// A crate: `(name, version)`.
pub type Key = (String, String);

/// What a tree says about one crate.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// A direct dependency of the root.
    pub direct: bool,
    /// The direct dependencies it is found under (itself excluded).
    pub via: BTreeSet<String>,
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
    // The crates on the path to the current line, the root first.
    let mut path: Vec<Key> = Vec::new();
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
        let version = version.ok_or_else(|| error("not `name vVERSION`"))?;
        let markers = words
            .next()
            .unwrap_or_default()
            .split(['(', ')'])
            .map(str::trim);
        let markers: Vec<&str> = markers
            .filter(|m| !m.is_empty() && *m != "proc-macro")
            .collect();
        let dir = markers.iter().find(|marker| marker.starts_with('/'));
        if depth > path.len() || (depth == 0) != path.is_empty() {
            return Err(error("not a level below the line above"));
        }
        path.truncate(depth);
        path.push((name, version.to_owned()));
        if depth == 0 {
            root_dir = format!("{}/", dir.unwrap_or(&""));
            continue;
        }
        let entry = found.entry(path[depth].clone()).or_default();
        entry.direct |= depth == 1;
        entry.via.extend((depth > 1).then(|| path[1].0.clone()));
        entry.license = if license.is_empty() {
            "none declared"
        } else {
            license
        }
        .to_owned();
        entry.source = match dir {
            Some(dir) if format!("{dir}/").starts_with(&root_dir) => "workspace".to_owned(),
            Some(_) => "path".to_owned(),
            None if markers.is_empty() => "crates.io".to_owned(),
            None => markers.join(" "),
        };
    }
    let root = path
        .into_iter()
        .next()
        .ok_or("cargo tree printed no crate")?;
    Ok((root, found))
}

/// Sorts `1.10.0` after `1.9.0`: the numeric parts, then the whole text.
fn version_key(version: &str) -> (Vec<u64>, &str) {
    let release = version.split(['-', '+']).next().unwrap_or(version);
    let parts = release.split('.').map(|part| part.parse().unwrap_or(0));
    (parts.collect(), version)
}

/// Why a crate is in the tree: a direct dependency's line in `allowed`, else the direct
/// dependencies it is found under.
fn reason(name: &str, found: &Found, allowed: &DepsAllow) -> String {
    let via: Vec<&str> = found.via.iter().map(String::as_str).collect();
    let direct = match (found.source.as_str(), allowed.entries.get(name)) {
        _ if !found.direct => return format!("via {}", via.join(", ")),
        ("workspace", _) => "direct; workspace crate (governed by the plugin_family_deps check)",
        (_, Some(entry)) => &format!("direct: {}", entry.reason),
        (_, None) => &format!("direct, **not listed in {}**", deps_allow::PATH),
    };
    match via.is_empty() {
        true => direct.to_owned(),
        false => format!("{direct}; also via {}", via.join(", ")),
    }
}

/// The Markdown of `audit/dependencies.md`: every crate of `built` (the normal and build
/// tree) once, sorted by name and version, linked if `linked` (the tree of normal edges
/// without proc macros) has it, with its reason.
pub fn render(
    built: &BTreeMap<Key, Found>,
    linked: &BTreeMap<Key, Found>,
    allowed: &DepsAllow,
) -> String {
    let mut crates: Vec<(&Key, &Found)> = built.iter().collect();
    crates.sort_by(|(a, _), (b, _)| (&a.0, version_key(&a.1)).cmp(&(&b.0, version_key(&b.1))));
    let linked_count = built.keys().filter(|key| linked.contains_key(*key)).count();
    let direct = built.values().filter(|found| found.direct).count();
    let mut licenses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ((name, _), found) in &crates {
        licenses.entry(&found.license).or_default().insert(name);
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
         **{} crates**: {direct} direct, {linked_count} linked, {} build time only.\n\n",
        deps_allow::PATH,
        crates.len(),
        crates.len() - linked_count,
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
    for (key @ (name, version), found) in crates {
        let used = if linked.contains_key(key) {
            "linked"
        } else {
            "build"
        };
        out.push_str(&format!(
            "| {name} | {version} | {} | {} | {used} | {} |\n",
            escape(&found.license),
            escape(&found.source),
            escape(&reason(name, found, allowed)),
        ));
    }
    out
}

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

/// The inventory of the real workspace at `root`, rendered, and how many crates it lists.
pub fn generate(root: &Path) -> Result<(String, usize), String> {
    let (top, built) = read_tree(&cargo_tree(root, "normal,build")?)?;
    let (_, linked) = read_tree(&cargo_tree(root, "normal,no-proc-macro")?)?;
    if top.0 != ALLOW_LISTED_PACKAGE {
        let from = top.0;
        return Err(format!(
            "cargo tree started from {from}, not {ALLOW_LISTED_PACKAGE}"
        ));
    }
    Ok((
        render(&built, &linked, &DepsAllow::read(root)?),
        built.len(),
    ))
}

/// `cargo tree` of [`ALLOW_LISTED_PACKAGE`] along `edges`, as [`read_tree`] reads it.
fn cargo_tree(root: &Path, edges: &str) -> Result<String, String> {
    let command = format!(
        "tree --package {ALLOW_LISTED_PACKAGE} --edges {edges} --target {TARGET_PLATFORM} \
         --no-dedupe --prefix depth --format {{p}}|{{l}} --locked"
    );
    String::from_utf8(run_cargo(root, &command)?)
        .map_err(|error| format!("cargo tree printed invalid UTF-8: {error}"))
}

/// Whether `audit/dependencies.md` under `root` is what [`generate`] writes.
pub fn is_current(root: &Path) -> Result<bool, String> {
    let (rendered, _) = generate(root)?;
    Ok(fs::read(root.join(INVENTORY_PATH)).is_ok_and(|written| written == rendered.as_bytes()))
}

/// The subcommand's entry point: writes the inventory.
pub fn command(_: &[String]) -> Result<bool, String> {
    let root = workspace::root();
    let (rendered, crates) = generate(&root)?;
    fs::write(root.join(INVENTORY_PATH), &rendered)
        .map_err(|error| format!("cannot write {INVENTORY_PATH}: {error}"))?;
    println!("audit: wrote {INVENTORY_PATH} ({crates} crates)");
    Ok(true)
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

    fn render_with(allow: &str) -> String {
        let (_, built) = read_tree(BUILT).expect("tree");
        // `-e normal,no-proc-macro`: neither the build script's crates nor the proc macro's.
        let linked = BUILT.replace("3cc v1.0.0|MIT\n4shlex v1.0.0|\n", "");
        let linked = linked.replace(
            "2serde_derive v1.0.0 (proc-macro)|MIT\n3syn v2.0.0|MIT\n",
            "",
        );
        let (_, linked) = read_tree(&linked).expect("tree");
        render(&built, &linked, &DepsAllow::parse(allow))
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

    /// Each crate once, sorted, with the license and source of its line, linked unless only a
    /// build script or a proc macro reaches it, and its reason from the allow-list (flagged
    /// when it is not there) or its direct parents; the same text every time, with its counts.
    #[test]
    fn each_crate_is_listed_once_with_its_license_source_use_and_reason() {
        let rendered = render_with(ALLOW);
        let rows = rendered
            .split_once("|---|---|---|---|---|---|\n")
            .map(|(_, rows)| rows);
        assert_eq!(
            rows,
            Some(
                "| bytes | 1.0.0 | MIT | crates.io | linked | via reqwest, runvil-plugin, tokio |
| cc | 1.0.0 | MIT | crates.io | build | via reqwest |
| forked | 0.2.0 | MIT | https://example.org/forked#0c0ffee | linked | direct: f |
| local | 0.3.0 | MIT | path | linked | direct: l |
| reqwest | 1.0.0 | MIT OR Apache-2.0 | crates.io | linked | direct: HTTP client |
| ring | 1.0.0 | Apache-2.0 AND ISC | crates.io | linked | via reqwest |
| runvil-plugin | 0.1.0 | MIT | workspace | linked | direct; workspace crate (governed by the plugin_family_deps check) |
| serde | 1.0.0 | MIT | crates.io | linked | direct: derive |
| serde_derive | 1.0.0 | MIT | crates.io | build | via serde |
| shlex | 1.0.0 | none declared | crates.io | build | via reqwest |
| syn | 2.0.0 | MIT | crates.io | build | via serde |
| tokio | 1.0.0 | MIT | crates.io | linked | direct: runtime; also via reqwest, runvil-plugin |
| untrusted | 1.0.0 | ISC | crates.io | linked | via reqwest |
"
            )
        );
        let unlisted = render_with("tokio # runtime\n");
        assert!(unlisted.contains("| linked | direct, **not listed in policy/deps.allow** |"));
        assert_eq!(render_with(ALLOW), rendered);
        assert!(rendered.contains("**13 crates**: 6 direct, 9 linked, 4 build time only."));
        assert!(rendered.contains("| Apache-2.0 AND ISC | ring |\n"));
    }

    #[test]
    fn versions_sort_numerically() {
        let mut versions = ["0.10.0", "0.9.1", "0.9.1-rc.1", "1.0.0"];
        versions.sort_by_key(|version| version_key(version));
        assert_eq!(versions, ["0.9.1", "0.9.1-rc.1", "0.10.0", "1.0.0"]);
    }
}
