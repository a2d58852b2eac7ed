//! `plugin_mcp`'s modules as layers: which top-level module of `src/` imports which, with no
//! circle among them, and the taint module `text` at the bottom.
//!
//! A module's imports are the paths of its files that start with `crate::` (in `use` items and
//! anywhere else), and `super::` in a top-level file (which names a sibling). Tests and fuzz
//! targets are left out: a file named `tests.rs` or `proptests.rs`, and any item under
//! `#[cfg(test)]` or `#[cfg(fuzzing)]`, may reach anything. The sources are parsed with `syn`,
//! so a comment or a string that names a module is no import.
//!
//! The policy check `layered` fails on a circle, and on
//! an import of `text` other than the two it stands on: `policy` (its bounds) and `secret`
//! (what the scrubber looks for). `cargo run -p build-xtask -- layers` prints the layers, the
//! lowest first, each module with what it imports.

// The layers are what `layers` was asked for: stdout.
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};

use syn::visit::{self, Visit};

use crate::public_api_policy::SourceFile;

/// The taint module, which must be at the bottom.
pub const TAINT_MODULE: &str = "text";

/// What the taint module may import: the limits it cuts text to, and the secrets it scrubs.
pub const TAINT_STANDS_ON: [&str; 2] = ["policy", "secret"];

/// Each top-level module of `src/` and the top-level modules it imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The import graph of the crate whose `src/` files are `files`.
pub fn graph(files: &[SourceFile]) -> Graph {
    let mut graph = Graph::new();
    for file in files {
        let Some(module) = top_module(&file.path) else {
            continue;
        };
        let Ok(parsed) = syn::parse_file(&file.text) else {
            continue; // reported by `only_install_is_public`
        };
        let mut paths = Paths {
            top_level_file: !file.path[4..].contains('/'),
            found: BTreeSet::new(),
        };
        paths.visit_file(&parsed);
        let imports = graph.entry(module.clone()).or_default();
        imports.extend(paths.found.into_iter().filter(|m| *m != module));
    }
    // Only modules of the crate: `crate::install` and the like are items of the root.
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for imports in graph.values_mut() {
        imports.retain(|m| modules.contains(m));
    }
    graph
}

/// The layers of `graph`, the lowest first: each module is one layer above the highest it
/// imports. `Err` names the modules of each circle when there is one.
pub fn layers(graph: &Graph) -> Result<Vec<Vec<String>>, Vec<String>> {
    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    while layer_of.len() < graph.len() {
        let before = layer_of.len();
        for (module, imports) in graph {
            if layer_of.contains_key(module.as_str()) {
                continue;
            }
            let below: Option<Vec<usize>> = imports
                .iter()
                .map(|m| layer_of.get(m.as_str()).copied())
                .collect();
            if let Some(below) = below {
                let layer = below.into_iter().max().map_or(0, |top| top + 1);
                layer_of.insert(module, layer);
            }
        }
        if layer_of.len() == before {
            // What is left imports, directly or not, what imports it.
            let left: Vec<String> = (graph.keys())
                .filter(|m| !layer_of.contains_key(m.as_str()))
                .cloned()
                .collect();
            return Err(left);
        }
    }
    let mut layers = vec![Vec::new(); layer_of.values().max().map_or(0, |top| top + 1)];
    for (module, layer) in layer_of {
        layers[layer].push(module.to_owned());
    }
    Ok(layers)
}

/// The violations of the layering in the crate whose `src/` files are `files`.
pub fn layered(files: &[SourceFile]) -> Vec<String> {
    let graph = graph(files);
    let mut violations = Vec::new();
    if let Err(circle) = layers(&graph) {
        violations.push(format!(
            "these modules import each other in a circle (or import one that does): {}",
            circle.join(", ")
        ));
    }
    if let Some(imports) = graph.get(TAINT_MODULE) {
        for module in imports
            .iter()
            .filter(|m| !TAINT_STANDS_ON.contains(&m.as_str()))
        {
            violations.push(format!(
                "src/{TAINT_MODULE}/ imports `{module}`; the taint module stands on {} alone",
                TAINT_STANDS_ON.join(" and ")
            ));
        }
    }
    violations
}

