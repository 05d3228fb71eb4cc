//! `manual_ls`: list manuals, or the direct children of a manual or folder.
//!
//! Ids: `manuals` (the root), `<manual>` and `<manual>/<folder path>`.
//! Hidden entries and symlinks are never listed.

use serde_json::Value;

use crate::corpus::list_manual_dirs;
use crate::service::state::ManualService;
use crate::wire::args::{self, Args, MAX_ID_BYTES};
use crate::wire::convert::{to_args, typed};
use crate::wire::error::ManualError;
use crate::wire::ids::{self as paths, FileType, ROOT_ID};
use crate::wire::types::{LsInput, LsItem, LsKind, LsOutput};

impl ManualService {
    /// `manual_ls({id?})`.
    pub fn ls(&self, request: LsInput) -> Result<LsOutput, ManualError> {
        let id = parse_ls(&to_args(&request))?;
        if id == ROOT_ID {
            let items = list_manual_dirs(&self.root)
                .into_iter()
                .map(|name| LsItem {
                    id: name.clone(),
                    name,
                    kind: LsKind::Dir,
                    path: None,
                    file_type: None,
                })
                .collect();
            return Ok(LsOutput { id, items });
        }
        let (manual_id, rest) = match id.split_once(['/', '\\']) {
            Some((m, r)) => (m, Some(r)),
            None => (id.as_str(), None),
        };
        paths::check_manual_id("id", manual_id)?;
        let manual_dir = self.root.manual_dir(manual_id)?;
        let (dir, rel_prefix) = match rest.filter(|r| !r.trim_matches(['/', '\\']).is_empty()) {
            None => (manual_dir, String::new()),
            Some(rest) => {
                let rel = paths::normalize_relative("id", rest)?;
                let (abs, on_disk) = self.root.resolve_entry(manual_id, &rel)?;
                if !abs.is_dir() {
                    return Err(ManualError::invalid_parameter(
                        "id",
                        format!(
                            "{id:?} is a file id and cannot be expanded; read it with manual_read or manual_scan (manual_id={manual_id:?}, path={on_disk:?})"
                        ),
                    ));
                }
                (abs, on_disk)
            }
        };
        let entries =
            std::fs::read_dir(&dir).map_err(|e| ManualError::io("cannot list directory", &e))?;
        let mut items: Vec<LsItem> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_str()?.to_string();
                if name.starts_with('.') {
                    return None;
                }
                let file_type = entry.file_type().ok()?;
                let rel = if rel_prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{rel_prefix}/{name}")
                };
                if file_type.is_dir() {
                    Some(LsItem {
                        id: format!("{manual_id}/{rel}"),
                        name,
                        kind: LsKind::Dir,
                        path: None,
                        file_type: None,
                    })
                } else if file_type.is_file() {
                    let kind = FileType::of(&name)?;
                    Some(LsItem {
                        id: format!("{manual_id}/{rel}"),
                        name,
                        kind: LsKind::File,
                        path: Some(rel),
                        file_type: Some(kind),
                    })
                } else {
                    None
                }
            })
            .collect();
        items.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(LsOutput { id, items })
    }
}

impl LsInput {
    /// A `manual_ls` request from raw JSON arguments, by seed 002's rules.
    pub fn from_json(args: &Value) -> Result<LsInput, ManualError> {
        parse_ls(args)?;
        typed(args, &[], &[])
    }
}

fn parse_ls(args: &Value) -> Result<String, ManualError> {
    let a = Args::new("", args, &["id"])?;
    Ok(match a.get("id") {
        None => ROOT_ID.to_string(),
        Some(v) => args::string("id", v, MAX_ID_BYTES)?.to_string(),
    })
}
