//! `check`: every policy check on the real workspace.

use std::path::Path;

use crate::dependency_policy::{allow_list, forbidden_features, plugin_family_deps};
use crate::public_api_policy::only_install_is_public;
use crate::workspace;

/// Runs the four policy checks on the workspace at `root` (`plugin_mcp` is the root package),
/// returning every violation prefixed with the name of the check that found it.
///
/// `Err` means the data could not be gathered (cargo metadata failed, a file is unreadable),
/// which is not a pass either.
pub fn run_all(root: &Path) -> Result<Vec<String>, String> {
    let metadata = workspace::cargo_metadata(root)?;
    let sources = workspace::read_sources(root)?;
    let deps_allow = workspace::read_deps_allow(root)?;
    let results = [
        ("plugin_family_deps", plugin_family_deps(&metadata)),
        ("only_install_is_public", only_install_is_public(&sources)),
        ("allow_list", allow_list(&metadata, &deps_allow)),
        ("forbidden_features", forbidden_features(&metadata)),
    ];
    Ok(results
        .into_iter()
        .flat_map(|(check, violations)| {
            violations
                .into_iter()
                .map(move |violation| format!("{check}: {violation}"))
        })
        .collect())
}

/// How many checks [`run_all`] runs.
pub const CHECK_COUNT: usize = 4;
