//! One line of the history file: what an ended run leaves behind.
//!
//! Field names are snake_case and stable (docs/history.md §2); optional and
//! empty fields are left out so a line stays short.

use std::collections::BTreeMap;

use baton_engine::completion::verdict::Severity;
use baton_state::{Effort, FlowTemplate, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The workflow reached its end.
    Completed,
    /// The workflow was abandoned.
    Abandoned,
    /// Still going (only in summaries of a live run, never in the index).
    Running,
}

impl Outcome {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Abandoned => "abandoned",
            Outcome::Running => "running",
        }
    }
}

/// The record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The workspace folder name (e.g. `20260401-fix-auth`): the record's key.
    pub workspace: String,
    /// The workflow id (`forge`, `issue`, …).
    pub workflow: String,
    /// How the run ended.
    pub outcome: Outcome,
    /// When the workspace was created.
    pub created: Timestamp,
    /// When it ended (its last state write).
    pub ended: Timestamp,
    /// Effort S, M or L.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Flow template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowTemplate>,
    /// Where the request came from (`text`, `github`, `jira`, `linear`, …).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// The request, summarised to one line.
    #[serde(default)]
    pub request: String,
    /// Phases that ran, in the order first started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseRecord>,
    /// Phases skipped by the flow template, run flags or `skip_phase`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The final verdict of each review artifact (`review-design.md` → `APPROVE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verdicts: BTreeMap<String, String>,
    /// Review findings of the final review artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingRecord>,
    /// Items of the run's improvement report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub friction: Vec<FrictionRecord>,
    /// Times work was sent back to an earlier phase (review REVISE/FAIL, a
    /// person's revision at a checkpoint).
    #[serde(default)]
    pub loops: u32,
    /// Tokens reported, all phases.
    #[serde(default)]
    pub tokens: u64,
    /// Work time in milliseconds, all phases (see [`PhaseRecord::ms`]).
    #[serde(default)]
    pub work_ms: u64,
    /// Why the run was abandoned, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The git branch the run worked on (its committed files are there, so
    /// a run stays findable after a switch back to another branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Search terms of the request and design with their weighted counts
    /// (docs/history.md §4), at most [`crate::terms::MAX_DOC_TERMS`].
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::entry::terms_field"
    )]
    pub terms: Vec<(String, u32)>,
    /// The document length in weighted terms, before the cap (BM25 length).
    #[serde(default)]
    pub len: u32,
}

impl RunRecord {
    /// Wall-clock milliseconds from creation to the end.
    pub fn wall_ms(&self) -> u64 {
        u64::try_from((self.ended - self.created).num_milliseconds()).unwrap_or(0)
    }
}

/// One phase of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// Phase id.
    pub phase: String,
    /// Times the phase was started.
    pub visits: u32,
    /// Times completing it sent work back to an earlier phase.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub back: u32,
    /// The phase is a review with verdicts (they decide whether work goes back).
    #[serde(default, skip_serializing_if = "is_false")]
    pub review: bool,
    /// Times it failed (and was retried or abandoned).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fails: u32,
    /// Milliseconds: the durations agents reported, or the wall time from
    /// start to end when none was reported.
    #[serde(default)]
    pub ms: u64,
    /// Tokens reported.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub tokens: u64,
    /// The model label last reported.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// One review finding of a past run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRecord {
    /// The review phase.
    pub phase: String,
    /// The reviewing agent.
    pub agent: String,
    /// CRITICAL or MINOR.
    pub severity: Severity,
    /// The finding's title as written.
    pub text: String,
}

/// One item of an improvement report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrictionRecord {
    /// `Documentation`, `Code Readability`, `AI Agent Support` or `Other`.
    pub category: String,
    /// The problem observed.
    pub problem: String,
    /// The suggested improvement, when one was given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub improvement: String,
}

/// The most phases, findings, friction items or verdicts a record read
/// from the file may hold (baton never writes more for one run).
pub const MAX_ITEMS: usize = 1000;

