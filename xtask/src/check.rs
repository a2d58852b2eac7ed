//! Every project-specific policy check on one workspace: `cargo test -p build-xtask` runs them
//! on the real one and on a crafted one that breaks each (`tests/policy.rs`).

use std::path::Path;

use crate::dependency_policy::{allow_list, plugin_family_deps};
use crate::deps_allow::DepsAllow;
use crate::layers::layered;
use crate::public_api_policy::only_install_is_public;
use crate::taint_policy::opened_only_by_the_envelope;
use crate::workspace;

/// Runs the policy checks on the workspace at `root` (`plugin_mcp` is the root package),
/// returning every violation prefixed with the name of the check that found it.
///
/// `Err` means the data could not be gathered (cargo metadata failed, a file is unreadable),
/// which is not a pass either.
pub fn run_all(root: &Path) -> Result<Vec<String>, String> {
    let metadata = workspace::cargo_metadata(root)?;
    let sources = workspace::read_sources(root)?;
    let allowed = DepsAllow::read(root)?;
    let results = [
        ("plugin_family_deps", plugin_family_deps(&metadata)),
        ("only_install_is_public", only_install_is_public(&sources)),
        (
            "opened_only_by_the_envelope",
            opened_only_by_the_envelope(&sources),
        ),
        ("layered", layered(&sources)),
        ("allow_list", allow_list(&metadata, &allowed)),
    ];
    Ok(results
        .into_iter()
        .flat_map(|(check, violations)| {
            violations.into_iter().map(move |v| format!("{check}: {v}"))
        })
        .collect())
}
