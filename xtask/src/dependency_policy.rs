//! Checks over the `cargo metadata --format-version 1` JSON: which crates the Plugins may
//! depend on, that `plugin_mcp`'s direct dependencies match `policy/deps.allow`, and that no
//! forbidden feature or crate is in the resolved graph.
//!
//! Every function here takes the parsed JSON and returns violations; metadata that lacks the
//! expected fields is reported as a violation, never taken as a pass.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// The Plugin-contract crate every Plugin may depend on.
pub const PLUGIN_CONTRACT_CRATE: &str = "runvil-plugin";

/// Workspace crates whose name starts with this may be shared by Plugins.
pub const SHARED_CRATE_PREFIX: &str = "shared-";

/// Packages whose name starts with one of these are Plugins.
pub const PLUGIN_PREFIXES: &[&str] = &["plugin_", "plugin-"];

/// The Plugin whose direct dependencies `policy/deps.allow` lists.
pub const ALLOW_LISTED_PACKAGE: &str = "plugin_mcp";

/// Features that must not be enabled on a crate, with the one reason they share.
#[derive(Debug)]
pub struct ForbiddenFeatures {
    /// The crate (package name, any version).
    pub package: &'static str,
    /// The features that must not be enabled on it.
    pub features: &'static [&'static str],
    /// Why, in one line.
    pub reason: &'static str,
}

/// Crates that must not be in the resolved graph at all, with the one reason they share.
#[derive(Debug)]
pub struct ForbiddenPackages {
    /// The package names (any version).
    pub packages: &'static [&'static str],
    /// Why, in one line.
    pub reason: &'static str,
}

/// `jsonschema`'s remote and file resolvers.
pub const JSONSCHEMA_RESOLVERS: ForbiddenFeatures = ForbiddenFeatures {
    package: "jsonschema",
    features: &["resolve-http", "resolve-file", "resolve-async"],
    reason: "jsonschema resolvers would fetch a URL or read a file named by a server's `$ref`",
};

/// `reqwest`'s transparent response decompression.
pub const REQWEST_DECOMPRESSION: ForbiddenFeatures = ForbiddenFeatures {
    package: "reqwest",
    features: &["gzip", "brotli", "zstd", "deflate"],
    reason: "reqwest decompression lets a small body bypass the response cap",
};

/// `reqwest` on the platform's TLS library instead of rustls.
pub const REQWEST_NATIVE_TLS: ForbiddenFeatures = ForbiddenFeatures {
    package: "reqwest",
    features: &["native-tls", "native-tls-vendored", "__native-tls"],
    reason: "native TLS/OpenSSL is not the audited rustls stack",
};

/// `reqwest`'s blocking client.
pub const REQWEST_BLOCKING: ForbiddenFeatures = ForbiddenFeatures {
    package: "reqwest",
    features: &["blocking"],
    reason: "the blocking client runs its own runtime thread outside the Host's tokio runtime",
};

/// `serde_json` without its recursion limit.
pub const SERDE_JSON_UNBOUNDED_DEPTH: ForbiddenFeatures = ForbiddenFeatures {
    package: "serde_json",
    features: &["unbounded_depth"],
    reason: "serde_json unbounded depth allows stack-exhausting JSON",
};

/// Every forbidden feature table [`forbidden_features`] applies.
pub const FORBIDDEN_FEATURES: &[ForbiddenFeatures] = &[
    JSONSCHEMA_RESOLVERS,
    REQWEST_DECOMPRESSION,
    REQWEST_NATIVE_TLS,
    REQWEST_BLOCKING,
    SERDE_JSON_UNBOUNDED_DEPTH,
];

/// Native TLS and OpenSSL crates.
pub const NATIVE_TLS_PACKAGES: ForbiddenPackages = ForbiddenPackages {
    packages: &["native-tls", "openssl", "openssl-sys"],
    reason: "native TLS/OpenSSL is not the audited rustls stack",
};

/// Every forbidden package table [`forbidden_features`] applies.
pub const FORBIDDEN_PACKAGES: &[ForbiddenPackages] = &[NATIVE_TLS_PACKAGES];

