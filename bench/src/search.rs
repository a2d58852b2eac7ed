//! Search (`get_dynamic_tools {query}`): its quality on the evaluation set of `bench/search/`
//! (real servers' published tools, and the queries a user asks of them), with and without a
//! hostile server whose tools stuff those queries' words, and its latency over 10,000 tools.
//!
//! Every figure goes through the Pack as a Host calls it: each server of the set is a test
//! server in this process listing that server's tools, and each query is one
//! `get_dynamic_tools` call, whose answer is read as a model reads it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runvil_plugin::Pack;
use serde_json::{Map, Value, json};
use shared_mcp_fixture::changing::{Changing, Era};
use shared_mcp_fixture::hostile::Hostile;

use crate::measure::percentile;
use crate::report::Results;

/// Where the evaluation set is.
const SET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/search");
/// The namespace of the hostile server.
const HOSTILE: &str = "helper";
/// A query is a hit when its tool is among this many first results (and at 1).
const RECALL_AT: usize = 5;
/// The size of the large catalog, and how many servers it is spread over.
const LARGE_TOOLS: usize = 10_000;
const LARGE_SERVERS: usize = 10;
/// Timed queries over the large catalog (after a tenth as many untimed).
const LARGE_QUERIES: usize = 2_000;
/// How long the servers may take to be ready.
const READY: Duration = Duration::from_secs(60);

/// Recall at 1 and at [`RECALL_AT`] over the evaluation's queries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recall {
    pub(crate) at_1: f64,
    pub(crate) at_5: f64,
}

/// What the search section measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Searched {
    pub(crate) servers: usize,
    pub(crate) tools: usize,
    pub(crate) queries: usize,
    pub(crate) clean: Recall,
    pub(crate) poisoned: Recall,
    /// Over [`LARGE_TOOLS`] tools: the first query (which indexes every catalog) and the p50
    /// and p99 of the others, ms.
    pub(crate) first_ms: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
}

pub(crate) async fn search(results: &mut Results) -> Result<(), String> {
    eprintln!("bench: search, the evaluation set then {LARGE_TOOLS} tools");
    let servers = servers()?;
    let queries = queries()?;
    let poisoned = read(&format!("{SET}/poisoned.json"))?;
    let clean = recall(&servers, &queries).await?;
    let mut with_hostile = servers.clone();
    with_hostile.push((HOSTILE.to_owned(), poisoned));
    let poisoned = recall(&with_hostile, &queries).await?;
    let (first_ms, p50_ms, p99_ms) = large(&servers, &queries).await?;
    results.search = Some(Searched {
        servers: servers.len(),
        tools: servers.iter().map(|(_, tools)| count(tools)).sum(),
        queries: queries.len(),
        clean,
        poisoned,
        first_ms,
        p50_ms,
        p99_ms,
    });
    Ok(())
}

/// A query and the tools (`namespace/name`) that answer it.
struct Query {
    text: String,
    expected: Vec<String>,
}

fn read(path: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("{path}: {error}"))?;
    serde_json::from_str(&text).map_err(|error| format!("{path}: {error}"))
}

fn count(tools: &Value) -> usize {
    tools.as_array().map_or(0, Vec::len)
}

/// Each server of the set, by namespace (its file's name), in name order, with its tools.
fn servers() -> Result<Vec<(String, Value)>, String> {
    let dir = PathBuf::from(SET).join("servers");
    let entries = std::fs::read_dir(&dir).map_err(|error| format!("{dir:?}: {error}"))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.strip_suffix(".json").map(str::to_owned))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| Ok((name.clone(), read(&format!("{SET}/servers/{name}.json"))?)))
        .collect()
}

