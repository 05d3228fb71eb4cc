//! Scoring one manual's index against a query plan, and the pieces that
//! refine the merged head of all manuals searched.
//!
//! score = BM25F(body, heading ×`TITLE_WEIGHT`, context ×`CONTEXT_WEIGHT`)
//!         × coverage correction (`SPARSE_QUERY_COVERAGE_WEIGHT`)   — [`search`]
//!         × phrase bonus × exceptions boost                        — [`refine`]
//!         × late rerank                                            — [`late_similarity`]
//! The first stage is computed from the posting lists in one pass; the
//! caller (`tools::find`) then refines the best rows of every manual
//! together from the stored normalised text. No section text is scanned for
//! documents that share no term with the query.

use std::collections::HashMap;

use crate::config::ScoringConfig;
use crate::index::{Doc, DocId, ManualIndex};
use crate::query::{QueryPlan, TermRole};
use crate::signals::{Signal, Signals};

const K1: f64 = 1.2;
/// Length normalisation. 0.5 was chosen on the tuning gold sets; on the
/// held-out sets the textbook 0.75 scores about the same (MRR 0.72 vs 0.70 on
/// insurance-ja) and costs the tuning set its bar, so 0.5 stays until a
/// larger held-out set decides (docs/manuals.md §6).
const B: f64 = 0.5;
/// Weight of a kanji-unigram backoff term (a single kanji of a
/// multi-character query concept), relative to a content term.
const BACKOFF_WEIGHT: f64 = 0.25;
/// Weight of a term occurrence in the section's own heading.
pub(crate) const TITLE_WEIGHT: f64 = 2.0;
/// Weight of a term occurrence in the ancestors' headings.
pub(crate) const CONTEXT_WEIGHT: f64 = 0.6;
/// Weight of a term occurrence in the file's path (folders and file name):
/// the file name is the heading of the whole file.
pub(crate) const NAME_WEIGHT: f64 = 2.0;
/// Concept groups beyond this are not tracked for coverage.
const MAX_GROUPS: usize = 32;
/// How many first-stage results get the phrase/exception refinement.
pub(crate) const REFINE_TOP: usize = 100;
/// Score bonus when every concept occurs verbatim.
const PHRASE_BONUS: f64 = 0.25;
/// Score boost of exception sections for queries about exceptions.
const EXCEPTION_BOOST: f64 = 0.2;

/// Weight of a concept that only the thesaurus spelled (relative to its best spelling).
const ALTERNATIVE_ONLY_WEIGHT: f64 = 0.5;
/// Weight of a thesaurus expansion relative to the literal the user typed,
/// where the literal occurs in the manual (an expansion never outranks it).
pub(crate) const EXPANSION_WEIGHT: f64 = 0.5;
/// Weight of a label word (`定義`, `手順`): intent, not content.
const LABEL_WEIGHT: f64 = 0.1;

/// Words that mark a section as stating exclusions or exceptions.
pub(crate) const EXCEPTION_MARKERS: &[&str] = &[
    "免責",
    "対象外",
    "除外",
    "不担保",
    "支払いません",
    "支払われません",
    "お支払いしません",
    "支払わない",
    "支払われない",
    "適用しません",
    "適用されません",
    "not covered",
    "exclusion",
    "excluded",
    "does not apply",
    "not supported",
    "exception",
];

/// Options of one search.
pub(crate) struct SearchOptions<'a> {
    /// Ranking knobs.
    pub scoring: &'a ScoringConfig,
    /// Stage-4 loose search: marks results with [`Signal::Loose`].
    pub loose: bool,
    /// Only documents passing this filter are scored.
    pub filter: Option<&'a dyn Fn(&Doc) -> bool>,
}

/// One scored section.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    /// The document.
    pub doc: DocId,
    /// Final score.
    pub score: f64,
    /// Share of query concepts found (0–1, idf-weighted).
    pub coverage: f64,
    /// Signals.
    pub signals: Signals,
    /// Bit set of matched query terms (index into the plan's terms, first 64).
    pub terms: u64,
    /// How many of the plan's required phrases/terms occur in the section.
    pub required_met: u8,
}

