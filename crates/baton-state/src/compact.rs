//! Bounded growth: `state.json` stays small for the life of a run. When the
//! audit trail or the logs grow past their bounds, the oldest entries move
//! to an append-only `state-archive.jsonl` beside the state, and the counts that
//! decisions need (visits per phase, token and time totals) are kept.
//!
//! Each archived line carries its sequence number, so a line written twice
//! (a crash between the append and the state write) is recognised.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::schema::{HistoryAction, WorkspaceState};

/// The archive file beside `state.json`.
pub const ARCHIVE_FILE: &str = "state-archive.jsonl";
/// History entries kept in `state.json` (older ones are archived).
pub const KEEP_HISTORY: usize = 200;
/// Phase-log entries kept.
pub const KEEP_PHASE_LOG: usize = 200;
/// Phase reports (`completePhase`) kept.
pub const KEEP_PHASE_RESULTS: usize = 100;
/// Answers kept.
pub const KEEP_ANSWERS: usize = 100;
/// Longest detail text kept in a history entry (the full failure message
/// stays in `error` while it is current).
pub const MAX_DETAIL: usize = 512;

#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    seq: u64,
    kind: &'a str,
    entry: &'a T,
}

/// Whether `state` is over one of its bounds.
pub fn needed(state: &WorkspaceState) -> bool {
    state.history.len() > KEEP_HISTORY * 2
        || state.phase_log.len() > KEEP_PHASE_LOG * 2
        || state.phase_results.len() > KEEP_PHASE_RESULTS * 2
        || state.answers.len() > KEEP_ANSWERS * 2
}

/// Cuts long history details; cheap, done on every write.
pub fn trim_details(state: &mut WorkspaceState) {
    for h in state.history.iter_mut() {
        if let Some(d) = &mut h.detail
            && d.len() > MAX_DETAIL
        {
            let mut end = MAX_DETAIL;
            while !d.is_char_boundary(end) {
                end -= 1;
            }
            d.truncate(end);
            d.push('…');
        }
    }
}

/// Moves the oldest entries past the bounds to `<dir>/state-archive.jsonl` (one
/// JSON line each, numbered) and keeps their counts in `historyArchived`.
pub fn archive(dir: &Path, state: &mut WorkspaceState) -> std::io::Result<()> {
    let mut archived = state.history_archived.clone().unwrap_or_default();
    let mut out = Vec::new();
    let mut seq = archived.lines;
    let push = |kind: &str, entry: &dyn erased::Ser, out: &mut Vec<u8>, seq: &mut u64| {
        let line = serde_json::to_vec(&Line {
            seq: *seq,
            kind,
            entry: &erased::Wrap(entry),
        })
        .unwrap_or_default();
        out.extend(line);
        out.push(b'\n');
        *seq += 1;
    };
    if state.history.len() > KEEP_HISTORY {
        let cut = state.history.len() - KEEP_HISTORY;
        for h in state.history.drain(..cut) {
            if h.action == HistoryAction::Start {
                *archived.visits.entry(h.phase.clone()).or_default() += 1;
            }
            archived.history += 1;
            push("history", &h, &mut out, &mut seq);
        }
    }
    if state.phase_log.len() > KEEP_PHASE_LOG {
        let cut = state.phase_log.len() - KEEP_PHASE_LOG;
        for e in state.phase_log.drain(..cut) {
            archived.phase_log += 1;
            archived.tokens += e.tokens;
            archived.duration_ms += e.duration_ms;
            push("phaseLog", &e, &mut out, &mut seq);
        }
    }
    if state.phase_results.len() > KEEP_PHASE_RESULTS {
        let cut = state.phase_results.len() - KEEP_PHASE_RESULTS;
        for r in state.phase_results.drain(..cut) {
            archived.phase_results += 1;
            push("phaseResult", &r, &mut out, &mut seq);
        }
    }
    if state.answers.len() > KEEP_ANSWERS {
        let cut = state.answers.len() - KEEP_ANSWERS;
        for a in state.answers.drain(..cut) {
            archived.answers += 1;
            push("answer", &a, &mut out, &mut seq);
        }
    }
    archived.lines = seq;
    let mut file = crate::fs::open_regular(&dir.join(ARCHIVE_FILE), true)?;
    file.write_all(&out)?;
    state.history_archived = Some(archived);
    Ok(())
}

/// Type erasure for the archive lines (entries of different types).
mod erased {
    use serde::Serialize;

    pub trait Ser {
        fn to_value(&self) -> serde_json::Value;
    }

    impl<T: Serialize> Ser for T {
        fn to_value(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
        }
    }

    pub struct Wrap<'a>(pub &'a dyn Ser);

    impl Serialize for Wrap<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.to_value().serialize(s)
        }
    }
}

/// Keeps a phase's visit count right across archiving: archived starts plus
/// those still in the history.
pub fn visits(state: &WorkspaceState, phase: &str) -> u32 {
    let archived = state
        .history_archived
        .as_ref()
        .and_then(|a| a.visits.get(phase).copied())
        .unwrap_or(0);
    archived
        + state
            .history
            .iter()
            .filter(|h| h.phase == phase && h.action == HistoryAction::Start)
            .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::HistoryEntry;

    #[test]
    fn old_entries_move_out_and_visits_stay_right() {
        let dir = tempfile::tempdir().unwrap();
        let now = chrono::Utc::now();
        let mut s = WorkspaceState::fresh("w", "a", "x", "x", "t", now);
        for i in 0..3000 {
            s.history.push(HistoryEntry {
                at: now,
                phase: "a".into(),
                action: if i % 2 == 0 {
                    HistoryAction::Start
                } else {
                    HistoryAction::Fail
                },
                detail: Some("x".repeat(4096)),
                by: None,
            });
        }
        assert_eq!(visits(&s, "a"), 1500);
        trim_details(&mut s);
        assert!(needed(&s));
        archive(dir.path(), &mut s).unwrap();
        assert_eq!(s.history.len(), KEEP_HISTORY);
        assert_eq!(visits(&s, "a"), 1500, "visits count the archived starts");
        let lines = std::fs::read_to_string(dir.path().join(ARCHIVE_FILE)).unwrap();
        assert_eq!(lines.lines().count(), 3001 - KEEP_HISTORY);
        let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(first["seq"], 0);
        assert_eq!(first["kind"], "history");
        assert!(s.to_json().len() < 400 * 1024, "{}", s.to_json().len());
    }
}
