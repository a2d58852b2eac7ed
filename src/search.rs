//! Search over the callable tools of the ready servers: what `get_dynamic_tools` answers for
//! a `query`, best first.
//!
//! Each server's catalog gets an [`Index`] once, the first time it is searched, built on the
//! blocking pool and kept by [`Indexes`] until the catalog changes: never per query. Only the catalog's callable tools
//! are indexed: a held or rejected tool is not among them, so no query can find it. A tool a
//! caller may not see (a gateway identity's denied tools) is filtered at query time by the
//! caller's predicate, from the results and from the statistics that order them, so the answer
//! is the one a catalog without it would give.
//!
//! Ranking, in order:
//! 1. A tool whose name equals the query (ignoring letter case), then one whose name starts
//!    with it, whatever their scores: a model that knows a tool's name always finds it.
//! 2. BM25F over five fields of each tool: its name, its server's namespace, its title, its
//!    description and its parameters (names, descriptions and `enum` values), each with its
//!    own weight. Each word counts twice: as itself, and as its stem at
//!    [`SEARCH_STEM_WEIGHT`], so that another form of a query's word is found too.
//! 3. Ties by namespace, then name: the same catalog and query always answer the same.
//!
//! Descriptions and parameters are the server's words, so a server can try to win every query
//! by stuffing keywords into them. Three bounds stop that: only the first
//! [`MAX_INDEXED_DESCRIPTION_TERMS`] terms of each description count, a term repeated in a
//! field counts at most [`MAX_COUNTED_TERM_REPEATS`] times, and BM25's length normalization
//! weighs each match of a long field less. A stuffed description then scores no more than a
//! plain one that says the same words once, and less than a tool whose name says them.
//!
//! BM25F is written here, not taken from a crate: the `bm25` crate scores one text per
//! document (no fields or weights), cannot cap a repeated term's count, and fits one corpus,
//! where this combines the statistics of several servers' indexes at query time so that one
//! server's change rebuilds only its own.

mod terms;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Weak};

use serde_json::Value;

use crate::envelope::{CheckedTool, ToolSet};
use crate::policy::{MAX_COUNTED_TERM_REPEATS, MAX_INDEXED_DESCRIPTION_TERMS, SEARCH_STEM_WEIGHT};

/// The fields a tool is matched by.
const FIELDS: usize = 5;
const NAME: usize = 0;
const NAMESPACE: usize = 1;
const TITLE: usize = 2;
const DESCRIPTION: usize = 3;
const PARAMETERS: usize = 4;

/// What a match in each field is worth (BM25F's field weights). A name is chosen by the
/// server's author to say what the tool does; a user names the service ("in Slack") as often
/// as the action; a description says more but less precisely; parameters least.
const WEIGHTS: [f64; FIELDS] = [3.0, 1.5, 2.0, 1.0, 0.4];

/// BM25's saturation: how fast repeated matches stop adding (the usual 1.2).
const K1: f64 = 1.2;

/// BM25's length normalization per field: how much a match in a field longer than the
/// field's average is worth less (the usual 0.75). Namespaces are all one or two words.
const B: [f64; FIELDS] = [0.75, 0.0, 0.75, 0.75, 0.75];

/// One server's callable tools, indexed for search.
pub(crate) struct Index {
    tools: Vec<Arc<CheckedTool>>,
    /// Each tool's field lengths, in terms.
    lengths: Vec<[u32; FIELDS]>,
    /// The sum of `lengths`, per field.
    total_lengths: [u64; FIELDS],
    /// Each term's place in `postings`.
    vocabulary: HashMap<Box<str>, u32>,
    /// By term: the tools it is in, with its count in each of their fields.
    postings: Vec<Vec<Posting>>,
    /// The tools' names lowercased, in order, with each tool's place in `tools`: the exact and
    /// prefix matches are a range of it.
    names: Vec<(Box<str>, u32)>,
}

/// A term's presence in one tool.
struct Posting {
    tool: u32,
    /// Its count in each field, at most [`MAX_COUNTED_TERM_REPEATS`].
    counts: [u8; FIELDS],
}

