//! How much work a schema can make the validator do: the size of its tree with every
//! reference expanded.
//!
//! A schema of a few hundred bytes whose `$defs` each hold two references to the next one
//! expands to a tree of 2^40 nodes, and the validator walks that tree for every value it
//! checks. The byte and depth caps cannot see this, so each schema is measured once, when the
//! tool is listed: every node counts, and every reference counts its target's expanded size
//! again. Sizes are remembered per node, so measuring is linear in the schema, and the count
//! stops at [`MAX_SCHEMA_EXPANSION`]. A reference back into a node being measured (recursion)
//! counts once: recursion only goes as deep as the checked value, which the call's budget
//! ([`MAX_VALIDATION_WORK`](crate::policy::MAX_VALIDATION_WORK)) bounds.
//!
//! References are resolved by `referencing`, the resolver the validator itself uses, so every
//! local form it follows is followed here: JSON pointers, `$defs` and `definitions`, `$anchor`,
//! `$id`-relative references, `$dynamicRef` and `$recursiveRef`. A reference that does not
//! resolve inside the schema cannot be measured, so its tool is refused.

use std::collections::{HashMap, HashSet};

use referencing::{Draft, Registry, Resolver};
use serde_json::{Map, Value};

use crate::policy::{MAX_SCHEMA_EXPANDED_DEPTH, MAX_SCHEMA_EXPANSION};

/// Where the validator puts a schema that has no `$id`; the same here, so references resolve
/// alike.
const BASE_URI: &str = "json-schema:///";

/// Why a schema's expansion could not be accepted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TooMuch {
    /// The expanded tree passes [`MAX_SCHEMA_EXPANSION`] nodes.
    Nodes,
    /// The expanded tree is nested deeper than [`MAX_SCHEMA_EXPANDED_DEPTH`].
    Depth,
    /// A reference that does not resolve inside the schema.
    Unresolved,
}

impl std::fmt::Display for TooMuch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nodes => write!(
                f,
                "expands through its references to more than {MAX_SCHEMA_EXPANSION} nodes"
            ),
            Self::Depth => write!(
                f,
                "is nested deeper than {MAX_SCHEMA_EXPANDED_DEPTH} levels through its references"
            ),
            Self::Unresolved => f.write_str("has a reference that does not resolve inside it"),
        }
    }
}

impl std::error::Error for TooMuch {}

/// The number of nodes of `schema` with every reference expanded, at most
/// [`MAX_SCHEMA_EXPANSION`].
pub(crate) fn expanded_size(schema: &Value) -> Result<u64, TooMuch> {
    let draft = Draft::default().detect(schema);
    let registry = Registry::new()
        .draft(draft)
        .retrieve_known_draft_meta_schemas(false)
        .add(BASE_URI, schema)
        .and_then(|builder| builder.prepare())
        .map_err(|_| TooMuch::Unresolved)?;
    let base = referencing::uri::from_str(BASE_URI).map_err(|_| TooMuch::Unresolved)?;
    let root = registry
        .resolver(base)
        .in_subresource(draft.create_resource_ref(schema))
        .map_err(|_| TooMuch::Unresolved)?;
    let mut counter = Counter::default();
    counter.find_anchors(schema, &root, draft);
    Ok(counter.size(schema, &root, draft, 0)?.nodes)
}

/// A node's identity: the same node reached through two references is measured once.
type Node = *const Value;

/// A node with what resolves references inside it.
struct Located<'r> {
    node: &'r Value,
    resolver: Resolver<'r>,
    draft: Draft,
}

/// A node's expanded size and nesting depth (a scalar is 0, `{}` is 1, a reference's target
/// one level below the object that holds it).
#[derive(Clone, Copy)]
struct Measure {
    nodes: u64,
    depth: usize,
}

impl Measure {
    /// Takes in a child, or a reference's target.
    fn add(&mut self, part: Measure) -> Result<(), TooMuch> {
        self.nodes = self.nodes.saturating_add(part.nodes);
        self.depth = self.depth.max(part.depth + 1);
        if self.nodes > MAX_SCHEMA_EXPANSION {
            return Err(TooMuch::Nodes);
        }
        // The depth of the path that led here is checked on the way down; this catches a
        // depth measured piecewise, remembered parts first.
        if self.depth > MAX_SCHEMA_EXPANDED_DEPTH {
            return Err(TooMuch::Depth);
        }
        Ok(())
    }
}

#[derive(Default)]
struct Counter<'r> {
    /// The nodes measured so far.
    sizes: HashMap<Node, Measure>,
    /// The nodes being measured: a reference to one of them is recursion.
    open: HashSet<Node>,
    /// Nodes with a `$dynamicAnchor`, by name: a `$dynamicRef` may land on any of them.
    dynamic_anchors: HashMap<&'r str, Vec<Located<'r>>>,
    /// Nodes with `$recursiveAnchor: true`: a `$recursiveRef` may land on any of them.
    recursive_anchors: Vec<Located<'r>>,
}

