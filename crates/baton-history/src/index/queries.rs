//! The queries over the loaded history: records, similar runs, patterns,
//! friction, Layer-4 blocks, estimates, the dashboard and run summaries.

use baton_engine::pipeline::prompt::LearningBlock;
use baton_state::Effort;

use crate::analytics::{
    Basis, Dashboard, Estimate, MIN_SIMILAR, PriceTable, RunSummary, dashboard, estimate,
    run_summary,
};
use crate::entry::Entry;
use crate::layer4::ReviewerPatterns;
use crate::record::{Outcome, RunRecord};
use crate::similar::{Corpus, LAYER4_MIN_MATCHED, SimilarRun, rank, strong};

use super::{ESTIMATE_FALLBACK_RUNS, Friction, HistoryIndex, PatternFilter, Patterns, text_hash};

impl HistoryIndex {
    /// Loads the index and merges the patterns now, so the first prompt
    /// does not pay for it: call it on a background thread at server start.
    pub fn warm(&self) {
        self.with(|l, file| {
            l.derived(file);
        });
    }

    /// Whether a query now would find the index loaded and caught up, with
    /// nobody loading it (its first load runs on a background thread at a
    /// server's start and may take seconds with a long history): a caller
    /// that must not wait asks first.
    pub fn ready(&self) -> bool {
        match self.loaded.try_lock() {
            Ok(loaded) => loaded.as_ref().is_some_and(|l| l.caught_up),
            Err(_) => false,
        }
    }

    /// Records in the index (one per workspace).
    pub fn len(&self) -> usize {
        self.with(|l, _| l.bm25.len())
    }

    /// Whether no run is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every recorded run, newest first: workspace, outcome and when it
    /// ended (the full record, with its request and branch: [`Self::get`]).
    pub fn ended_runs(&self) -> Vec<(String, crate::record::Outcome, baton_state::Timestamp)> {
        self.with(|l, _| {
            let mut runs: Vec<_> = l
                .entries
                .iter()
                .enumerate()
                .filter(|(i, _)| l.alive.get(*i).copied().unwrap_or(false))
                .map(|(_, e)| (e.workspace.clone(), e.outcome, e.ended))
                .collect();
            runs.sort_by_key(|r| std::cmp::Reverse(r.2));
            runs
        })
    }

    /// The record of one workspace, if any.
    pub fn get(&self, workspace: &str) -> Option<RunRecord> {
        self.with(|l, file| {
            let doc = *l.by_workspace.get(workspace)?;
            l.records(file, &[doc]).pop()
        })
    }

    /// The `k` past runs most like `text` (a request, a design, a few
    /// words), with the words each shares with it.
    pub fn similar(&self, text: &str, k: usize) -> Vec<SimilarRun> {
        self.with(|l, file| {
            rank(
                Corpus {
                    bm25: &l.bm25,
                    entries: &l.entries,
                    details: &|d| l.details(file, d),
                },
                text,
                "",
                k,
                1,
                &|d| l.alive[d],
            )
        })
    }

    /// Review patterns, heaviest first.
    pub fn patterns(&self, filter: &PatternFilter) -> Patterns {
        self.with(|l, file| {
            let d = l.derived(file);
            let limit = if filter.limit == 0 { 10 } else { filter.limit };
            let mut patterns = crate::layer4::filter_patterns(
                &d.patterns,
                filter.agent.as_deref(),
                filter.phase.as_deref(),
                filter.severity,
            );
            patterns.truncate(limit);
            Patterns {
                patterns,
                runs_analyzed: d.runs_with_reviews,
            }
        })
    }

    /// The friction map, heaviest first (at most `limit`, 0: 10).
    pub fn friction(&self, limit: usize) -> Friction {
        self.with(|l, file| {
            let d = l.derived(file);
            let limit = if limit == 0 { 10 } else { limit };
            Friction {
                points: d.friction.iter().take(limit).cloned().collect(),
                reports_analyzed: d.reports,
            }
        })
    }

    /// Layer 4 of the prompt of `agent` in a new run with this request (and
    /// design, once it exists), within `budget_tokens`
    /// ([`crate::layer4::compose`]). Empty when there is nothing to say.
    pub fn layer4(
        &self,
        agent: &str,
        request: &str,
        design: Option<&str>,
        budget_tokens: usize,
    ) -> Vec<LearningBlock> {
        self.layer4_for(None, agent, request, design, budget_tokens)
    }

    /// Layer 4 of a prompt in the run in folder `workspace`: like
    /// [`HistoryIndex::layer4`], and that run is never one of its own
    /// similar past runs (a record of it, from an earlier end or a copy,
    /// is left out).
    pub fn layer4_for(
        &self,
        workspace: Option<&str>,
        agent: &str,
        request: &str,
        design: Option<&str>,
        budget_tokens: usize,
    ) -> Vec<LearningBlock> {
        self.layer4_reading(
            workspace,
            agent,
            || (request.to_string(), design.map(str::to_string)),
            budget_tokens,
        )
    }

