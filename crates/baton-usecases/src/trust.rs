//! Who may answer a question: the one place that decides.
//!
//! The workflow's `answered_by` is the definition's rule (`person` or
//! `agent`); this module decides whether an [`Actor`] satisfies it:
//!
//! * a question the workflow lets the agent answer (`answered_by: agent`)
//!   takes any answer;
//! * a person's question takes a **person's channel** — `terminal`,
//!   `dashboard`, `prompt` (the person's own chat message, recorded by the
//!   client's hook), `chat` ([`Channel::is_persons`]);
//! * the **client's** channels (`elicitation`, anything else) count only
//!   where the person trusted them in their own configuration
//!   ([`baton_config::person`], outside every repository);
//! * **`--auto`** answers only where the person granted it: `baton run` at
//!   a terminal, `baton run` for a run it started itself (an [`AutoGrant`],
//!   which only the CLI adapter makes), or the person's configuration for
//!   the repository; a tool argument (`flags.auto`) asks for it and grants
//!   nothing;
//! * the agent never answers a person's question.
//!
//! Every answer is recorded with its actor, whatever counted it.

use std::path::Path;

use serde_json::json;

use baton_config::PersonSettings;
use baton_state::{Actor, Channel, Who, WorkspaceState};
use baton_workflow::Answerer;

use crate::{Error, ErrorCode, Result, Services};

/// Why an actor may not answer a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The agent answered a person's question.
    AgentForPerson,
    /// A client's channel the person has not trusted.
    UntrustedChannel,
    /// `--auto` without the person's grant.
    AutoNotGranted,
}

impl Refusal {
    /// The stable rule name given in the error's details.
    pub fn rule(self) -> &'static str {
        match self {
            Refusal::AgentForPerson => "person_only",
            Refusal::UntrustedChannel => "untrusted_channel",
            Refusal::AutoNotGranted => "auto_not_granted",
        }
    }
}

/// Whether `by` counts as the person (a person's channel, or a client's
/// channel the person trusts).
pub fn counts_as_person(by: &Actor, person: &PersonSettings) -> bool {
    match by.who {
        Who::Person => by.channel.is_persons() || person.trusts(by.channel.as_str()),
        Who::Client => person.trusts(by.channel.as_str()),
        Who::Agent | Who::Auto => false,
    }
}

/// Decides whether `by` may answer a question whose rule is `rule`, in the
/// run `state` of the repository `repo`.
pub fn may_answer(
    rule: Answerer,
    by: &Actor,
    state: &WorkspaceState,
    person: &PersonSettings,
    repo: &Path,
) -> Result<(), Refusal> {
    if rule == Answerer::Agent {
        return Ok(());
    }
    match by.who {
        Who::Agent => Err(Refusal::AgentForPerson),
        Who::Person | Who::Client => {
            if counts_as_person(by, person) {
                Ok(())
            } else {
                Err(Refusal::UntrustedChannel)
            }
        }
        Who::Auto => {
            if auto_actor(state, person, repo).is_some() {
                Ok(())
            } else {
                Err(Refusal::AutoNotGranted)
            }
        }
    }
}

/// The actor `--auto` answers as in this run, when the person granted it:
/// the grant recorded with the run (`auto:terminal`, `auto:driver`), else
/// the person's configuration for the repository (`auto:config`). `None`:
/// the run did not ask for `--auto`, or nobody granted it.
pub fn auto_actor(state: &WorkspaceState, person: &PersonSettings, repo: &Path) -> Option<Actor> {
    if !state.auto_approve {
        return None;
    }
    if let Some(grant) = &state.auto_granted_by {
        return Some(Actor::auto_via(grant.channel.clone()));
    }
    person
        .allows_auto_in(repo)
        .then(|| Actor::auto_via(Channel::Config))
}

/// What a person does to let a run that asked for `--auto` go on without
/// them: for agents' replies and warnings (never suggests `--auto` to the
/// caller itself).
pub fn how_to_allow_auto(repo: &Path) -> String {
    let file = baton_config::person::config_file()
        .map(|f| f.display().to_string())
        .unwrap_or_else(|| "~/.config/baton/config.toml".into());
    format!(
        "This run asked for --auto, which only the person grants: the person answers its checkpoints (baton answer at a terminal, or the dashboard), or allows --auto for this repository in their own configuration ({file}: [auto] repositories = [\"{}\"]). Until then the run waits at each checkpoint.",
        repo.display()
    )
}

