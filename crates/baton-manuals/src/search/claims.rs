//! The claim graph: what the question asks (claims, one per facet), which
//! top sections answer it (evidences), and how (edges). `summary`,
//! `manual_hits(kind="conflicts")` and `manual_hits(kind="gaps")` are all
//! derived from the one [`Integration`] built here, so their counts agree
//! by construction.

use serde_json::{Value, json};

use crate::analyze::terms::fnv1a;
use crate::search::query;
use crate::search::rows::CandidateRow;
use crate::wire::types::{
    Claim, ClaimGraph, ClaimStatus, CoverageStatus, Edge, Evidence, EvidenceRef, Facet, FacetRow,
    Relation,
};
use baton_text::thesaurus::Thesaurus;

/// Number of top candidates that become evidences.
pub(crate) const EVIDENCE_LIMIT: usize = 10;

/// Facet hint words (normal form), in facet order.
const FACET_HINTS: &[(Facet, &[&str])] = &[
    (
        Facet::Definition,
        &[
            "定義",
            "とは",
            "意味",
            "概要",
            "用語",
            "what is",
            "what are",
            "definition",
            "meaning",
            "mean ",
        ],
    ),
    (
        Facet::Procedure,
        &[
            "手順",
            "手続",
            "方法",
            "やり方",
            "流れ",
            "申請",
            "申し込",
            "申込",
            "請求",
            "how to",
            "how do",
            "how can",
            "steps",
            "procedure",
            "configure",
            "set up",
            "setup",
            "install",
        ],
    ),
    (
        Facet::Eligibility,
        &[
            "条件",
            "要件",
            "対象",
            "できる",
            "できます",
            "可能",
            "支払",
            "受け取",
            "もらえ",
            "上限",
            "限度",
            "金額",
            "いくら",
            "日数",
            "回数",
            "期間",
            "eligible",
            "requirement",
            "limit",
            "can i",
            "allowed",
            "maximum",
            "minimum",
            "how much",
            "how many",
            "how long",
        ],
    ),
    (
        Facet::Exceptions,
        &[
            "例外",
            "対象外",
            "除外",
            "免責",
            "不適用",
            "ただし",
            "但し",
            "支払われない",
            "払われない",
            "もらえない",
            "されない",
            "できない",
            "ない場合",
            "except",
            "exclusion",
            "not covered",
            "excluded",
            "cannot",
            "can't",
            "not supported",
            "limitation",
        ],
    ),
    (
        Facet::Compare,
        &[
            "違い",
            "比較",
            "どちら",
            "どっち",
            "対比",
            " vs",
            "versus",
            "difference",
            "compare",
        ],
    ),
];

/// The facets a normalised query asks about (`unknown` when none).
pub(crate) fn detect_facets(normalized_query: &str) -> Vec<Facet> {
    let padded = format!(" {normalized_query} ");
    let mut facets: Vec<Facet> = FACET_HINTS
        .iter()
        .filter(|(_, hints)| hints.iter().any(|h| padded.contains(h)))
        .map(|(f, _)| *f)
        .collect();
    if facets.is_empty() {
        facets.push(Facet::Unknown);
    }
    facets
}

/// A top candidate with what the graph needs to know about its text.
pub(crate) struct EvidenceInput<'a> {
    /// The candidate.
    pub row: &'a CandidateRow,
    /// Its normalised text.
    pub text: &'a str,
    /// Whether its heading names an exclusion (a dedicated exclusion section).
    pub exclusion_heading: bool,
}

/// The claim graph plus the rows `manual_hits` pages through.
pub(crate) struct Integration {
    pub graph: ClaimGraph,
    pub conflicts: Vec<Value>,
    pub gaps: Vec<Value>,
    pub integrated_top: Vec<Value>,
}

struct ClaimSpec {
    facet: Facet,
    text: String,
    /// `None`: use each candidate's own ranking coverage (the claim is the query).
    groups: Option<Vec<Vec<String>>>,
}

