//! Building a [`RunRecord`] from a workspace folder: its `state.json`
//! (any version baton reads, forge's 1 and 2 included) and the artifacts
//! agents wrote (request, design, reviews, summary).

use std::collections::BTreeMap;
use std::path::Path;

use baton_engine::completion::verdict::{Verdict, parse_review};
use baton_state::{HistoryAction, PhaseStatus, WorkspaceState};
use baton_workflow::{PerTask, PhaseDefinition, PhaseKind, WorkflowDefinition};

use crate::record::{FindingRecord, Outcome, PhaseRecord, RunRecord};
use crate::terms::{DESIGN_BYTES, MAX_DOC_TERMS, REQUEST_BYTES, weighted_terms};
use crate::text::{front_matter, one_line, prompt_line};

/// Longest request summary kept, in characters.
pub const REQUEST_SUMMARY_CHARS: usize = 200;
/// Longest finding text kept, in characters.
pub const FINDING_CHARS: usize = 200;
/// Largest artifact read, in bytes (larger files are read up to this size).
pub const MAX_ARTIFACT_BYTES: u64 = 1024 * 1024;

/// The files of one workspace folder, as far as a record needs them.
pub trait RunFiles {
    /// The text of a file in the workspace (lossy UTF-8), if it exists.
    fn read(&self, name: &str) -> Option<String>;
    /// Names of the files in the workspace folder.
    fn names(&self) -> Vec<String>;
}

/// A workspace folder on disk.
#[derive(Debug, Clone, Copy)]
pub struct Folder<'a>(pub &'a Path);

