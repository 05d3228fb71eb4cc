//! Regression gate: retrieval quality on the evaluation sets in `eval/`.
//!
//! Tuning sets (`eval/gold/<manual>.jsonl`) were used to adjust the engine,
//! so their thresholds guard in-sample numbers. Held-out sets
//! (`eval/gold/<manual>.heldout.jsonl`) were written blind and never used
//! for tuning; their thresholds sit a little below the measured values so a
//! regression fails. Never edit a held-out query to make a gate pass.

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

fn gate(r: &EvalReport, min_recall_at_5: f64, min_mrr: f64) {
    assert!(r.recall_at(5) >= min_recall_at_5, "{}", r.summary_line());
    assert!(r.mrr() >= min_mrr, "{}", r.summary_line());
}

#[test]
fn japanese_insurance_tuning_set_recall_at_5_and_mrr() {
    // The bar (the Python reference's numbers). Measured: R@5 0.980,
    // MRR 0.879 (in-sample: the engine was tuned on this set).
    gate(&report("insurance-ja", GoldSplit::Tuning, 30), 0.95, 0.87);
}

#[test]
fn english_technical_tuning_set_recall_at_5_and_mrr() {
    // Measured: R@5 1.000, MRR 0.973 (in-sample).
    gate(&report("lumen-en", GoldSplit::Tuning, 30), 0.95, 0.87);
}

#[test]
fn japanese_insurance_held_out_set_recall_at_5_and_mrr() {
    // Measured: R@5 0.857, MRR 0.704 (out-of-sample, 56 queries).
    gate(&report("insurance-ja", GoldSplit::HeldOut, 40), 0.83, 0.70);
}

#[test]
fn english_technical_held_out_set_recall_at_5_and_mrr() {
    // Measured: R@5 0.905, MRR 0.759 (out-of-sample, 42 queries).
    gate(&report("lumen-en", GoldSplit::HeldOut, 30), 0.88, 0.74);
}