/// Builds the graph for a query and its ranked candidates.
pub(crate) fn integrate(
    raw_query: &str,
    normalized_query: &str,
    evidences: &[EvidenceInput<'_>],
    thesaurus: &Thesaurus,
) -> Integration {
    let facets = detect_facets(normalized_query);
    let mut specs: Vec<ClaimSpec> = facets
        .iter()
        .map(|f| ClaimSpec {
            facet: *f,
            text: raw_query.trim().to_string(),
            groups: None,
        })
        .collect();
    if facets.contains(&Facet::Compare) {
        for side in compare_sides(raw_query) {
            let plan = query::analyze(&side, thesaurus);
            let groups: Vec<Vec<String>> = plan
                .groups
                .iter()
                .enumerate()
                .map(|(g, _)| {
                    plan.terms
                        .iter()
                        .filter(|t| t.groups.contains(&g))
                        .map(|t| t.text.clone())
                        .collect()
                })
                .filter(|terms: &Vec<String>| !terms.is_empty())
                .collect();
            if !groups.is_empty() {
                specs.push(ClaimSpec {
                    facet: Facet::Compare,
                    text: side,
                    groups: Some(groups),
                });
            }
        }
    }

    let top_score = evidences
        .first()
        .map(|e| e.row.score)
        .unwrap_or(0.0)
        .max(f64::MIN_POSITIVE);
    let evidence_rows: Vec<Evidence> = evidences
        .iter()
        .enumerate()
        .map(|(i, e)| Evidence {
            evidence_id: format!("ev:{}", i + 1),
            reference: EvidenceRef {
                target: "manual".to_string(),
                manual_id: e.row.reference.manual_id.to_string(),
                path: e.row.reference.path.to_string(),
                start_line: e.row.reference.start_line,
            },
            signals: e.row.signals.to_vec(),
            score: e.row.score,
            snippet_digest: format!("{:016x}", fnv1a(e.text.as_bytes())),
        })
        .collect();

    let mut claims = Vec::new();
    let mut edges = Vec::new();
    let mut per_facet_counter: std::collections::BTreeMap<Facet, u32> = Default::default();
    let mut conflicts = Vec::new();
    let mut gaps = Vec::new();
    for spec in &specs {
        let n = per_facet_counter.entry(spec.facet).or_insert(0);
        *n += 1;
        let claim_id = format!("claim:{}:{}", facet_name(spec.facet), n);
        let mut supports: Vec<(usize, f64)> = Vec::new();
        let mut contradicts: Vec<(usize, f64)> = Vec::new();
        let mut followups: Vec<(usize, f64)> = Vec::new();
        for (i, e) in evidences.iter().enumerate() {
            let cov = match &spec.groups {
                None => e.row.coverage,
                Some(groups) => text_coverage(e.text, groups),
            };
            let sn = (e.row.score / top_score).clamp(0.0, 1.0);
            let relation = relation_for(spec, e, cov, sn);
            let Some(relation) = relation else { continue };
            let confidence = round3((0.15 + 0.55 * cov + 0.3 * sn).clamp(0.0, 0.99));
            match relation {
                Relation::Supports => supports.push((i, confidence)),
                Relation::Contradicts => contradicts.push((i, confidence)),
                Relation::RequiresFollowup => followups.push((i, confidence)),
            }
            edges.push(Edge {
                from_claim_id: claim_id.clone(),
                to_evidence_id: format!("ev:{}", i + 1),
                relation,
                confidence,
            });
        }
        let best = |v: &[(usize, f64)]| v.iter().map(|(_, c)| *c).fold(0.0, f64::max);
        let (status, confidence) = if !supports.is_empty() && !contradicts.is_empty() {
            (ClaimStatus::Conflicted, round3(best(&supports) * 0.8))
        } else if !supports.is_empty() {
            (ClaimStatus::Supported, best(&supports))
        } else {
            (
                ClaimStatus::Unresolved,
                round3(best(&followups).max(best(&contradicts)) * 0.5),
            )
        };
        let refs = |v: &[(usize, f64)]| -> Vec<Value> {
            v.iter()
                .filter_map(|(i, _)| evidences.get(*i))
                .map(|e| short_ref(e.row))
                .collect()
        };
        match status {
            ClaimStatus::Conflicted => conflicts.push(json!({
                "claim_id": claim_id,
                "facet": spec.facet,
                "text": spec.text,
                "supporting": refs(&supports),
                "contradicting": refs(&contradicts),
            })),
            ClaimStatus::Unresolved => {
                let (reason, hint) = if evidences.is_empty() {
                    (
                        "no_candidates",
                        "no section matched; rephrase the query or search without manual_id",
                    )
                } else {
                    (
                        "no_supporting_evidence",
                        "candidates only partly match; read the followup evidence or refine the query",
                    )
                };
                gaps.push(json!({
                    "claim_id": claim_id,
                    "facet": spec.facet,
                    "text": spec.text,
                    "reason": reason,
                    "followup": refs(&followups),
                    "hint": hint,
                }))
            }
            ClaimStatus::Supported => {}
        }
        claims.push(Claim {
            claim_id,
            facet: spec.facet,
            text: spec.text.clone(),
            status,
            confidence,
        });
    }

    let facet_rows = facet_rows(&claims);
    let integrated_top = evidences
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let ev = format!("ev:{}", i + 1);
            let related = |rel: Relation| -> Vec<&str> {
                edges
                    .iter()
                    .filter(|x| x.to_evidence_id == ev && x.relation == rel)
                    .map(|x| x.from_claim_id.as_str())
                    .collect()
            };
            json!({
                "ref": {
                    "manual_id": e.row.reference.manual_id,
                    "path": e.row.reference.path,
                    "start_line": e.row.reference.start_line,
                },
                "title": e.row.title,
                "score": e.row.score,
                "signals": e.row.signals,
                "supports": related(Relation::Supports),
                "contradicts": related(Relation::Contradicts),
            })
        })
        .collect();
    Integration {
        graph: ClaimGraph {
            claims,
            evidences: evidence_rows,
            edges,
            facets: facet_rows,
        },
        conflicts,
        gaps,
        integrated_top,
    }
}

