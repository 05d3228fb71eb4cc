//! Properties of the merge: the result depends on the multiset of findings
//! only (never on their order), merging a result again changes nothing, and
//! the distance filter never changes what merges.

use baton_engine::completion::verdict::Severity;
use baton_history::merge::{Group, Observation, Pattern, cluster, merge_findings, sort_groups};
use proptest::prelude::*;

/// Finding texts built from a small vocabulary, so near-duplicates are common.
fn text() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "missing",
        "error",
        "handling",
        "test",
        "timeout",
        "naming",
        "the",
        "for",
        "path",
        "タイムアウト",
        "エラー",
        "処理",
        "errors",
        "tests",
        "retry",
        "src/a.rs:12",
        "3",
    ]);
    prop::collection::vec(words, 1..7).prop_map(|w| w.join(" "))
}

fn observation() -> impl Strategy<Value = Observation> {
    (
        text(),
        prop::sample::select(vec!["phase-3b", "phase-6"]),
        prop::sample::select(vec!["design-reviewer", "impl-reviewer"]),
        any::<bool>(),
        1u32..3,
        1u64..2_000_000,
        0u64..50,
    )
        .prop_map(
            |(text, phase, agent, critical, count, weight, seen)| Observation {
                text,
                phase: phase.into(),
                agent: agent.into(),
                severity: if critical {
                    Severity::Critical
                } else {
                    Severity::Minor
                },
                count,
                weight,
                seen,
                run: format!("run-{seen}"),
            },
        )
}

fn remerge(patterns: &[Pattern]) -> Vec<Pattern> {
    let again: Vec<Observation> = patterns.iter().flat_map(Pattern::observations).collect();
    merge_findings(&again)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_merge_ignores_input_order(
        obs in prop::collection::vec(observation(), 0..40),
        seed in any::<u64>(),
    ) {
        let mut shuffled = obs.clone();
        // A deterministic shuffle from the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(merge_findings(&obs), merge_findings(&shuffled));
        let mut reversed = obs.clone();
        reversed.reverse();
        prop_assert_eq!(merge_findings(&obs), merge_findings(&reversed));
    }

    #[test]
    fn merging_a_merge_changes_nothing(obs in prop::collection::vec(observation(), 0..40)) {
        let once = merge_findings(&obs);
        let twice = remerge(&once);
        prop_assert_eq!(&once, &twice);
        // Nothing is lost or invented.
        let total: u32 = obs.iter().map(|o| o.count).sum();
        let merged: u32 = once.iter().map(|p| p.count).sum();
        prop_assert_eq!(total, merged);
    }

    #[test]
    fn the_distance_filter_is_exact(texts in prop::collection::vec(text(), 1..30)) {
        let mut groups: Vec<Group> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Group { norm: t.clone(), weight: i as u64 % 5, count: 1 })
            .collect();
        sort_groups(&mut groups);
        groups.dedup_by(|a, b| a.norm == b.norm);
        prop_assert_eq!(cluster(&groups), baton_history::merge::cluster_unfiltered(&groups));
    }
}
