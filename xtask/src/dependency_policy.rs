//! The two dependency rules no standard tool knows: which workspace crates a Plugin may depend
//! on, and that `plugin_mcp`'s direct dependencies are exactly `policy/deps.allow`. Forbidden
//! crates and features, licenses and sources are `deny.toml`'s, checked by cargo-deny.
//!
//! Both take `cargo metadata` as [`cargo_metadata::Metadata`] and return violations.

use std::collections::BTreeSet;

use cargo_metadata::{Dependency, DependencyKind, Metadata};

use crate::deps_allow::{self, DepsAllow};

/// The Plugin-contract crate every Plugin may depend on.
pub const PLUGIN_CONTRACT_CRATE: &str = "runvil-plugin";

/// Workspace crates whose name starts with this may be shared by Plugins.
pub const SHARED_CRATE_PREFIX: &str = "shared-";

/// Packages whose name starts with one of these are Plugins.
pub const PLUGIN_PREFIXES: &[&str] = &["plugin_", "plugin-"];

/// The Plugin whose direct dependencies `policy/deps.allow` lists.
pub const ALLOW_LISTED_PACKAGE: &str = "plugin_mcp";

/// A `plugin_*` / `plugin-*` workspace package may depend (normal, dev or build) on a
/// workspace crate only if it is [`PLUGIN_CONTRACT_CRATE`] or starts with
/// [`SHARED_CRATE_PREFIX`]: Plugins meet Hosts and each other only through the contract.
pub fn plugin_family_deps(metadata: &Metadata) -> Vec<String> {
    let members = member_names(metadata);
    let mut violations = Vec::new();
    for package in metadata.workspace_packages() {
        let plugin = package.name.as_str();
        if !PLUGIN_PREFIXES.iter().any(|p| plugin.starts_with(p)) {
            continue;
        }
        for dependency in &package.dependencies {
            let target = dependency.name.as_str();
            if is_workspace_dependency(dependency, &members)
                && target != PLUGIN_CONTRACT_CRATE
                && !target.starts_with(SHARED_CRATE_PREFIX)
            {
                violations.push(format!(
                    "{plugin} has a {} dependency on workspace crate {target}; a Plugin may \
                     depend only on {PLUGIN_CONTRACT_CRATE} and {SHARED_CRATE_PREFIX}* crates",
                    kind(dependency)
                ));
            }
        }
    }
    violations
}

/// The direct non-workspace dependencies of [`ALLOW_LISTED_PACKAGE`] (normal and build, not
/// dev) must be exactly the crates of `allowed`: a dependency that is not listed and a listed
/// crate that is not a direct dependency (a stale entry) both fail, as do the allow-list's own
/// format problems.
pub fn allow_list(metadata: &Metadata, allowed: &DepsAllow) -> Vec<String> {
    let mut violations = allowed.problems.clone();
    let members = member_names(metadata);
    let Some(package) = metadata
        .workspace_packages()
        .into_iter()
        .find(|package| package.name.as_str() == ALLOW_LISTED_PACKAGE)
    else {
        violations.push(format!(
            "workspace package {ALLOW_LISTED_PACKAGE} not found in metadata"
        ));
        return violations;
    };
    let direct: BTreeSet<&str> = package
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind != DependencyKind::Development)
        .filter(|dependency| !is_workspace_dependency(dependency, &members))
        .map(|dependency| dependency.name.as_str())
        .collect();
    for dependency in &direct {
        if !allowed.entries.contains_key(*dependency) {
            violations.push(format!(
                "{ALLOW_LISTED_PACKAGE} depends directly on {dependency}, which {} does not \
                 list (add it with its reason, or drop it)",
                deps_allow::PATH
            ));
        }
    }
    for (name, entry) in &allowed.entries {
        if !direct.contains(name.as_str()) {
            violations.push(format!(
                "{}:{}: stale entry {name}: {ALLOW_LISTED_PACKAGE} has no direct normal or \
                 build dependency on it",
                deps_allow::PATH,
                entry.line
            ));
        }
    }
    violations
}

fn member_names(metadata: &Metadata) -> BTreeSet<&str> {
    metadata
        .workspace_packages()
        .into_iter()
        .map(|package| package.name.as_str())
        .collect()
}

/// A dependency on a workspace member: a member's name and no registry or git source.
fn is_workspace_dependency(dependency: &Dependency, members: &BTreeSet<&str>) -> bool {
    members.contains(dependency.name.as_str()) && dependency.source.is_none()
}

