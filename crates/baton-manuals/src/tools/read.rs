//! `manual_read`: a section, following sections, a snippet or a whole file.

use serde_json::Value;

use super::scan::{range_of, scan_chunk};
use crate::analyze::sections::{self, SectionInfo};
use crate::analyze::terms::fnv1a;
use crate::service::state::{ManualService, lock};
use crate::wire::args::{self, Args};
use crate::wire::convert::{to_args, typed};
use crate::wire::error::{ManualError, ManualErrorCode};
use crate::wire::ids::{self as paths, FileType};
use crate::wire::types::{ReadApplied, ReadInput, ReadMode, ReadOutput, ReadScope};
use baton_text::normalize::LineText;

/// Fixed maximum of characters returned (`max_chars`).
pub const READ_MAX_CHARS: usize = 12_000;
/// Fixed maximum of sections of `scope=sections` (`max_sections`).
pub const MAX_SECTIONS: usize = 20;
/// Base size of `scope=snippet`, before `expand`.
pub const SNIPPET_CHARS: usize = 800;
struct ReadRequest {
    manual_id: String,
    path: String,
    start_line: Option<i64>,
    scope: Option<ReadScope>,
    allow_file: bool,
    before: usize,
    after: usize,
}

impl ManualService {
    /// `manual_read({ref: {manual_id, path, start_line?}, scope?, allow_file?, expand?})`.
    pub fn read(&self, request: ReadInput) -> Result<ReadOutput, ManualError> {
        let req = parse(&to_args(&request))?;
        let file = self.root.resolve_file(&req.manual_id, &req.path)?;
        let scope = match (file.file_type, req.scope) {
            (FileType::Md, None) => ReadScope::Section,
            (FileType::Json, None) => ReadScope::File,
            (FileType::Json, Some(s @ (ReadScope::Section | ReadScope::Sections))) => {
                return Err(ManualError::new(
                    ManualErrorCode::InvalidScope,
                    format!(
                        "scope={} is not available for .json files; use scope=file (default) or snippet, or manual_scan",
                        s.as_str()
                    ),
                ));
            }
            (FileType::Md, Some(ReadScope::File))
                if !(self.config.allow_file_scope && req.allow_file) =>
            {
                let why = if self.config.allow_file_scope {
                    "pass allow_file=true to read a whole .md file"
                } else {
                    "the server does not allow whole .md files (ALLOW_FILE_SCOPE is off); use scope=section/sections or manual_scan"
                };
                return Err(ManualError::new(
                    ManualErrorCode::InvalidScope,
                    format!("scope=file: {why}"),
                )
                .with_details(serde_json::json!({
                    "allow_file_scope": self.config.allow_file_scope,
                    "allow_file": req.allow_file,
                })));
            }
            (_, Some(s)) => s,
        };
        let raw = super::read_text(&file, self.config.max_file_bytes)?;
        let content_hash = fnv1a(raw.as_bytes());
        let text = LineText::new(&raw);
        let sections = match file.file_type {
            FileType::Md => {
                let stem = file.rel.rsplit('/').next().unwrap_or(&file.rel);
                let stem = stem.rsplit_once('.').map(|(s, _)| s).unwrap_or(stem);
                sections::parse_markdown(&raw, stem)
            }
            FileType::Json => vec![sections::json_section(&raw, &file.rel)],
        };
        let line = match req.start_line {
            None => sections.first().map(|s| s.start_line as usize).unwrap_or(1),
            Some(l) => {
                let lines = text.line_count();
                let l = usize::try_from(l).unwrap_or(usize::MAX);
                if l > lines.max(1) {
                    return Err(ManualError::not_found(format!(
                        "ref.start_line {l} is beyond the end of {:?} ({lines} lines)",
                        file.rel
                    )));
                }
                l
            }
        };
        let section_idx = containing_section(&sections, line as u32);
        let key = (req.manual_id.clone(), file.rel.clone());

        if file.file_type == FileType::Md && scope == ReadScope::Section {
            let progress = lock(&self.read_progress).get(&key);
            let section_start = section_idx
                .and_then(|i| sections.get(i))
                .map(|s| s.start_line);
            if let (Some(p), Some(start)) = (progress, section_start)
                && p.section_start == start
                && p.content_hash == content_hash
                && p.next_offset < text.char_len()
            {
                let chunk = scan_chunk(&text, p.next_offset);
                let end_offset = chunk
                    .next_cursor
                    .char_offset
                    .map(|o| o as usize)
                    .unwrap_or(text.char_len());
                lock(&self.read_progress).set(key, start, content_hash, end_offset);
                return Ok(ReadOutput {
                    text: chunk.text,
                    truncated: !chunk.eof,
                    applied: applied(scope, ReadMode::ScanFallback),
                    applied_range: chunk.range,
                    next_cursor: Some(chunk.next_cursor),
                    eof: Some(chunk.eof),
                });
            }
        }

        let (mut begin, mut end) = selection(&text, &sections, section_idx, line, scope);
        begin = begin.saturating_sub(req.before);
        end = end.saturating_add(req.after).min(text.char_len());
        let cut = text.window_end(begin, end, READ_MAX_CHARS);
        let truncated = cut < end;
        if file.file_type == FileType::Md
            && scope == ReadScope::Section
            && let Some(s) = section_idx.and_then(|i| sections.get(i))
        {
            lock(&self.read_progress).set(key, s.start_line, content_hash, cut);
        }
        Ok(ReadOutput {
            text: text.slice(begin, cut),
            truncated,
            applied: applied(scope, ReadMode::Read),
            applied_range: range_of(&text, begin, cut),
            next_cursor: None,
            eof: None,
        })
    }
}

