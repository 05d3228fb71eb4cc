//! Action ids: what identifies a handed-out action, so handing the same one
//! out again keeps its id and a report names the action it is for (a
//! resend after a lost reply is applied once).

use baton_engine::plan::{Plan, Spawn};
use baton_state::WorkspaceState;

/// What identifies a handed-out action: handing the same one out again
/// keeps its id.
pub(crate) fn action_key(plan: &Plan) -> String {
    match plan {
        Plan::Spawn(spawn) => format!("spawn|{}|{}", spawn.phase, dispatch_key(spawn)),
        Plan::Exec { phase, argv, check } => {
            format!("exec|{phase}|{check}|{}", argv.join("\u{1f}"))
        }
        Plan::WriteFile { phase, file, .. } => format!("write|{phase}|{file}"),
        Plan::Ask(q) => format!("ask|{}|{}", q.phase, q.name),
        _ => String::new(),
    }
}

/// The id of the action `plan` hands out: the same as before when the same
/// action is handed out again (no report applied in between), else the next
/// number; recorded as the outstanding action.
pub(crate) fn assign_action_id(state: &mut WorkspaceState, plan: &Plan, reported: bool) -> String {
    if matches!(plan, Plan::Done { .. }) {
        // Nothing to report for `done`: no id, and none outstanding.
        state.outstanding_action = None;
        return String::new();
    }
    let key = action_key(plan);
    let same = !reported
        && state
            .outstanding_action
            .as_ref()
            .is_some_and(|o| o.key == key);
    let id = match (&state.outstanding_action, same) {
        (Some(o), true) => o.id.clone(),
        _ => {
            state.action_seq += 1;
            format!("a{}", state.action_seq)
        }
    };
    state.outstanding_action = Some(baton_state::OutstandingAction {
        id: id.clone(),
        key,
    });
    id
}

/// What identifies a handed-out agent action: agent, output and tasks.
pub(crate) fn dispatch_key(spawn: &Spawn) -> String {
    let tasks: Vec<&str> = spawn.parallel.iter().map(|t| t.id.as_str()).collect();
    format!(
        "{}|{}|{}|{}",
        spawn.agent,
        spawn.output.as_deref().unwrap_or(""),
        spawn.task.as_deref().unwrap_or(""),
        tasks.join(",")
    )
}

/// The task keys of a handed-out agent action (the inverse of the dispatch
/// key: a single per-task agent's task, or a fan-out's tasks); empty for an
/// action that works on no task.
pub fn dispatched_tasks(key: &str) -> Vec<String> {
    let mut parts = key.split('|').skip(2);
    let single = parts.next().unwrap_or("");
    let fan_out: Vec<String> = parts
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if !fan_out.is_empty() {
        fan_out
    } else if single.is_empty() {
        Vec::new()
    } else {
        vec![single.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use baton_engine::plan::{ParallelTask, Plan, Spawn};
    use baton_state::WorkspaceState;

    use super::{action_key, assign_action_id, dispatch_key, dispatched_tasks};

    fn state() -> WorkspaceState {
        WorkspaceState::fresh("forge", "phase-1", "x", ".specs/x", "t", chrono::Utc::now())
    }

    fn exec(argv: &[&str]) -> Plan {
        Plan::Exec {
            phase: "final-commit".into(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            check: false,
        }
    }

    fn spawn(task: Option<&str>, parallel: &[&str]) -> Spawn {
        Spawn {
            phase: "phase-5".into(),
            agent: "implementer".into(),
            model: "sonnet".into(),
            inputs: vec!["tasks.md".into()],
            output: task.map(|t| format!("impl-{t}.md")),
            task: task.map(str::to_string),
            parallel: parallel
                .iter()
                .map(|id| ParallelTask {
                    id: id.to_string(),
                    input_files: Vec::new(),
                    output_file: format!("impl-{id}.md"),
                })
                .collect(),
            summary: String::new(),
        }
    }

    #[test]
    fn the_same_action_handed_out_again_keeps_its_id_until_a_report() {
        let mut s = state();
        let first = assign_action_id(&mut s, &exec(&["git", "status"]), false);
        assert_eq!(first, "a1");
        // Handed out again (the reply was lost): the same id.
        assert_eq!(
            assign_action_id(&mut s, &exec(&["git", "status"]), false),
            "a1"
        );
        // A report came in between: the next action is a new one, even if
        // it looks the same (a command run twice on purpose).
        assert_eq!(
            assign_action_id(&mut s, &exec(&["git", "status"]), true),
            "a2"
        );
        // Another action: the next number.
        assert_eq!(
            assign_action_id(&mut s, &exec(&["git", "push"]), false),
            "a3"
        );
        assert_eq!(
            s.outstanding_action.as_ref().map(|o| o.id.as_str()),
            Some("a3")
        );
    }

    #[test]
    fn done_has_no_id_and_leaves_nothing_outstanding() {
        let mut s = state();
        assign_action_id(&mut s, &exec(&["true"]), false);
        let done = Plan::Done {
            summary: "ok".into(),
            abandoned: false,
        };
        assert_eq!(assign_action_id(&mut s, &done, false), "");
        assert!(s.outstanding_action.is_none());
        assert_eq!(action_key(&done), "");
    }

    #[test]
    fn arguments_are_part_of_a_command_s_identity() {
        // `a b` and `a`,`b` are different commands: the separator is no
        // character an argument holds.
        assert_ne!(
            action_key(&exec(&["echo", "a b"])),
            action_key(&exec(&["echo", "a", "b"]))
        );
    }

    #[test]
    fn a_dispatch_key_gives_back_its_tasks() {
        assert_eq!(
            dispatched_tasks(&dispatch_key(&spawn(Some("3"), &[]))),
            ["3"]
        );
        assert_eq!(
            dispatched_tasks(&dispatch_key(&spawn(None, &["2", "4"]))),
            ["2", "4"]
        );
        assert!(dispatched_tasks(&dispatch_key(&spawn(None, &[]))).is_empty());
        // The key the planner records for a spawn ends in the dispatch key.
        let plan = Plan::Spawn(spawn(None, &["2", "4"]));
        assert!(action_key(&plan).ends_with(&dispatch_key(&spawn(None, &["2", "4"]))));
    }
}