fn relation_for(spec: &ClaimSpec, e: &EvidenceInput<'_>, cov: f64, sn: f64) -> Option<Relation> {
    let exceptions = e
        .row
        .signals
        .contains(crate::wire::signals::Signal::Exceptions);
    let strong = cov >= 0.6;
    match spec.facet {
        Facet::Exceptions if exceptions && cov >= 0.5 => Some(Relation::Supports),
        Facet::Eligibility if strong && sn >= 0.5 && e.exclusion_heading => {
            Some(Relation::Contradicts)
        }
        Facet::Compare if spec.groups.is_some() && strong && sn >= 0.2 => Some(Relation::Supports),
        Facet::Exceptions if cov >= 0.3 => Some(Relation::RequiresFollowup),
        Facet::Exceptions => None,
        _ if strong && sn >= 0.4 => Some(Relation::Supports),
        _ if cov >= 0.3 => Some(Relation::RequiresFollowup),
        _ => None,
    }
}

/// Share of groups at least half of whose terms occur in the text.
fn text_coverage(text: &str, groups: &[Vec<String>]) -> f64 {
    if groups.is_empty() {
        return 0.0;
    }
    let hit = groups
        .iter()
        .filter(|terms| {
            let found = terms.iter().filter(|t| text.contains(t.as_str())).count();
            found * 2 >= terms.len()
        })
        .count();
    hit as f64 / groups.len() as f64
}

