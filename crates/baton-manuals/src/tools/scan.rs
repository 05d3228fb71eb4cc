//! `manual_scan`: sequential reading in fixed 12000-character chunks.

use serde_json::Value;

use crate::service::state::ManualService;
use crate::wire::args::{self, Args};
use crate::wire::convert::{to_args, typed};
use crate::wire::error::ManualError;
use crate::wire::ids as paths;
use crate::wire::types::{
    LineRange, NextCursor, ScanApplied, ScanInput, ScanOutput, TruncatedReason,
};
use baton_text::normalize::LineText;

/// Fixed chunk size of `manual_scan` (`SCAN_MAX_CHARS`); not settable.
pub const SCAN_MAX_CHARS: usize = 12_000;

/// Start position requested by a scan.
enum Start {
    Line(i64, &'static str),
    Offset(i64),
    Beginning,
}

impl ManualService {
    /// `manual_scan({manual_id, path, start_line?, cursor?})`.
    pub fn scan(&self, request: ScanInput) -> Result<ScanOutput, ManualError> {
        let (manual_id, path, start) = parse_scan(&to_args(&request))?;
        let file = self.root.resolve_file(&manual_id, &path)?;
        let text = LineText::new(&super::read_text(&file, self.config.max_file_bytes)?);
        let begin = match start {
            Start::Beginning => 0,
            Start::Line(line, field) => line_offset(&text, line, field)?,
            Start::Offset(offset) => {
                let offset = usize::try_from(offset).unwrap_or(usize::MAX);
                if offset > text.char_len() {
                    return Err(ManualError::invalid_parameter(
                        "cursor.char_offset",
                        format!(
                            "cursor.char_offset {offset} is beyond the end of the file ({} characters)",
                            text.char_len()
                        ),
                    ));
                }
                offset
            }
        };
        let chunk = scan_chunk(&text, begin);
        Ok(ScanOutput {
            manual_id,
            path: file.rel,
            text: chunk.text,
            applied_range: chunk.range,
            next_cursor: chunk.next_cursor,
            eof: chunk.eof,
            truncated: !chunk.eof,
            truncated_reason: if chunk.eof {
                TruncatedReason::None
            } else {
                TruncatedReason::MaxChars
            },
            applied: ScanApplied {
                max_chars: SCAN_MAX_CHARS as u32,
            },
        })
    }
}

/// A chunk of text starting at a char offset.
pub(crate) struct Chunk {
    pub text: String,
    pub range: LineRange,
    pub next_cursor: NextCursor,
    pub eof: bool,
}

/// Up to [`SCAN_MAX_CHARS`] characters from `begin`, ending after a newline
/// when one falls in the second half of the window.
pub(crate) fn scan_chunk(text: &LineText, begin: usize) -> Chunk {
    let end = text.window_end(begin, text.char_len(), SCAN_MAX_CHARS);
    let eof = end >= text.char_len();
    Chunk {
        text: text.slice(begin, end),
        range: range_of(text, begin, end),
        next_cursor: NextCursor {
            char_offset: (!eof).then_some(end as u64),
        },
        eof,
    }
}

/// Lines of the first and last character of `[begin, end)`.
pub(crate) fn range_of(text: &LineText, begin: usize, end: usize) -> LineRange {
    let start_line = text.line_of(begin) as u32;
    let end_line = if end > begin {
        text.line_of(end - 1) as u32
    } else {
        start_line
    };
    LineRange {
        start_line,
        end_line,
    }
}

fn line_offset(text: &LineText, line: i64, field: &str) -> Result<usize, ManualError> {
    let lines = text.line_count().max(1);
    let in_range = usize::try_from(line)
        .ok()
        .filter(|l| (1..=lines).contains(l));
    match in_range {
        Some(l) => Ok(text.line_start(l).unwrap_or(0)),
        None => Err(ManualError::invalid_parameter(
            field,
            format!("{field} {line} is out of range; the file has {lines} line(s)"),
        )),
    }
}

fn parse_cursor(cursor: Option<&Value>) -> Result<(Option<i64>, Option<i64>), ManualError> {
    match cursor {
        None => Ok((None, None)),
        Some(v @ (Value::Number(_) | Value::String(_))) => {
            Ok((None, Some(args::integer("cursor", v, 0)?)))
        }
        Some(v @ Value::Object(_)) => {
            let c = Args::new("cursor", v, &["start_line", "char_offset"])?;
            Ok((c.opt_int("start_line", 1)?, c.opt_int("char_offset", 0)?))
        }
        Some(other) => Err(ManualError::invalid_parameter(
            "cursor",
            format!(
                "cursor must be an object {{start_line?, char_offset?}} or a char offset (number or numeric string), got {}",
                args::type_name(other)
            ),
        )),
    }
}

impl ScanInput {
    /// A `manual_scan` request from raw JSON arguments, by seed 002's rules.
    pub fn from_json(args: &Value) -> Result<ScanInput, ManualError> {
        parse_scan(args)?;
        typed(
            args,
            &[
                "start_line",
                "cursor",
                "cursor.start_line",
                "cursor.char_offset",
            ],
            &[],
        )
    }
}

fn parse_scan(args: &Value) -> Result<(String, String, Start), ManualError> {
    super::reject_max_chars(args)?;
    let a = Args::new("", args, &["manual_id", "path", "start_line", "cursor"])?;
    let manual_id = match a.get("manual_id") {
        Some(v) => paths::manual_id("manual_id", v)?,
        None => {
            return Err(ManualError::invalid_parameter(
                "manual_id",
                "manual_id is required",
            ));
        }
    };
    let path = match a.get("path") {
        Some(v) => paths::relative_path("path", v)?,
        None => return Err(ManualError::invalid_path("path is required")),
    };
    let start_line = a.opt_int("start_line", 1)?;
    let (cursor_line, cursor_offset) = parse_cursor(a.get("cursor"))?;
    let start = match (start_line, cursor_offset, cursor_line) {
        (Some(l), _, _) => Start::Line(l, "start_line"),
        (None, Some(o), _) => Start::Offset(o),
        (None, None, Some(l)) => Start::Line(l, "cursor.start_line"),
        (None, None, None) => Start::Beginning,
    };
    Ok((manual_id, path, start))
}