    /// [`HistoryIndex::layer4_for`] with the request and design read by
    /// `texts` only when the history has a run to compare them with (an
    /// empty history reads no run file).
    pub fn layer4_reading(
        &self,
        workspace: Option<&str>,
        agent: &str,
        texts: impl FnOnce() -> (String, Option<String>),
        budget_tokens: usize,
    ) -> Vec<LearningBlock> {
        let plan = crate::layer4::plan(agent);
        if plan.is_empty() {
            return Vec::new();
        }
        let wants_similar = plan
            .iter()
            .any(|w| matches!(w, crate::layer4::Want::Similar(_)));
        self.with(|l, file| {
            if l.bm25.is_empty() {
                return Vec::new();
            }
            let (request, design) = texts();
            let (request, design) = (request.as_str(), design.as_deref());
            let similar = if wants_similar {
                let design = design.unwrap_or("");
                let own = workspace.unwrap_or("");
                let key = text_hash(&[request, design, own]);
                match &l.similar_cache {
                    Some((k, hits)) if *k == key => hits.clone(),
                    _ => {
                        let hits = strong(rank(
                            Corpus {
                                bm25: &l.bm25,
                                entries: &l.entries,
                                details: &|d| l.details(file, d),
                            },
                            request,
                            design,
                            3,
                            LAYER4_MIN_MATCHED,
                            &|d| l.alive[d] && l.entries[d].workspace != own,
                        ));
                        l.similar_cache = Some((key, hits.clone()));
                        hits
                    }
                }
            } else {
                Vec::new()
            };
            let d = l.derived(file);
            crate::layer4::compose(agent, &similar, &d.patterns, &d.friction, budget_tokens)
        })
    }

    /// Tokens, work minutes and cost to expect for a request: from the
    /// completed runs most like it (at least [`MIN_SIMILAR`], of the same
    /// effort when one is given), else from the newest completed runs of
    /// the effort, else of all.
    pub fn estimate(&self, request: &str, effort: Option<Effort>, prices: &PriceTable) -> Estimate {
        self.estimate_for(None, request, effort, prices)
    }

    /// The estimate for the request of the run in folder `workspace`: like
    /// [`HistoryIndex::estimate`], and that run is never part of its own
    /// sample (a record of it, once it ended, is left out).
    pub fn estimate_for(
        &self,
        workspace: Option<&str>,
        request: &str,
        effort: Option<Effort>,
        prices: &PriceTable,
    ) -> Estimate {
        let own = workspace.unwrap_or("");
        self.with(|l, file| {
            let fits = |e: &Entry| {
                e.outcome == Outcome::Completed
                    && effort.is_none_or(|x| e.effort == Some(x))
                    && e.workspace != own
            };
            let similar = strong(rank(
                Corpus {
                    bm25: &l.bm25,
                    entries: &l.entries,
                    details: &|d| l.details(file, d),
                },
                request,
                "",
                10,
                LAYER4_MIN_MATCHED,
                &|d| l.alive[d] && fits(&l.entries[d]),
            ));
            let (basis, docs): (Basis, Vec<usize>) = if similar.len() >= MIN_SIMILAR {
                (
                    Basis::Similar,
                    similar
                        .iter()
                        .filter_map(|s| l.by_workspace.get(&s.workspace).copied())
                        .collect(),
                )
            } else {
                let newest = l.newest_first();
                let pick = |filter: &dyn Fn(&Entry) -> bool| -> Vec<usize> {
                    newest
                        .iter()
                        .copied()
                        .filter(|d| filter(&l.entries[*d]))
                        .take(ESTIMATE_FALLBACK_RUNS)
                        .collect()
                };
                let by_effort = if effort.is_some() {
                    pick(&fits)
                } else {
                    Vec::new()
                };
                if by_effort.is_empty() {
                    (
                        Basis::All,
                        pick(&|e| e.outcome == Outcome::Completed && e.workspace != own),
                    )
                } else {
                    (Basis::Effort, by_effort)
                }
            };
            let records = l.records(file, &docs);
            let sample: Vec<&RunRecord> = records.iter().collect();
            estimate(basis, &sample, prices)
        })
    }

    /// The review patterns reviewing `agent`'s Layer 4 gives it, at most
    /// `limit` ([`crate::layer4::reviewer_patterns`]); `None` for an agent
    /// that reviews nothing.
    pub fn reviewer_patterns(&self, agent: &str, limit: usize) -> Option<ReviewerPatterns> {
        if crate::layer4::plan(agent).is_empty() {
            return None;
        }
        self.with(|l, file| {
            let d = l.derived(file);
            crate::layer4::reviewer_patterns(agent, &d.patterns, limit)
        })
    }

    /// The repository dashboard over every recorded run, or the runs of one
    /// workflow (reads every record).
    pub fn dashboard(&self, workflow: Option<&str>, prices: &PriceTable) -> Dashboard {
        self.with(|l, file| {
            let docs: Vec<usize> = (0..l.entries.len()).filter(|d| l.alive[*d]).collect();
            let records = l.records(file, &docs);
            dashboard(
                records
                    .iter()
                    .filter(|r| workflow.is_none_or(|w| r.workflow == w)),
                prices,
            )
        })
    }

    /// The summary of a recorded run.
    pub fn summary(&self, workspace: &str, prices: &PriceTable) -> Option<RunSummary> {
        self.get(workspace).map(|r| run_summary(&r, prices))
    }
}

#[cfg(test)]
mod tests {
    use super::HistoryIndex;

    /// Ready only once loaded and caught up, and not while someone holds
    /// the index (the start's background load).
    #[test]
    fn ready_only_when_loaded_and_nobody_is_loading() {
        let dir = tempfile::tempdir().unwrap();
        let specs = dir.path().join(".specs");
        std::fs::create_dir_all(&specs).unwrap();
        let history = HistoryIndex::open(&specs);
        assert!(!history.ready(), "not loaded yet");
        history.warm();
        assert!(history.ready());
        let loading = history.loaded.lock().unwrap();
        assert!(!history.ready(), "someone holds it");
        drop(loading);
        assert!(history.ready());
    }
}
