//! The parts of `cargo metadata --format-version 1` the dependency checks read, as
//! typed structs.
//!
//! Not the `cargo_metadata` crate: every version of it turns on serde_json's `unbounded_depth`,
//! and cargo unifies features across the workspace, so `cargo test --workspace` would build
//! `plugin_mcp` with a serde_json that has no recursion limit, which `deny.toml` bans
//! (`cargo deny --workspace check bans` reports it). Only the fields used here are declared;
//! serde skips the rest.

use serde::Deserialize;

/// What `cargo metadata` prints.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    /// Every package of the resolved graph.
    pub packages: Vec<Package>,
    /// The ids of the workspace's packages.
    pub workspace_members: Vec<String>,
}

/// One package.
#[derive(Debug, Deserialize)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its package id.
    pub id: String,
    /// Where it comes from: `registry+...`, `git+...`; none for a path package.
    pub source: Option<String>,
    /// Its dependencies as its manifest declares them.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
}

/// One declared dependency.
#[derive(Debug, Deserialize)]
pub struct Dependency {
    /// The package it names (not its `rename`).
    pub name: String,
    /// Where it comes from; none for a path dependency.
    pub source: Option<String>,
    /// `dev` or `build`; none for a normal dependency.
    pub kind: Option<String>,
}

impl Metadata {
    /// The workspace's packages.
    pub fn workspace_packages(&self) -> impl Iterator<Item = &Package> {
        self.packages
            .iter()
            .filter(|package| self.workspace_members.contains(&package.id))
    }
}
