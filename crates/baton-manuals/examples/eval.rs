//! Prints recall@1/3/5/10 and MRR of `manual_find` on the evaluation sets in
//! `crates/baton-manuals/eval/`: tuning sets (`eval/gold/<manual>.jsonl`, the
//! engine was adjusted on them — in-sample) and held-out sets
//! (`eval/gold/<manual>.heldout.jsonl`, written blind — out-of-sample),
//! reported separately; `eval/gold/<manual>.blind2.jsonl` are second blind
//! sets by another author. `--verbose` lists the misses of tuning sets only:
//! printing out-of-sample misses would turn them into tuning data.
//!
//! Run: `cargo run -p baton-manuals --release --example eval [-- --verbose]`

use std::path::Path;

use baton_manuals::eval::{GoldSplit, discover_gold_sets, evaluate_set};
use baton_manuals::{ManualConfig, ManualService};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let verbose = std::env::args().any(|a| a == "--verbose" || a == "-v");
    let eval_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let service = ManualService::open(ManualConfig::new(eval_dir.join("manuals")))?;
    let sets = discover_gold_sets(&eval_dir.join("gold"))?;
    for (split, title) in [
        (
            GoldSplit::Tuning,
            "tuning sets (in-sample: the engine was tuned on these)",
        ),
        (
            GoldSplit::HeldOut,
            "held-out sets (out-of-sample: never used for tuning)",
        ),
        (
            GoldSplit::Blind2,
            "second blind sets (out-of-sample: another author, saw neither the engine nor the other sets)",
        ),
    ] {
        println!("== {title}");
        for set in sets.iter().filter(|s| s.split == split) {
            let report = evaluate_set(&service, set)?;
            println!("{}", report.summary_line());
            for (style, part) in report.by_style() {
                println!("  {style:<12}{}", part.summary_line());
            }
            if verbose && split == GoldSplit::Tuning {
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
    }
    Ok(())
}
