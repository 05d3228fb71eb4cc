//! `manual_toc`: the headings of every file of a manual, in pages of
//! bounded size.

use serde_json::{Value, json};

use crate::service::state::ManualService;
use crate::wire::args::Args;
use crate::wire::convert::{to_args, typed};
use crate::wire::error::{ManualError, ManualErrorCode};
use crate::wire::ids as paths;
use crate::wire::types::{TocFile, TocHeading, TocInput, TocOutput};

/// Most files in scope of one `manual_toc` call; more → `needs_narrow_scope`.
pub const TOC_MAX_FILES: usize = 200;
/// Most headings in one reply; the rest follow with `offset = next_offset`
/// (a single file with more is cut, `headings_truncated: true`).
pub const TOC_MAX_HEADINGS: usize = 2_000;
/// Most bytes of heading titles in one reply (same paging as above).
pub const TOC_MAX_TITLE_BYTES: usize = 256 * 1024;

impl ManualService {
    /// `manual_toc({manual_id, path_prefix?, offset?})`.
    pub fn toc(&self, request: TocInput) -> Result<TocOutput, ManualError> {
        let (manual_id, prefix, offset) = parse_toc(&to_args(&request))?;
        self.root.manual_dir(&manual_id)?;
        self.ensure_manual(&manual_id);
        let corpus = self.read_corpus();
        let Some(index) = corpus.manual(&manual_id) else {
            return Ok(TocOutput {
                items: Vec::new(),
                total_files: 0,
                next_offset: None,
            });
        };
        let files: Vec<_> = index
            .files()
            .into_iter()
            .filter(|(_, path)| match &prefix {
                None => true,
                Some(p) => {
                    *path == p.as_str()
                        || path
                            .strip_prefix(p.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                }
            })
            .collect();
        if files.len() > TOC_MAX_FILES {
            return Err(ManualError::new(
                ManualErrorCode::NeedsNarrowScope,
                format!(
                    "manual {manual_id:?} has {} files in scope (limit {TOC_MAX_FILES}); pass path_prefix with a folder from manual_ls",
                    files.len()
                ),
            )
            .with_details(json!({ "total_files": files.len(), "limit": TOC_MAX_FILES })));
        }
        let mut items = Vec::new();
        let mut headings_left = TOC_MAX_HEADINGS;
        let mut bytes_left = TOC_MAX_TITLE_BYTES;
        let mut next_offset = None;
        for (i, (file, path)) in files.iter().enumerate().skip(offset) {
            let sections = index.sections(*file);
            let headings: Vec<TocHeading> = sections
                .into_iter()
                .filter(|s| s.level > 0)
                .map(|s| TocHeading {
                    title: s.title,
                    line_start: s.start_line,
                    level: s.level,
                })
                .collect();
            let bytes: usize = headings.iter().map(|h| h.title.len() + 32).sum();
            let fits = headings.len() <= headings_left && bytes <= bytes_left;
            if !fits && !items.is_empty() {
                next_offset = Some(i);
                break;
            }
            let mut kept = Vec::new();
            let mut truncated = false;
            for h in headings {
                let cost = h.title.len() + 32;
                if kept.len() >= headings_left || cost > bytes_left {
                    truncated = true;
                    break;
                }
                bytes_left -= cost;
                kept.push(h);
            }
            headings_left -= kept.len();
            items.push(TocFile {
                path: path.to_string(),
                headings: kept,
                headings_truncated: truncated,
            });
            if truncated && i + 1 < files.len() {
                next_offset = Some(i + 1);
                break;
            }
        }
        Ok(TocOutput {
            items,
            total_files: files.len(),
            next_offset,
        })
    }
}

impl TocInput {
    /// A `manual_toc` request from raw JSON arguments, by seed 002's rules.
    pub fn from_json(args: &Value) -> Result<TocInput, ManualError> {
        parse_toc(args)?;
        typed(args, &["offset"], &[])
    }
}

fn parse_toc(args: &Value) -> Result<(String, Option<String>, usize), ManualError> {
    let a = Args::new("", args, &["manual_id", "path_prefix", "offset"])?;
    let manual_id = match a.get("manual_id") {
        Some(v) => paths::manual_id("manual_id", v)?,
        None => {
            return Err(ManualError::invalid_parameter(
                "manual_id",
                "manual_id is required; get one from manual_ls(id='manuals')",
            ));
        }
    };
    let prefix = match a.get("path_prefix") {
        Some(v) => Some(paths::relative_path("path_prefix", v)?),
        None => None,
    };
    let offset = usize::try_from(a.opt_int("offset", 0)?.unwrap_or(0)).unwrap_or(usize::MAX);
    Ok((manual_id, prefix, offset))
}