/// The error for a refused answer, written for the agent that gave it.
pub fn refusal_error(
    refusal: Refusal,
    question: &str,
    options: &[String],
    by: &Actor,
    how_to_answer: &str,
    repo: &Path,
) -> Error {
    let message = match refusal {
        Refusal::AgentForPerson => format!(
            "{question} must be answered by a person, not by the agent (the workflow says answered_by: person). {how_to_answer}"
        ),
        Refusal::UntrustedChannel => format!(
            "{question} must be answered by a person; an answer through {} ({}) is the client's, and counts as the person's only where the person trusts that channel in their own configuration. {how_to_answer}",
            by.channel,
            by.label()
        ),
        Refusal::AutoNotGranted => format!(
            "{question} cannot be answered by --auto: {} {how_to_answer}",
            how_to_allow_auto(repo)
        ),
    };
    Error::new(ErrorCode::Blocked, message).with_details(
        json!({"rule": refusal.rule(), "question": question, "options": options, "by": by.label()}),
    )
}

/// Where `--auto` comes from when `baton run` grants it. Made only by the
/// CLI adapter (`baton run`): for a run it has just started itself, or at a
/// terminal. MCP tools and HTTP routes never make one (the layering test
/// pins that), so a tool argument can ask for `--auto` but never grant it.
#[derive(Debug, Clone)]
pub struct AutoGrant {
    channel: Channel,
}

impl AutoGrant {
    /// `baton run` started this run itself, with `--auto` on its command line.
    pub fn for_run_started_here() -> AutoGrant {
        AutoGrant {
            channel: Channel::Driver,
        }
    }

    /// The actor the grant answers as (`auto:driver`, `auto:terminal`).
    pub fn actor(&self) -> Actor {
        Actor::auto_via(self.channel.clone())
    }

    /// `baton run --auto` with a terminal on its input (a person typed it).
    /// `None` when stdin is not a terminal.
    pub fn at_terminal() -> Option<AutoGrant> {
        use std::io::IsTerminal;
        std::io::stdin().is_terminal().then_some(AutoGrant {
            channel: Channel::Terminal,
        })
    }
}

/// Records `grant` with the run: from now on its checkpoints (and the
/// questions `baton run --auto` answers) are answered as `auto:<channel>`.
pub fn grant_auto(svc: &Services, workspace: &str, grant: AutoGrant) -> Result<()> {
    crate::validate::check_text("workspace", workspace, 1024)?;
    let ws = svc.store.resolve(workspace)?;
    svc.store.update(&ws, chrono::Utc::now(), |state| {
        if state.current_phase_status.is_terminal() {
            return Ok::<_, Error>(());
        }
        state.auto_approve = true;
        state.auto_granted_by = Some(Actor::auto_via(grant.channel.clone()));
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(auto: bool) -> WorkspaceState {
        let mut s =
            WorkspaceState::fresh("forge", "phase-1", "x", ".specs/x", "0", chrono::Utc::now());
        s.auto_approve = auto;
        s
    }

    #[test]
    fn only_a_persons_channels_answer_a_persons_question_by_default() {
        let none = PersonSettings::default();
        let repo = Path::new("/repo");
        let s = state(false);
        let check = |by: &Actor| may_answer(Answerer::Person, by, &s, &none, repo);
        for channel in ["terminal", "dashboard", "prompt", "chat"] {
            assert_eq!(check(&Actor::person(channel)), Ok(()), "{channel}");
        }
        assert_eq!(
            check(&Actor::client("elicitation")),
            Err(Refusal::UntrustedChannel)
        );
        // A "person" on a channel that is not a person's is a client.
        assert_eq!(Actor::person("elicitation").who, Who::Client);
        assert_eq!(check(&Actor::agent()), Err(Refusal::AgentForPerson));
        assert_eq!(
            check(&Actor::auto_via(Channel::Driver)),
            Err(Refusal::AutoNotGranted)
        );
        // The agent's own questions take any answer.
        assert_eq!(
            may_answer(Answerer::Agent, &Actor::agent(), &s, &none, repo),
            Ok(())
        );
    }

    #[test]
    fn the_person_trusts_a_channel_or_grants_auto_in_their_own_configuration() {
        let repo = Path::new("/repo");
        let trusting = PersonSettings::parse(
            "[answers]\ntrust = [\"elicitation\"]\n[auto]\nrepositories = [\"/repo\"]\n",
            Path::new("/home/p/.config/baton/config.toml"),
        );
        let s = state(true);
        assert_eq!(
            may_answer(
                Answerer::Person,
                &Actor::client("elicitation"),
                &s,
                &trusting,
                repo
            ),
            Ok(())
        );
        assert_eq!(
            auto_actor(&s, &trusting, repo).map(|a| a.label()),
            Some("auto:config".into())
        );
        assert_eq!(auto_actor(&s, &trusting, Path::new("/other")), None);
        // Without the run asking for it, nothing is automatic.
        assert_eq!(auto_actor(&state(false), &trusting, repo), None);
        // A grant recorded with the run answers as its channel.
        let mut granted = state(true);
        granted.auto_granted_by = Some(Actor::auto_via(Channel::Terminal));
        assert_eq!(
            auto_actor(&granted, &PersonSettings::default(), Path::new("/other"))
                .map(|a| a.label()),
            Some("auto:terminal".into())
        );
    }
}
