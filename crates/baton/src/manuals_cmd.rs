//! `baton manuals find` and `baton manuals index`: the manual search of
//! seed 002 for people, on the same library the MCP tools use.

use std::io::Write;
use std::process::ExitCode;

use baton_config::Config;
use baton_manuals::{
    FindInput, HitsInput, LsInput, ManualConfig, ManualService, ReadInput, ReadScope,
};
use serde_json::Value;

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

/// What the manuals root holds when nothing can be searched: the message
/// for the person, or `None` when there is at least one manual with files.
fn nothing_to_search(service: &ManualService, manual: Option<&str>) -> Option<String> {
    let root = &service.config().root;
    if manual.is_some() {
        return None;
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Some(format!(
            "no manuals folder at {}: put each manual in a folder of its own there \
             (manuals/<name>/*.md), or set MANUALS_ROOT to where your manuals are",
            root.display()
        ));
    };
    let loose = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_lowercase();
            e.file_type().is_ok_and(|t| t.is_file())
                && (name.ends_with(".md") || name.ends_with(".json"))
                && name != "thesaurus.txt"
        })
        .count();
    let manuals = service
        .ls(LsInput::default())
        .map(|l| l.items.len())
        .unwrap_or(0);
    if manuals == 0 {
        return Some(if loose > 0 {
            format!(
                "{} holds {loose} manual file(s) but no manual: a manual is a folder under it. \
                 Move the files into one, e.g. `mkdir {0}/docs && mv {0}/*.md {0}/docs/`",
                root.display()
            )
        } else {
            format!(
                "{} holds no manual: put each manual in a folder of its own there \
                 (manuals/<name>/*.md)",
                root.display()
            )
        });
    }
    None
}

/// The first words of a section's text after its heading, on one line.
fn snippet(service: &ManualService, manual_id: &str, path: &str, line: u64) -> String {
    const CHARS: usize = 160;
    let mut request = ReadInput::at(manual_id, path, Some(line));
    request.scope = Some(ReadScope::Snippet);
    let Ok(read) = service.read(request) else {
        return String::new();
    };
    let body = read
        .text
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .skip(usize::from(path.to_lowercase().ends_with(".md")))
        .collect::<Vec<_>>()
        .join(" ");
    let words = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() > CHARS {
        format!("{}…", words.chars().take(CHARS).collect::<String>())
    } else {
        words
    }
}

/// `baton manuals find QUERY [--manual ID] [--limit N] [--json]`.
///
/// Exit codes: 0 with hits, 1 when nothing matched (or the call was
/// refused), 2 when there is nothing to search.
pub fn find(
    config: &Config,
    query: &str,
    manual: Option<&str>,
    limit: u64,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let service = service(config)?;
    if let Some(message) = nothing_to_search(&service, manual) {
        eprintln!("baton: nothing to search: {message}");
        return Ok(ExitCode::from(2));
    }
    let mut request = FindInput::new(query);
    request.manual_id = manual.map(str::to_string);
    let result = service.find(request);
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
    let mut page = HitsInput::new(found.trace_id.clone());
    page.limit = Some(limit);
    let hits = service
        .hits(page)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code.as_str(), e.message))?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&hits)?);
        return Ok(ExitCode::SUCCESS);
    }
    let searched_manuals = match manual {
        Some(m) => format!("manual {m}"),
        None => {
            let n = service
                .ls(LsInput::default())
                .map(|l| l.items.len())
                .unwrap_or(0);
            format!("{n} manual{}", if n == 1 { "" } else { "s" })
        }
    };
    let searched = format!(
        "searched {searched_manuals} ({} files, {} sections) in {}",
        found.summary.scanned_files,
        found.summary.scanned_nodes,
        service.config().root.display()
    );
    if found.summary.scanned_files == 0 {
        eprintln!("baton: nothing to search: {searched}, which hold no .md or .json file");
        return Ok(ExitCode::from(2));
    }
    if hits.items.is_empty() {
        println!("no match for {query:?}: {searched}");
        return Ok(ExitCode::from(1));
    }
    for (rank, item) in hits.items.iter().enumerate() {
        let manual_id = item
            .pointer("/ref/manual_id")
            .and_then(Value::as_str)
            .or(hits.manual_id.as_deref())
            .unwrap_or("");
        let path = item
            .pointer("/ref/path")
            .and_then(Value::as_str)
            .unwrap_or("");
        let line = item
            .pointer("/ref/start_line")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        println!(
            "{:>2}. {manual_id}/{path}:{line}  {}  (score {:.3})",
            rank + 1,
            item.get("title").and_then(Value::as_str).unwrap_or(""),
            item.get("score").and_then(Value::as_f64).unwrap_or(0.0),
        );
        let text = snippet(&service, manual_id, path, line);
        if !text.is_empty() {
            println!("    {text}");
        }
    }
    println!(
        "{searched}; {} candidates (trace {})",
        hits.total, found.trace_id
    );
    Ok(ExitCode::SUCCESS)
}
