//! Tool input types (for the MCP `inputSchema`) and output types.
//!
//! The input types document the arguments for the agent and generate the
//! JSON Schema; the service itself validates the raw JSON (see `args`), so
//! that every bad value yields a `ManualError` with a stable code.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::ids::FileType;
use crate::wire::signals::Signal;

// ---------------------------------------------------------------- inputs

/// Arguments of `manual_ls` (the typed request; `from_json` reads raw
/// JSON arguments by seed 002's rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsInput {
    /// Omit to list the manuals; a manual id (`insurance`) or a folder id
    /// from a listing (`insurance/chapter1`) lists its files and folders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Arguments of `manual_toc`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TocInput {
    /// Manual id from `manual_ls` (not `"manuals"`).
    pub manual_id: String,
    /// Only files at or under this path (`chapter1`); needed above 200 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// The previous reply's `next_offset`, to continue (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
}

/// Search budget of `manual_find`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindBudget {
    /// Candidates kept in the trace (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_candidates: Option<u64>,
    /// Time budget in ms (default 60000); further manuals are skipped once
    /// it is spent (`unscanned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub time_ms: Option<u64>,
}

/// Arguments of `manual_find`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInput {
    /// Natural language or keywords (Japanese or English, ≤ 4096 bytes);
    /// quote a phrase ("…" or 「」) to require it.
    pub query: String,
    /// Manual to search (default: `DEFAULT_MANUAL_ID`, else all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_id: Option<String>,
    /// When the manual yields no usable result, also search the other
    /// manuals (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand_scope: Option<bool>,
    /// Continue a search: only the sections that trace left `unscanned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_unscanned_from_trace_id: Option<String>,
    /// Also return the claim graph (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_claim_graph: Option<bool>,
    /// Reuse a cached result (default true; any manual edit invalidates it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_cache: Option<bool>,
    /// Search budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<FindBudget>,
    /// Extension: 1–2 terms the answer should contain (a soft filter;
    /// okurigana variants count). Rarely needed: the query is enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2))]
    pub required_terms: Option<Vec<String>>,
}

/// What `manual_hits` pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HitsKind {
    /// Ranked sections.
    Candidates,
    /// Files cut by the budget.
    Unscanned,
    /// Claims with evidence both ways.
    Conflicts,
    /// Unsupported claims.
    Gaps,
    /// Top sections with their claims.
    IntegratedTop,
    /// Claims.
    Claims,
    /// Evidences.
    Evidences,
    /// Edges.
    Edges,
}

impl HitsKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            HitsKind::Candidates => "candidates",
            HitsKind::Unscanned => "unscanned",
            HitsKind::Conflicts => "conflicts",
            HitsKind::Gaps => "gaps",
            HitsKind::IntegratedTop => "integrated_top",
            HitsKind::Claims => "claims",
            HitsKind::Evidences => "evidences",
            HitsKind::Edges => "edges",
        }
    }

    /// Every kind.
    pub const ALL: [HitsKind; 8] = [
        HitsKind::Candidates,
        HitsKind::Unscanned,
        HitsKind::Conflicts,
        HitsKind::Gaps,
        HitsKind::IntegratedTop,
        HitsKind::Claims,
        HitsKind::Evidences,
        HitsKind::Edges,
    ];
}

/// Arguments of `manual_hits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HitsInput {
    /// From `manual_find` (traces expire).
    pub trace_id: String,
    /// Default `candidates`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<HitsKind>,
    /// Rows to skip (integer >= 0, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Rows to return (integer >= 1, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

/// A location in a manual.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRef {
    /// Manual id.
    pub manual_id: String,
    /// File path inside the manual (as in `manual_hits` / `manual_toc`).
    pub path: String,
    /// A line inside the wanted section (e.g. a candidate's `start_line`).
    /// Omitted: the first section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Ignored (a candidate's ref can be passed as is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Accepted and ignored (a candidate's title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// How much `manual_read` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadScope {
    /// ~800 characters from `start_line`.
    Snippet,
    /// The section at `start_line` with its sub-sections.
    Section,
    /// That section and the next ones (up to 20).
    Sections,
    /// The whole file (Markdown needs `allow_file`).
    File,
}

