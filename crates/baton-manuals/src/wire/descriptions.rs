//! Tool descriptions for `tools/list`, written for the agent.

/// The six tool names, in catalogue order.
pub const TOOL_NAMES: [&str; 6] = [
    "manual_ls",
    "manual_toc",
    "manual_find",
    "manual_hits",
    "manual_read",
    "manual_scan",
];

/// Description of `manual_ls`.
pub const MANUAL_LS_DESCRIPTION: &str = "List the manuals, or one manual's or folder's files and \
folders (one level). Files are read with manual_toc, manual_read or manual_scan.";

/// Description of `manual_toc`.
pub const MANUAL_TOC_DESCRIPTION: &str = "Table of contents of one manual: every file with its headings \
(title, line_start, level). Use line_start as ref.start_line in manual_read. Manuals with more than 200 files \
need path_prefix.";

/// Description of `manual_find`.
pub const MANUAL_FIND_DESCRIPTION: &str = "Search manuals (Japanese or English) and get a trace_id plus a summary; \
the ranked sections are read with manual_hits(trace_id). summary.integration_status: ready = read the top candidates; needs_followup = see manual_hits kind gaps/conflicts; \
blocked = nothing matched. next_actions holds ready-made follow-up calls.";

/// Description of `manual_hits`.
pub const MANUAL_HITS_DESCRIPTION: &str = "Page through a manual_find result by kind (default \
candidates: ranked sections with ref {path, start_line}).";

/// Description of `manual_read`.
pub const MANUAL_READ_DESCRIPTION: &str = "Read text from a manual file at ref {manual_id, path, \
start_line}, by scope; at most 12000 chars. Reading the same section again continues after it (mode \
scan_fallback).";

/// Description of `manual_scan`.
pub const MANUAL_SCAN_DESCRIPTION: &str = "Read a manual file sequentially in 12000-character chunks. Start at \
start_line (default 1) or at cursor (the previous next_cursor, or its char_offset). Repeat with next_cursor \
until eof is true.";