#[derive(Clone, Default)]
struct Acc {
    score: f64,
    groups: [f32; MAX_GROUPS],
    title_groups: u32,
    terms: u64,
    /// Whether a content word or a hiragana word matched (not only glue
    /// bigrams such as `ンを` or stop words).
    anchored: bool,
}

/// First stage for one manual: scores every section that shares a content
/// term with the query; hits come back unordered (the caller orders the
/// merged rows of all manuals, then refines their head).
pub(crate) fn search(index: &ManualIndex, plan: &QueryPlan, opts: &SearchOptions<'_>) -> Vec<Hit> {
    let n = f64::from(index.doc_count().max(1));
    let avg_len = index.avg_len();
    let n_groups = plan.groups.len().min(MAX_GROUPS);
    let Weights {
        term_idf,
        term_factor,
        group_idf_sum,
        group_credit,
        concepts,
    } = weights(index, plan);
    let total_group_weight: f64 = concepts.iter().map(|c| c.weight).sum();

    let mut slot_of: Vec<u32> = vec![u32::MAX; index.doc_slots()];
    let mut accs: Vec<(DocId, Acc)> = Vec::new();
    // Backoff terms go last: they only add to sections another term found.
    let order = (0..plan.terms.len())
        .filter(|&i| plan.terms[i].role != TermRole::Backoff)
        .chain((0..plan.terms.len()).filter(|&i| plan.terms[i].role == TermRole::Backoff));
    for ti in order {
        let term = &plan.terms[ti];
        let backoff = term.role == TermRole::Backoff;
        let anchors = matches!(term.role, TermRole::Content | TermRole::Kana);
        let Some(tid) = index.term_id(&term.text) else {
            continue;
        };
        let postings = index.postings(tid);
        if postings.is_empty() {
            continue;
        }
        let (term_idf_value, df) = term_idf[ti];
        let weight = match term.role {
            TermRole::Content => 1.0,
            TermRole::Glue => 0.35,
            TermRole::Kana if df / n < 0.05 => 0.7,
            TermRole::Kana => 0.15,
            TermRole::Backoff => BACKOFF_WEIGHT,
            TermRole::Stop => 0.05,
            TermRole::Label => LABEL_WEIGHT,
        } * term_idf_value
            * term_factor[ti];
        for p in postings {
            if let Some(filter) = opts.filter
                && !index.doc(p.doc).is_some_and(filter)
            {
                continue;
            }
            let doc_len = index.doc_len(p.doc);
            let tf = f64::from(p.freq.body)
                + TITLE_WEIGHT * f64::from(p.freq.title)
                + CONTEXT_WEIGHT * f64::from(p.freq.ctx)
                + NAME_WEIGHT * f64::from(p.freq.name);
            let norm = K1 * (1.0 - B + B * f64::from(doc_len) / avg_len);
            let Some(slot_ref) = slot_of.get_mut(p.doc as usize) else {
                continue;
            };
            if *slot_ref == u32::MAX {
                if backoff {
                    continue;
                }
                *slot_ref = accs.len() as u32;
                accs.push((p.doc, Acc::default()));
            }
            let acc = &mut accs[*slot_ref as usize].1;
            acc.score += weight * tf * (K1 + 1.0) / (tf + norm);
            acc.anchored |= anchors;
            if ti < 64 {
                acc.terms |= 1 << ti;
            }
            for &g in &term.groups {
                if g < n_groups {
                    acc.groups[g] += term_idf_value as f32;
                    if p.freq.title > 0 {
                        acc.title_groups |= 1 << g;
                    }
                }
            }
        }
    }

    // A section that shares only glue bigrams (a particle after a katakana
    // word, `ンを`) or stop words with the query is noise, not a candidate —
    // unless the query has nothing else to match.
    let anchorable = plan
        .terms
        .iter()
        .any(|t| matches!(t.role, TermRole::Content | TermRole::Kana));
    if anchorable {
        accs.retain(|(_, acc)| acc.anchored);
    }
    let w = opts.scoring.query_coverage_weight;
    let mut hits: Vec<Hit> = accs
        .into_iter()
        .map(|(doc, acc)| {
            let coverage = coverage(
                &acc,
                &concepts,
                &group_idf_sum,
                &group_credit,
                total_group_weight,
            );
            let title_cover = if total_group_weight > 0.0 {
                concepts
                    .iter()
                    .filter(|c| c.groups.iter().any(|g| acc.title_groups & (1 << g) != 0))
                    .map(|c| c.weight)
                    .sum::<f64>()
                    / total_group_weight
            } else {
                0.0
            };
            let mut signals = Signals::default();
            if acc.title_groups != 0 {
                signals.insert(Signal::Heading);
            }
            if title_cover >= 0.75 {
                signals.insert(Signal::HeadingFocus);
            }
            if opts.loose {
                signals.insert(Signal::Loose);
            }
            Hit {
                doc,
                score: acc.score * ((1.0 - w) + w * coverage),
                coverage,
                signals,
                terms: acc.terms,
                required_met: 0,
            }
        })
        .collect();
    if !plan.required.is_empty() {
        for hit in hits.iter_mut() {
            hit.required_met = index
                .doc(hit.doc)
                .map_or(0, |d| required_met(plan, &d.norm_text));
        }
    }
    // The refinement ([`refine`]) and the late rerank ([`late_similarity`])
    // run on the merged head of every manual searched.
    hits
}

