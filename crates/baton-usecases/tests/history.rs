//! The run history in the use cases: a failure to record never fails the
//! call that ended the run (the next process's catch-up records it), a live
//! run has a summary, and the queries refuse bad input with the closed set
//! of codes.

use baton_usecases::history::{
    self as uc, EstimateArgs, FrictionArgs, PatternsArgs, SearchArgs, SummaryArgs,
};
use baton_usecases::recovery::{AbandonArgs, abandon};
use baton_usecases::runs::start_run;
use baton_usecases::{ErrorCode, Services};

mod common;

fn start(svc: &Services, slug: &str) -> String {
    let def = svc.workflow("issue").unwrap();
    let (ws, _, _) = start_run(
        svc,
        &def,
        &format!("20260101-{slug}"),
        slug,
        Some("7".into()),
    )
    .unwrap();
    ws.display
}

#[test]
fn a_record_that_cannot_be_written_never_fails_the_call_and_is_caught_up() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = common::services_in_memory(tmp.path());
    let ws = start(&svc, "fix-login");
    // The history folder is a link: baton refuses to write through it.
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join(".specs/.history")).unwrap();
    let reply = abandon(
        &svc,
        AbandonArgs {
            workspace: ws.clone(),
            reason: Some("not needed".into()),
        },
    )
    .unwrap();
    assert_eq!(reply.current_phase_status, "abandoned");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Once the folder is repaired, the next process records the run.
    std::fs::remove_file(tmp.path().join(".specs/.history")).unwrap();
    let next = common::services_in_memory(tmp.path());
    let found = uc::search(
        &next,
        SearchArgs {
            query: "fix login".into(),
            limit: None,
        },
    )
    .unwrap();
    assert_eq!(found.recorded, 1);
    let name = ws.rsplit('/').next().unwrap();
    assert_eq!(
        next.history.get(name).unwrap().reason.as_deref(),
        Some("not needed")
    );
}

#[test]
fn a_live_run_has_a_summary_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let svc = common::services_in_memory(tmp.path());
    let ws = start(&svc, "add-export");
    let summary = uc::summary(&svc, SummaryArgs { workspace: ws }).unwrap();
    assert_eq!(summary.outcome.as_str(), "running");
    assert_eq!(summary.phases[0].visits, 1);
    let e = uc::summary(
        &svc,
        SummaryArgs {
            workspace: "20990101-nothing".into(),
        },
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    let e = uc::summary(
        &svc,
        SummaryArgs {
            workspace: "../../etc".into(),
        },
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::OutOfScope);
    let e = uc::friction(&svc, FrictionArgs { limit: Some(51) }).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParameter);
    let e = uc::search(
        &svc,
        SearchArgs {
            query: "  ".into(),
            limit: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParameter);
    let e = uc::patterns(
        &svc,
        PatternsArgs {
            agent: Some("a\nb".into()),
            ..PatternsArgs::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParameter);
    let e = uc::estimate(
        &svc,
        EstimateArgs {
            request: "x".into(),
            effort: Some("XL".into()),
        },
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidParameter);
    // No completed run: an estimate with nothing to show, and no history
    // folder made by asking.
    let est = uc::estimate(
        &svc,
        EstimateArgs {
            request: "add an export".into(),
            effort: None,
        },
    )
    .unwrap();
    assert_eq!(est.display, None);
    assert!(!tmp.path().join(".specs/.history").exists());
}
