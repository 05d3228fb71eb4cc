//! A run's artifacts: the files it wrote, by phase, and one artifact's
//! text (cut at [`MAX_ARTIFACT_BYTES`]).

use std::path::Path;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use baton_workflow::{PerTask, WorkflowDefinition};

use crate::error::{Error, ErrorCode, Result};
use crate::services::Services;
use crate::validate::check_text;

/// One file of the workspace a person may read.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRef {
    /// File name, relative to the workspace.
    pub name: String,
    /// The phase that writes it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Last modified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<DateTime<Utc>>,
}

/// The largest artifact shown whole; longer ones are cut.
pub const MAX_ARTIFACT_BYTES: u64 = 1024 * 1024;

pub(crate) fn list_artifacts(dir: &Path, definition: &WorkflowDefinition) -> Vec<ArtifactRef> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<ArtifactRef> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            if !is_artifact_name(&name) {
                return None;
            }
            // Regular files only: a symlink could point anywhere.
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            if !meta.file_type().is_file() {
                return None;
            }
            Some(ArtifactRef {
                phase: artifact_phase(definition, &name),
                size: meta.len(),
                modified: meta.modified().ok().map(DateTime::<Utc>::from),
                name,
            })
        })
        .collect();
    let order = |a: &ArtifactRef| {
        a.phase
            .as_deref()
            .and_then(|p| definition.position(p))
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| order(a).cmp(&order(b)).then(natural(&a.name, &b.name)));
    out
}

/// `impl-2.md` before `impl-10.md`.
fn natural(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let digits: String = s.chars().filter(char::is_ascii_digit).collect();
        let stem: String = s.chars().filter(|c| !c.is_ascii_digit()).collect();
        (stem, digits.parse::<u64>().unwrap_or(0))
    };
    split(a).cmp(&split(b))
}

/// A Markdown file directly in the workspace, not hidden.
fn is_artifact_name(name: &str) -> bool {
    name.ends_with(".md")
        && !name.starts_with('.')
        && !name.contains('/')
        && !name.contains('\\')
        && name.len() <= 255
}

fn artifact_phase(definition: &WorkflowDefinition, name: &str) -> Option<String> {
    if let Some(p) = definition
        .phases
        .iter()
        .find(|p| p.artifacts.iter().any(|a| a == name))
    {
        return Some(p.id.clone());
    }
    let per_task = |kind: PerTask, prefix: &str| {
        let n = name.strip_prefix(prefix)?.strip_suffix(".md")?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        definition
            .phases
            .iter()
            .find(|p| p.per_task == Some(kind))
            .map(|p| p.id.clone())
    };
    per_task(PerTask::Implement, "impl-").or_else(|| per_task(PerTask::Review, "review-"))
}

/// An artifact's text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ArtifactText {
    /// The file name.
    pub name: String,
    /// Its text (lossy UTF-8), at most [`MAX_ARTIFACT_BYTES`].
    pub text: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the text was cut at [`MAX_ARTIFACT_BYTES`].
    pub truncated: bool,
}

/// Reads one Markdown file of a run's workspace (a name from
/// [`RunOverview::artifacts`]): only `*.md` directly in the workspace,
/// regular files, never through a symlink.
pub fn artifact(svc: &Services, workspace: &str, name: &str) -> Result<ArtifactText> {
    check_text("workspace", workspace, 1024)?;
    check_text("name", name, 255)?;
    if !is_artifact_name(name) || name.contains("..") {
        return Err(Error::invalid(
            "name",
            format!("{name:?} is not an artifact: a .md file directly in the workspace"),
        ));
    }
    let ws = svc.store.resolve(workspace)?;
    let path = ws.dir.join(name);
    let not_found = || {
        Error::new(
            ErrorCode::NotFound,
            format!("{} has no artifact {name}", ws.display),
        )
    };
    let meta = std::fs::symlink_metadata(&path).map_err(|_| not_found())?;
    if !meta.file_type().is_file() {
        return Err(not_found());
    }
    use std::io::Read;
    let mut buf = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_ARTIFACT_BYTES).read_to_end(&mut buf))
        .map_err(|e| Error::new(ErrorCode::IoError, format!("reading {name}: {e}")))?;
    Ok(ArtifactText {
        name: name.to_string(),
        text: String::from_utf8_lossy(&buf).into_owned(),
        size: meta.len(),
        truncated: meta.len() > MAX_ARTIFACT_BYTES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_names_stay_in_the_workspace() {
        assert!(is_artifact_name("design.md"));
        for bad in ["../x.md", "a/b.md", ".hidden.md", "state.json", "x.md/"] {
            assert!(!is_artifact_name(bad), "{bad}");
        }
    }

    #[test]
    fn natural_order_puts_two_before_ten() {
        let mut names = vec!["impl-10.md", "impl-2.md", "impl-1.md"];
        names.sort_by(|a, b| natural(a, b));
        assert_eq!(names, ["impl-1.md", "impl-2.md", "impl-10.md"]);
    }
}
