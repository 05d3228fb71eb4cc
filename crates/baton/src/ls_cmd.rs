//! `baton ls`: every run of the repository, one line each. Columns are as
//! wide as their longest value, so long names never push a column out of
//! line; when `COLUMNS` says the terminal is narrower, the workspace column
//! (the only unbounded one) is shortened in the middle, keeping the date and
//! the end of the name.

use std::process::ExitCode;

use baton_config::Config;
use baton_engine::summary::{WorkspaceRow, row};
use baton_state::StateStore;

/// The narrowest the workspace column is made.
const MIN_WORKSPACE: usize = 24;

/// `text` cut to `max` characters in the middle (`…` marks the cut).
pub fn middle(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max || max < 5 {
        return text.to_string();
    }
    let head = (max - 1) / 2;
    let tail = max - 1 - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

/// The table for `rows`, fitted to `columns` characters when given.
pub fn table(rows: &[WorkspaceRow], columns: Option<usize>) -> String {
    let headers = [
        "WORKSPACE",
        "WORKFLOW",
        "PHASE",
        "STATUS",
        "PROGRESS",
        "UPDATED",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.workspace.clone(),
                r.workflow.clone(),
                r.current_phase.clone(),
                r.status.clone(),
                r.progress.clone(),
                r.last_updated
                    .get(..16)
                    .unwrap_or(&r.last_updated)
                    .replace('T', " "),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = (0..6)
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain(std::iter::once(headers[i].len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    if let Some(cols) = columns {
        let others: usize = widths[1..].iter().sum::<usize>() + 2 * 5;
        if others + widths[0] > cols {
            widths[0] = cols
                .saturating_sub(others)
                .max(MIN_WORKSPACE)
                .min(widths[0]);
        }
    }
    let mut out = String::new();
    let mut push = |values: [&str; 6]| {
        let mut line = String::new();
        for (i, v) in values.iter().enumerate() {
            let v = if i == 0 {
                middle(v, widths[0])
            } else {
                v.to_string()
            };
            if i == 4 {
                line.push_str(&format!("{v:>w$}", w = widths[i]));
            } else {
                line.push_str(&format!("{v:<w$}", w = widths[i]));
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    push(headers);
    for c in &cells {
        push([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]);
    }
    out
}

/// Runs the command.
pub fn run(config: &Config, json: bool) -> anyhow::Result<ExitCode> {
    if !config.repo_root.is_dir() {
        anyhow::bail!(
            "{} does not exist or is not a folder, so there is no work to list. \
             Run baton from inside your repository, or pass --repo PATH (or set BATON_REPO_ROOT).",
            config.repo_root.display()
        );
    }
    if !config.specs_root.is_dir() {
        // No work yet is a normal answer, not an error.
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &serde_json::json!({"workspaces": [], "unreadable": []})
                )?
            );
        } else {
            println!(
                "No runs yet in {}. Start one with `baton run \"what to do\" --agent claude`, \
                 your agent's /baton-pipeline, or see one with `baton demo`.",
                config.repo_root.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let store = StateStore::new(&config.repo_root, &config.specs_root);
    let (registry, _) = baton_workflow::load_registry(&config.workflows_dir);
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (ws, state) in store.list()? {
        match state {
            Ok(state) => rows.push(row(&state, registry.get(&state.workflow).as_deref())),
            Err(e) => problems.push((ws.display, e.to_string())),
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "workspaces": rows,
                "unreadable": problems.iter().map(|(w, e)| serde_json::json!({"workspace": w, "error": e})).collect::<Vec<_>>(),
            }))?
        );
    } else if rows.is_empty() && problems.is_empty() {
        println!(
            "No runs yet in {}. Start one with `baton run \"what to do\" --agent claude`, \
             your agent's /baton-pipeline, or see one with `baton demo`.",
            config.specs_root.display()
        );
    } else {
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|c| *c >= 40);
        print!("{}", table(&rows, columns));
        for (w, e) in &problems {
            println!("{w}  unreadable: {e}");
        }
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(ws: &str) -> WorkspaceRow {
        WorkspaceRow {
            workspace: ws.into(),
            workflow: "forge".into(),
            spec_name: "x".into(),
            current_phase: "checkpoint-a".into(),
            status: "awaiting_human".into(),
            progress: "5/18".into(),
            last_updated: "2026-11-23T22:38:27.802359522+00:00".into(),
        }
    }

    #[test]
    fn long_names_keep_every_column_aligned() {
        let long = format!(".specs/20261123-{}", "very-long-name-".repeat(8));
        let out = table(&[r(&long), r(".specs/20261123-short")], None);
        let lines: Vec<&str> = out.lines().collect();
        // WORKFLOW starts at the same column on every line.
        let col = |l: &str| l.find("forge").or_else(|| l.find("WORKFLOW")).unwrap();
        assert_eq!(col(lines[0]), col(lines[1]));
        assert_eq!(col(lines[1]), col(lines[2]));
        assert!(lines[1].contains(&long), "nothing is cut without COLUMNS");
        assert!(lines[1].contains("2026-11-23 22:38"));
    }

    #[test]
    fn a_narrow_terminal_cuts_the_workspace_in_the_middle() {
        let long = format!(".specs/20261123-{}end", "very-long-name-".repeat(8));
        let out = table(&[r(&long)], Some(100));
        for l in out.lines() {
            assert!(l.chars().count() <= 100, "{l}");
        }
        let row = out.lines().nth(1).unwrap();
        assert!(
            row.starts_with(".specs/2026") && row.contains('…') && row.contains("end "),
            "{row}"
        );
    }

    #[test]
    fn middle_cuts_keep_both_ends() {
        assert_eq!(middle("abcdefghij", 7), "abc…hij");
        assert_eq!(middle("short", 10), "short");
    }
}
