//! `baton ls`: every run of the repository, one line each. Columns are as
//! wide as their longest value, so long names never push a column out of
//! line; when `COLUMNS` says the terminal is narrower, the workspace column
//! (the only unbounded one) is shortened in the middle, keeping the date and
//! the end of the name.

use std::process::ExitCode;

use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::show::{ListArgs, WorkspaceRow, workspace_list};

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

/// A run's status in a person's words (`baton ls --json` keeps the
/// state's own names).
pub fn status_words(status: &str) -> String {
    match status {
        "awaiting_human" => "waiting for you".into(),
        "pending" => "not started".into(),
        other => other.replace('_', " "),
    }
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
                status_words(&r.status),
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
    let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let list = workspace_list(&svc, ListArgs::default())
        .map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code.as_str()))?;
    let rows = list.workspaces;
    let problems: Vec<(String, String)> = list
        .unreadable
        .into_iter()
        .map(|u| (u.workspace, u.message))
        .collect();
    // Ended runs whose folder left with their branch: still listed, from
    // the run history (which stays across checkouts).
    let elsewhere = baton_usecases::elsewhere::runs_elsewhere(&svc);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "workspaces": rows,
                "elsewhere": elsewhere,
                "unreadable": problems.iter().map(|(w, e)| serde_json::json!({"workspace": w, "error": e})).collect::<Vec<_>>(),
            }))?
        );
    } else if rows.is_empty() && problems.is_empty() && elsewhere.is_empty() {
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
        if !elsewhere.is_empty() {
            println!("\nEnded runs whose files are on another branch (from the run history):");
            for r in &elsewhere {
                println!(
                    "  {}  {}  {}{}",
                    r.workspace,
                    r.outcome,
                    r.ended.format("%Y-%m-%d %H:%M"),
                    r.branch
                        .as_ref()
                        .map(|b| format!("  on branch {b} (git checkout {b} to see its files)"))
                        .unwrap_or_default()
                );
            }
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
    fn statuses_are_in_a_person_s_words() {
        let out = table(&[r(".specs/20261123-x")], None);
        assert!(out.contains("waiting for you"), "{out}");
        assert!(!out.contains("awaiting_human"), "{out}");
        assert_eq!(status_words("in_progress"), "in progress");
        assert_eq!(status_words("failed"), "failed");
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