impl<'r> Counter<'r> {
    /// Records every node a dynamic reference may land on, wherever it is reached from: which
    /// one it is depends on the path the validator took, so each is a candidate.
    fn find_anchors(&mut self, node: &'r Value, resolver: &Resolver<'r>, draft: Draft) {
        match node {
            Value::Array(items) => {
                for item in items {
                    self.find_anchors(item, resolver, draft);
                }
            }
            Value::Object(map) => {
                let located = || Located {
                    node,
                    resolver: resolver.clone(),
                    draft,
                };
                if let Some(Value::String(name)) = map.get("$dynamicAnchor") {
                    let candidates = self.dynamic_anchors.entry(name).or_default();
                    candidates.push(located());
                }
                if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                    self.recursive_anchors.push(located());
                }
                for child in map.values() {
                    // A base the resolver cannot take is refused when the node is measured.
                    if let Ok((resolver, draft)) = enter(child, resolver, draft) {
                        self.find_anchors(child, &resolver, draft);
                    }
                }
            }
            _ => {}
        }
    }

    /// The expanded size of `node`, whose own `$id` `resolver` already took in; `level` is
    /// how many objects and arrays are above it on the path that led here.
    fn size(
        &mut self,
        node: &'r Value,
        resolver: &Resolver<'r>,
        draft: Draft,
        level: usize,
    ) -> Result<Measure, TooMuch> {
        let id: Node = node;
        if let Some(&measure) = self.sizes.get(&id) {
            return Ok(measure);
        }
        let scalar = Measure { nodes: 1, depth: 0 };
        if !self.open.insert(id) {
            return Ok(scalar);
        }
        let mut total = scalar;
        if node.is_array() || node.is_object() {
            // Bounds the recursion below, whatever was remembered before.
            if level >= MAX_SCHEMA_EXPANDED_DEPTH {
                return Err(TooMuch::Depth);
            }
            total.depth = 1;
        }
        match node {
            Value::Array(items) => {
                for item in items {
                    total.add(self.size(item, resolver, draft, level + 1)?)?;
                }
            }
            Value::Object(map) => {
                for child in map.values() {
                    let (resolver, draft) = enter(child, resolver, draft)?;
                    total.add(self.size(child, &resolver, draft, level + 1)?)?;
                }
                for targets in self.references(map, resolver)? {
                    // The validator takes one of the candidates: the largest bounds its work.
                    let mut largest = Measure { nodes: 0, depth: 0 };
                    for target in targets {
                        let measure =
                            self.size(target.node, &target.resolver, target.draft, level + 1)?;
                        largest.nodes = largest.nodes.max(measure.nodes);
                        largest.depth = largest.depth.max(measure.depth);
                    }
                    total.add(largest)?;
                }
            }
            _ => {}
        }
        self.open.remove(&id);
        self.sizes.insert(id, total);
        Ok(total)
    }

    /// The targets of each reference keyword of `map`: one for `$ref`, every candidate for
    /// the dynamic ones.
    fn references(
        &self,
        map: &'r Map<String, Value>,
        resolver: &Resolver<'r>,
    ) -> Result<Vec<Vec<Located<'r>>>, TooMuch> {
        let lookup = |reference: &str| {
            resolver.lookup(reference).ok().map(|resolved| {
                let (node, resolver, draft) = resolved.into_inner();
                Located {
                    node,
                    resolver,
                    draft,
                }
            })
        };
        let candidates = |anchors: &[Located<'r>]| -> Vec<Located<'r>> {
            anchors
                .iter()
                .map(|a| Located {
                    node: a.node,
                    resolver: a.resolver.clone(),
                    draft: a.draft,
                })
                .collect()
        };
        let mut all = Vec::new();
        for keyword in ["$ref", "$dynamicRef", "$recursiveRef"] {
            let Some(Value::String(reference)) = map.get(keyword) else {
                continue;
            };
            let mut targets: Vec<Located<'r>> = lookup(reference).into_iter().collect();
            match keyword {
                "$dynamicRef" => {
                    let name = reference.rsplit_once('#').map_or("", |(_, name)| name);
                    let anchors = self
                        .dynamic_anchors
                        .get(name)
                        .map_or(&[][..], Vec::as_slice);
                    targets.extend(candidates(anchors));
                }
                "$recursiveRef" => targets.extend(candidates(&self.recursive_anchors)),
                _ => {}
            }
            if targets.is_empty() {
                return Err(TooMuch::Unresolved);
            }
            all.push(targets);
        }
        Ok(all)
    }
}

/// The resolver and draft inside `child`: an object may declare its own `$schema` and `$id`.
/// An `$id` the resolver cannot take leaves the references inside it unmeasurable.
fn enter<'r>(
    child: &Value,
    resolver: &Resolver<'r>,
    draft: Draft,
) -> Result<(Resolver<'r>, Draft), TooMuch> {
    if !child.is_object() {
        return Ok((resolver.clone(), draft));
    }
    let draft = draft.detect(child);
    let resolver = resolver
        .in_subresource(draft.create_resource_ref(child))
        .map_err(|_| TooMuch::Unresolved)?;
    Ok((resolver, draft))
}

#[cfg(test)]
mod tests;
