//! Prints recall@1/3/5/10 and MRR of `manual_find` on the evaluation sets in
//! `crates/baton-manuals/eval/` (one manual per gold file `eval/gold/<manual>.jsonl`).
//!
//! Run: `cargo run -p baton-manuals --release --example eval [-- --verbose]`

use std::path::Path;

use baton_manuals::eval::{evaluate, load_gold};
use baton_manuals::{ManualConfig, ManualService};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let verbose = std::env::args().any(|a| a == "--verbose" || a == "-v");
    let eval_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let service = ManualService::open(ManualConfig::new(eval_dir.join("manuals")))?;
    let mut gold_files: Vec<_> = std::fs::read_dir(eval_dir.join("gold"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    gold_files.sort();
    for path in gold_files {
        let manual_id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let gold = load_gold(&path)?;
        let report = evaluate(&service, &manual_id, &gold)?;
        println!("{}", report.summary_line());
        if verbose {
            for r in report.results.iter().filter(|r| r.rank != Some(1)) {
                println!(
                    "    rank {:>4}  {}  → want {}#{}  got {:?}",
                    r.rank.map(|x| x.to_string()).unwrap_or("-".into()),
                    r.gold.query,
                    r.gold.path,
                    r.gold.heading,
                    r.top
                );
            }
        }
    }
    Ok(())
}
