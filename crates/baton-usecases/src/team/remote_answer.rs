//! A person's answer given here for a run of another machine: sent
//! through the team database and applied there.

use std::time::Duration;

use baton_state::Actor;

use super::link::team_error;
use super::remote::RemoteRun;
use crate::error::{Error, ErrorCode, Result};
use crate::pipeline::answer_reply::AnswerReply;
use crate::services::Services;

/// How long a remote answer is waited for before the reply says it waits.
pub const ANSWER_WAIT: Duration = Duration::from_secs(8);

/// The channels a person's answer may cross machines through: the
/// person's own (a terminal, the signed-in dashboard).
pub const CROSSING_CHANNELS: [&str; 2] = ["terminal", "dashboard"];

/// Sends a person's answer for a run of another machine, and waits up to
/// [`ANSWER_WAIT`] for that machine to apply it (under the run's lock,
/// through the same answer use case, recorded with this channel and this
/// machine). Only a person's own channels cross machines.
pub fn answer_remote(
    svc: &Services,
    run: &RemoteRun,
    answer: &str,
    by: &Actor,
) -> Result<AnswerReply> {
    let Some(team) = svc.team.get() else {
        return Err(Error::new(
            ErrorCode::NotFound,
            format!("no run {}", run.id),
        ));
    };
    if by.who != baton_state::Who::Person || !CROSSING_CHANNELS.contains(&by.channel.as_str()) {
        return Err(Error::new(
            ErrorCode::Forbidden,
            format!(
                "{} runs on {}; only a person's answer at a terminal or on the dashboard is sent to another machine",
                run.id, run.run.machine.name
            ),
        ));
    }
    let Some(question) = run.question() else {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "nothing in {} (on {}) waits for an answer",
                run.id, run.run.machine.name
            ),
        ));
    };
    let id = team
        .send_answer(
            &run.run,
            &question.name,
            answer,
            "person",
            by.channel.as_str(),
        )
        .map_err(team_error)?;
    let status = team.wait_answer(id, ANSWER_WAIT).map_err(team_error)?;
    use baton_team::AnswerStatus;
    match status {
        AnswerStatus::Applied(reply) => serde_json::from_str::<AnswerReply>(&reply).map_err(|_| {
            Error::new(
                ErrorCode::Internal,
                format!("{} answered: {reply}", run.run.machine.name),
            )
        }),
        AnswerStatus::Refused(why) => Err(Error::new(
            ErrorCode::Conflict,
            format!("{} did not take the answer: {why}", run.run.machine.name),
        )),
        AnswerStatus::Pending => Ok(AnswerReply {
            workspace: run.id.clone(),
            question: question.name,
            answer: answer.to_string(),
            by: remote_actor(by.channel.as_str(), &team.machine().label()).label(),
            current_phase: run.run.phase.clone(),
            current_phase_status: run.run.status.clone(),
            next_step: format!(
                "the answer waits in the team database until a baton process runs on {} (it is applied there then)",
                run.run.machine.name
            ),
        }),
    }
}

/// The actor of a person's answer given on machine `machine` through
/// `channel`.
pub fn remote_actor(channel: &str, machine: &str) -> Actor {
    let mut actor = Actor::person(channel);
    actor.machine = Some(machine.to_string());
    actor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_persons_own_channels_cross_machines() {
        let a = remote_actor("dashboard", "laptop-bob:baton");
        assert_eq!(a.label(), "person:dashboard@laptop-bob:baton");
        assert_eq!(CROSSING_CHANNELS, ["terminal", "dashboard"]);
    }
}