impl Index {
    /// The index of `set`'s callable tools, whose server is `namespace`.
    pub(crate) fn new(namespace: &str, set: &ToolSet) -> Self {
        let mut builder = Builder::default();
        let mut index = Index {
            tools: Vec::with_capacity(set.tools.len()),
            lengths: Vec::with_capacity(set.tools.len()),
            total_lengths: [0; FIELDS],
            vocabulary: HashMap::new(),
            postings: Vec::new(),
            names: Vec::with_capacity(set.tools.len()),
        };
        for tool in set.tools.values() {
            let at = u32::try_from(index.tools.len()).expect("a server lists at most 10,000 tools");
            let mut lengths = [0; FIELDS];
            let mut add = |field: usize, texts: &mut dyn Iterator<Item = &str>, limit: usize| {
                let mut left = limit;
                for text in texts {
                    let mut count =
                        |term: &str, word: &str| builder.count(&mut index, at, field, term, word);
                    left -= terms::each_word(text, left, &mut count);
                }
                lengths[field] += u32::try_from(limit - left).unwrap_or(u32::MAX);
            };
            let all = usize::MAX;
            add(NAME, &mut std::iter::once(tool.name.as_str()), all);
            add(NAMESPACE, &mut std::iter::once(namespace), all);
            add(TITLE, &mut tool.title.as_deref().into_iter(), all);
            // A tool without a description shows its title or name as one: counted once.
            if Some(&tool.description) != tool.title.as_ref() && tool.description != *tool.name {
                let description = tool.description.as_str();
                add(
                    DESCRIPTION,
                    &mut std::iter::once(description),
                    MAX_INDEXED_DESCRIPTION_TERMS,
                );
            }
            for (name, property) in parameters(&tool.shown_schema) {
                add(PARAMETERS, &mut std::iter::once(name.as_str()), all);
                add(
                    PARAMETERS,
                    &mut explained(property),
                    MAX_INDEXED_DESCRIPTION_TERMS,
                );
            }
            builder.finish(&mut index, at);
            for (total, length) in index.total_lengths.iter_mut().zip(lengths) {
                *total += u64::from(length);
            }
            index.lengths.push(lengths);
            let name = tool.name.to_ascii_lowercase().into();
            index.names.push((name, at));
            index.tools.push(Arc::clone(tool));
        }
        index.names.sort();
        index
    }

    fn len(&self) -> usize {
        self.tools.len()
    }

    /// The tools `term` is in.
    fn postings(&self, term: &str) -> &[Posting] {
        self.vocabulary
            .get(term)
            .map_or(&[], |&at| &self.postings[at as usize])
    }
}

/// The counts of the tool being indexed, by term: each term is looked up once per word and
/// copied only the first time the index meets it.
#[derive(Default)]
struct Builder {
    /// The tool's terms and their counts per field.
    counts: Vec<(u32, [u8; FIELDS])>,
    /// By term: the last tool that counted it, and its place in `counts` then.
    last: Vec<(u32, usize)>,
    /// By term: its stem's term, found the first time the index meets the term as a word of
    /// its own (not a plural): [`UNKNOWN`] until then, and for a stem.
    stems: Vec<u32>,
    /// By plural word (one whose term is its singular): its stem's term.
    plural_stems: HashMap<Box<str>, u32>,
}

/// What [`Builder::stems`] holds for a term whose stem is not known.
const UNKNOWN: u32 = u32::MAX;

impl Builder {
    /// Counts `term`, read from `word`, once more in `field` of the tool at `tool`, and the
    /// word's stem too.
    fn count(&mut self, index: &mut Index, tool: u32, field: usize, term: &str, word: &str) {
        let id = self.id(index, term);
        self.count_id(tool, field, id);
        // Each word's stem is read once per index. Most words are their own term; a plural's
        // stem is read from the plural, as written.
        let stem = if term == word {
            match self.stems[id as usize] {
                UNKNOWN => {
                    let stem = self.id(index, &terms::stem(term, word));
                    self.stems[id as usize] = stem;
                    stem
                }
                known => known,
            }
        } else if let Some(&stem) = self.plural_stems.get(word) {
            stem
        } else {
            let stem = self.id(index, &terms::stem(term, word));
            self.plural_stems.insert(word.into(), stem);
            stem
        };
        self.count_id(tool, field, stem);
    }

