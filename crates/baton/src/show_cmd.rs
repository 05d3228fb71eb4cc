//! `baton show RUN`: one run at a glance in the terminal — the same view the
//! dashboard shows (`baton_usecases::overview::run_overview`): where it
//! stands, every phase with its time and tokens, the tasks, the question it
//! waits at with its full text and options, the artifacts and the timeline.

use std::process::ExitCode;

use anyhow::anyhow;

use baton_config::Config;
use baton_usecases::Services;
use baton_usecases::overview::{PhaseState, RunOverview, run_overview};

/// Timeline entries shown without `--all`.
const TIMELINE_TAIL: usize = 15;

/// Prints the run's overview (or its JSON).
pub fn run(config: Config, workspace: &str, json: bool, all: bool) -> anyhow::Result<ExitCode> {
    // Read-only: no event log is opened.
    let svc = Services::read_only(config, env!("CARGO_PKG_VERSION"));
    let o = run_overview(&svc, workspace)
        .map_err(|e| anyhow!("{} ({})", e.message, e.code.as_str()))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&o)?);
    } else {
        print!("{}", render(&o, all));
    }
    Ok(ExitCode::SUCCESS)
}

/// A duration for people.
pub fn duration(ms: u64) -> String {
    if ms == 0 {
        return "—".into();
    }
    if ms < 1000 {
        return format!("{ms} ms");
    }
    let s = ms as f64 / 1000.0;
    if s < 60.0 {
        return format!("{s:.1} s");
    }
    let m = (s / 60.0).floor() as u64;
    if m < 60 {
        return format!("{m} min {} s", (s as u64) % 60);
    }
    format!("{} h {} min", m / 60, m % 60)
}

/// A count with thousands separators.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn mark(state: PhaseState) -> &'static str {
    match state {
        PhaseState::Done => "✓",
        PhaseState::Skipped => "–",
        PhaseState::Running => "▶",
        PhaseState::Waiting => "⏸",
        PhaseState::Failed => "✗",
        PhaseState::Next => "○",
        PhaseState::Ahead => "·",
        PhaseState::Abandoned => "■",
    }
}

fn state_word(state: PhaseState) -> &'static str {
    match state {
        PhaseState::Done => "done",
        PhaseState::Skipped => "skipped",
        PhaseState::Running => "running",
        PhaseState::Waiting => "waiting for a person",
        PhaseState::Failed => "failed",
        PhaseState::Next => "next",
        PhaseState::Ahead => "",
        PhaseState::Abandoned => "abandoned here",
    }
}

fn width<'a>(items: impl Iterator<Item = &'a str>) -> usize {
    items.map(|s| s.chars().count()).max().unwrap_or(0)
}

