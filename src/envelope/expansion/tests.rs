//! The expansion counter: exact counts, its two limits at the limit and one past, cycles,
//! and every reference form the validator resolves.

use serde_json::{Value, json};

use super::*;

/// `schema` measured, or why not.
fn measure(schema: &Value) -> Result<u64, TooMuch> {
    expanded_size(schema)
}

/// A schema whose expanded size is exactly `total` (at least 3014): two references to a
/// definition of 1002 nodes, padded with plain values.
fn of_size(total: u64) -> Value {
    let padding = usize::try_from(total - 3014).expect("small");
    json!({
        "$defs": {"a": {"enum": vec![0; 1000]}},
        "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}],
        "const": vec![0; padding],
    })
}

/// `levels` definitions, each `allOf` of two references to the next: 2^levels leaves.
fn bomb(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({"allOf": [next, next]}));
    }
    defs.insert(format!("d{levels}"), json!({"type": "string"}));
    json!({"type": "object", "$defs": defs, "properties": {"a": {"$ref": "#/$defs/d0"}}})
}

/// A root whose `$ref` starts a chain of `refs` references, one inside another.
fn chain(refs: usize) -> Value {
    let mut defs = Map::new();
    for i in 1..refs {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert(format!("d{refs}"), json!({}));
    json!({"$ref": "#/$defs/d1", "$defs": defs})
}

#[test]
fn plain_nodes_count_once_and_references_count_their_targets() {
    assert_eq!(measure(&json!({})), Ok(1));
    assert_eq!(measure(&json!({"type": "object", "enum": [1, 2]})), Ok(5));
    assert_eq!(measure(&of_size(5000)), Ok(5000));
}

#[test]
fn the_expansion_is_capped_at_the_limit() {
    assert_eq!(
        measure(&of_size(MAX_SCHEMA_EXPANSION)),
        Ok(MAX_SCHEMA_EXPANSION)
    );
    assert_eq!(
        measure(&of_size(MAX_SCHEMA_EXPANSION + 1)),
        Err(TooMuch::Nodes)
    );
}

#[test]
fn a_reference_bomb_is_refused_after_linear_work() {
    // Definition i expands to 8 * 2^(levels - i) - 6 nodes; each is also counted where it
    // is written, and d0 once more where the property refers to it.
    assert_eq!(measure(&bomb(13)), Ok(196_516));
    assert_eq!(measure(&bomb(14)), Err(TooMuch::Nodes));
    assert_eq!(measure(&bomb(30)), Err(TooMuch::Nodes));
    assert_eq!(measure(&bomb(40)), Err(TooMuch::Nodes));
}

#[test]
fn the_expanded_depth_is_capped_at_the_limit() {
    // root, $defs, then one level a reference: a chain of n references is n + 2 deep.
    let deepest = MAX_SCHEMA_EXPANDED_DEPTH - 2;
    assert!(measure(&chain(deepest)).is_ok());
    assert_eq!(measure(&chain(deepest + 1)), Err(TooMuch::Depth));
    // Measured link by link from the end, remembered parts still add up to the whole depth.
    let n = deepest + 1;
    let name = |k: usize| format!("z{:03}", n - k);
    let mut defs = Map::new();
    for i in 1..=n {
        let link = if i == n {
            json!({})
        } else {
            json!({"$ref": format!("#/$defs/{}", name(i + 1))})
        };
        defs.insert(name(i), link);
    }
    let backwards = json!({"$ref": format!("#/$defs/{}", name(1)), "$defs": defs});
    assert_eq!(measure(&backwards), Err(TooMuch::Depth));
}

#[test]
fn a_cycle_counts_once() {
    // root, properties, next, its $ref string, and the root again as one node.
    assert_eq!(
        measure(&json!({"properties": {"next": {"$ref": "#"}}})),
        Ok(5)
    );
    let tree = json!({
        "$defs": {"node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node",
    });
    assert!(measure(&tree).is_ok());
    let loop_without_descent = json!({
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
        "$ref": "#/$defs/a",
    });
    assert!(measure(&loop_without_descent).is_ok());
}

/// How much `keyword` adds to `schema`: its target's expanded size when it resolves.
fn added_by(schema: &Value, keyword: &str) -> Result<u64, TooMuch> {
    let text = schema.to_string();
    let without: Value =
        serde_json::from_str(&text.replace(&format!("\"{keyword}\""), "\"$comment\""))
            .expect("JSON");
    Ok(measure(schema)? - measure(&without)?)
}

/// A definition of 1002 nodes: a reference that reaches it adds exactly that.
fn target() -> Value {
    json!({"enum": vec![0; 1000]})
}

#[test]
fn every_local_reference_form_is_followed() {
    let t = target();
    let cases = [
        (
            "a JSON pointer",
            json!({"$defs": {"t": t}, "$ref": "#/$defs/t"}),
            "$ref",
        ),
        (
            "draft 7 definitions",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"t": t}, "properties": {"p": {"$ref": "#/definitions/t"}}}),
            "$ref",
        ),
        (
            "an escaped pointer",
            json!({"$defs": {"a/b%": t}, "$ref": "#/$defs/a~1b%25"}),
            "$ref",
        ),
        (
            "a pointer into an array",
            json!({"anyOf": [{}, t], "not": {"$ref": "#/anyOf/1"}}),
            "$ref",
        ),
        (
            "an $anchor",
            json!({"$defs": {"t": {"$anchor": "here", "enum": vec![0; 999]}}, "$ref": "#here"}),
            "$ref",
        ),
        (
            "an $id-relative reference",
            json!({"$id": "https://example.com/root.json", "$defs": {"s": {"$id": "sub.json", "$defs": {"t": t}}}, "$ref": "sub.json#/$defs/t"}),
            "$ref",
        ),
        (
            "a reference inside an $id resource",
            json!({"$id": "https://example.com/root.json", "$defs": {"s": {"$id": "sub/", "$defs": {"t": t}, "not": {"$ref": "#/$defs/t"}}}}),
            "$ref",
        ),
        (
            "a draft 7 fragment $id",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"t": {"$id": "#here", "enum": vec![0; 999]}}, "not": {"$ref": "#here"}}),
            "$ref",
        ),
        (
            "a draft 4 id",
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "id": "https://example.com/r.json", "definitions": {"s": {"id": "s.json", "definitions": {"t": t}}}, "not": {"$ref": "s.json#/definitions/t"}}),
            "$ref",
        ),
        (
            "a $dynamicRef",
            json!({"$defs": {"t": {"$dynamicAnchor": "here", "enum": vec![0; 999]}}, "$dynamicRef": "#here"}),
            "$dynamicRef",
        ),
        (
            "a $recursiveRef",
            json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": true, "enum": vec![0; 999], "properties": {"p": {"$recursiveRef": "#"}}}),
            "$recursiveRef",
        ),
    ];
    for (form, schema, keyword) in cases {
        let added = added_by(&schema, keyword);
        // A reference into a node being measured (the root) counts once.
        let want = if form == "a $recursiveRef" { 1 } else { 1002 };
        assert_eq!(added, Ok(want), "{form}: {schema}");
    }
}

