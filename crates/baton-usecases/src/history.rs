//! The run history (docs/history.md) in the use cases: a run is recorded
//! right after the state write that ends it, every `spawn_agent` prompt gets
//! its Layer 4 from past runs, a new request gets an estimate, and the
//! `history` tools and the `baton history` / `baton stats` commands read the
//! same numbers through the functions here.
//!
//! The history never fails a call: a record that cannot be written, a
//! damaged history file, an unreadable artifact are logged as warnings; the
//! next process's catch-up records a run whose record was lost, and a
//! damaged file is rebuilt from the workspaces.

use baton_config::Config;
use baton_engine::WorkspaceFiles;
/// A finding's severity, as the review-pattern replies count it.
pub use baton_engine::completion::verdict::Severity;
use baton_engine::pipeline::prompt::LearningBlock;
/// The replies of the history use cases (the library's own types).
pub use baton_history::{
    Basis, Dashboard, Estimate, Friction, Patterns, Reindexed, ReviewerPatterns, RunSummary,
    SimilarRun,
};
use baton_history::{DEFAULT_LAYER4_BUDGET_TOKENS, HistoryIndex, PatternFilter, PriceTable};
use baton_state::{Effort, Transition, WorkspaceRef, WorkspaceState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::Happened;
use crate::files::DiskFiles;
use crate::validate::{check_line, check_text};
use crate::{Error, ErrorCode, Result, Services};

/// The most request or design text a Layer-4 or estimate query reads, in
/// bytes (the history weighs the first 8 KiB of a request and 16 KiB of a
/// design; more is never needed).
pub const MAX_QUERY_TEXT: usize = 64 * 1024;
/// Longest query text a tool accepts.
pub const MAX_QUERY_ARG: usize = 16 * 1024;
/// Most items a tool returns.
pub const MAX_LIMIT: u32 = 50;

/// The price table of the configuration (`[prices]` in `baton.toml`,
/// `BATON_PRICE_USD_PER_MTOK`).
pub fn prices(config: &Config) -> PriceTable {
    PriceTable {
        default_usd_per_mtok: config.prices.default_usd_per_mtok,
        models: config.prices.models.clone(),
    }
}

/// Logs what the history had to say since the last call (a damaged file
/// rebuilt, a record not written).
pub fn log_warnings(history: &HistoryIndex) {
    for w in history.take_warnings() {
        tracing::warn!("{w}");
    }
}

/// Whether these transitions end the run (completed or abandoned).
pub fn ends_run<'a>(transitions: impl IntoIterator<Item = &'a Transition>) -> bool {
    transitions.into_iter().any(|t| {
        matches!(
            t,
            Transition::WorkflowCompleted { .. } | Transition::Abandoned { .. }
        )
    })
}

/// The lifecycle transitions among what one use case did.
pub fn transitions(happened: &[Happened]) -> impl Iterator<Item = &Transition> {
    happened.iter().filter_map(|h| match h {
        Happened::Transition(t) | Happened::Annotated(t, _) => Some(t),
        Happened::Event(..) => None,
    })
}

/// Records the run in `ws` from `state`, the state the call that ended it
/// has just written (called by [`Services::after_write`] only) (for a sealed run, the live state it completed with,
/// never the final form sealed before its commit). Never fails the call: a
/// failure is logged, and the next process's catch-up records the run from
/// its `state.json`. Returns the record (for the team database in team
/// mode), written or not.
pub(crate) fn record_ended(
    svc: &Services,
    ws: &WorkspaceRef,
    state: &WorkspaceState,
) -> Option<baton_history::RunRecord> {
    let record = match svc.history.record_run(&ws.dir, state) {
        Ok(record) => record,
        Err(e) => {
            tracing::warn!(
                "history: the end of {} was not recorded ({e}); the next baton process records it from its state.json",
                ws.display
            );
            svc.team
                .enabled()
                .then(|| svc.history.build(&ws.dir, state))
        }
    };
    log_warnings(&svc.history);
    record
}