/// The overview as text.
pub fn render(o: &RunOverview, all: bool) -> String {
    let s = &o.summary;
    let mut out = String::new();
    let status = if s.waiting {
        "waiting for you".to_string()
    } else {
        s.status.replace('_', " ")
    };
    out.push_str(&format!(
        "{}  ·  {} ({})  ·  {status}\n{}\n\n",
        s.spec_name, s.workflow, o.workflow_label, s.workspace
    ));
    out.push_str(&format!(
        "phase      {} ({}) — {status}\n",
        s.current_phase, s.current_phase_label
    ));
    // Skipped phases are not work done: counted apart.
    let of = |state: PhaseState| o.phases.iter().filter(|p| p.state == state).count();
    let skipped = of(PhaseState::Skipped);
    let mut facts = vec![format!(
        "{} of {} phases done{}",
        of(PhaseState::Done),
        o.phases.len() - skipped,
        if skipped > 0 {
            format!(" ({skipped} skipped)")
        } else {
            String::new()
        }
    )];
    if let Some(e) = &o.effort {
        facts.push(format!("effort {e}"));
    }
    if let Some(t) = &o.flow_template {
        facts.push(t.clone());
    }
    if let Some(b) = &o.branch {
        facts.push(format!("branch {b}"));
    }
    out.push_str(&format!("progress   {}\n", facts.join(" · ")));
    out.push_str(&format!(
        "time       started {} · elapsed {}{} · {} tokens\n",
        s.created.format("%Y-%m-%d %H:%M UTC"),
        duration(o.totals.elapsed_ms),
        if o.totals.reported_ms > 0 {
            format!(" (agents reported {})", duration(o.totals.reported_ms))
        } else {
            String::new()
        },
        count(o.totals.tokens)
    ));
    if let Some(e) = &o.error {
        // Continuation lines (an agent's error output) sit under the first.
        out.push_str(&format!(
            "failure    {}\n",
            e.trim_end().replace('\n', "\n           ")
        ));
    }
    if o.integrity.tampered {
        out.push_str("TAMPERING  state.json was changed outside baton:\n");
        for t in &o.integrity.tampering {
            out.push_str(&format!("           ⚠ {t}\n"));
        }
    }
    for n in &o.integrity.notes {
        out.push_str(&format!("workflow   ⚠ {n}\n"));
    }
    if let Some(f) = &o.feedback {
        out.push_str(&format!(
            "feedback   {f} (for the next agent of the phase sent back to)\n"
        ));
    }

    out.push_str("\nPHASES\n");
    let idw = width(o.phases.iter().map(|p| p.id.as_str()));
    let lw = width(o.phases.iter().map(|p| p.label.as_str()));
    for p in &o.phases {
        let mut extra = Vec::new();
        let word = state_word(p.state);
        if !word.is_empty() {
            extra.push(word.to_string());
        }
        if p.visits > 1 {
            extra.push(format!("{}×", p.visits));
        }
        if p.duration_ms > 0 {
            extra.push(duration(p.duration_ms));
        }
        if p.tokens > 0 {
            extra.push(format!("{} tokens", count(p.tokens)));
        }
        let loops: Vec<String> = o
            .edges
            .iter()
            .filter(|e| e.kind == "loop" && e.from == p.id)
            .map(|e| format!("↺ {} on {}", e.to, e.when))
            .collect();
        extra.extend(loops);
        out.push_str(&format!(
            "  {} {:idw$}  {:lw$}  {}\n",
            mark(p.state),
            p.id,
            p.label,
            extra.join(" · ")
        ));
    }

    if !o.tasks.is_empty() {
        out.push_str("\nTASKS\n");
        let kw = width(o.tasks.iter().map(|t| t.id.as_str()));
        let tw = width(o.tasks.iter().map(|t| t.title.as_str())).min(48);
        let mw = width(o.tasks.iter().map(|t| t.mode.as_str()));
        let sw = width(o.tasks.iter().map(|t| t.state.as_str()));
        for t in &o.tasks {
            let title: String = if t.title.chars().count() > tw {
                let mut c: String = t.title.chars().take(tw - 1).collect();
                c.push('…');
                c
            } else {
                t.title.clone()
            };
            let deps = if t.depends_on.is_empty() {
                "—".to_string()
            } else {
                t.depends_on.join(", ")
            };
            out.push_str(&format!(
                "  {:>kw$}  {:tw$}  {:mw$}  {:sw$}  {:>9}  {:>7} tokens  after {deps}\n",
                t.id,
                title,
                t.mode,
                t.state,
                duration(t.duration_ms),
                count(t.tokens),
            ));
        }
    }

    if let Some(q) = &o.question {
        out.push_str(&format!(
            "\nWAITING FOR YOU: {} ({})\n",
            q.name,
            q.kind.replace('_', " ")
        ));
        for line in q.text.trim_end().lines() {
            out.push_str(&format!("  │ {line}\n"));
        }
        out.push_str(&format!("  options: {}\n", q.options.join(" / ")));
        out.push_str(&format!(
            "  answer:  baton answer {} <option>{}  (or on the dashboard: baton dashboard)\n",
            s.id,
            if q.takes_text { " [text]" } else { "" }
        ));
    }

    out.push_str("\nARTIFACTS\n");
    if o.artifacts.is_empty() {
        out.push_str("  none yet\n");
    }
    let aw = width(o.artifacts.iter().map(|a| a.name.as_str()));
    for a in &o.artifacts {
        out.push_str(&format!(
            "  {:aw$}  {:>8} B  {}\n",
            a.name,
            count(a.size),
            a.phase.as_deref().unwrap_or("")
        ));
    }

    out.push_str("\nTIMELINE");
    let skip = if all {
        0
    } else {
        o.timeline.len().saturating_sub(TIMELINE_TAIL)
    };
    if skip > 0 {
        out.push_str(&format!(
            " (last {TIMELINE_TAIL} of {}; --all for every entry)",
            o.timeline.len()
        ));
    }
    out.push('\n');
    let ww = width(o.timeline.iter().map(|e| e.what.as_str()));
    let pw = width(o.timeline.iter().map(|e| e.phase.as_str()));
    for e in o.timeline.iter().skip(skip) {
        let mut line = format!(
            "  {}  {:ww$}  {:pw$}",
            e.at.format("%m-%d %H:%M:%S"),
            e.what,
            e.phase
        );
        if let Some(d) = e.detail.as_deref().and_then(|d| d.lines().next()) {
            line.push_str(&format!("  {d}"));
        }
        if let Some(b) = &e.by {
            line.push_str(&format!("  — {b}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!("\nnext: {}\n", o.next_step));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_counts_read_well() {
        assert_eq!(duration(0), "—");
        assert_eq!(duration(12), "12 ms");
        assert_eq!(duration(1500), "1.5 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(duration(3_900_000), "1 h 5 min");
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(999), "999");
    }
}
