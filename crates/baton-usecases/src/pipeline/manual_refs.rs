//! Manual references for a `spawn_agent` prompt: when the repository has
//! manuals, the few sections most relevant to the run's request (where
//! they are and their headings, never their text), so an agent sees the
//! project's own rules without asking. The engine renders them
//! (`baton_engine::pipeline::prompt`); this use case searches.
//!
//! Off with `MANUALS_PROMPT_REFERENCES=0`; none when there is no manual
//! folder, no request text or no section that matches well enough.

use std::path::Path;

use baton_engine::pipeline::prompt::ManualReference;
use baton_manuals::{FindBudget, FindInput, HitsInput, ManualConfig};
use serde_json::Value;

use crate::Services;
use crate::files::DiskFiles;
use baton_engine::WorkspaceFiles;

/// Most of the request read as the query (bytes; a search takes ≤ 4096).
const QUERY_BYTES: usize = 1024;
/// A section is listed only when it scores at least this share of the best.
const MIN_SHARE_OF_TOP: f64 = 0.4;
/// At most this many sections of one file are listed.
const MAX_PER_FILE: usize = 2;

/// The manual sections most relevant to the request of the run in `ws`,
/// best first; empty when references are off or nothing fits. `files` is
/// the call's view of the run's folder.
pub fn manual_references(svc: &Services, files: &DiskFiles) -> Vec<ManualReference> {
    let Some((manual_config, query)) = search_for(svc, files) else {
        return Vec::new();
    };
    let wanted = manual_config.prompt_references;
    match search(svc, &manual_config, &query, wanted) {
        Ok(refs) => refs,
        Err(e) => {
            tracing::warn!("manual references left out of the prompt: {e}");
            Vec::new()
        }
    }
}

/// Whether [`manual_references`] would search the manuals for the run in
/// `files` (references on, a manual present, a request to search with): a
/// search may index the manuals first, so a caller that must not wait
/// asks before.
pub fn would_search(svc: &Services, files: &DiskFiles) -> bool {
    search_for(svc, files).is_some()
}

/// The manual configuration and the query when a search is due: references
/// on, a manual present, a request to search with.
fn search_for(svc: &Services, files: &DiskFiles) -> Option<(ManualConfig, String)> {
    let manual_config = ManualConfig::from_env(&svc.config.repo_root);
    if manual_config.prompt_references == 0 || !has_manuals(&manual_config.root) {
        return None;
    }
    let query = request_text(files)?;
    Some((manual_config, query))
}

/// Whether the manuals root holds at least one manual (a folder).
fn has_manuals(root: &Path) -> bool {
    std::fs::read_dir(root).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_type().is_ok_and(|t| t.is_dir())
                && !e.file_name().to_string_lossy().starts_with('.')
        })
    })
}

/// The run's request, its first lines as a search query.
fn request_text(files: &DiskFiles) -> Option<String> {
    let mut text = files.read("request.md")?;
    if text.len() > QUERY_BYTES {
        let mut end = QUERY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    let text = text.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn search(
    svc: &Services,
    manual_config: &ManualConfig,
    query: &str,
    wanted: usize,
) -> Result<Vec<ManualReference>, baton_manuals::ManualError> {
    let service = svc.manuals.service(&svc.config)?;
    let mut request = FindInput::new(query);
    request.budget = Some(FindBudget {
        max_candidates: Some(50),
        time_ms: None,
    });
    let found = service.find(request)?;
    let mut page = HitsInput::new(found.trace_id);
    page.limit = Some(50);
    let hits = service.hits(page)?;
    let root = manual_config
        .root
        .strip_prefix(&svc.config.repo_root)
        .unwrap_or(&manual_config.root)
        .to_string_lossy()
        .replace('\\', "/");
    let top = hits
        .items
        .first()
        .and_then(|i| i["score"].as_f64())
        .unwrap_or(0.0);
    let mut refs: Vec<ManualReference> = Vec::new();
    let mut per_file: Vec<(String, usize)> = Vec::new();
    for item in &hits.items {
        if refs.len() >= wanted {
            break;
        }
        if item["score"].as_f64().unwrap_or(0.0) < top * MIN_SHARE_OF_TOP {
            break;
        }
        let manual = item
            .pointer("/ref/manual_id")
            .and_then(Value::as_str)
            .or(hits.manual_id.as_deref())
            .unwrap_or("");
        let (Some(file), Some(line)) = (
            item.pointer("/ref/path").and_then(Value::as_str),
            item.pointer("/ref/start_line").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let path = format!("{root}/{manual}/{file}");
        match per_file.iter_mut().find(|(p, _)| *p == path) {
            Some((_, n)) if *n >= MAX_PER_FILE => continue,
            Some((_, n)) => *n += 1,
            None => per_file.push((path.clone(), 1)),
        }
        refs.push(ManualReference {
            path,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            heading: item["title"].as_str().unwrap_or("").to_string(),
        });
    }
    for warning in service.take_index_warnings() {
        tracing::warn!("manuals: {warning}");
    }
    Ok(refs)
}