fn queries() -> Result<Vec<Query>, String> {
    let all = read(&format!("{SET}/queries.json"))?;
    let all = all.as_array().ok_or("queries.json is not an array")?;
    all.iter()
        .map(|query| {
            let text = query["query"].as_str().ok_or("a query without its text")?;
            let also = query.get("also").and_then(Value::as_array);
            let expected = std::iter::once(&query["expect"])
                .chain(also.into_iter().flatten())
                .map(|tool| tool.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or("a query without its tools")?;
            Ok(Query {
                text: text.to_owned(),
                expected,
            })
        })
        .collect()
}

/// A test server per `servers` entry, and a Pack over them all once every one is ready.
async fn pack_over(servers: &[(String, Value)]) -> Result<(Arc<dyn Pack>, Vec<Hostile>), String> {
    let mut running = Vec::with_capacity(servers.len());
    let mut config = Map::new();
    for (namespace, tools) in servers {
        let server = Hostile::start(Changing::new(tools.clone()).handler(Era::Legacy)).await;
        config.insert(namespace.clone(), json!({ "url": server.url }));
        running.push(server);
    }
    let pack = shared_mcp_fixture::try_pack(Value::Object(config)).map_err(|e| e.to_string())?;
    for (namespace, tools) in servers {
        let entry = shared_mcp_fixture::ready(&pack, namespace, READY).await?;
        let listed = entry["tools"].as_array().map_or(0, Vec::len);
        if listed != count(tools) {
            return Err(format!(
                "{namespace} lists {listed} of its {} tools",
                count(tools)
            ));
        }
    }
    Ok((pack, running))
}

/// `get_dynamic_tools {query}`, as `namespace/name` of each result.
async fn found(pack: &Arc<dyn Pack>, query: &str) -> Result<Vec<String>, String> {
    let answer = shared_mcp_fixture::listing(pack, json!({ "query": query })).await?;
    let results = answer["results"]
        .as_array()
        .ok_or("an answer without results")?;
    Ok(results
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r["namespace"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )
        })
        .collect())
}

async fn recall(servers: &[(String, Value)], queries: &[Query]) -> Result<Recall, String> {
    let (pack, _servers) = pack_over(servers).await?;
    let (mut at_1, mut at_5) = (0, 0);
    for query in queries {
        let found = found(&pack, &query.text).await?;
        let place = found.iter().position(|tool| query.expected.contains(tool));
        at_1 += usize::from(place == Some(0));
        at_5 += usize::from(place.is_some_and(|place| place < RECALL_AT));
    }
    pack.shutdown().await;
    let n = queries.len() as f64;
    Ok(Recall {
        at_1: at_1 as f64 / n,
        at_5: at_5 as f64 / n,
    })
}

/// [`LARGE_TOOLS`] tools over [`LARGE_SERVERS`] servers, made of the set's tools over and over,
/// each renamed `<name>_<i>` (two servers of the set both have a `search_issues`), and the
/// time of the evaluation's queries over them: the first one, which builds every index, then
/// the p50 and p99 of [`LARGE_QUERIES`], ms.
async fn large(servers: &[(String, Value)], queries: &[Query]) -> Result<(f64, f64, f64), String> {
    let originals: Vec<&Value> = servers
        .iter()
        .flat_map(|(_, tools)| tools.as_array().into_iter().flatten())
        .collect();
    let copies = (0..LARGE_TOOLS).map(|i| {
        let mut tool = originals[i % originals.len()].clone();
        let name = format!("{}_{i}", tool["name"].as_str().unwrap_or("tool"));
        tool["name"] = json!(name);
        tool
    });
    let copies: Vec<Value> = copies.collect();
    let per_server = LARGE_TOOLS.div_ceil(LARGE_SERVERS);
    let large: Vec<(String, Value)> = copies
        .chunks(per_server)
        .enumerate()
        .map(|(i, tools)| (format!("large{i:02}"), Value::Array(tools.to_vec())))
        .collect();
    let (pack, _servers) = pack_over(&large).await?;
    let ms = |time: Duration| time.as_secs_f64() * 1e3;
    let started = Instant::now();
    found(&pack, &queries[0].text).await?;
    let first = started.elapsed();
    let mut samples = Vec::with_capacity(LARGE_QUERIES);
    let all = queries
        .iter()
        .cycle()
        .take(LARGE_QUERIES + LARGE_QUERIES / 10);
    for (i, query) in all.enumerate() {
        let args = json!({ "query": query.text });
        let started = Instant::now();
        let answer = pack.call("mcp/get_dynamic_tools", args).await;
        let elapsed = started.elapsed();
        let answer = answer.map_err(|error| format!("the search failed: {error}"))?;
        if !answer.contains(r#""results":[{"#) {
            return Err(format!(
                "{:?} found nothing in the large catalog",
                query.text
            ));
        }
        if i >= LARGE_QUERIES / 10 {
            samples.push(elapsed);
        }
    }
    pack.shutdown().await;
    samples.sort_unstable();
    Ok((
        ms(first),
        ms(percentile(&samples, 50)),
        ms(percentile(&samples, 99)),
    ))
}
