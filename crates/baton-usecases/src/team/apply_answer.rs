//! An answer another machine sent for a run of this one, applied here
//! through the answer use case like any other.

use baton_team::RemoteAnswer;

use super::remote_answer::{CROSSING_CHANNELS, remote_actor};
use crate::services::Services;

/// Applies an answer another machine sent for a run of this one: the
/// question must still be the one the person saw, the channel a person's
/// own, and the answer goes through the answer use case like any other.
pub fn apply_remote_answer(
    svc: &Services,
    a: &RemoteAnswer,
) -> std::result::Result<String, String> {
    if a.who != "person" || !CROSSING_CHANNELS.contains(&a.channel.as_str()) {
        return Err(format!(
            "only a person's answer at a terminal or on the dashboard crosses machines (got {}:{})",
            a.who, a.channel
        ));
    }
    let Some(team) = svc.team.get() else {
        return Err("team mode is off here".into());
    };
    if a.from.id == team.machine().id {
        return Err("an answer from this machine is given here, not through the database".into());
    }
    match crate::pipeline::answer::pending_question(svc, &a.workspace) {
        Ok(Some(q)) if q.name == a.question => {}
        Ok(Some(q)) => {
            return Err(format!(
                "the run now waits at {} (the answer was for {}); look again before answering",
                q.name, a.question
            ));
        }
        Ok(None) => return Err("nothing in this run waits for an answer any more".into()),
        Err(e) => return Err(e.message),
    }
    crate::pipeline::answer::answer_question(
        svc,
        crate::pipeline::answer::AnswerArgs {
            workspace: a.workspace.clone(),
            answer: a.answer.clone(),
        },
        remote_actor(&a.channel, &a.from.name),
    )
    .map(|reply| serde_json::to_string(&reply).unwrap_or_default())
    .map_err(|e| e.message)
}
