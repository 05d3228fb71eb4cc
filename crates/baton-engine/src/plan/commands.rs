//! Command phases: the next step's argv with its placeholders filled in
//! (never a shell string), a guarded step's "already done" check, and the
//! run's commit — its files (`{run-files}`) and the secret-looking ones a
//! person must decide about.

use baton_state::{CommandGuard, WorkspaceState};
use baton_workflow::{Answerer, CommandSource, CommandStep, PhaseDefinition};

use super::commit::{RunPaths, StagePlan, stage_plan};
use super::questions::options;
use super::request::placeholders;
use super::types::{Plan, PlanError, PlanInput, Question, QuestionKind};

/// The argument that expands to the run's files in a `commits` phase.
pub const RUN_FILES: &str = "{run-files}";

fn run_files(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Option<StagePlan>, PlanError> {
    if !phase.commits {
        return Err(PlanError(format!(
            "{} uses {RUN_FILES} but is not a `commits` phase",
            phase.id
        )));
    }
    let Some(status) = input.repo else {
        return Ok(None);
    };
    let specs_dir = input
        .workspace
        .rsplit_once('/')
        .map(|(dir, _)| dir)
        .unwrap_or("");
    Ok(Some(stage_plan(
        state,
        status,
        RunPaths {
            specs_dir,
            workspace: input.workspace,
        },
    )))
}

fn secret_files(input: &PlanInput<'_>, phase: &PhaseDefinition, files: Vec<String>) -> Question {
    let mut message = format!(
        "## {} — files that look like secrets\n\nThe run changed these files, which look like secrets (keys, environment or credential files):\n",
        phase.label
    );
    for f in &files {
        message.push_str(&format!("- {f}\n"));
    }
    message.push_str(&format!(
        "\nThey are not committed unless you say so. Answer `exclude` to leave them out of the commit, `include` to commit them, or `abandon`. (Workspace: {})",
        input.workspace
    ));
    Question {
        phase: phase.id.clone(),
        name: format!("{}-secret-files", phase.id),
        message,
        options: options(&["exclude", "include", "abandon"]),
        kind: QuestionKind::SecretFiles { files },
        answered_by: Answerer::Person,
    }
}

/// The next step of a command phase.
pub(crate) fn command(
    input: &PlanInput<'_>,
    state: &WorkspaceState,
    phase: &PhaseDefinition,
) -> Result<Plan, PlanError> {
    let commands: &[CommandStep] = match &phase.commands {
        Some(CommandSource::Fixed(list)) => list,
        _ => &[],
    };
    let step = state.command_step as usize;
    let Some(command) = commands.get(step) else {
        return Ok(Plan::CompletePhase {
            phase: phase.id.clone(),
        });
    };
    // A guarded step checks first, and checks again when the command was
    // handed out but never reported (a resume): its work may be done.
    let (argv, check) = match command.skip_if() {
        Some(probe) if state.command_guard != CommandGuard::Run => (probe, true),
        _ => (command.run(), false),
    };
    let vars = placeholders(input, state);
    let mut rendered = Vec::with_capacity(argv.len());
    for arg in argv {
        if arg == RUN_FILES {
            let Some(files) = run_files(input, state, phase)? else {
                return Ok(Plan::ReadRepo {
                    phase: phase.id.clone(),
                });
            };
            if !files.undecided_secrets.is_empty() {
                return Ok(Plan::Ask(secret_files(
                    input,
                    phase,
                    files.undecided_secrets,
                )));
            }
            if files.stage.is_empty() {
                return Ok(Plan::SkipStep {
                    phase: phase.id.clone(),
                });
            }
            rendered.extend(files.stage);
        } else {
            rendered.push(vars.render(arg));
        }
    }
    let argv = rendered;
    if argv.first().is_none_or(|a| a.is_empty()) {
        return Err(PlanError(format!(
            "{} command {} is empty",
            phase.id,
            step + 1
        )));
    }
    Ok(Plan::Exec {
        phase: phase.id.clone(),
        argv,
        check,
    })
}
