//! Regression gate: retrieval quality on the evaluation sets in `eval/`.
//!
//! * The bar — the Python reference's recall@5 0.95 and MRR 0.87 on
//!   a gold set whose queries mostly name their target — is gated on the
//!   out-of-sample sets of that kind: the `named` queries of the second blind
//!   sets of both Japanese insurance manuals (`kasai-ja` was never used for
//!   any tuning at all).
//! * Every other set has a regression gate a little below its measured
//!   value: tuning sets (`<manual>.jsonl`, in-sample), held-out sets
//!   (`.heldout.jsonl`) and the colloquial halves of the second blind sets
//!   (`.blind2.jsonl`).
//!
//! Never edit an out-of-sample query to make a gate pass; docs/manuals.md §6
//! has the numbers and their history.

use std::path::Path;

use baton_manuals::eval::{EvalReport, GoldSet, GoldSplit, evaluate_set, gold_file};
use baton_manuals::{ManualConfig, ManualService};

fn report(manual: &str, split: GoldSplit, min_queries: usize) -> EvalReport {
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let service = ManualService::open(ManualConfig::new(eval.join("manuals"))).expect("open");
    let set = GoldSet {
        manual_id: manual.to_string(),
        split,
        path: gold_file(&eval.join("gold"), manual, split),
    };
    let r = evaluate_set(&service, &set).expect("evaluate");
    assert!(
        r.results.len() >= min_queries,
        "{manual} ({}) has at least {min_queries} queries",
        split.label()
    );
    println!("{}", r.summary_line());
    r
}

/// The part of a blind set with the given style.
fn style(r: &EvalReport, name: &str, min_queries: usize) -> EvalReport {
    let part = r
        .by_style()
        .into_iter()
        .find(|(s, _)| s == name)
        .map(|(_, part)| part)
        .unwrap_or_else(|| panic!("{} has no {name} queries", r.manual_id));
    assert!(part.results.len() >= min_queries, "{name}: too few queries");
    println!("  {name}: {}", part.summary_line());
    part
}

fn gate(r: &EvalReport, min_recall_at_5: f64, min_mrr: f64) {
    assert!(r.recall_at(5) >= min_recall_at_5, "{}", r.summary_line());
    assert!(r.mrr() >= min_mrr, "{}", r.summary_line());
}

/// The bar, out-of-sample.
const BAR_RECALL_AT_5: f64 = 0.95;
const BAR_MRR: f64 = 0.87;

#[test]
fn japanese_insurance_named_queries_beat_the_reference_out_of_sample() {
    // Measured: insurance-ja R@5 1.000, MRR 1.000; kasai-ja (never tuned
    // on) R@5 1.000, MRR 0.928 — 30 queries each (before issue 14's rules
    // 0.983 and 0.944; docs/manuals.md §6).
    for manual in ["insurance-ja", "kasai-ja"] {
        let r = report(manual, GoldSplit::Blind2, 50);
        gate(&style(&r, "named", 25), BAR_RECALL_AT_5, BAR_MRR);
    }
}

#[test]
fn japanese_insurance_colloquial_queries() {
    // Everyday wording, out-of-sample. Measured: insurance-ja R@5 0.800,
    // MRR 0.672; kasai-ja R@5 0.867, MRR 0.691 (before issue 14's rules
    // 0.833 / 0.681 and 0.867 / 0.665; docs/manuals.md §6).
    let r = report("insurance-ja", GoldSplit::Blind2, 50);
    gate(&style(&r, "colloquial", 25), 0.80, 0.65);
    let r = report("kasai-ja", GoldSplit::Blind2, 50);
    gate(&style(&r, "colloquial", 25), 0.83, 0.63);
}

#[test]
fn english_technical_second_blind_set() {
    // Measured: R@5 1.000, MRR 0.888 (named 1.000 / 1.000, colloquial
    // 1.000 / 0.777).
    let r = report("lumen-en", GoldSplit::Blind2, 30);
    gate(&r, 0.97, 0.85);
    gate(&style(&r, "named", 15), BAR_RECALL_AT_5, BAR_MRR);
}

#[test]
fn japanese_insurance_tuning_set_recall_at_5_and_mrr() {
    // Measured: R@5 0.939, MRR 0.850 (in-sample: the engine was tuned on
    // this set). Lowered from R@5 0.95 (measured 0.980) when the file name
    // became a heading-weight field and results were diversified across
    // files: two queries moved from rank 5 to 8–9; the same rules raised the
    // reference's 30-query set from R@5 0.833 / MRR 0.763 to 0.967 / 0.918
    // and every out-of-sample set here kept or raised its numbers
    // (docs/manuals.md §6).
    gate(&report("insurance-ja", GoldSplit::Tuning, 30), 0.93, 0.84);
}

#[test]
fn english_technical_tuning_set_recall_at_5_and_mrr() {
    // Measured: R@5 1.000, MRR 0.973 (in-sample).
    gate(&report("lumen-en", GoldSplit::Tuning, 30), 0.97, 0.95);
}

#[test]
fn japanese_insurance_held_out_set_recall_at_5_and_mrr() {
    // Measured: R@5 0.893, MRR 0.701 (out-of-sample, 56 queries; before the
    // general thesaurus 0.857 / 0.704, §6).
    gate(&report("insurance-ja", GoldSplit::HeldOut, 40), 0.87, 0.67);
}

#[test]
fn english_technical_held_out_set_recall_at_5_and_mrr() {
    // Measured: R@5 0.929, MRR 0.808 (out-of-sample, 42 queries).
    gate(&report("lumen-en", GoldSplit::HeldOut, 30), 0.90, 0.79);
}
