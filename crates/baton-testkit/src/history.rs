//! Synthetic run history: the random source and topic vocabulary the
//! history and manual benchmarks draw on, and [`write_past_runs`], which
//! writes ended forge workspaces for the history benchmarks (`e2e`,
//! `versus`, `baton-history`'s `memory`).

use std::path::Path;

use baton_state::{
    Effort, FlowTemplate, HistoryAction, HistoryEntry, PhaseLogEntry, PhaseStatus, WorkspaceState,
};

/// A xorshift64 random source: the same seed gives the same sequence on
/// every machine, so generated data (and what benchmarks measure) repeat.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The English topic words generated requests and designs share, so
/// documents overlap in some words but not all.
pub const TOPIC_WORDS: [&str; 34] = [
    "login",
    "session",
    "token",
    "cache",
    "export",
    "report",
    "invoice",
    "payment",
    "search",
    "index",
    "upload",
    "profile",
    "settings",
    "notification",
    "email",
    "webhook",
    "queue",
    "worker",
    "scheduler",
    "migration",
    "schema",
    "api",
    "endpoint",
    "client",
    "server",
    "config",
    "logging",
    "metrics",
    "dashboard",
    "permission",
    "timeout",
    "retry",
    "billing",
    "checkout",
];

/// The Japanese topic words [`write_past_runs`] adds to [`TOPIC_WORDS`].
const TOPIC_WORDS_JA: [&str; 6] = [
    "ログイン",
    "セッション",
    "タイムアウト",
    "検索",
    "請求書",
    "通知",
];

/// Writes `n` ended forge runs under `specs`: state (phases with history,
/// tokens, durations, a design revision now and then), request, design,
/// a design review with findings and, for every third run, a summary with
/// an improvement report. Requests and designs draw on one vocabulary, so
/// runs share some words but not all. The same `n` writes the same runs.
pub fn write_past_runs(specs: &Path, n: usize) {
    let vocabulary: Vec<&str> = TOPIC_WORDS.iter().chain(&TOPIC_WORDS_JA).copied().collect();
    let vocabulary = vocabulary.as_slice();
    const FINDINGS: [&str; 6] = [
        "Missing error handling for the {}",
        "No test covers the {} path",
        "The {} is not documented",
        "Inconsistent naming in the {} module",
        "The {} leaks a connection on failure",
        "Unchecked input in the {}",
    ];
    std::fs::create_dir_all(specs).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rnd = |m: usize| rng.below(m);
    let base: chrono::DateTime<chrono::Utc> = "2024-01-01T00:00:00Z".parse().unwrap();
    for i in 0..n {
        let mut words = |k: usize| {
            (0..k)
                .map(|_| vocabulary[rnd(vocabulary.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let request = words(12);
        let design = format!("# Design\n\n{}\n", words(120));
        let name = format!("2024{:04}-run-{i}", i % 10_000);
        let dir = specs.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let t0 = base + chrono::Duration::hours(i as i64 * 2);
        let mut state = WorkspaceState::fresh(
            "forge",
            "phase-1",
            &name,
            &format!(".specs/{name}"),
            "bench",
            t0,
        );
        let effort = [Effort::S, Effort::M, Effort::L][rnd(3)];
        state.effort = Some(effort);
        state.flow_template = Some(FlowTemplate::for_effort(effort));
        let mut minute = 0;
        let revise = rnd(4) == 0;
        let mut phases = vec!["phase-1", "phase-2", "phase-3", "phase-3b"];
        if revise {
            phases.extend(["phase-3", "phase-3b"]);
        }
        phases.extend(["phase-4", "phase-5", "phase-6", "phase-7", "final-summary"]);
        for phase in phases {
            let ms = 30_000 + rnd(600_000) as u64;
            state.history.push(HistoryEntry {
                at: t0 + chrono::Duration::minutes(minute),
                phase: phase.into(),
                action: HistoryAction::Start,
                detail: None,
                by: None,
            });
            minute += 1 + (ms / 60_000) as i64;
            state.history.push(HistoryEntry {
                at: t0 + chrono::Duration::minutes(minute),
                phase: phase.into(),
                action: HistoryAction::Complete,
                detail: None,
                by: None,
            });
            state.phase_log.push(PhaseLogEntry {
                phase: phase.into(),
                tokens: 2_000 + rnd(40_000) as u64,
                duration_ms: ms,
                model: if phase == "phase-3" { "opus" } else { "sonnet" }.into(),
                timestamp: t0 + chrono::Duration::minutes(minute),
                tasks: Vec::new(),
                cost_usd: None,
            });
        }
        if rnd(10) == 0 {
            state.current_phase_status = PhaseStatus::Abandoned;
        } else {
            state.current_phase = "completed".into();
            state.current_phase_status = PhaseStatus::Completed;
        }
        state.timestamps.last_updated = t0 + chrono::Duration::minutes(minute);
        std::fs::write(dir.join("state.json"), state.to_json()).unwrap();
        std::fs::write(
            dir.join("request.md"),
            format!("---\nsource_type: text\n---\n\n{request}\n"),
        )
        .unwrap();
        std::fs::write(dir.join("design.md"), design).unwrap();
        let mut review = String::from("# Review\n\n## Verdict: APPROVE\n\n");
        for k in 0..rnd(4) {
            let severity = if rnd(3) == 0 { "CRITICAL" } else { "MINOR" };
            let text =
                FINDINGS[rnd(FINDINGS.len())].replace("{}", vocabulary[rnd(vocabulary.len())]);
            review.push_str(&format!("**{}. [{severity}] {text}**\n\n", k + 1));
        }
        std::fs::write(dir.join("review-design.md"), review).unwrap();
        if i % 3 == 0 {
            std::fs::write(
                dir.join("summary.md"),
                format!(
                    "# Summary\n\n## Improvement Report\n\n### AI Agent Support\n- The {} command was hard to find — add it to CLAUDE.md\n",
                    vocabulary[rnd(vocabulary.len())]
                ),
            )
            .unwrap();
        }
    }
}