fn kind(dependency: &Dependency) -> &'static str {
    match dependency.kind {
        DependencyKind::Development => "dev",
        DependencyKind::Build => "build",
        _ => "normal",
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A crafted dependency: `(name, kind, whether it is a workspace crate)`.
    type Dep<'a> = (&'a str, Option<&'a str>, bool);

    /// One package of `cargo metadata` with the fields cargo_metadata requires.
    pub(crate) fn package(name: &str, version: &str, source: Option<&str>, extra: Value) -> Value {
        let mut package = json!({
            "name": name, "version": version, "id": format!("{name}@{version}"),
            "source": source, "dependencies": [], "targets": [], "features": {},
            "manifest_path": format!("/ws/{name}/Cargo.toml"),
        });
        if let (Some(package), Value::Object(extra)) = (package.as_object_mut(), extra) {
            package.extend(extra);
        }
        package
    }

    /// `cargo metadata` of `packages`, the named ones being the workspace's members.
    pub(crate) fn metadata(packages: Vec<Value>, members: &[&str]) -> Metadata {
        let ids: Vec<&Value> = packages
            .iter()
            .filter(|p| members.iter().any(|m| p["name"] == *m))
            .map(|p| &p["id"])
            .collect();
        let json = json!({
            "packages": packages, "workspace_members": ids, "resolve": null,
            "workspace_root": "/ws", "target_directory": "/ws/target", "version": 1,
        });
        serde_json::from_value(json).expect("crafted metadata")
    }

    /// A workspace of `(name, dependencies)` packages.
    fn workspace(packages: &[(&str, &[Dep<'_>])]) -> Metadata {
        let crates_io = "registry+https://github.com/rust-lang/crates.io-index";
        let json = packages.iter().map(|(name, deps)| {
            let deps: Vec<Value> = deps
                .iter()
                .map(|(dep, kind, local)| {
                    json!({ "name": dep, "kind": kind, "source": (!local).then_some(crates_io),
                        "req": "*", "optional": false, "uses_default_features": true,
                        "features": [], "target": null, "rename": null, "registry": null })
                })
                .collect();
            package(name, "0.1.0", None, json!({ "dependencies": deps }))
        });
        let names: Vec<&str> = packages.iter().map(|(name, _)| *name).collect();
        metadata(json.collect(), &names)
    }

    #[test]
    fn plugin_family_deps_passes_contract_and_shared_crates() {
        let metadata = workspace(&[
            (
                "plugin_mcp",
                &[
                    ("runvil-plugin", None, true),
                    ("shared-util", Some("dev"), true),
                    ("serde", None, false),
                ],
            ),
            ("runvil-plugin", &[]),
            ("shared-util", &[]),
            // A Host may depend on Plugins; only Plugins are restricted.
            ("runvil-host", &[("plugin_mcp", None, true)]),
        ]);
        assert_eq!(plugin_family_deps(&metadata), Vec::<String>::new());
    }

    #[test]
    fn plugin_family_deps_reports_other_workspace_crates() {
        let metadata = workspace(&[
            ("plugin_mcp", &[("runvil-host", Some("dev"), true)]),
            ("plugin-other", &[("plugin_mcp", Some("build"), true)]),
            ("runvil-host", &[]),
        ]);
        assert_eq!(
            plugin_family_deps(&metadata),
            [
                "plugin_mcp has a dev dependency on workspace crate runvil-host; a Plugin may \
                 depend only on runvil-plugin and shared-* crates",
                "plugin-other has a build dependency on workspace crate plugin_mcp; a Plugin \
                 may depend only on runvil-plugin and shared-* crates",
            ]
        );
    }

    #[test]
    fn plugin_family_deps_ignores_registry_crate_with_a_member_name() {
        let metadata = workspace(&[
            ("plugin_mcp", &[("runvil-host", None, false)]),
            ("runvil-host", &[]),
        ]);
        assert_eq!(plugin_family_deps(&metadata), Vec::<String>::new());
    }

    fn allow() -> DepsAllow {
        DepsAllow::parse("# why each dependency is here\n\nserde # derive\ncc   # build script\n")
    }

    fn mcp_with(deps: &[Dep<'_>]) -> Metadata {
        workspace(&[("plugin_mcp", deps), ("runvil-plugin", &[])])
    }

    #[test]
    fn allow_list_passes_when_it_matches() {
        let metadata = mcp_with(&[
            ("runvil-plugin", None, true),
            ("serde", None, false),
            ("cc", Some("build"), false),
            ("serde", Some("dev"), false),
            ("rmcp", Some("dev"), false),
        ]);
        assert_eq!(allow_list(&metadata, &allow()), Vec::<String>::new());
    }

    #[test]
    fn allow_list_reports_unlisted_and_stale() {
        let metadata = mcp_with(&[("serde", None, false), ("openssl", None, false)]);
        assert_eq!(
            allow_list(&metadata, &allow()),
            [
                "plugin_mcp depends directly on openssl, which policy/deps.allow does not list \
                 (add it with its reason, or drop it)",
                "policy/deps.allow:4: stale entry cc: plugin_mcp has no direct normal or build \
                 dependency on it",
            ]
        );
    }

    #[test]
    fn allow_list_stale_entry_for_a_dev_only_dependency() {
        let metadata = mcp_with(&[("rmcp", Some("dev"), false)]);
        let violations = allow_list(&metadata, &DepsAllow::parse("rmcp # test server\n"));
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].contains("stale entry rmcp"), "{violations:?}");
    }

    #[test]
    fn allow_list_reports_format_errors() {
        let metadata = mcp_with(&[("serde", None, false)]);
        let violations = allow_list(&metadata, &DepsAllow::parse("serde\nserde # again\n"));
        assert_eq!(
            violations,
            [
                "policy/deps.allow:1: serde has no reason after `#`",
                "policy/deps.allow:2: serde is already listed on line 1",
            ]
        );
    }

    #[test]
    fn allow_list_reports_missing_package() {
        let metadata = workspace(&[("runvil-plugin", &[])]);
        assert_eq!(
            allow_list(&metadata, &DepsAllow::default()),
            ["workspace package plugin_mcp not found in metadata"]
        );
    }
}