/// A `plugin_*` / `plugin-*` workspace package may depend (normal, dev or build) on a
/// workspace crate only if it is [`PLUGIN_CONTRACT_CRATE`] or starts with
/// [`SHARED_CRATE_PREFIX`]: Plugins meet Hosts and each other only through the contract.
pub fn plugin_family_deps(metadata: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let members = match workspace_packages(metadata) {
        Ok(members) => members,
        Err(error) => return vec![error],
    };
    let member_names: BTreeSet<&str> = members.iter().map(|package| name(package)).collect();
    for package in &members {
        let plugin = name(package);
        if !PLUGIN_PREFIXES
            .iter()
            .any(|prefix| plugin.starts_with(prefix))
        {
            continue;
        }
        for dependency in dependencies(package) {
            if !is_workspace_dependency(dependency, &member_names) {
                continue;
            }
            let target = name(dependency);
            if target != PLUGIN_CONTRACT_CRATE && !target.starts_with(SHARED_CRATE_PREFIX) {
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
/// dev) must be exactly the crates listed in `deps_allow`, the text of `policy/deps.allow`.
///
/// That file has one crate name per line followed by `#` and the reason; blank lines and lines
/// starting with `#` are ignored. An entry without a reason, a duplicate, a crate the package
/// does not depend on directly (a stale entry), and a dependency that is not listed all fail.
pub fn allow_list(metadata: &Value, deps_allow: &str) -> Vec<String> {
    let (allowed, mut violations) = parse_allow_list(deps_allow);
    let members = match workspace_packages(metadata) {
        Ok(members) => members,
        Err(error) => {
            violations.push(error);
            return violations;
        }
    };
    let member_names: BTreeSet<&str> = members.iter().map(|package| name(package)).collect();
    let Some(package) = members
        .iter()
        .find(|package| name(package) == ALLOW_LISTED_PACKAGE)
    else {
        violations.push(format!(
            "workspace package {ALLOW_LISTED_PACKAGE} not found in metadata"
        ));
        return violations;
    };
    let direct: BTreeSet<&str> = dependencies(package)
        .filter(|dependency| kind(dependency) != "dev")
        .filter(|dependency| !is_workspace_dependency(dependency, &member_names))
        .map(name)
        .collect();
    for dependency in &direct {
        if !allowed.contains_key(*dependency) {
            violations.push(format!(
                "{ALLOW_LISTED_PACKAGE} depends directly on {dependency}, which \
                 policy/deps.allow does not list (add it with its reason, or drop it)"
            ));
        }
    }
    for (entry, line) in &allowed {
        if !direct.contains(entry.as_str()) {
            violations.push(format!(
                "policy/deps.allow:{line}: stale entry {entry}: {ALLOW_LISTED_PACKAGE} has no \
                 direct normal or build dependency on it"
            ));
        }
    }
    violations
}

/// Parses `policy/deps.allow` into crate name → 1-based line, plus format violations.
fn parse_allow_list(text: &str) -> (BTreeMap<String, usize>, Vec<String>) {
    let mut allowed = BTreeMap::new();
    let mut violations = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (crate_name, reason) = line.split_once('#').unwrap_or((line, ""));
        let crate_name = crate_name.trim();
        let valid_name = !crate_name.is_empty()
            && crate_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_name {
            violations.push(format!(
                "policy/deps.allow:{number}: `{line}` is not `crate-name # reason`"
            ));
            continue;
        }
        if reason.trim().is_empty() {
            violations.push(format!(
                "policy/deps.allow:{number}: {crate_name} has no reason after `#`"
            ));
        }
        if let Some(first) = allowed.insert(crate_name.to_owned(), number) {
            violations.push(format!(
                "policy/deps.allow:{number}: {crate_name} is already listed on line {first}"
            ));
        }
    }
    (allowed, violations)
}

/// Over `resolve.nodes[].features`: no crate in [`FORBIDDEN_FEATURES`] has a feature listed
/// there enabled, and no crate in [`FORBIDDEN_PACKAGES`] is resolved at all.
pub fn forbidden_features(metadata: &Value) -> Vec<String> {
    let Some(nodes) = metadata.pointer("/resolve/nodes").and_then(Value::as_array) else {
        return vec!["cargo metadata has no resolve graph (`resolve.nodes`) to check".to_owned()];
    };
    let packages_by_id: BTreeMap<&str, &Value> = packages(metadata)
        .filter_map(|package| Some((package.get("id")?.as_str()?, package)))
        .collect();
    let mut violations = Vec::new();
    for node in nodes {
        let id = node.get("id").and_then(Value::as_str).unwrap_or("");
        let Some(package) = packages_by_id.get(id) else {
            violations.push(format!(
                "resolve node `{id}` has no package in the metadata"
            ));
            continue;
        };
        let (package_name, version) = (name(package), version(package));
        for table in FORBIDDEN_PACKAGES {
            if table.packages.contains(&package_name) {
                violations.push(format!(
                    "{package_name} {version} is in the dependency graph: {}",
                    table.reason
                ));
            }
        }
        let enabled = node.get("features").and_then(Value::as_array);
        for feature in enabled.into_iter().flatten().filter_map(Value::as_str) {
            for table in FORBIDDEN_FEATURES {
                if table.package == package_name && table.features.contains(&feature) {
                    violations.push(format!(
                        "{package_name} {version} has feature `{feature}` enabled: {}",
                        table.reason
                    ));
                }
            }
        }
    }
    violations
}

fn packages(metadata: &Value) -> impl Iterator<Item = &Value> {
    metadata
        .get("packages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The package ids of cargo metadata's `workspace_members`.
pub(crate) fn workspace_member_ids(metadata: &Value) -> Result<BTreeSet<&str>, String> {
    Ok(metadata
        .get("workspace_members")
        .and_then(Value::as_array)
        .ok_or("cargo metadata has no `workspace_members`")?
        .iter()
        .filter_map(Value::as_str)
        .collect())
}

/// The packages named by `workspace_members`.
fn workspace_packages(metadata: &Value) -> Result<Vec<&Value>, String> {
    let ids = workspace_member_ids(metadata)?;
    let members: Vec<&Value> = packages(metadata)
        .filter(|package| {
            package
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| ids.contains(id))
        })
        .collect();
    if members.len() == ids.len() {
        Ok(members)
    } else {
        Err(format!(
            "cargo metadata lists {} workspace members but has packages for {}",
            ids.len(),
            members.len()
        ))
    }
}

fn dependencies(package: &Value) -> impl Iterator<Item = &Value> {
    package
        .get("dependencies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A dependency on a workspace member: its package name is a member's and it comes from no
/// registry or git `source` (path dependencies have a null `source`).
fn is_workspace_dependency(dependency: &Value, member_names: &BTreeSet<&str>) -> bool {
    member_names.contains(name(dependency)) && dependency.get("source").is_none_or(Value::is_null)
}

/// The package name of a package or of a dependency (not its `rename`).
fn name(value: &Value) -> &str {
    value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>")
}

fn version(package: &Value) -> &str {
    package
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("<no version>")
}

/// `normal`, `dev` or `build` (cargo metadata writes `null` for normal).
fn kind(dependency: &Value) -> &str {
    dependency
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("normal")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A crafted dependency: `(name, kind, whether it is a workspace crate)`.
    type Dep<'a> = (&'a str, Option<&'a str>, bool);

    /// Metadata with the given workspace packages: `(name, dependencies)`.
    fn workspace(packages: &[(&str, &[Dep<'_>])]) -> Value {
        let packages: Vec<Value> = packages
            .iter()
            .map(|(name, deps)| {
                let deps: Vec<Value> = deps
                    .iter()
                    .map(|(dep, kind, in_workspace)| {
                        let source = (!in_workspace)
                            .then_some("registry+https://github.com/rust-lang/crates.io-index");
                        json!({ "name": dep, "kind": kind, "source": source, "rename": null })
                    })
                    .collect();
                json!({
                    "name": name,
                    "version": "0.1.0",
                    "id": format!("path+file:///ws#{name}@0.1.0"),
                    "dependencies": deps,
                })
            })
            .collect();
        let members: Vec<Value> = packages
            .iter()
            .map(|package| package["id"].clone())
            .collect();
        json!({ "packages": packages, "workspace_members": members, "resolve": null })
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
            (
                "runvil-host",
                &[("plugin_mcp", None, true), ("runvil-plugin", None, true)],
            ),
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

    const ALLOW: &str = "# why each dependency is here\n\nserde # derive\n\
                         cc   # build script\n";

    fn mcp_with(deps: &[Dep<'_>]) -> Value {
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
        assert_eq!(allow_list(&metadata, ALLOW), Vec::<String>::new());
    }

    #[test]
    fn allow_list_reports_unlisted_and_stale() {
        let metadata = mcp_with(&[("serde", None, false), ("openssl", None, false)]);
        assert_eq!(
            allow_list(&metadata, ALLOW),
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
        let violations = allow_list(&metadata, "rmcp # test server\n");
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert!(violations[0].contains("stale entry rmcp"), "{violations:?}");
    }

    #[test]
    fn allow_list_reports_format_errors() {
        let metadata = mcp_with(&[("serde", None, false)]);
        let violations = allow_list(&metadata, "serde\nserde # again\nnot a name # x\n");
        assert_eq!(
            violations,
            [
                "policy/deps.allow:1: serde has no reason after `#`",
                "policy/deps.allow:2: serde is already listed on line 1",
                "policy/deps.allow:3: `not a name # x` is not `crate-name # reason`",
            ]
        );
    }

    #[test]
    fn allow_list_reports_missing_package() {
        let metadata = workspace(&[("runvil-plugin", &[])]);
        assert_eq!(
            allow_list(&metadata, ""),
            ["workspace package plugin_mcp not found in metadata"]
        );
    }

    /// Metadata whose resolve graph has these `(package, features)` nodes.
    fn resolved(nodes: &[(&str, &[&str])]) -> Value {
        let packages: Vec<Value> = nodes
            .iter()
            .map(|(name, _)| json!({ "name": name, "version": "1.0.0", "id": format!("{name}@1") }))
            .collect();
        let nodes: Vec<Value> = nodes
            .iter()
            .map(|(name, features)| json!({ "id": format!("{name}@1"), "features": features }))
            .collect();
        json!({ "packages": packages, "workspace_members": [], "resolve": { "nodes": nodes } })
    }

    #[test]
    fn forbidden_features_passes_the_allowed_configuration() {
        let metadata = resolved(&[
            ("reqwest", &["__rustls", "http2", "rustls"]),
            ("jsonschema", &[]),
            ("serde_json", &["default", "std"]),
            ("openssl-probe", &[]),
            ("rustls", &["ring"]),
        ]);
        assert_eq!(forbidden_features(&metadata), Vec::<String>::new());
    }

    #[test]
    fn forbidden_features_reports_each_table() {
        let metadata = resolved(&[
            ("reqwest", &["rustls", "gzip", "__native-tls", "blocking"]),
            (
                "jsonschema",
                &["resolve-http", "resolve-file", "resolve-async"],
            ),
            ("serde_json", &["std", "unbounded_depth"]),
            ("openssl-sys", &[]),
            ("native-tls", &[]),
            // A feature of the same name on another crate is fine.
            ("flate2", &["gzip", "zlib"]),
        ]);
        let violations = forbidden_features(&metadata);
        let expected = [
            "reqwest 1.0.0 has feature `gzip` enabled: reqwest decompression",
            "reqwest 1.0.0 has feature `__native-tls` enabled: native TLS/OpenSSL",
            "reqwest 1.0.0 has feature `blocking` enabled: the blocking client",
            "jsonschema 1.0.0 has feature `resolve-http` enabled: jsonschema resolvers",
            "jsonschema 1.0.0 has feature `resolve-file` enabled",
            "jsonschema 1.0.0 has feature `resolve-async` enabled",
            "serde_json 1.0.0 has feature `unbounded_depth` enabled: serde_json unbounded depth",
            "openssl-sys 1.0.0 is in the dependency graph: native TLS/OpenSSL",
            "native-tls 1.0.0 is in the dependency graph: native TLS/OpenSSL",
        ];
        assert_eq!(violations.len(), expected.len(), "{violations:#?}");
        for (violation, prefix) in violations.iter().zip(expected) {
            assert!(
                violation.starts_with(prefix),
                "{violation:?} should start with {prefix:?}"
            );
        }
    }

    #[test]
    fn forbidden_features_needs_a_resolve_graph() {
        let violations = forbidden_features(&workspace(&[("plugin_mcp", &[])]));
        assert_eq!(
            violations,
            ["cargo metadata has no resolve graph (`resolve.nodes`) to check"]
        );
    }
}
