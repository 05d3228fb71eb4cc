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