impl RunFiles for Folder<'_> {
    /// Reads `name` as a file baton does not own: never through a link
    /// (at the name or in a folder on its way), never a FIFO, device or
    /// socket (a past run's `request.md` linked to a secret, or a FIFO
    /// that would hang the reader, is skipped), at most
    /// [`MAX_ARTIFACT_BYTES`] of it.
    fn read(&self, name: &str) -> Option<String> {
        use std::io::Read;
        let file = baton_fs::open_beneath(self.0, Path::new(name), u64::MAX).ok()?;
        let mut bytes = Vec::new();
        file.take(MAX_ARTIFACT_BYTES).read_to_end(&mut bytes).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn names(&self) -> Vec<String> {
        std::fs::read_dir(self.0)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl RunFiles for BTreeMap<String, String> {
    fn read(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }

    fn names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

/// How the state says the run stands.
pub fn outcome(state: &WorkspaceState) -> Outcome {
    match state.current_phase_status {
        PhaseStatus::Abandoned => Outcome::Abandoned,
        PhaseStatus::Completed => Outcome::Completed,
        _ if state.current_phase == baton_workflow::COMPLETED => Outcome::Completed,
        _ => Outcome::Running,
    }
}

/// The record of the run in `workspace` (its folder name) from its state and
/// files. `definition` is the run's workflow (review phases and their
/// artifacts come from it); without it no findings are collected.
pub fn build_record(
    workspace: &str,
    state: &WorkspaceState,
    files: &dyn RunFiles,
    definition: Option<&WorkflowDefinition>,
) -> RunRecord {
    let request_file = files.read("request.md").or_else(|| files.read("issue.md"));
    let (keys, body) = match &request_file {
        Some(text) => {
            let (keys, body) = front_matter(text);
            (keys, body.to_string())
        }
        None => (BTreeMap::new(), String::new()),
    };
    let source = keys
        .get("source_type")
        .cloned()
        .or_else(|| state.issue_number.as_ref().map(|_| "issue".to_string()))
        .unwrap_or_default();
    let design = files.read("design.md").unwrap_or_default();
    let (terms, len) = weighted_terms(
        crate::terms::head(&body, REQUEST_BYTES),
        crate::terms::head(&design, DESIGN_BYTES),
        MAX_DOC_TERMS,
    );
    let phases = phase_records(state, definition);
    let (verdicts, findings) = reviews(files, definition);
    let friction = match files.read("improvement.md") {
        Some(report) => crate::friction::from_report(&report),
        None => files
            .read("summary.md")
            .map(|s| crate::friction::from_summary(&s))
            .unwrap_or_default(),
    };
    let reason = state
        .history
        .iter()
        .rev()
        .find(|h| h.action == HistoryAction::Abandon)
        .and_then(|h| h.detail.as_deref())
        .map(|d| prompt_line(d, 200));
    RunRecord {
        workspace: workspace.to_string(),
        workflow: state.workflow.clone(),
        outcome: outcome(state),
        created: state.timestamps.created,
        ended: state.timestamps.last_updated,
        effort: state.effort,
        flow: state.flow_template,
        source,
        request: one_line(&body, REQUEST_SUMMARY_CHARS),
        loops: phases.iter().map(|p| p.back).sum(),
        tokens: state.phase_log.iter().map(|l| l.tokens).sum(),
        work_ms: phases.iter().map(|p| p.ms).sum(),
        phases,
        skipped: state.skipped_phases.clone(),
        verdicts,
        findings,
        friction,
        reason,
        branch: state.branch.clone(),
        terms,
        len,
    }
}

/// Per-phase visits, loops, failures, time, tokens and model.
///
/// With a `history` (baton's state.json): visits and wall time from it
/// ([`baton_engine::stats::run_stats`]); a loop is a start of a phase that
/// first started before the phase closed last (so a retry of a failed
/// phase is none), and it counts for the phase closed last. Without one (forge's version 1/2):
/// visits from `phaseLog`, loops from the revision counters and task
/// retries. Milliseconds are the durations agents reported when there are
/// any, else the wall time.
pub fn phase_records(
    state: &WorkspaceState,
    definition: Option<&WorkflowDefinition>,
) -> Vec<PhaseRecord> {
    let mut out: Vec<PhaseRecord> = Vec::new();
    fn entry<'a>(out: &'a mut Vec<PhaseRecord>, phase: &str) -> &'a mut PhaseRecord {
        match out.iter().position(|p| p.phase == phase) {
            Some(i) => &mut out[i],
            None => {
                out.push(PhaseRecord {
                    phase: phase.to_string(),
                    visits: 0,
                    back: 0,
                    review: false,
                    fails: 0,
                    ms: 0,
                    tokens: 0,
                    model: String::new(),
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        }
    }
    let has_history = state
        .history
        .iter()
        .any(|h| h.action == HistoryAction::Start);
    if has_history {
        let stats = baton_engine::stats::run_stats(state, definition);
        for t in &stats.phases {
            let p = entry(&mut out, &t.phase);
            p.visits = t.visits;
            p.ms = u64::try_from(t.total_ms).unwrap_or(0);
        }
        // Phases in the order first started (a checkpoint starts when it
        // begins to wait): a start of a phase that comes before the phase
        // closed last is a loop back — a review's REVISE, a person's
        // `revise` at a checkpoint.
        let mut order: Vec<&str> = Vec::new();
        let mut last_closed: Option<(&str, HistoryAction)> = None;
        for h in &state.history {
            match h.action {
                HistoryAction::Start | HistoryAction::Checkpoint => {
                    let rank = |p: &str| order.iter().position(|o| *o == p);
                    if let Some((p, _)) = last_closed
                        && let (Some(q), Some(pr)) = (rank(&h.phase), rank(p))
                        && q < pr
                    {
                        entry(&mut out, p).back += 1;
                    }
                    if rank(&h.phase).is_none() {
                        order.push(&h.phase);
                    }
                }
                HistoryAction::Complete => last_closed = Some((&h.phase, h.action)),
                HistoryAction::Fail => {
                    entry(&mut out, &h.phase).fails += 1;
                    last_closed = Some((&h.phase, h.action));
                }
                _ => {}
            }
        }
    } else {
        for l in &state.phase_log {
            entry(&mut out, &l.phase).visits += 1;
        }
        for c in &state.completed_phases {
            if c != baton_workflow::SETUP && !state.skipped_phases.contains(c) {
                let p = entry(&mut out, c);
                p.visits = p.visits.max(1);
            }
        }
        if let Some(def) = definition {
            legacy_loops(state, def, &mut out);
        }
    }
    let mut reported_ms: BTreeMap<&str, u64> = BTreeMap::new();
    for l in &state.phase_log {
        let p = entry(&mut out, &l.phase);
        p.visits = p.visits.max(1);
        p.tokens += l.tokens;
        // Checkpoint answers are logged as `checkpoint:<answer>`, not a model.
        if !l.model.is_empty() && !l.model.starts_with("checkpoint:") {
            p.model = l.model.clone();
        }
        *reported_ms.entry(&l.phase).or_default() += l.duration_ms;
    }
    for p in &mut out {
        if let Some(ms) = reported_ms.get(p.phase.as_str()).filter(|ms| **ms > 0) {
            p.ms = *ms;
        }
    }
    if let Some(def) = definition {
        for p in &mut out {
            p.review = def
                .phase(&p.phase)
                .is_some_and(|d| d.kind == PhaseKind::Review || !d.verdicts.is_empty());
        }
        // Workflow order; phases the definition does not know go last.
        out.sort_by_key(|p| def.position(&p.phase).unwrap_or(usize::MAX));
    }
    out
}

/// Loops of a forge version-1/2 run, from its revision counters: design
/// revisions for the review that sends work back to the phase writing
/// `design.md`, task revisions for the one writing `tasks.md`, task retries
/// for the per-task review.
fn legacy_loops(state: &WorkspaceState, def: &WorkflowDefinition, out: &mut [PhaseRecord]) {
    let writes = |id: &str, file: &str| {
        def.phase(id)
            .is_some_and(|p| p.artifacts.iter().any(|a| a == file))
    };
    for p in def.phases.iter().filter(|p| p.kind == PhaseKind::Review) {
        let back_to = |file: &str| p.transitions.iter().any(|t| writes(&t.goto, file));
        let loops = if p.per_task == Some(PerTask::Review) {
            state.tasks.values().map(|t| t.impl_retries).sum()
        } else if back_to("design.md") {
            state.revisions.design_revisions
        } else if back_to("tasks.md") {
            state.revisions.task_revisions
        } else {
            0
        };
        if loops > 0
            && let Some(r) = out.iter_mut().find(|r| r.phase == p.id)
        {
            r.back += loops;
        }
    }
}

/// Phases whose artifacts hold review findings: review phases and phases of
/// a reviewing agent (the comprehensive review).
fn is_review(p: &PhaseDefinition) -> bool {
    p.kind == PhaseKind::Review || p.agent.as_deref().is_some_and(|a| a.ends_with("reviewer"))
}

/// The final verdict of each review artifact and every finding in them.
fn reviews(
    files: &dyn RunFiles,
    definition: Option<&WorkflowDefinition>,
) -> (BTreeMap<String, String>, Vec<FindingRecord>) {
    let mut verdicts = BTreeMap::new();
    let mut findings = Vec::new();
    let Some(def) = definition else {
        return (verdicts, findings);
    };
    let names = files.names();
    for p in def.phases.iter().filter(|p| is_review(p)) {
        let mut artifacts: Vec<String> = if p.per_task == Some(PerTask::Review) {
            let mut numbered: Vec<(u64, String)> = names
                .iter()
                .filter_map(|n| {
                    let k = n.strip_prefix("review-")?.strip_suffix(".md")?;
                    Some((k.parse().ok()?, n.clone()))
                })
                .collect();
            numbered.sort();
            numbered.into_iter().map(|(_, n)| n).collect()
        } else {
            p.artifacts.clone()
        };
        artifacts.dedup();
        let allowed: Vec<Verdict> = Verdict::REVIEW
            .into_iter()
            .chain(Verdict::IMPL_REVIEW)
            .filter(|v| p.verdicts.iter().any(|w| w == v.as_str()))
            .collect();
        for name in artifacts {
            let Some(text) = files.read(&name) else {
                continue;
            };
            let parsed = parse_review(&text, &allowed);
            if let Some(v) = parsed.verdict {
                verdicts.insert(name.clone(), v.as_str().to_string());
            }
            for f in parsed.findings {
                findings.push(FindingRecord {
                    phase: p.id.clone(),
                    agent: p.agent.clone().unwrap_or_default(),
                    severity: f.severity,
                    text: prompt_line(&f.description, FINDING_CHARS),
                });
            }
        }
    }
    (verdicts, findings)
}