#[test]
fn a_dynamic_reference_counts_its_largest_candidate() {
    let schema = json!({
        "$defs": {
            "small": {"$id": "small", "$dynamicAnchor": "x", "enum": [0]},
            "large": {"$id": "large", "$dynamicAnchor": "x", "enum": vec![0; 1000]},
        },
        "not": {"$dynamicRef": "#x"},
    });
    assert!(added_by(&schema, "$dynamicRef").expect("resolves") >= 1002);
}

#[test]
fn a_reference_that_does_not_resolve_inside_the_schema_is_refused() {
    for schema in [
        json!({"$ref": "#/$defs/missing"}),
        json!({"$ref": "#nowhere"}),
        json!({"$ref": "https://example.com/schema.json"}),
        json!({"$ref": "other.json"}),
        json!({"$dynamicRef": "#nowhere"}),
        json!({"$id": "http://[bad", "type": "object"}),
    ] {
        assert_eq!(measure(&schema), Err(TooMuch::Unresolved), "{schema}");
    }
}

#[test]
fn the_reasons_name_the_limits() {
    assert_eq!(
        TooMuch::Nodes.to_string(),
        "expands through its references to more than 262144 nodes"
    );
    assert_eq!(
        TooMuch::Depth.to_string(),
        "is nested deeper than 128 levels through its references"
    );
    assert_eq!(
        TooMuch::Unresolved.to_string(),
        "has a reference that does not resolve inside it"
    );
}

#[test]
fn the_deepest_accepted_schema_is_measured_on_a_small_stack() {
    // The most recursion the depth limit allows, on a quarter of a tokio worker's stack.
    let schema = chain(MAX_SCHEMA_EXPANDED_DEPTH - 2);
    let measured = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || measure(&schema).is_ok())
        .expect("thread")
        .join()
        .expect("no overflow");
    assert!(measured);
}