fn applied(scope: ReadScope, mode: ReadMode) -> ReadApplied {
    ReadApplied {
        scope,
        max_sections: (scope == ReadScope::Sections).then_some(MAX_SECTIONS as u32),
        max_chars: READ_MAX_CHARS as u32,
        mode,
    }
}

/// The last section starting at or before `line`.
fn containing_section(sections: &[SectionInfo], line: u32) -> Option<usize> {
    sections.iter().rposition(|s| s.start_line <= line)
}

/// Char range `[begin, end)` selected by a scope, before `expand`.
fn selection(
    text: &LineText,
    sections: &[SectionInfo],
    section_idx: Option<usize>,
    line: usize,
    scope: ReadScope,
) -> (usize, usize) {
    let len = text.char_len();
    let line_start = |l: u32| text.line_start(l as usize).unwrap_or(len);
    let line_end = |l: u32| text.line_end(l as usize).unwrap_or(len);
    let section = section_idx.and_then(|i| sections.get(i));
    match (scope, section) {
        (ReadScope::File, _) | (_, None) => (0, len),
        (ReadScope::Section, Some(s)) => (line_start(s.start_line), line_end(s.end_line)),
        (ReadScope::Sections, Some(s)) => {
            let first = section_idx.unwrap_or(0);
            let last = (first + MAX_SECTIONS - 1).min(sections.len() - 1);
            let last_line = sections
                .get(last)
                .map(|x| x.body_end_line)
                .unwrap_or(s.end_line);
            (
                line_start(s.start_line),
                line_end(last_line.max(s.body_end_line)),
            )
        }
        (ReadScope::Snippet, Some(_)) => {
            let begin = text.line_start(line).unwrap_or(0);
            (begin, text.window_end(begin, len, SNIPPET_CHARS))
        }
    }
}

impl ReadInput {
    /// A `manual_read` request from raw JSON arguments, by seed 002's rules.
    pub fn from_json(args: &Value) -> Result<ReadInput, ManualError> {
        parse(args)?;
        typed(
            args,
            &[
                "ref.start_line",
                "expand.before_chars",
                "expand.after_chars",
            ],
            &["scope"],
        )
    }
}

fn parse(args: &Value) -> Result<ReadRequest, ManualError> {
    super::reject_max_chars(args)?;
    let a = Args::new("", args, &["ref", "scope", "allow_file", "expand"])?;
    let Some(reference) = a.get("ref") else {
        return Err(ManualError::invalid_parameter(
            "ref",
            "ref is required: {manual_id, path, start_line?} (e.g. a candidate's ref from manual_hits)",
        ));
    };
    let r = Args::new(
        "ref",
        reference,
        &["manual_id", "path", "start_line", "target", "title"],
    )?;
    let manual_id = match r.get("manual_id") {
        Some(v) => paths::manual_id("ref.manual_id", v)?,
        None => {
            return Err(ManualError::invalid_parameter(
                "ref.manual_id",
                "ref.manual_id is required",
            ));
        }
    };
    let path = match r.get("path") {
        Some(v) => paths::relative_path("ref.path", v)?,
        None => return Err(ManualError::invalid_path("ref.path is required")),
    };
    let start_line = r.opt_int("start_line", 1)?;
    let scope = match a.get("scope") {
        None => None,
        Some(Value::String(s)) => Some(match s.trim() {
            "snippet" => ReadScope::Snippet,
            "section" => ReadScope::Section,
            "sections" => ReadScope::Sections,
            "file" => ReadScope::File,
            other => {
                return Err(ManualError::invalid_parameter(
                    "scope",
                    format!(
                        "unknown scope {}; use snippet, section, sections or file",
                        args::echo(other)
                    ),
                ));
            }
        }),
        Some(other) => {
            return Err(ManualError::invalid_parameter(
                "scope",
                format!("scope must be a string, got {}", args::type_name(other)),
            ));
        }
    };
    let allow_file = a.opt_bool("allow_file")?.unwrap_or(false);
    let (before, after) = match a.get("expand") {
        None => (0, 0),
        Some(e) => {
            let e = Args::new("expand", e, &["before_chars", "after_chars"])?;
            (
                e.opt_int("before_chars", 0)?.unwrap_or(0),
                e.opt_int("after_chars", 0)?.unwrap_or(0),
            )
        }
    };
    Ok(ReadRequest {
        manual_id,
        path,
        start_line,
        scope,
        allow_file,
        before: usize::try_from(before).unwrap_or(usize::MAX),
        after: usize::try_from(after).unwrap_or(usize::MAX),
    })
}