/// The request and (once written) design of the run whose folder `files`
/// views, as Layer 4 and estimates read them.
fn run_texts(files: &DiskFiles) -> (String, Option<String>) {
    let head = |name: &str| {
        files.read(name).map(|mut t| {
            if t.len() > MAX_QUERY_TEXT {
                let mut end = MAX_QUERY_TEXT;
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                t.truncate(end);
            }
            t
        })
    };
    (head("request.md").unwrap_or_default(), head("design.md"))
}

/// Layer 4 of the prompt of `agent` in the run in `ws` (seed 001 "Data
/// Flywheel"): what past runs teach it, chosen per agent by the history
/// (docs/history.md §7) within [`DEFAULT_LAYER4_BUDGET_TOKENS`]; the prompt
/// assembler fits it into what Layers 1–3 leave. The run itself is never
/// one of its similar past runs. Empty without history. `files` is the
/// call's view of the run's folder (what the call already read is not read
/// again).
pub fn layer4(
    svc: &Services,
    ws: &WorkspaceRef,
    files: &DiskFiles,
    agent: &str,
) -> Vec<LearningBlock> {
    // Team mode: the team's history too (other machines' new records).
    crate::team::sync_history_for_prompt(svc);
    // The run's texts are read only when there is a past run to compare.
    let blocks = svc.history.layer4_reading(
        Some(&ws.name),
        agent,
        || run_texts(files),
        DEFAULT_LAYER4_BUDGET_TOKENS,
    );
    log_warnings(&svc.history);
    blocks
}

/// What a new request is likely to cost, from the completed runs most like
/// it (docs/history.md §8), and the line to show a person; `None` when no
/// run has completed yet.
pub fn request_estimate(svc: &Services, request: &str) -> Option<(Estimate, String)> {
    crate::team::sync_history(svc);
    let mut end = request.len().min(MAX_QUERY_TEXT);
    while !request.is_char_boundary(end) {
        end -= 1;
    }
    let estimate = svc
        .history
        .estimate(&request[..end], None, &prices(&svc.config));
    log_warnings(&svc.history);
    let line = estimate.display_line()?;
    Some((estimate, line))
}

fn limit(field: &str, value: Option<u32>, default: u32) -> Result<usize> {
    match value {
        None | Some(0) => Ok(default as usize),
        Some(n) if n <= MAX_LIMIT => Ok(n as usize),
        Some(n) => Err(Error::invalid(
            field,
            format!("{field} is {n}; at most {MAX_LIMIT}"),
        )),
    }
}

fn effort(field: &str, value: Option<&str>) -> Result<Option<Effort>> {
    match value {
        None | Some("") => Ok(None),
        Some("S") => Ok(Some(Effort::S)),
        Some("M") => Ok(Some(Effort::M)),
        Some("L") => Ok(Some(Effort::L)),
        Some(other) => Err(Error::invalid(
            field,
            format!("invalid effort {other:?}: must be one of S, M, L"),
        )),
    }
}

/// Arguments of `history_search`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// A request, a design or a few words (Japanese or English).
    pub query: String,
    /// At most this many runs (default 5, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Reply of `history_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchReply {
    /// The most similar ended runs, best first, with the words that matched.
    pub runs: Vec<SimilarRun>,
    /// Ended runs recorded.
    pub recorded: u32,
}

/// `history_search`: the past runs most like a text (BM25 over request and
/// design, docs/history.md §4).
pub fn search(svc: &Services, args: SearchArgs) -> Result<SearchReply> {
    crate::team::sync_history(svc);
    check_text("query", &args.query, MAX_QUERY_ARG)?;
    if args.query.trim().is_empty() {
        return Err(Error::invalid(
            "query",
            "query is empty: give a request or a few words",
        ));
    }
    let k = limit("limit", args.limit, 5)?;
    let runs = svc.history.similar(&args.query, k);
    let recorded = svc.history.len() as u32;
    log_warnings(&svc.history);
    Ok(SearchReply { runs, recorded })
}