impl ReadScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadScope::Snippet => "snippet",
            ReadScope::Section => "section",
            ReadScope::Sections => "sections",
            ReadScope::File => "file",
        }
    }
}

/// Extra context around the selected text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadExpand {
    /// Characters to add before the selection (integer >= 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_chars: Option<u64>,
    /// Characters to add after the selection (integer >= 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_chars: Option<u64>,
}

/// Arguments of `manual_read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// Where to read.
    #[serde(rename = "ref")]
    pub reference: ReadRef,
    /// Default `section` (.md), `file` (.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ReadScope>,
    /// Must be true to read a whole `.md` file (and the server must allow it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_file: Option<bool>,
    /// Context to add around the selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand: Option<ReadExpand>,
}

/// Cursor object of `manual_scan`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanCursor {
    /// Line to start at (integer, 1..=line count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Character offset (from `next_cursor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_offset: Option<u64>,
}

/// `cursor` of `manual_scan`: an object, or a character offset as a number or numeric string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ScanCursorInput {
    /// `{start_line?, char_offset?}`.
    Object(ScanCursor),
    /// Shorthand for `{char_offset: n}`.
    Offset(u64),
    /// Shorthand for `{char_offset: n}` as a string.
    OffsetText(String),
}

/// Arguments of `manual_scan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanInput {
    /// Manual id.
    pub manual_id: String,
    /// File path inside the manual.
    pub path: String,
    /// Line to start at (wins over `cursor`). Default: the cursor, else line 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub start_line: Option<u64>,
    /// Where to continue: pass the previous call's `next_cursor` (or just its `char_offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<ScanCursorInput>,
}

// ---------------------------------------------------------------- outputs

/// Kind of a `manual_ls` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LsKind {
    /// A manual or a folder.
    Dir,
    /// A `.md` or `.json` file.
    File,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LsItem {
    /// Id to pass to `manual_ls` (dirs) — `<manual>/<path>` below a manual.
    pub id: String,
    /// Entry name.
    pub name: String,
    /// `dir` or `file`.
    pub kind: LsKind,
    /// Files only: path relative to the manual (for `manual_read`/`manual_scan`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Files only: `md` or `json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_type: Option<FileType>,
}

/// Result of `manual_ls`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LsOutput {
    /// The listed id (`manuals` for the root).
    pub id: String,
    /// Children, directories and files sorted by name.
    pub items: Vec<LsItem>,
}

/// One heading of a file.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TocHeading {
    /// Heading text.
    pub title: String,
    /// Line of the heading (pass as `ref.start_line` to `manual_read`).
    pub line_start: u32,
    /// Heading level 1–6.
    pub level: u8,
}

/// Headings of one file.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TocFile {
    /// File path inside the manual.
    pub path: String,
    /// Headings in document order (empty for JSON files).
    pub headings: Vec<TocHeading>,
    /// Present (true) when the file has more headings than one reply holds:
    /// the rest are not listed (read the file with `manual_scan`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headings_truncated: bool,
}

/// Result of `manual_toc`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TocOutput {
    /// Files sorted by path (from `offset`, as many as one reply holds).
    pub items: Vec<TocFile>,
    /// Files in scope.
    pub total_files: usize,
    /// When more files follow: call again with `offset` = this value.
    pub next_offset: Option<usize>,
}

/// Question facet of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Facet {
    /// What something is.
    Definition,
    /// How to do something.
    Procedure,
    /// Conditions, amounts, limits, who/what qualifies.
    Eligibility,
    /// Exclusions and exceptions.
    Exceptions,
    /// Comparison of two things.
    Compare,
    /// No recognisable facet.
    Unknown,
}

/// Support state of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// At least one evidence supports it and none contradicts it.
    Supported,
    /// Evidence both supports and contradicts it.
    Conflicted,
    /// No evidence supports it.
    Unresolved,
}