/// The two sides of a comparison query (`AとBの違い`, `A vs B`, `difference between A and B`).
pub(crate) fn compare_sides(raw: &str) -> Vec<String> {
    let q = raw.trim().trim_end_matches(['?', '？', '。']);
    let strip_tail = |s: &str| -> String {
        let mut s = s.to_string();
        for tail in [
            "の違い",
            "の比較",
            "の差",
            "違い",
            "比較",
            "はどちら",
            "どちら",
            "どっち",
        ] {
            if let Some(pos) = s.find(tail) {
                s.truncate(pos);
            }
        }
        s.trim().to_string()
    };
    let lower = q.to_lowercase();
    for sep in [" vs. ", " vs ", " versus ", "ｖｓ", "VS"] {
        if let Some((a, b)) = lower.split_once(sep) {
            return vec![a.trim().to_string(), strip_tail(b)]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
        }
    }
    if let Some(rest) = lower.strip_prefix("difference between ")
        && let Some((a, b)) = rest.split_once(" and ")
    {
        return vec![a.trim().to_string(), b.trim().to_string()];
    }
    if let Some((a, b)) = q.split_once('と') {
        let b = strip_tail(b);
        if !a.trim().is_empty() && !b.is_empty() {
            return vec![a.trim().to_string(), b];
        }
    }
    Vec::new()
}

fn facet_rows(claims: &[Claim]) -> Vec<FacetRow> {
    let mut order: Vec<Facet> = claims.iter().map(|c| c.facet).collect();
    order.sort();
    order.dedup();
    order
        .into_iter()
        .map(|facet| {
            let of: Vec<&Claim> = claims.iter().filter(|c| c.facet == facet).collect();
            let count = |s: ClaimStatus| of.iter().filter(|c| c.status == s).count() as u32;
            let supported = count(ClaimStatus::Supported);
            let conflicted = count(ClaimStatus::Conflicted);
            let unresolved = count(ClaimStatus::Unresolved);
            let coverage_status = if supported as usize == of.len() {
                CoverageStatus::Covered
            } else if supported + conflicted > 0 {
                CoverageStatus::Partial
            } else {
                CoverageStatus::Missing
            };
            FacetRow {
                facet,
                claim_count: of.len() as u32,
                supported_count: supported,
                conflicted_count: conflicted,
                unresolved_count: unresolved,
                coverage_status,
            }
        })
        .collect()
}

fn short_ref(row: &CandidateRow) -> Value {
    json!({
        "manual_id": row.reference.manual_id,
        "path": row.reference.path,
        "start_line": row.reference.start_line,
        "title": row.title,
    })
}

/// Wire name of a facet.
pub(crate) fn facet_name(f: Facet) -> &'static str {
    match f {
        Facet::Definition => "definition",
        Facet::Procedure => "procedure",
        Facet::Eligibility => "eligibility",
        Facet::Exceptions => "exceptions",
        Facet::Compare => "compare",
        Facet::Unknown => "unknown",
    }
}

/// Rounds to 3 decimals.
pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facets_come_from_query_hints() {
        assert_eq!(detect_facets("告知義務とは"), [Facet::Definition]);
        assert_eq!(detect_facets("入院給付金の支払条件"), [Facet::Eligibility]);
        assert_eq!(detect_facets("免責事由"), [Facet::Exceptions]);
        assert_eq!(detect_facets("hello"), [Facet::Unknown]);
        assert!(detect_facets("入院と通院の違い").contains(&Facet::Compare));
    }

    #[test]
    fn compare_sides_are_split() {
        assert_eq!(
            compare_sides("入院給付金と通院給付金の違い"),
            ["入院給付金", "通院給付金"]
        );
        assert_eq!(compare_sides("REST vs gRPC"), ["rest", "grpc"]);
        assert!(compare_sides("告知義務").is_empty());
    }

    #[test]
    fn no_evidence_makes_every_claim_a_gap() {
        let i = integrate(
            "免責事由の条件",
            "免責事由の条件",
            &[],
            &Thesaurus::builtin(),
        );
        assert_eq!(i.gaps.len(), i.graph.claims.len());
        assert!(
            i.graph
                .claims
                .iter()
                .all(|c| c.status == ClaimStatus::Unresolved)
        );
        assert!(i.conflicts.is_empty());
    }
}