/// How many of the plan's required entries (quoted phrases, required
/// terms) a matched text contains, in any of their spellings.
pub(crate) fn required_met(plan: &QueryPlan, text: &str) -> u8 {
    let met = plan
        .required
        .iter()
        .filter(|spellings| spellings.iter().any(|p| text.contains(p.as_str())))
        .count();
    u8::try_from(met).unwrap_or(u8::MAX)
}

/// The query's concepts with a spelling of at least two characters, as
/// phrase lists (the same in every manual).
pub(crate) fn phrase_groups(plan: &QueryPlan) -> Vec<Vec<&str>> {
    plan.concepts()
        .into_iter()
        .map(|(groups, _)| {
            groups
                .into_iter()
                .filter(|g| *g < MAX_GROUPS)
                .map(|g| plan.groups[g].text.as_str())
                .filter(|t| t.chars().count() >= 2)
                .collect::<Vec<_>>()
        })
        .filter(|spellings| !spellings.is_empty())
        .collect()
}

/// Refines a first-stage hit of the head from its stored text: a bonus by
/// the share of concepts found verbatim, and the exceptions boost when the
/// query asks about exceptions.
pub(crate) fn refine(
    hit: &mut Hit,
    doc: &Doc,
    phrase_groups: &[Vec<&str>],
    exceptions_intent: bool,
) {
    let text = &*doc.norm_text;
    if !phrase_groups.is_empty() {
        let found = phrase_groups
            .iter()
            .filter(|spellings| spellings.iter().any(|p| text.contains(p)))
            .count();
        hit.score *= 1.0 + PHRASE_BONUS * found as f64 / phrase_groups.len() as f64;
        if found == phrase_groups.len() {
            hit.signals.insert(Signal::Normalized);
        }
    }
    if doc.exceptions {
        hit.signals.insert(Signal::Exceptions);
        if exceptions_intent {
            hit.score *= 1.0 + EXCEPTION_BOOST;
        }
    }
}

/// A query's weights in one manual (idf from its postings).
struct Weights {
    /// Per term: (idf, document frequency).
    term_idf: Vec<(f64, f64)>,
    /// Per term: the factor on its weight (below 1 for thesaurus expansions
    /// whose literal occurs in the manual).
    term_factor: Vec<f64>,
    /// Per group: the sum of its terms' idf.
    group_idf_sum: Vec<f64>,
    /// Per group: the share of a concept a full match of the group covers
    /// (below 1 for an expansion whose literal occurs in the manual).
    group_credit: Vec<f64>,
    /// The concepts with their weights.
    concepts: Vec<Concept>,
}

