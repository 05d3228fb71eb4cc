//! `baton run`'s record of a failed agent (`headless::agent_failed`) for a
//! run the person abandoned while the agent worked: refused, saying the run
//! has ended — not that the action is stale, and not "resume it".

use baton_state::{Actor, Channel};
use baton_usecases::error::ErrorCode;
use baton_usecases::headless::{AgentFailure, agent_failed};
use baton_usecases::pipeline::action::Action;
use baton_usecases::pipeline::init::{
    InitWithContextArgs, UserConfirmation, pipeline_init_with_context,
};
use baton_usecases::pipeline::next::{NextArgs, next_action};
use baton_usecases::recovery::{AbandonArgs, abandon_by};

mod common;

#[test]
fn a_failed_agent_of_a_run_abandoned_meanwhile_is_told_the_run_ended() {
    let root = tempfile::tempdir().unwrap();
    assert!(
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(root.path())
            .status()
            .unwrap()
            .success()
    );
    let svc = common::services(root.path());
    let ws = pipeline_init_with_context(
        &svc,
        InitWithContextArgs {
            workspace: ".specs/20260101-gone".into(),
            task_text: Some("add a feature flag".into()),
            flags: Some(baton_engine::pipeline::init::Flags {
                skip_pr: true,
                ..Default::default()
            }),
            user_confirmation: Some(UserConfirmation {
                effort: "S".into(),
                use_current_branch: Some(true),
                ..UserConfirmation::default()
            }),
            ..InitWithContextArgs::default()
        },
    )
    .unwrap()
    .workspace
    .unwrap();
    let reply = next_action(&svc, NextArgs::for_workspace(&ws)).unwrap();
    assert!(
        matches!(reply.action, Action::SpawnAgent(_)),
        "{:?}",
        reply.action
    );
    // The person abandons the run while its agent works.
    abandon_by(
        &svc,
        AbandonArgs {
            workspace: ws.clone(),
            reason: Some("not needed".into()),
        },
        &Actor::person(Channel::Terminal),
    )
    .unwrap();
    let failure = AgentFailure {
        agent: "situation-analyst-investigator".into(),
        task: None,
        how: "exited with status 3".into(),
        stderr_tail: String::new(),
        left_outside: false,
    };
    let state = std::fs::read(root.path().join(&ws).join("state.json")).unwrap();
    let e = agent_failed(&svc, &ws, &reply.action_id, &failure).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState, "{}", e.message);
    assert!(
        e.message.contains("has ended (abandoned)") && e.message.contains("was not recorded"),
        "{}",
        e.message
    );
    let details = e.details.expect("details");
    assert_eq!(details["currentPhaseStatus"], "abandoned");
    assert_eq!(
        std::fs::read(root.path().join(&ws).join("state.json")).unwrap(),
        state,
        "nothing written"
    );
}