    /// The place of `term` in the index, added if new.
    fn id(&mut self, index: &mut Index, term: &str) -> u32 {
        match index.vocabulary.get(term) {
            Some(&id) => id,
            None => self.add(index, term),
        }
    }

    /// A term new to the index, whose stem is not yet known.
    fn add(&mut self, index: &mut Index, term: &str) -> u32 {
        let id = u32::try_from(index.postings.len()).expect("fewer terms than 2^32");
        index.vocabulary.insert(term.into(), id);
        index.postings.push(Vec::new());
        self.last.push((u32::MAX, 0));
        self.stems.push(UNKNOWN);
        id
    }

    /// Counts the term `id` once more in `field` of the tool at `tool`.
    fn count_id(&mut self, tool: u32, field: usize, id: u32) {
        let (counted_by, at) = &mut self.last[id as usize];
        if *counted_by != tool {
            *counted_by = tool;
            *at = self.counts.len();
            self.counts.push((id, [0; FIELDS]));
        }
        let count = &mut self.counts[*at].1[field];
        *count = (*count + 1).min(MAX_COUNTED_TERM_REPEATS);
    }

    /// Files the tool's counts into the index's postings.
    fn finish(&mut self, index: &mut Index, tool: u32) {
        for (id, counts) in self.counts.drain(..) {
            index.postings[id as usize].push(Posting { tool, counts });
        }
    }
}

/// What a parameter's schema says of it: its description, then the values it takes (an
/// `enum`'s strings: `"open"`, `"closed"`, `"not_planned"` say what a tool can do). Together
/// they are one description, of which the first [`MAX_INDEXED_DESCRIPTION_TERMS`] terms count.
fn explained(property: &Value) -> impl Iterator<Item = &str> {
    let description = property.get("description").and_then(Value::as_str);
    let values = property
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    description
        .into_iter()
        .chain(values.filter_map(Value::as_str))
}

/// The top-level parameters of an input schema as a model sees it.
fn parameters(schema: &Value) -> impl Iterator<Item = (&String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// A model's query, read once.
pub(crate) struct Query {
    /// The query trimmed and lowercased, for the exact and prefix matches.
    whole: String,
    /// Its terms, each once, in order, then their stems, each once, with what a match of each
    /// is worth: 1 for a term, [`SEARCH_STEM_WEIGHT`] for a stem.
    terms: Vec<(String, f64)>,
}

impl Query {
    pub(crate) fn new(text: &str) -> Self {
        let mut terms: Vec<(String, f64)> = Vec::new();
        let mut add = |term: String, weight: f64| {
            if !terms.iter().any(|(known, _)| *known == term) {
                terms.push((term, weight));
            }
        };
        for term in terms::terms(text) {
            add(term, 1.0);
        }
        for stem in terms::stems(text) {
            add(stem, SEARCH_STEM_WEIGHT);
        }
        Self {
            whole: text.trim().to_lowercase(),
            terms,
        }
    }
}

/// One tool found, with its server's namespace.
pub(crate) struct Found<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) tool: &'a CheckedTool,
}

/// How well a tool matched: compared by `tier`, then `score` (higher first).
#[derive(Clone, Copy)]
struct Rank {
    /// 0: the name is the query; 1: the name starts with it; 2: anything else.
    tier: u8,
    score: f64,
    catalog: usize,
    tool: u32,
}

