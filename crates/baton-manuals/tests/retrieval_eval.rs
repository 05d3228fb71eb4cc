//! Regression gate: retrieval quality on the evaluation sets in `eval/`.

use std::path::Path;

use baton_manuals::eval::{evaluate, load_gold};
use baton_manuals::{ManualConfig, ManualService};

fn report(manual: &str) -> baton_manuals::eval::EvalReport {
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let service = ManualService::open(ManualConfig::new(eval.join("manuals"))).expect("open");
    let gold = load_gold(&eval.join("gold").join(format!("{manual}.jsonl"))).expect("gold");
    assert!(gold.len() >= 30, "a gold set has at least 30 queries");
    evaluate(&service, manual, &gold).expect("evaluate")
}

#[test]
fn japanese_insurance_terms_recall_at_5_and_mrr_beat_the_reference() {
    let r = report("insurance-ja");
    println!("{}", r.summary_line());
    assert!(r.recall_at(5) >= 0.95, "{}", r.summary_line());
    assert!(r.mrr() >= 0.87, "{}", r.summary_line());
}

#[test]
fn english_technical_manual_recall_at_5_and_mrr() {
    let r = report("lumen-en");
    println!("{}", r.summary_line());
    assert!(r.recall_at(5) >= 0.95, "{}", r.summary_line());
    assert!(r.mrr() >= 0.87, "{}", r.summary_line());
}
