//! `baton manuals find` and `baton manuals index`: the manual search of
//! seed 002 for people, on the same library the MCP tools use.

use std::io::Write;
use std::process::ExitCode;

use baton_config::Config;
use baton_manuals::{ManualConfig, ManualService};
use serde_json::{Value, json};

fn service(config: &Config) -> anyhow::Result<ManualService> {
    let manual_config = ManualConfig::from_env(&config.repo_root);
    let service = ManualService::open(manual_config)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code.as_str(), e.message))?;
    for warning in service.startup_warnings() {
        eprintln!("baton: warning: {warning}");
    }
    Ok(service)
}

/// `baton manuals index`: builds or refreshes the on-disk index with progress on stderr.
pub fn index(config: &Config) -> anyhow::Result<ExitCode> {
    let service = service(config)?;
    let started = std::time::Instant::now();
    let mut stderr = std::io::stderr();
    let tty = std::io::IsTerminal::is_terminal(&stderr);
    let stats = service
        .build_index(&mut |p| {
            // One updating line on a terminal; a line per 100 files otherwise.
            if tty {
                let _ = write!(
                    stderr,
                    "\r[{:>5}/{:<5}] {}/{}\x1b[K",
                    p.files_done, p.files_total, p.manual_id, p.path
                );
            } else if p.files_done % 100 == 0 || p.files_done == p.files_total {
                let _ = writeln!(stderr, "indexed {}/{} files", p.files_done, p.files_total);
            }
        })
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code.as_str(), e.message))?;
    if tty {
        let _ = writeln!(stderr);
    }
    for warning in service.take_index_warnings() {
        eprintln!("baton: warning: {warning}");
    }
    println!(
        "indexed {} manuals, {} files, {} sections, {} terms in {:.0} ms (root {})",
        stats.manuals,
        stats.files,
        stats.sections,
        stats.terms,
        started.elapsed().as_secs_f64() * 1000.0,
        service.config().root.display()
    );
    println!(
        "index: {} segments, {:.1} MB ({} files tokenised, {} reused, {} removed, {} skipped)",
        stats.segments,
        stats.index_bytes as f64 / 1e6,
        stats.parsed_files,
        stats.reused_files,
        stats.removed_files,
        stats.skipped_files
    );
    let user_file = service
        .config()
        .thesaurus_file
        .as_ref()
        .filter(|p| p.exists())
        .map(|p| format!(" including {}", p.display()))
        .unwrap_or_default();
    println!("thesaurus: {} entries{user_file}", service.thesaurus_len());
    Ok(ExitCode::SUCCESS)
}

/// `baton manuals find QUERY [--manual ID] [--limit N] [--json]`.
pub fn find(
    config: &Config,
    query: &str,
    manual: Option<&str>,
    limit: u64,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let service = service(config)?;
    let mut args = json!({"query": query});
    if let Some(m) = manual {
        args["manual_id"] = json!(m);
    }
    let result = service.find(args);
    for warning in service.take_index_warnings() {
        eprintln!("baton: warning: {warning}");
    }
    let found = match result {
        Ok(f) => f,
        Err(e) => {
            eprintln!("baton: {}: {}", e.code.as_str(), e.message);
            return Ok(ExitCode::from(1));
        }
    };
    let hits = service
        .hits(json!({"trace_id": found.trace_id, "limit": limit}))
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code.as_str(), e.message))?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(ExitCode::SUCCESS);
    }
    if hits.items.is_empty() {
        println!("no match for {query:?}");
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, item) in hits.items.iter().enumerate() {
        let manual_id = item
            .pointer("/ref/manual_id")
            .and_then(Value::as_str)
            .or(hits.manual_id.as_deref())
            .unwrap_or("");
        println!(
            "{:>2}. {manual_id}/{}:{}  {}  (score {:.3})",
            rank + 1,
            item.pointer("/ref/path")
                .and_then(Value::as_str)
                .unwrap_or(""),
            item.pointer("/ref/start_line")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            item.get("title").and_then(Value::as_str).unwrap_or(""),
            item.get("score").and_then(Value::as_f64).unwrap_or(0.0),
        );
    }
    println!("({} candidates; trace {})", hits.total, found.trace_id);
    Ok(ExitCode::SUCCESS)
}