/// `cargo run -p build-xtask -- layers`: prints the layers of `plugin_mcp`, the lowest first.
pub fn command(_: &[String]) -> Result<bool, String> {
    let files = crate::workspace::read_sources(&crate::workspace::root())?;
    let graph = graph(&files);
    match layers(&graph) {
        Ok(layers) => {
            for (at, modules) in layers.iter().enumerate() {
                for module in modules {
                    let imports: Vec<&str> = graph[module].iter().map(String::as_str).collect();
                    println!("{at:>2}  {module:<14} {}", imports.join(" "));
                }
            }
            let violations = layered(&files);
            for violation in &violations {
                eprintln!("{violation}");
            }
            Ok(violations.is_empty())
        }
        Err(circle) => {
            eprintln!("a circle among: {}", circle.join(", "));
            Ok(false)
        }
    }
}

/// The top-level module a file of `src/` belongs to: `src/text/shown.rs` and `src/text.rs`
/// are `text`; the crate root, tests and fuzz targets belong to none.
fn top_module(path: &str) -> Option<String> {
    let inside = path.strip_prefix("src/")?;
    let file = inside.rsplit('/').next()?;
    if inside == "lib.rs" || inside == "fuzzing.rs" || file == "tests.rs" || file == "proptests.rs"
    {
        return None;
    }
    let first = inside.split('/').next()?;
    Some(first.strip_suffix(".rs").unwrap_or(first).to_owned())
}

/// The top-level modules one file's paths name.
struct Paths {
    /// Whether the file is `src/<module>.rs`, where `super::` names the crate root.
    top_level_file: bool,
    found: BTreeSet<String>,
}

impl Paths {
    fn note(&mut self, first: &syn::Ident, second: Option<&syn::Ident>) {
        let named = first == "crate" || (self.top_level_file && first == "super");
        if let (true, Some(module)) = (named, second) {
            self.found.insert(module.to_string());
        }
    }
}

/// Whether `attrs` hold `#[cfg(test)]` or `#[cfg(fuzzing)]`: an item only tests or fuzz
/// targets build.
fn only_for_tests(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|cfg| cfg == "test" || cfg == "fuzzing")
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !only_for_tests(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if let syn::UseTree::Path(path) = &item.tree {
            let second = match &*path.tree {
                syn::UseTree::Path(next) => vec![&next.ident],
                syn::UseTree::Name(name) => vec![&name.ident],
                syn::UseTree::Rename(rename) => vec![&rename.ident],
                syn::UseTree::Group(group) => (group.items.iter())
                    .filter_map(|tree| match tree {
                        syn::UseTree::Path(next) => Some(&next.ident),
                        syn::UseTree::Name(name) => Some(&name.ident),
                        syn::UseTree::Rename(rename) => Some(&rename.ident),
                        _ => None,
                    })
                    .collect(),
                syn::UseTree::Glob(_) => Vec::new(),
            };
            for module in second {
                self.note(&path.ident, Some(module));
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let mut segments = path.segments.iter();
        if let Some(first) = segments.next() {
            self.note(&first.ident, segments.next().map(|s| &s.ident));
        }
        visit::visit_path(self, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: path.to_owned(),
            text: text.to_owned(),
        }
    }

    #[test]
    fn modules_are_layered_by_what_they_import_and_tests_are_left_out() {
        let files = [
            file("src/lib.rs", "mod policy; mod text; mod tools;"),
            file("src/policy.rs", "pub(crate) const MAX: usize = 1;"),
            file("src/text.rs", "use crate::policy::MAX;"),
            file(
                "src/text/shown.rs",
                "fn f() -> usize { super::super::policy::MAX }",
            ),
            file(
                "src/tools.rs",
                "use crate::{policy, text::Shown};\n#[cfg(test)]\nmod tests { use crate::lib; }",
            ),
            file("src/tools/tests.rs", "use crate::anything;"),
        ];
        let graph = graph(&files);
        assert_eq!(
            layers(&graph),
            Ok(vec![
                vec!["policy".to_owned()],
                vec!["text".to_owned()],
                vec!["tools".to_owned()],
            ])
        );
        assert!(layered(&files).is_empty(), "{:?}", layered(&files));
    }

    #[test]
    fn a_circle_and_a_taint_module_that_imports_above_it_are_violations() {
        let files = [
            file("src/text.rs", "use crate::tools::Pack;"),
            file("src/tools.rs", "fn f() { crate::text::show(); }"),
        ];
        let violations = layered(&files);
        assert_eq!(
            violations,
            [
                "these modules import each other in a circle (or import one that does): text, \
                 tools",
                "src/text/ imports `tools`; the taint module stands on policy and secret alone",
            ]
        );
    }
}