/// Arguments of `history_patterns`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatternsArgs {
    /// Only findings of this reviewing agent (e.g. `design-reviewer`).
    #[serde(default)]
    pub agent: Option<String>,
    /// Only findings of this review phase (e.g. `phase-3b`).
    #[serde(default)]
    pub phase: Option<String>,
    /// Only this severity.
    #[serde(default)]
    pub severity: Option<Severity>,
    /// At most this many (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `history_patterns`: review findings of past runs merged into patterns,
/// heaviest (most frequent, most recent) first (docs/history.md §5).
pub fn patterns(svc: &Services, args: PatternsArgs) -> Result<Patterns> {
    crate::team::sync_history(svc);
    for (field, value) in [("agent", &args.agent), ("phase", &args.phase)] {
        if let Some(v) = value {
            check_line(field, v, 64)?;
        }
    }
    let filter = PatternFilter {
        agent: args.agent.filter(|a| !a.is_empty()),
        phase: args.phase.filter(|p| !p.is_empty()),
        severity: args.severity,
        limit: limit("limit", args.limit, 10)?,
    };
    let found = svc.history.patterns(&filter);
    log_warnings(&svc.history);
    Ok(found)
}

/// Arguments of `history_friction`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrictionArgs {
    /// At most this many (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `history_friction`: the friction map from past improvement reports
/// (docs/history.md §6).
pub fn friction(svc: &Services, args: FrictionArgs) -> Result<Friction> {
    crate::team::sync_history(svc);
    let found = svc.history.friction(limit("limit", args.limit, 10)?);
    log_warnings(&svc.history);
    Ok(found)
}

/// Arguments of `history_reindex` (none).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReindexArgs {}

/// `history_reindex`: rebuilds the history file from every workspace under
/// the specs root (a new generation; other processes reload it).
pub fn reindex(svc: &Services, _args: ReindexArgs) -> Result<Reindexed> {
    let report = svc.history.reindex().map_err(|e| {
        Error::new(
            ErrorCode::IoError,
            format!("the history could not be rebuilt: {e}"),
        )
        .with_details(serde_json::json!({ "file": svc.history.path().display().to_string() }))
    });
    log_warnings(&svc.history);
    // The rebuilt file holds this machine's runs only: in team mode, the
    // other machines' records are fetched again.
    if report.is_ok() {
        crate::team::resync_history(svc);
    }
    report
}

/// Arguments of `analytics_summary`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryArgs {
    /// Folder name, .specs/<name> or absolute path.
    pub workspace: String,
}

/// `analytics_summary`: one run's tokens, cost, time, loops, findings and
/// per-phase numbers — a live run from its folder, an ended one from its
/// folder or, once the folder is gone (archived), from its record.
pub fn summary(svc: &Services, args: SummaryArgs) -> Result<RunSummary> {
    check_text("workspace", &args.workspace, 1024)?;
    let ws = svc.store.resolve(&args.workspace)?;
    let prices = prices(&svc.config);
    let found = match svc.store.load(&ws) {
        Ok(state) => Ok(baton_history::analytics::run_summary(
            &svc.history.build(&ws.dir, &state),
            &prices,
        )),
        Err(baton_state::StoreError::NotFound { .. }) => {
            svc.history.summary(&ws.name, &prices).ok_or_else(|| {
                Error::new(
                    ErrorCode::NotFound,
                    format!(
                        "no run {} in {} and no record of it in the history",
                        ws.name,
                        svc.config.specs_root.display()
                    ),
                )
                .with_details(serde_json::json!({ "field": "workspace" }))
            })
        }
        Err(e) => Err(Error::from(e)),
    };
    log_warnings(&svc.history);
    found
}

/// Arguments of `analytics_dashboard`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DashboardArgs {
    /// Only runs of this workflow (e.g. `forge`).
    #[serde(default)]
    pub workflow: Option<String>,
}

