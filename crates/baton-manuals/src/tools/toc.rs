//! `manual_toc`: the headings of every file of a manual.

use serde_json::{Value, json};

use crate::args::Args;
use crate::error::{ManualError, ManualErrorCode};
use crate::paths;
use crate::service::ManualService;
use crate::types::{TocFile, TocHeading, TocOutput};

/// Most files one `manual_toc` call returns; more → `needs_narrow_scope`.
pub const TOC_MAX_FILES: usize = 200;

impl ManualService {
    /// `manual_toc({manual_id, path_prefix?})`.
    pub fn toc(&self, args: Value) -> Result<TocOutput, ManualError> {
        let a = Args::new("", &args, &["manual_id", "path_prefix"])?;
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
        self.root.manual_dir(&manual_id)?;
        self.ensure_manual(&manual_id);
        let corpus = self.read_corpus();
        let Some(index) = corpus.manual(&manual_id) else {
            return Ok(TocOutput { items: Vec::new() });
        };
        let files: Vec<_> = index
            .files()
            .filter(|f| match &prefix {
                None => true,
                Some(p) => {
                    f.record.path == *p
                        || f.record
                            .path
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
        let items = files
            .into_iter()
            .map(|f| TocFile {
                path: f.record.path.clone(),
                headings: f
                    .record
                    .sections
                    .iter()
                    .filter(|s| s.level > 0)
                    .map(|s| TocHeading {
                        title: s.title.clone(),
                        line_start: s.start_line,
                        level: s.level,
                    })
                    .collect(),
            })
            .collect();
        Ok(TocOutput { items })
    }
}
