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
pub const MANUAL_LS_DESCRIPTION: &str = "List manuals and their files. No id (or id=\"manuals\"): the manuals. \
A manual id: its top-level folders and .md/.json files (one level). A folder id from a listing: that folder. \
File ids cannot be listed; use manual_toc/manual_read/manual_scan on files.";

/// Description of `manual_toc`.
pub const MANUAL_TOC_DESCRIPTION: &str = "Table of contents of one manual: every file with its headings \
(title, line_start, level). Use line_start as ref.start_line in manual_read. Manuals with more than 200 files \
need path_prefix.";

/// Description of `manual_find`.
pub const MANUAL_FIND_DESCRIPTION: &str = "Search manuals (Japanese or English) and get a trace_id plus a summary; \
the ranked sections are read with manual_hits(trace_id). Phrase queries naturally; quote a phrase to require it. \
summary.integration_status: ready = read the top candidates; needs_followup = see manual_hits kind gaps/conflicts; \
blocked = nothing matched. next_actions holds ready-made follow-up calls.";

/// Description of `manual_hits`.
pub const MANUAL_HITS_DESCRIPTION: &str = "Page through a manual_find result. kind: candidates (default; ranked \
sections with ref {path, start_line}), integrated_top, gaps, conflicts, unscanned, claims, evidences, edges. \
offset (default 0) and limit (default 50).";

/// Description of `manual_read`.
pub const MANUAL_READ_DESCRIPTION: &str = "Read text from a manual file at ref {manual_id, path, start_line}. \
scope: section (default for .md: the section containing start_line, with sub-sections), sections (following \
sections, up to 20), snippet (~800 chars), file (default for .json; .md only if the server allows it and \
allow_file=true). At most 12000 chars. Reading the same section again continues after it (mode scan_fallback).";

/// Description of `manual_scan`.
pub const MANUAL_SCAN_DESCRIPTION: &str = "Read a manual file sequentially in 12000-character chunks. Start at \
start_line (default 1) or at cursor (the previous next_cursor, or its char_offset). Repeat with next_cursor \
until eof is true.";
