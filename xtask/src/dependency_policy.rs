//! The two dependency rules no standard tool knows: which workspace crates a Plugin may depend
//! on, and that `plugin_mcp`'s direct dependencies are exactly `policy/deps.allow`. Forbidden
//! crates and features, licenses and sources are `deny.toml`'s, checked by cargo-deny.
//!
//! Both take `cargo metadata` as [`Metadata`] and return violations.

use std::collections::BTreeSet;

use crate::metadata::{Dependency, Metadata};

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
                    dependency.kind.as_deref().unwrap_or("normal")
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
        .find(|package| package.name == ALLOW_LISTED_PACKAGE)
    else {
        violations.push(format!(
            "workspace package {ALLOW_LISTED_PACKAGE} not found in metadata"
        ));
        return violations;
    };
    let direct: BTreeSet<&str> = package
        .dependencies
        .iter()
        .filter(|dependency| dependency.kind.as_deref() != Some("dev"))
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
        .map(|package| package.name.as_str())
        .collect()
}

/// A dependency on a workspace member: a member's name and no registry or git source.
fn is_workspace_dependency(dependency: &Dependency, members: &BTreeSet<&str>) -> bool {
    members.contains(dependency.name.as_str()) && dependency.source.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A workspace, one `package: dependency...` a line; a dependency is `name` from crates.io
    /// or `@name` from the workspace, with `/dev` or `/build` for its kind.
    fn workspace(lines: &str) -> Metadata {
        let crates_io = "registry+https://github.com/rust-lang/crates.io-index";
        let packages: Vec<Value> = lines
            .lines()
            .map(|line| {
                let (name, deps) = line.split_once(':').expect("`package: dependencies`");
                let deps: Vec<Value> = deps
                    .split_whitespace()
                    .map(|dep| {
                        let (dep, kind) = dep
                            .split_once('/')
                            .map_or((dep, None), |(d, k)| (d, Some(k)));
                        let (dep, source) = dep
                            .strip_prefix('@')
                            .map_or((dep, Some(crates_io)), |d| (d, None));
                        json!({ "name": dep, "kind": kind, "source": source })
                    })
                    .collect();
                json!({ "name": name, "id": name, "source": null, "dependencies": deps })
            })
            .collect();
        let members: Vec<&Value> = packages.iter().map(|package| &package["id"]).collect();
        let json = json!({ "packages": packages, "workspace_members": members });
        serde_json::from_value(json).expect("crafted metadata")
    }

    #[test]
    fn plugin_family_deps_passes_contract_and_shared_crates() {
        // A Host may depend on Plugins; only Plugins are restricted. `runvil-host` from
        // crates.io is not the workspace's.
        let metadata = workspace(
            "plugin_mcp: @runvil-plugin @shared-util/dev serde runvil-host\nrunvil-plugin:\n\
             shared-util:\nrunvil-host: @plugin_mcp",
        );
        assert_eq!(plugin_family_deps(&metadata), Vec::<String>::new());
    }

    #[test]
    fn plugin_family_deps_reports_other_workspace_crates() {
        let metadata = workspace(
            "plugin_mcp: @runvil-host/dev\nplugin-other: @plugin_mcp/build\nrunvil-host:",
        );
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

    fn allow_list_of(plugin_mcp: &str, deps_allow: &str) -> Vec<String> {
        let metadata = workspace(&format!("plugin_mcp: {plugin_mcp}\nrunvil-plugin:"));
        allow_list(&metadata, &DepsAllow::parse(deps_allow))
    }

    const ALLOW: &str = "# why each dependency is here\n\nserde # derive\ncc   # build script\n";

    #[test]
    fn allow_list_passes_when_it_matches() {
        let violations = allow_list_of("@runvil-plugin serde cc/build serde/dev rmcp/dev", ALLOW);
        assert_eq!(violations, Vec::<String>::new());
    }

    #[test]
    fn allow_list_reports_unlisted_and_stale() {
        // `cc` is a dev-dependency only: its entry is stale.
        assert_eq!(
            allow_list_of("serde openssl cc/dev", ALLOW),
            [
                "plugin_mcp depends directly on openssl, which policy/deps.allow does not list \
                 (add it with its reason, or drop it)",
                "policy/deps.allow:4: stale entry cc: plugin_mcp has no direct normal or build \
                 dependency on it",
            ]
        );
    }

    #[test]
    fn allow_list_reports_format_errors() {
        assert_eq!(
            allow_list_of("serde", "serde\nserde # again\n"),
            [
                "policy/deps.allow:1: serde has no reason after `#`",
                "policy/deps.allow:2: serde is already listed on line 1",
            ]
        );
    }

    #[test]
    fn allow_list_reports_missing_package() {
        assert_eq!(
            allow_list(&workspace("runvil-plugin:"), &DepsAllow::default()),
            ["workspace package plugin_mcp not found in metadata"]
        );
    }
}
