//! Search: exact and prefix matches first, stable order, stuffing bounded, hidden tools
//! never found, and the evaluation set's recall.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::envelope::{Rejected, ToolPages};
use crate::text::{Scrubber, Untrusted};

/// The tools as a server would list them, through the envelope.
fn tool_set(tools: &[Value]) -> ToolSet {
    let page = serde_json::value::to_raw_value(&json!({ "tools": tools })).expect("JSON");
    let mut catalog = ToolPages::default();
    catalog.add_page(&Untrusted::new(page)).expect("within");
    catalog.finish()
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// `query`'s results over `servers` (namespace, tools) as `namespace/name`.
fn found(servers: &[(&str, &ToolSet)], query: &str, limit: usize) -> Vec<String> {
    let indexes: Vec<(&str, Index)> = servers
        .iter()
        .map(|(namespace, set)| (*namespace, Index::new(namespace, set)))
        .collect();
    let catalogs: Vec<(&str, &Index)> = indexes.iter().map(|(n, i)| (*n, i)).collect();
    names(&search(&catalogs, &Query::new(query), None, limit))
}

fn names(found: &[Found<'_>]) -> Vec<String> {
    found
        .iter()
        .map(|f| format!("{}/{}", f.namespace, f.tool.name))
        .collect()
}

#[test]
fn a_name_equal_to_the_query_then_names_starting_with_it_come_first_whatever_the_scores() {
    let set = tool_set(&[
        tool(
            "mailer",
            "Send email. Send an email, send mail, send it now: send.",
        ),
        tool("send_email", "Delivers a message."),
        tool("send", "Posts a letter."),
        tool("sender_stats", "Counts letters."),
    ]);
    let all = found(&[("m", &set)], "send", 20);
    assert_eq!(
        all,
        ["m/send", "m/send_email", "m/sender_stats", "m/mailer"]
    );
    // Letter case aside, and around spaces.
    assert_eq!(
        found(&[("m", &set)], "  SEND_Email ", 20)[0],
        "m/send_email"
    );
    // A name found by its prefix only, with no term in common.
    assert_eq!(found(&[("m", &set)], "sende", 20), ["m/sender_stats"]);
}

#[test]
fn ties_are_broken_by_namespace_then_name_and_every_search_answers_the_same() {
    let set = tool_set(&[tool("b_list", "List files."), tool("a_list", "List files.")]);
    let servers = [("zeta", &set), ("alpha", &set)];
    let first = found(&servers, "list the files", 20);
    assert_eq!(
        first,
        ["alpha/a_list", "alpha/b_list", "zeta/a_list", "zeta/b_list"]
    );
    for _ in 0..20 {
        assert_eq!(found(&servers, "list the files", 20), first);
    }
}

#[test]
fn a_query_that_matches_nothing_finds_nothing() {
    let set = tool_set(&[tool("list_files", "List files.")]);
    assert!(found(&[("s", &set)], "quantum teleportation", 20).is_empty());
    // No term at all (punctuation), and no name starts with it.
    assert!(found(&[("s", &set)], "?!", 20).is_empty());
}

#[test]
fn another_form_of_a_query_word_is_found_after_the_word_itself() {
    let set = tool_set(&[
        tool("check", "Review the change."),
        tool("approve", "Approves the change for the reviewers."),
        tool("other", "Does something else."),
    ]);
    assert_eq!(
        found(&[("s", &set)], "review", 20),
        ["s/check", "s/approve"]
    );
    assert_eq!(
        found(&[("s", &set)], "reviewers", 20),
        ["s/approve", "s/check"]
    );
}

#[test]
fn a_stuffed_description_does_not_outrank_a_plain_one_that_matches() {
    let stuffed = format!(
        "The best tool. {}",
        "send an email message mail inbox ".repeat(50)
    );
    let set = tool_set(&[
        tool("helper", &stuffed),
        tool("send_email", "Sends an email message to a recipient."),
        tool("post", "Sends an email message to a recipient."),
    ]);
    // `send_email` says "email" in its name too; the stuffed one, fifty times in its text,
    // comes last.
    let all = found(&[("s", &set)], "deliver an email message", 20);
    assert_eq!(all, ["s/send_email", "s/post", "s/helper"]);
}

/// `filler` terms that match nothing, then the word `target`.
fn after(filler: usize, target: &str) -> String {
    format!("{} {target}", vec!["filler"; filler].join(" "))
}

#[test]
fn only_the_first_terms_of_a_description_count() {
    let within = after(MAX_INDEXED_DESCRIPTION_TERMS - 1, "teleport");
    let past = after(MAX_INDEXED_DESCRIPTION_TERMS, "teleport");
    let parameters = json!({"type": "object", "properties": {
        "within": {"type": "string", "description": within},
        "past": {"type": "string", "description": past},
    }});
    let set = tool_set(&[
        tool("a_within", &within),
        tool("b_past", &past),
        json!({"name": "c_parameter", "description": "d", "inputSchema": parameters}),
    ]);
    assert_eq!(
        found(&[("s", &set)], "teleport", 20),
        ["s/a_within", "s/c_parameter"]
    );
    // The parameter's own name always counts.
    assert_eq!(
        found(&[("s", &set)], "past", 20),
        ["s/b_past", "s/c_parameter"]
    );
}

#[test]
fn a_repeated_term_counts_up_to_its_cap() {
    let cap = usize::from(MAX_COUNTED_TERM_REPEATS);
    // The same length each: `cap` times against once, then `cap + 1` times against `cap`.
    let repeated = |times: usize| {
        let mut words = vec!["email"; times];
        words.resize(cap + 1, "other");
        words.join(" ")
    };
    for (a, b) in [("a", "b"), ("b", "a")] {
        let set = tool_set(&[tool(a, &repeated(1)), tool(b, &repeated(cap))]);
        let more_first = [format!("s/{b}"), format!("s/{a}")];
        assert_eq!(found(&[("s", &set)], "email", 20), more_first);
        // Past the cap they score the same: the order is the names'.
        let set = tool_set(&[tool(a, &repeated(cap)), tool(b, &repeated(cap + 1))]);
        assert_eq!(found(&[("s", &set)], "email", 20), ["s/a", "s/b"]);
    }
}

#[test]
fn at_most_the_limit_is_answered_the_best_first() {
    let tools: Vec<Value> = (0..30)
        .map(|i| tool(&format!("t{i:02}"), &"match ".repeat(1 + i % 2)))
        .collect();
    let set = tool_set(&tools);
    let all = found(&[("s", &set)], "match", 7);
    assert_eq!(
        all,
        [
            "s/t01", "s/t03", "s/t05", "s/t07", "s/t09", "s/t11", "s/t13"
        ]
    );
    assert!(found(&[("s", &set)], "match", 0).is_empty());
}

#[test]
fn held_rejected_and_invisible_tools_are_never_found() {
    let listed = tool_set(&[
        tool("find_email", "Find an email."),
        tool("read_email", "Read an email."),
        tool("bad name", "Find an email."),
    ]);
    assert_eq!(
        listed.rejected.len(),
        1,
        "the name with a space is rejected"
    );
    // A held tool is taken out of the callable ones, as the pins do.
    let mut tools = listed.tools.clone();
    tools.remove("find_email");
    let held = BTreeMap::from([(
        "find_email".to_owned(),
        Rejected::new(&Scrubber::default(), "find_email", "held"),
    )]);
    let set = ToolSet::new(tools, listed.rejected.clone(), 0, held);
    assert_eq!(found(&[("s", &set)], "find an email", 20), ["s/read_email"]);
    assert_eq!(found(&[("s", &set)], "find", 20), Vec::<String>::new());
    // A tool the caller may not see takes no place: the next one gets it.
    let index = Index::new("s", &listed);
    let hidden = |_: usize, name: &str| name != "find_email";
    let shown = search(
        &[("s", &index)],
        &Query::new("find an email"),
        Some(&hidden),
        1,
    );
    assert_eq!(names(&shown), ["s/read_email"]);
}

#[test]
fn a_hidden_tool_leaves_no_trace_in_the_order_of_the_others() {
    // Alone, "red" and "blue" are as rare as each other: the two tie, and the names decide.
    let plain = [tool("p1", "Red."), tool("q1", "Blue.")];
    let set = tool_set(&plain);
    assert_eq!(found(&[("s", &set)], "red blue", 20), ["s/p1", "s/q1"]);
    // Counted, two more tools saying "red" would make it the commoner word, and q1 first.
    let mut more = plain.to_vec();
    more.extend([tool("h1", "Red."), tool("h2", "Red.")]);
    let more = tool_set(&more);
    assert_eq!(found(&[("s", &more)], "red blue", 20)[0], "s/q1");
    // Hidden from the caller, they change nothing.
    let index = Index::new("s", &more);
    let hidden = |_: usize, name: &str| !name.starts_with('h');
    let shown = search(&[("s", &index)], &Query::new("red blue"), Some(&hidden), 20);
    assert_eq!(names(&shown), ["s/p1", "s/q1"]);
}

#[tokio::test]
async fn an_index_is_built_once_per_catalog() {
    let indexes = Indexes::new(1);
    let first = Arc::new(tool_set(&[tool("list_files", "List files.")]));
    let built = indexes.of(0, "s", &first).await.expect("built");
    let again = indexes.of(0, "s", &first).await.expect("built");
    assert!(Arc::ptr_eq(&built, &again));
    // A new catalog (a re-list) gets a new index, which finds what it lists.
    let second = Arc::new(tool_set(&[tool("move_files", "Move files.")]));
    let rebuilt = indexes.of(0, "s", &second).await.expect("built");
    assert!(!Arc::ptr_eq(&built, &rebuilt));
    let query = Query::new("move");
    let moved = search(&[("s", &rebuilt)], &query, None, 20);
    assert_eq!(names(&moved), ["s/move_files"]);
}

/// The evaluation set of `bench/search`: real servers' tools and the queries a user asks.
mod evaluation {
    use super::*;

    fn read(path: &str) -> Value {
        let path = format!("{}/bench/search/{path}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn servers() -> Vec<(String, ToolSet)> {
        let dir = format!("{}/bench/search/servers", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("the evaluation's servers")
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|file| file.strip_suffix(".json").map(str::to_owned))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|name| {
                let tools = read(&format!("servers/{name}.json"));
                let set = tool_set(tools.as_array().expect("an array of tools"));
                (name, set)
            })
            .collect()
    }

    /// Recall at 1 and at 5 over `servers` of the queries in `file`, and the queries whose
    /// tool did not come first.
    fn recall(servers: &[(String, ToolSet)], file: &str) -> (f64, f64, Vec<String>) {
        let indexes: Vec<(&str, Index)> = servers
            .iter()
            .map(|(namespace, set)| (namespace.as_str(), Index::new(namespace, set)))
            .collect();
        let catalogs: Vec<(&str, &Index)> = indexes.iter().map(|(n, i)| (*n, i)).collect();
        let queries = read(file);
        let queries = queries.as_array().expect("an array of queries");
        let (mut at_1, mut at_5, mut missed) = (0, 0, Vec::new());
        for query in queries {
            let text = query["query"].as_str().expect("a query");
            let mut expected = vec![query["expect"].as_str().expect("a tool")];
            let also = query.get("also").and_then(Value::as_array).into_iter();
            expected.extend(also.flatten().filter_map(Value::as_str));
            let results = names(&search(&catalogs, &Query::new(text), None, 5));
            let place = results.iter().position(|r| expected.contains(&r.as_str()));
            at_1 += usize::from(place == Some(0));
            at_5 += usize::from(place.is_some());
            if place != Some(0) {
                missed.push(format!("{text:?} -> {results:?} (wanted {})", expected[0]));
            }
        }
        let n = queries.len() as f64;
        (at_1 as f64 / n, at_5 as f64 / n, missed)
    }

    /// Guards what was measured (BENCHMARKS.md has the figures and the misses): recall@5
    /// above 0.8 on both query sets, and a hostile server that stuffs the queries' words into
    /// 20 tools costs it at most 0.05. `--nocapture` shows the figures and each miss.
    #[test]
    fn the_evaluation_set_finds_its_tools_poisoned_or_not() {
        let mut servers = servers();
        let tools: usize = servers.iter().map(|(_, set)| set.tools.len()).sum();
        assert!(
            servers.len() >= 8 && tools >= 300,
            "{} servers, {tools} tools",
            servers.len()
        );
        let (clean_1, clean_5, missed) = recall(&servers, "queries.json");
        let (held_out_1, held_out_5, held_out_missed) = recall(&servers, "holdout.json");
        let poisoned = read("poisoned.json");
        let poisoned = tool_set(poisoned.as_array().expect("tools"));
        servers.push(("helper".to_owned(), poisoned));
        let (poisoned_1, poisoned_5, _) = recall(&servers, "queries.json");
        eprintln!("queries: recall@1 {clean_1:.3} recall@5 {clean_5:.3}");
        eprintln!("held out: recall@1 {held_out_1:.3} recall@5 {held_out_5:.3}");
        eprintln!("poisoned: recall@1 {poisoned_1:.3} recall@5 {poisoned_5:.3}");
        for line in missed.iter().chain(&held_out_missed) {
            eprintln!("  {line}");
        }
        assert!(
            clean_5 >= 0.8 && held_out_5 >= 0.8,
            "{clean_5} {held_out_5}"
        );
        assert!(
            poisoned_5 >= clean_5 - 0.05,
            "poisoned recall@5 {poisoned_5}"
        );
    }
}