/// The tools of `catalogs` (each with its namespace) that best match `query`, best first, at
/// most `limit` of them, leaving out those `visible` (when given) says no to, asked a catalog's
/// place in `catalogs` and a tool's name. A tool that matches nothing is not found.
///
/// A tool the caller may not see leaves no trace: it is left out of the statistics that order
/// the others too, so the answer is the one a catalog without it would give.
pub(crate) fn search<'a>(
    catalogs: &[(&'a str, &'a Index)],
    query: &Query,
    visible: Option<&Visible<'_>>,
    limit: usize,
) -> Vec<Found<'a>> {
    // Asked once per tool; without a predicate (every tool visible) nothing is allocated.
    let shown: Option<Vec<Vec<bool>>> = visible.map(|visible| {
        let catalogs = catalogs.iter().enumerate();
        catalogs
            .map(|(at, (_, index))| index.tools.iter().map(|t| visible(at, &t.name)).collect())
            .collect()
    });
    let shown = Shown(shown.as_deref());
    let stats = Stats::of(catalogs, shown, query);
    let mut ranks: Vec<Rank> = Vec::new();
    for (at, (_, index)) in catalogs.iter().enumerate() {
        let mut scores = vec![0.0; index.len()];
        for ((term, _), idf) in query.terms.iter().zip(&stats.idf) {
            for posting in index.postings(term) {
                let tool = posting.tool as usize;
                scores[tool] += idf * stats.weight(posting, &index.lengths[tool]);
            }
        }
        let mut tiers = vec![2u8; index.len()];
        if !query.whole.is_empty() {
            let first = index.names.partition_point(|(n, _)| **n < *query.whole);
            let prefixed = index.names[first..]
                .iter()
                .take_while(|(name, _)| name.starts_with(query.whole.as_str()));
            for (name, tool) in prefixed {
                tiers[*tool as usize] = u8::from(**name != *query.whole);
            }
        }
        for (tool, (&score, &tier)) in scores.iter().zip(&tiers).enumerate() {
            if (tier < 2 || score > 0.0) && shown.is(at, tool) {
                let tool = u32::try_from(tool).expect("a server lists at most 10,000 tools");
                ranks.push(Rank {
                    tier,
                    score,
                    catalog: at,
                    tool,
                });
            }
        }
    }
    let tool_of = |rank: &Rank| {
        (
            catalogs[rank.catalog].0,
            &*catalogs[rank.catalog].1.tools[rank.tool as usize],
        )
    };
    let order = |a: &Rank, b: &Rank| {
        let (a_namespace, a_tool) = tool_of(a);
        let (b_namespace, b_tool) = tool_of(b);
        a.tier
            .cmp(&b.tier)
            .then(b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
            .then_with(|| a_namespace.cmp(b_namespace))
            .then_with(|| a_tool.name.cmp(&b_tool.name))
    };
    if ranks.len() > limit && limit > 0 {
        ranks.select_nth_unstable_by(limit - 1, order);
    }
    ranks.truncate(limit);
    ranks.sort_unstable_by(order);
    ranks
        .iter()
        .map(|rank| {
            let (namespace, tool) = tool_of(rank);
            Found { namespace, tool }
        })
        .collect()
}

/// A caller's predicate: whether it may see the tool of this name in the catalog at this place.
pub(crate) type Visible<'a> = dyn Fn(usize, &str) -> bool + 'a;

/// Which tools of each catalog the caller may see, by catalog then tool; `None`: all of them.
#[derive(Clone, Copy)]
struct Shown<'a>(Option<&'a [Vec<bool>]>);

impl Shown<'_> {
    fn is(self, catalog: usize, tool: usize) -> bool {
        self.0.is_none_or(|shown| shown[catalog][tool])
    }
}

/// The statistics of the searched catalogs together: one server's scores are comparable with
/// another's, and an index is built per server.
struct Stats {
    /// Each query term's inverse document frequency times its weight, in the query's order.
    idf: Vec<f64>,
    /// Each field's average length.
    average: [f64; FIELDS],
}