fn weights(index: &ManualIndex, plan: &QueryPlan) -> Weights {
    let n = f64::from(index.doc_count().max(1));
    let n_groups = plan.groups.len().min(MAX_GROUPS);
    let max_idf = idf(n, 0.0);
    // Per-group weight: mean idf of its terms (unknown terms count as rarest).
    let mut group_idf_sum = vec![0.0f64; n_groups];
    let mut group_missing = vec![false; n_groups];
    let mut term_idf = Vec::with_capacity(plan.terms.len());
    for term in &plan.terms {
        let df = index
            .term_id(&term.text)
            .map(|t| index.postings(t).len())
            .unwrap_or(0) as f64;
        let value = if df > 0.0 { idf(n, df) } else { max_idf };
        term_idf.push((value, df));
        for &g in &term.groups {
            if g < n_groups {
                group_idf_sum[g] += value;
                group_missing[g] |= df == 0.0;
            }
        }
    }
    let group_weight: Vec<f64> = plan
        .groups
        .iter()
        .take(n_groups)
        .enumerate()
        .map(|(g, group)| group_idf_sum[g] / group.term_count.max(1) as f64)
        .collect();
    // The literal of each concept: the typed group's idf, when it occurs in
    // the manual (every term found).
    let literal = |concept: usize| -> Option<f64> {
        (0..n_groups)
            .filter(|&g| {
                let group = &plan.groups[g];
                group.concept == concept && !group.alternative && !group_missing[g]
            })
            .map(|g| group_weight[g])
            .reduce(f64::max)
    };
    let expansion = |g: usize| -> Option<f64> {
        let group = plan.groups.get(g)?;
        if !group.alternative || g >= n_groups {
            return None;
        }
        literal(group.concept)
    };
    let group_credit: Vec<f64> = (0..n_groups)
        .map(|g| match expansion(g) {
            Some(_) => EXPANSION_WEIGHT,
            None => 1.0,
        })
        .collect();
    // An expansion term weighs EXPANSION_WEIGHT of its literal at most, and
    // less where it is denser than the literal (lower idf).
    let term_factor: Vec<f64> = plan
        .terms
        .iter()
        .zip(&term_idf)
        .map(|(term, (value, _))| {
            let literals: Vec<f64> = term
                .groups
                .iter()
                .map(|&g| expansion(g))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default();
            match literals.into_iter().reduce(f64::max) {
                Some(lit) if *value > 0.0 && !term.groups.is_empty() => {
                    let capped = value.min(lit);
                    EXPANSION_WEIGHT * (capped / value) * (value / lit).min(1.0)
                }
                _ => 1.0,
            }
        })
        .collect();
    let concepts = concept_weights(plan, &group_weight, n_groups);
    Weights {
        term_idf,
        term_factor,
        group_idf_sum,
        group_credit,
        concepts,
    }
}

/// The query's concepts with their weights in one manual, for
/// [`late_similarity`].
pub(crate) fn concepts_for(index: &ManualIndex, plan: &QueryPlan) -> Vec<Concept> {
    weights(index, plan).concepts
}

/// Late-interaction similarity of one section (0–1): the best single
/// sentence's weighted share of the query's concepts, so concepts that
/// co-occur in one sentence score higher than concepts scattered over the
/// section. Applied to the merged head of all manuals searched, which
/// multiplies scores by `1 + LATE_RERANK_WEIGHT × similarity`.
pub(crate) fn late_similarity(text: &str, plan: &QueryPlan, concepts: &[Concept]) -> f64 {
    sentence_max_sim(text, plan, concepts)
}

/// Applies a late-rerank value to a hit.
pub(crate) fn apply_late(hit: &mut Hit, late: f64, weight: f64) {
    if late > 0.0 {
        hit.score *= 1.0 + weight * late;
        hit.signals.insert(Signal::LateRerank);
    }
}

/// Names of the content terms in a matched-term bit set.
pub(crate) fn matched_terms(plan: &QueryPlan, terms: u64) -> Vec<String> {
    plan.terms
        .iter()
        .enumerate()
        .filter(|(i, t)| *i < 64 && terms & (1 << i) != 0 && t.role == TermRole::Content)
        .map(|(_, t)| t.text.clone())
        .collect()
}

fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// A query concept: its groups (spellings) and its weight.
pub(crate) struct Concept {
    groups: Vec<usize>,
    weight: f64,
}

/// Concept weights: the mean idf of the typed spelling; concepts that only
/// come from the thesaurus count half (of their best spelling).
fn concept_weights(plan: &QueryPlan, group_weight: &[f64], n_groups: usize) -> Vec<Concept> {
    plan.concepts()
        .into_iter()
        .filter_map(|(groups, typed)| {
            let groups: Vec<usize> = groups.into_iter().filter(|g| *g < n_groups).collect();
            let weight = if typed {
                groups
                    .iter()
                    .filter(|g| !plan.groups[**g].alternative)
                    .map(|g| group_weight[*g])
                    .fold(0.0, f64::max)
            } else {
                ALTERNATIVE_ONLY_WEIGHT
                    * groups.iter().map(|g| group_weight[*g]).fold(0.0, f64::max)
            };
            (!groups.is_empty()).then_some(Concept { groups, weight })
        })
        .collect()
}

fn coverage(acc: &Acc, concepts: &[Concept], idf_sums: &[f64], credit: &[f64], total: f64) -> f64 {
    if total <= 0.0 {
        return 1.0;
    }
    let covered: f64 = concepts
        .iter()
        .map(|c| {
            let best = c
                .groups
                .iter()
                .filter(|g| idf_sums[**g] > 0.0)
                .map(|g| (f64::from(acc.groups[*g]) / idf_sums[*g]).min(1.0) * credit[*g])
                .fold(0.0, f64::max);
            c.weight * best
        })
        .sum();
    covered / total
}

/// Whether a normalised text states exclusions: a marker in the first 80
/// characters (the heading) or at least two markers in the text.
pub(crate) fn has_exceptions(text: &str) -> bool {
    let head_end = text
        .char_indices()
        .nth(80)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let head = &text[..head_end];
    if EXCEPTION_MARKERS.iter().any(|m| head.contains(m)) {
        return true;
    }
    EXCEPTION_MARKERS
        .iter()
        .map(|m| text.matches(m).count())
        .sum::<usize>()
        >= 2
}

/// The best per-sentence, weight-averaged share of each concept's terms.
fn sentence_max_sim(text: &str, plan: &QueryPlan, concepts: &[Concept]) -> f64 {
    let n_groups = plan.groups.len().min(MAX_GROUPS);
    let total: f64 = concepts.iter().map(|c| c.weight).sum();
    if text.is_empty() || total <= 0.0 {
        return 0.0;
    }
    // Sentence boundaries (byte offsets where a sentence ends).
    let ends: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| matches!(c, '。' | '!' | '?' | ';' | '|'))
        .map(|(i, _)| i)
        .chain(text.match_indices(". ").map(|(i, _)| i))
        .chain(std::iter::once(text.len()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let sentence_of = |pos: usize| ends.partition_point(|&e| e < pos);
    // hits[sentence][group] = matched term count
    let mut counts: HashMap<usize, [u8; MAX_GROUPS]> = HashMap::new();
    for term in plan.terms.iter().filter(|t| !t.groups.is_empty()) {
        let mut seen_in: Vec<usize> = Vec::new();
        for (pos, _) in text.match_indices(term.text.as_str()) {
            let s = sentence_of(pos);
            if seen_in.last() == Some(&s) {
                continue;
            }
            seen_in.push(s);
            let row = counts.entry(s).or_insert([0; MAX_GROUPS]);
            for &g in &term.groups {
                if g < n_groups {
                    row[g] = row[g].saturating_add(1);
                }
            }
        }
    }
    counts
        .values()
        .map(|row| {
            concepts
                .iter()
                .map(|c| {
                    let best = c
                        .groups
                        .iter()
                        .map(|g| {
                            (f64::from(row[*g]) / plan.groups[*g].term_count.max(1) as f64).min(1.0)
                        })
                        .fold(0.0, f64::max);
                    c.weight * best
                })
                .sum::<f64>()
                / total
        })
        .fold(0.0, f64::max)
}