/// One claim (an aspect of the question that the manual should answer).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Claim {
    /// `claim:<facet>:<n>`.
    pub claim_id: String,
    /// Facet.
    pub facet: Facet,
    /// The claim text.
    pub text: String,
    /// Support state.
    pub status: ClaimStatus,
    /// 0–1.
    pub confidence: f64,
}

/// Reference of an evidence.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EvidenceRef {
    /// Always `manual`.
    pub target: String,
    /// Manual id.
    pub manual_id: String,
    /// File path.
    pub path: String,
    /// Section heading line.
    pub start_line: u32,
}

/// One evidence (a top-ranked section).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Evidence {
    /// `ev:<rank>`.
    pub evidence_id: String,
    /// Where it is.
    #[serde(rename = "ref")]
    pub reference: EvidenceRef,
    /// Ranking signals.
    pub signals: Vec<Signal>,
    /// Ranking score.
    pub score: f64,
    /// 16 hex digits identifying the section text (equal text, equal digest).
    pub snippet_digest: String,
}

/// Relation of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// The evidence answers the claim.
    Supports,
    /// The evidence states an exception to the claim.
    Contradicts,
    /// The evidence is related but does not settle the claim.
    RequiresFollowup,
}

/// Claim → evidence edge.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Edge {
    /// Claim id.
    pub from_claim_id: String,
    /// Evidence id.
    pub to_evidence_id: String,
    /// Relation.
    pub relation: Relation,
    /// 0–1.
    pub confidence: f64,
}

/// Coverage of a facet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CoverageStatus {
    /// Every claim of the facet is supported.
    Covered,
    /// Some claims are supported or conflicted.
    Partial,
    /// No claim of the facet is supported.
    Missing,
}

/// Per-facet counts.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FacetRow {
    /// Facet.
    pub facet: Facet,
    /// Claims of the facet.
    pub claim_count: u32,
    /// Supported claims.
    pub supported_count: u32,
    /// Conflicted claims.
    pub conflicted_count: u32,
    /// Unresolved claims.
    pub unresolved_count: u32,
    /// Coverage.
    pub coverage_status: CoverageStatus,
}

/// The claim graph: the integration of the search results.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ClaimGraph {
    /// Claims derived from the query.
    pub claims: Vec<Claim>,
    /// Top sections.
    pub evidences: Vec<Evidence>,
    /// Claim → evidence relations.
    pub edges: Vec<Edge>,
    /// Per-facet coverage.
    pub facets: Vec<FacetRow>,
}

/// Overall state of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationStatus {
    /// Every claim supported, no conflict: read the top candidates.
    Ready,
    /// Candidates exist but some claim is unsupported or conflicted.
    NeedsFollowup,
    /// No candidate at all.
    Blocked,
}

/// Summary of a search, derived from the claim graph.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Summary {
    /// Files in the searched scope.
    pub scanned_files: u32,
    /// Sections in the searched scope.
    pub scanned_nodes: u32,
    /// Candidates kept (see `manual_hits`).
    pub candidates: u32,
    /// Largest share of candidates coming from one file (0–1).
    pub file_bias_ratio: f64,
    /// Equals `manual_hits(kind="conflicts").total`.
    pub conflict_count: u32,
    /// Equals `manual_hits(kind="gaps").total`.
    pub gap_count: u32,
    /// Overall state.
    pub integration_status: IntegrationStatus,
}

/// Type of a suggested next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextActionType {
    /// Page through results.
    ManualHits,
    /// Read a section.
    ManualRead,
    /// Search again.
    ManualFind,
}

/// A suggested next call with ready-to-use arguments.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NextAction {
    /// The tool.
    #[serde(rename = "type")]
    pub action_type: NextActionType,
    /// 0–1, or null when unknown.
    pub confidence: Option<f64>,
    /// Arguments for the tool.
    pub params: Option<Value>,
}