/// `analytics_dashboard` and `baton stats`: runs, pass rates, loops, time,
/// tokens and cost by effort and phase over every ended run
/// (docs/history.md §8).
pub fn dashboard(svc: &Services, args: DashboardArgs) -> Result<Dashboard> {
    crate::team::sync_history(svc);
    if let Some(w) = &args.workflow {
        check_line("workflow", w, 64)?;
    }
    let d = svc.history.dashboard(
        args.workflow.as_deref().filter(|w| !w.is_empty()),
        &prices(&svc.config),
    );
    log_warnings(&svc.history);
    Ok(d)
}

/// Arguments of `analytics_estimate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EstimateArgs {
    /// The request text.
    pub request: String,
    /// Only runs of this effort: S, M or L.
    #[serde(default)]
    pub effort: Option<String>,
}

/// Reply of `analytics_estimate`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EstimateReply {
    /// p50/p90 tokens, work minutes and cost, and what they come from.
    #[serde(flatten)]
    pub estimate: Estimate,
    /// The estimate in one line for a person (absent with no completed run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
}

/// `analytics_estimate`: tokens, work minutes and cost to expect for a
/// request, from similar completed runs (else the effort's, else all).
pub fn estimate(svc: &Services, args: EstimateArgs) -> Result<EstimateReply> {
    crate::team::sync_history(svc);
    check_text("request", &args.request, MAX_QUERY_ARG)?;
    let effort = effort("effort", args.effort.as_deref())?;
    let estimate = svc
        .history
        .estimate(&args.request, effort, &prices(&svc.config));
    log_warnings(&svc.history);
    Ok(EstimateReply {
        display: estimate.display_line(),
        estimate,
    })
}

/// Most review patterns [`run_insights`] shows per reviewing agent.
pub const RUN_PATTERNS_SHOWN: usize = 3;

/// Reply of [`run_insights`]: what the history says about one run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunInsights {
    /// The run's summary, as `analytics_summary` gives it.
    pub summary: RunSummary,
    /// The estimate for the run's request from similar past runs (the run
    /// itself left out); absent when fewer than three similar runs
    /// completed (the effort's or all runs' numbers are no estimate *for
    /// this request*).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<EstimateReply>,
    /// Per reviewing agent of the run's workflow (phases the run skips left
    /// out), the heaviest review patterns its prompt is given (at most
    /// [`RUN_PATTERNS_SHOWN`]); agents with none are left out.
    pub review_patterns: Vec<ReviewerPatterns>,
}

/// One run's figures for the dashboard: its summary ([`summary`], the
/// same numbers as `analytics_summary`), the estimate for its request from
/// similar past runs, and the review patterns its reviewers are given in
/// their prompts (Layer 4, docs/history.md §7).
pub fn run_insights(svc: &Services, args: SummaryArgs) -> Result<RunInsights> {
    let summary = summary(svc, args.clone())?;
    let ws = svc.store.resolve(&args.workspace)?;
    let skipped = svc
        .store
        .load(&ws)
        .map(|s| s.skipped_phases)
        .unwrap_or_default();
    let (request, _) = run_texts(&DiskFiles::new(&ws.dir));
    let estimate = if request.trim().is_empty() {
        None
    } else {
        let e = svc
            .history
            .estimate_for(Some(&ws.name), &request, None, &prices(&svc.config));
        (e.basis == Basis::Similar).then(|| EstimateReply {
            display: e.display_line(),
            estimate: e,
        })
    };
    let mut review_patterns: Vec<ReviewerPatterns> = Vec::new();
    if let Ok(definition) = svc.workflow(&summary.workflow) {
        for phase in &definition.phases {
            let Some(agent) = phase.agent.as_deref() else {
                continue;
            };
            if skipped.contains(&phase.id) || review_patterns.iter().any(|r| r.agent == agent) {
                continue;
            }
            if let Some(found) = svc.history.reviewer_patterns(agent, RUN_PATTERNS_SHOWN)
                && !found.patterns.is_empty()
            {
                review_patterns.push(found);
            }
        }
    }
    log_warnings(&svc.history);
    Ok(RunInsights {
        summary,
        estimate,
        review_patterns,
    })
}
