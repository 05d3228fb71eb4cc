//! `baton ls`: every run of the repository, one line each. Columns are as
//! wide as their longest value, so long names never push a column out of
//! line; when `COLUMNS` says the terminal is narrower, the workspace column
//! (the only unbounded one) is shortened in the middle, keeping the date and
//! the end of the name.

use std::process::ExitCode;

use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::show::{WorkspaceRow, list_runs};

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

/// When a run was last updated, to the minute (`2026-11-26 17:53`), without
/// the year when it is `this_year` (`11-26 17:53`), as `ls -l` does: the
/// narrow table then keeps room for the names.
pub fn updated_words(timestamp: &str, this_year: &str) -> String {
    let minute = timestamp.get(..16).unwrap_or(timestamp).replace('T', " ");
    match minute.strip_prefix(this_year) {
        Some(rest) if rest.starts_with('-') => rest[1..].to_string(),
        _ => minute,
    }
}

/// The table for `rows`, fitted to `columns` characters when given.
#[cfg(test)]
pub fn table(rows: &[WorkspaceRow], columns: Option<usize>) -> String {
    table_where(rows, &[], columns, "")
}

/// [`table`] with a MACHINE column (team mode: where each run runs) when
/// `machines` names one per row; update times in `this_year` are shown
/// without it ([`updated_words`]).
pub fn table_where(
    rows: &[WorkspaceRow],
    machines: &[String],
    columns: Option<usize>,
    this_year: &str,
) -> String {
    let with_machine = !machines.is_empty() && machines.len() == rows.len();
    let mut headers = vec![
        "WORKSPACE",
        "WORKFLOW",
        "PHASE",
        "STATUS",
        "PROGRESS",
        "UPDATED",
    ];
    if with_machine {
        headers.push("MACHINE");
    }
    let n = headers.len();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut c = vec![
                r.workspace.clone(),
                r.workflow.clone(),
                r.current_phase.clone(),
                status_words(&r.status),
                r.progress.clone(),
                updated_words(&r.last_updated, this_year),
            ];
            if with_machine {
                c.push(machines[i].clone());
            }
            c
        })
        .collect();
    let mut widths: Vec<usize> = (0..n)
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
        let others: usize = widths[1..].iter().sum::<usize>() + 2 * (n - 1);
        if others + widths[0] > cols {
            widths[0] = cols
                .saturating_sub(others)
                .max(MIN_WORKSPACE)
                .min(widths[0]);
        }
    }
    let mut out = String::new();
    let mut push = |values: &[&str]| {
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
    push(&headers);
    for c in &cells {
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        push(&refs);
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
    if !config.specs_root.is_dir() && !config.team.enabled() {
        // No work yet is a normal answer, not an error (in team mode the
        // other machines may have some).
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
    // Read-only: no event log is opened. In team mode the use case adds
    // the other machines' runs from the team database.
    let svc = Services::read_only(config.clone(), env!("CARGO_PKG_VERSION"));
    let list =
        list_runs(&svc).map_err(|e| anyhow::anyhow!("{} ({})", e.message, e.code.as_str()))?;
    let problems: Vec<(String, String)> = list
        .unreadable
        .iter()
        .map(|u| (u.workspace.clone(), u.message.clone()))
        .collect();
    if let Some(p) = &list.team_problem {
        eprintln!("baton: other machines' runs are not listed: {p}");
    }
    // Ended runs whose folder left with their branch: still listed, from
    // the run history (which stays across checkouts).
    let elsewhere = baton_usecases::elsewhere::runs_elsewhere(&svc);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "workspaces": list.workspaces,
                "elsewhere": elsewhere,
                "unreadable": problems.iter().map(|(w, e)| serde_json::json!({"workspace": w, "error": e})).collect::<Vec<_>>(),
            }))?
        );
    } else if list.workspaces.is_empty() && problems.is_empty() && elsewhere.is_empty() {
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
        let machines: Vec<String> = list
            .workspaces
            .iter()
            .filter_map(|r| r.machine.as_ref().map(|m| m.name.clone()))
            .collect();
        let rows: Vec<WorkspaceRow> = list.workspaces.into_iter().map(|r| r.row).collect();
        let this_year = list.listed_at.format("%Y").to_string();
        print!("{}", table_where(&rows, &machines, columns, &this_year));
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
    fn the_update_time_drops_only_this_year() {
        let ts = "2026-11-23T22:38:27.802359522+00:00";
        assert_eq!(updated_words(ts, "2026"), "11-23 22:38");
        assert_eq!(updated_words(ts, "2027"), "2026-11-23 22:38");
        assert_eq!(updated_words("garbage", "2026"), "garbage");
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