impl Stats {
    /// Over the tools of `catalogs` that are `shown`.
    fn of(catalogs: &[(&str, &Index)], shown: Shown<'_>, query: &Query) -> Self {
        let mut tools = 0usize;
        let mut totals = [0u64; FIELDS];
        for (at, (_, index)) in catalogs.iter().enumerate() {
            if shown.0.is_none() {
                tools += index.len();
                for (total, more) in totals.iter_mut().zip(index.total_lengths) {
                    *total += more;
                }
                continue;
            }
            for (tool, lengths) in index.lengths.iter().enumerate() {
                if shown.is(at, tool) {
                    tools += 1;
                    for (total, &more) in totals.iter_mut().zip(lengths) {
                        *total += u64::from(more);
                    }
                }
            }
        }
        let n = tools as f64;
        let idf = query
            .terms
            .iter()
            .map(|(term, weight)| {
                let with: usize = catalogs
                    .iter()
                    .enumerate()
                    .map(|(at, (_, index))| {
                        let postings = index.postings(term);
                        match shown.0 {
                            None => postings.len(),
                            Some(_) => postings
                                .iter()
                                .filter(|p| shown.is(at, p.tool as usize))
                                .count(),
                        }
                    })
                    .sum();
                let with = with as f64;
                weight * (1.0 + (n - with + 0.5) / (with + 0.5)).ln()
            })
            .collect();
        Self {
            idf,
            average: totals.map(|total| (total as f64 / n.max(1.0)).max(1.0)),
        }
    }

    /// BM25F's saturated weight of one term in one tool: its counts weighted and normalized
    /// per field, summed, then saturated once.
    fn weight(&self, posting: &Posting, lengths: &[u32; FIELDS]) -> f64 {
        let mut tf = 0.0;
        for field in 0..FIELDS {
            let count = f64::from(posting.counts[field]);
            if count > 0.0 {
                let relative = f64::from(lengths[field]) / self.average[field];
                tf += WEIGHTS[field] * count / (1.0 - B[field] + B[field] * relative);
            }
        }
        tf * (K1 + 1.0) / (K1 + tf)
    }
}

/// Each server's index, built when its catalog is first searched and kept until the catalog
/// changes. A catalog is replaced whole when a server re-lists its tools or the user approves
/// one, so the catalog's own allocation identifies its version.
pub(crate) struct Indexes {
    /// By server, in the Pack's order. An async lock: a search that needs the index being
    /// built waits for it without holding a worker, and each catalog is indexed once.
    built: Vec<tokio::sync::Mutex<Option<Built>>>,
}

/// A catalog indexed (weakly: an old catalog is not kept alive for its index) and its index.
type Built = (Weak<ToolSet>, Arc<Index>);

impl Indexes {
    /// Room for `servers` servers' indexes, none built.
    pub(crate) fn new(servers: usize) -> Self {
        Self {
            built: (0..servers)
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
        }
    }

    /// The index of `catalog`, the current catalog of the server at `server` whose namespace
    /// is `namespace`: the one built before if the catalog is the same, else a new one. `None`
    /// if it could not be built (the runtime is shutting down).
    pub(crate) async fn of(
        &self,
        server: usize,
        namespace: &str,
        catalog: &Arc<ToolSet>,
    ) -> Option<Arc<Index>> {
        let mut built = self.built[server].lock().await;
        // A live Weak keeps its allocation, so an equal pointer is this very catalog.
        if let Some((indexed, index)) = &*built
            && Weak::as_ptr(indexed) == Arc::as_ptr(catalog)
        {
            return Some(Arc::clone(index));
        }
        // On the blocking pool: indexing 10,000 tools takes about as long as listing them
        // (BENCHMARKS.md), and on a runtime worker it would hold up every other call of the
        // Host meanwhile.
        let (name, set) = (namespace.to_owned(), Arc::clone(catalog));
        let index = tokio::task::spawn_blocking(move || Index::new(&name, &set));
        let index = Arc::new(index.await.ok()?);
        *built = Some((Arc::downgrade(catalog), Arc::clone(&index)));
        Some(index)
    }
}

#[cfg(test)]
mod tests;