/// Result of `manual_find`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FindOutput {
    /// Pass to `manual_hits` to see the candidates.
    pub trace_id: String,
    /// Only with `include_claim_graph=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_graph: Option<ClaimGraph>,
    /// Counts derived from the claim graph.
    pub summary: Summary,
    /// Suggested next calls.
    pub next_actions: Vec<NextAction>,
}

/// Result of `manual_hits`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HitsOutput {
    /// The trace.
    pub trace_id: String,
    /// The kind listed.
    pub kind: HitsKind,
    /// Applied offset.
    pub offset: u64,
    /// Applied limit.
    pub limit: u64,
    /// Rows of this kind in total.
    pub total: u64,
    /// `candidates` only: the manual of every row when they all share one
    /// (then `items[].ref.manual_id` is omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual_id: Option<String>,
    /// The rows.
    pub items: Vec<Value>,
}

/// Line range of returned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LineRange {
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
}

/// Where to continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NextCursor {
    /// Character offset to pass as `cursor`; null at the end of the file.
    pub char_offset: Option<u64>,
}

/// How `manual_read` produced the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadMode {
    /// Normal read of the requested scope.
    Read,
    /// The same section was requested again: the text continues after it, like `manual_scan`.
    ScanFallback,
}

/// Settings applied by `manual_read`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReadApplied {
    /// Scope used.
    pub scope: ReadScope,
    /// 20 for `sections`, null otherwise.
    pub max_sections: Option<u32>,
    /// Always 12000.
    pub max_chars: u32,
    /// `read` or `scan_fallback`.
    pub mode: ReadMode,
}

/// Result of `manual_read`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReadOutput {
    /// The text (at most 12000 characters).
    pub text: String,
    /// Whether the selection was cut at `max_chars`.
    pub truncated: bool,
    /// Settings used.
    pub applied: ReadApplied,
    /// Lines the text spans.
    pub applied_range: LineRange,
    /// `scan_fallback` only: where a `manual_scan` would continue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<NextCursor>,
    /// `scan_fallback` only: whether the text reaches the end of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eof: Option<bool>,
}

/// Why a scan chunk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TruncatedReason {
    /// The file ended.
    None,
    /// The 12000-character limit was reached.
    MaxChars,
}

/// Settings applied by `manual_scan`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ScanApplied {
    /// Always 12000.
    pub max_chars: u32,
}

/// Result of `manual_scan`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ScanOutput {
    /// Manual id.
    pub manual_id: String,
    /// File path.
    pub path: String,
    /// The chunk.
    pub text: String,
    /// Lines of the first and last character of the chunk.
    pub applied_range: LineRange,
    /// Where to continue.
    pub next_cursor: NextCursor,
    /// Whether the chunk reaches the end of the file.
    pub eof: bool,
    /// Whether the file continues after the chunk.
    pub truncated: bool,
    /// `none` or `max_chars`.
    pub truncated_reason: TruncatedReason,
    /// Settings used.
    pub applied: ScanApplied,
}

impl FindInput {
    /// A search for `query` with every option at its default.
    pub fn new(query: impl Into<String>) -> FindInput {
        FindInput {
            query: query.into(),
            manual_id: None,
            expand_scope: None,
            only_unscanned_from_trace_id: None,
            include_claim_graph: None,
            use_cache: None,
            budget: None,
            required_terms: None,
        }
    }
}

impl HitsInput {
    /// The first page of a trace's candidates.
    pub fn new(trace_id: impl Into<String>) -> HitsInput {
        HitsInput {
            trace_id: trace_id.into(),
            kind: None,
            offset: None,
            limit: None,
        }
    }
}

impl ReadInput {
    /// The default read (a section of `.md`, the whole `.json`) at a place.
    pub fn at(
        manual_id: impl Into<String>,
        path: impl Into<String>,
        start_line: Option<u64>,
    ) -> ReadInput {
        ReadInput {
            reference: ReadRef {
                manual_id: manual_id.into(),
                path: path.into(),
                start_line,
                target: None,
                title: None,
            },
            scope: None,
            allow_file: None,
            expand: None,
        }
    }
}
