//! What the agents of a reported step used, per agent: an extension of
//! `pipeline_next_action` (`previous_usage`) that `baton run` sends with
//! each `spawn_agent` report, read from the agent CLIs' own JSON results.
//! A fan-out's step is logged as one phase-log entry per task, each with
//! its tokens and cost (the model is the report's `previous_model`); a
//! single agent's entry gets its cost.

use schemars::JsonSchema;
use serde::Deserialize;

use baton_state::PhaseLogEntry;

use crate::validate::check_text;
use crate::{Error, Result};

/// Most entries one report may carry (one per task of a fan-out).
pub const MAX_USAGE_ENTRIES: usize = 64;

// The schema's texts are short: every agent pays for them in tools/list.
/// One agent.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentUsage {
    /// Task.
    #[serde(default)]
    pub task: Option<String>,
    /// Tokens.
    pub tokens: u64,
    /// USD.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Checks `previous_usage` against the rest of the report before anything
/// is written.
pub fn check(usage: &[AgentUsage], tokens: Option<u64>) -> Result<()> {
    if usage.len() > MAX_USAGE_ENTRIES {
        return Err(Error::invalid(
            "previous_usage",
            format!(
                "previous_usage has {} entries; at most {MAX_USAGE_ENTRIES} (one per agent of the step)",
                usage.len()
            ),
        ));
    }
    for (i, u) in usage.iter().enumerate() {
        if let Some(t) = &u.task {
            check_text(&format!("previous_usage[{i}].task"), t, 64)?;
        }
        if let Some(c) = u.cost_usd
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(Error::invalid(
                &format!("previous_usage[{i}].cost_usd"),
                format!("previous_usage[{i}].cost_usd must be a number of US dollars >= 0"),
            ));
        }
    }
    let sum: u64 = usage.iter().map(|u| u.tokens).sum();
    if let Some(t) = tokens
        && !usage.is_empty()
        && t != sum
    {
        return Err(Error::invalid(
            "previous_usage",
            format!(
                "previous_tokens is {t} but previous_usage adds up to {sum}; send the same total or leave previous_tokens out"
            ),
        ));
    }
    Ok(())
}

/// The phase-log entries of one report: `entry` as it is (no usage given),
/// with the one agent's cost, or one entry per agent of a fan-out.
pub fn entries(entry: PhaseLogEntry, usage: &[AgentUsage]) -> Vec<PhaseLogEntry> {
    match usage {
        [] => vec![entry],
        [one] if one.task.is_none() || entry.tasks.len() <= 1 => vec![PhaseLogEntry {
            cost_usd: one.cost_usd,
            ..entry
        }],
        many => many
            .iter()
            .map(|u| PhaseLogEntry {
                tokens: u.tokens,
                tasks: u.task.iter().cloned().collect(),
                cost_usd: u.cost_usd,
                ..entry.clone()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> PhaseLogEntry {
        PhaseLogEntry {
            phase: "phase-5".into(),
            tokens: 30,
            duration_ms: 900,
            model: "m".into(),
            timestamp: chrono::Utc::now(),
            tasks: vec!["2".into(), "3".into()],
            cost_usd: None,
        }
    }

    fn usage(task: &str, tokens: u64, cost: f64) -> AgentUsage {
        AgentUsage {
            task: Some(task.into()),
            tokens,
            cost_usd: Some(cost),
        }
    }

    #[test]
    fn a_fan_out_is_logged_per_task_and_the_sums_stay() {
        let u = [usage("2", 10, 0.25), usage("3", 20, 0.5)];
        check(&u, Some(30)).unwrap();
        let e = entries(entry(), &u);
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].tasks.clone(), e[0].tokens, e[0].cost_usd),
            (vec!["2".to_string()], 10, Some(0.25))
        );
        assert_eq!(
            (e[1].tasks.clone(), e[1].tokens, e[1].cost_usd),
            (vec!["3".to_string()], 20, Some(0.5))
        );
        assert_eq!(e.iter().map(|x| x.tokens).sum::<u64>(), 30);
        assert!(e.iter().all(|x| x.model == "m" && x.duration_ms == 900));
    }

    #[test]
    fn one_agent_keeps_its_entry_with_its_cost() {
        let mut single = entry();
        single.tasks.clear();
        let u = [AgentUsage {
            task: None,
            tokens: 30,
            cost_usd: Some(1.5),
        }];
        let e = entries(single, &u);
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].tokens, e[0].cost_usd, e[0].model.as_str()),
            (30, Some(1.5), "m")
        );
        assert_eq!(entries(entry(), &[]).len(), 1);
    }

    #[test]
    fn bad_usage_is_refused_with_its_field() {
        let e = check(&[usage("2", 10, 0.1)], Some(11)).unwrap_err();
        assert!(e.message.contains("adds up to 10"), "{}", e.message);
        let e = check(&[usage("2", 10, f64::NAN)], None).unwrap_err();
        assert!(
            e.message.contains("previous_usage[0].cost_usd"),
            "{}",
            e.message
        );
        let many: Vec<AgentUsage> = (0..65).map(|i| usage(&i.to_string(), 1, 0.0)).collect();
        assert!(check(&many, None).is_err());
    }
}