/// Whether `name` can be a workspace folder's name as the catch-up meets
/// them (forge's folders may be named in any script): one path component,
/// not hidden, no control characters, no white space at its ends, at most
/// 255 bytes.
pub fn valid_workspace_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name.trim() == name
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// Whether `id` can be a workflow, phase or agent id as baton writes them.
fn valid_id(id: &str) -> bool {
    id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

/// `text` as one clean line of at most `max_chars`: what baton itself
/// writes into a record, so a hand-written line cannot carry more.
fn clean(text: &str, max_chars: usize) -> String {
    let plain = text.chars().count() <= max_chars
        && !text.chars().any(char::is_control)
        && !text.trim_start().starts_with('#');
    if plain {
        text.to_string()
    } else {
        crate::text::prompt_line(text, max_chars)
    }
}

impl RunRecord {
    /// A record read from the history file, checked: the file is baton's,
    /// but anything with the user's rights can write a line into it, so a
    /// line is not trusted as it is. Refused (`Err` with the reason) when
    /// its workspace or ids are not names baton writes or it holds more
    /// items than any run has; its texts are cut to the lengths baton
    /// writes and made single clean lines. Past-run text stays untrusted
    /// data all the same: prompts quote it (docs/history.md §7).
    pub fn checked(mut self) -> Result<RunRecord, String> {
        if !valid_workspace_name(&self.workspace) {
            return Err(format!(
                "workspace {:?} is not a folder name baton writes",
                crate::text::truncate(&self.workspace, 80)
            ));
        }
        if !valid_id(&self.workflow) {
            return Err("its workflow is not an id".into());
        }
        let too_many = self.phases.len() > MAX_ITEMS
            || self.findings.len() > MAX_ITEMS
            || self.friction.len() > MAX_ITEMS
            || self.verdicts.len() > MAX_ITEMS
            || self.skipped.len() > MAX_ITEMS
            || self.terms.len() > crate::terms::MAX_DOC_TERMS;
        if too_many {
            return Err("it holds more items than a run records".into());
        }
        let ids_ok = self
            .phases
            .iter()
            .all(|p| valid_id(&p.phase) && p.model.len() <= 128)
            && self
                .findings
                .iter()
                .all(|f| valid_id(&f.phase) && valid_id(&f.agent))
            && self.skipped.iter().all(|s| valid_id(s))
            && self
                .verdicts
                .iter()
                .all(|(k, v)| valid_id(k) && valid_id(v));
        if !ids_ok {
            return Err("a phase, agent, model or verdict is not an id".into());
        }
        self.source = clean(&self.source, 32);
        self.request = clean(&self.request, crate::collect::REQUEST_SUMMARY_CHARS);
        self.reason = self.reason.map(|r| clean(&r, 200));
        for f in &mut self.findings {
            f.text = clean(&f.text, crate::collect::FINDING_CHARS);
        }
        for p in &mut self.phases {
            p.model = clean(&p.model, 128);
        }
        for f in &mut self.friction {
            f.category = clean(&f.category, 40);
            f.problem = clean(&f.problem, crate::friction::MAX_ITEM_CHARS);
            f.improvement = clean(&f.improvement, crate::friction::MAX_ITEM_CHARS);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(workspace: &str, finding: &str) -> String {
        serde_json::json!({
            "workspace": workspace, "workflow": "forge", "outcome": "completed",
            "created": "2026-01-01T00:00:00Z", "ended": "2026-01-01T01:00:00Z",
            "request": "fix\u{1b}[2J the login\n## SYSTEM NOTICE",
            "findings": [{"phase": "phase-3b", "agent": "design-reviewer", "severity": "CRITICAL", "text": finding}]
        })
        .to_string()
    }

    #[test]
    fn a_hand_written_record_is_checked_and_its_texts_cleaned() {
        let r: RunRecord =
            serde_json::from_str(&line("20260101-fix", &format!("# {}", "x".repeat(5000))))
                .unwrap();
        let r = r.checked().unwrap();
        assert!(!r.request.chars().any(char::is_control), "{:?}", r.request);
        assert!(!r.request.contains('\n'));
        assert!(r.findings[0].text.chars().count() <= crate::collect::FINDING_CHARS);
        assert!(!r.findings[0].text.starts_with('#'));
        for bad in ["../etc", "", "a/b", ".hidden", "x\ny"] {
            let r: RunRecord = serde_json::from_str(&line(bad, "f")).unwrap();
            assert!(r.checked().is_err(), "{bad:?} must be refused");
        }
        let mut r: RunRecord = serde_json::from_str(&line("w", "f")).unwrap();
        r.findings[0].agent = "design reviewer; ignore".into();
        assert!(r.checked().is_err());
    }
}
