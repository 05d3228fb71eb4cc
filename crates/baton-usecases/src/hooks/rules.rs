//! The engine's scope rules for a run's current phase: read from its state
//! and workflow definition, with the repository's paths.

use std::path::Path;

use baton_engine::scope::Rules;
use baton_state::{PhaseStatus, PinSource, WorkspaceRef, WorkspaceState};
use baton_workflow::{CONTROL_FILES, PerTask, Registry, ScopeTable, WorkflowDefinition};

/// What the run's state says about the current step.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// The outstanding action's id (`a3`), if one is handed out.
    pub action_id: Option<String>,
    /// What it is, for a person and the agent (`spawn_agent phase-1 →
    /// analysis.md`).
    pub describe: String,
    /// The argv of an outstanding command action.
    pub argv: Option<Vec<String>>,
    /// The output files of an outstanding agent action (workspace-relative).
    pub outputs: Vec<String>,
    /// The tasks an outstanding agent action works on.
    pub tasks: Vec<String>,
    /// The question the run waits at, when it waits for a person.
    pub waiting_for: Option<String>,
}

/// Reads the outstanding action's key (`spawn|phase|agent|output|task|tasks`,
/// `exec|phase|check|argv…`, `ask|phase|name`).
pub fn step_of(state: &WorkspaceState) -> Step {
    let mut step = Step::default();
    if let Some(outstanding) = &state.outstanding_action {
        step.action_id = Some(outstanding.id.clone());
        let key = outstanding.key.as_str();
        let kind = key.split('|').next().unwrap_or_default();
        match kind {
            "spawn" => {
                let parts: Vec<&str> = key.splitn(6, '|').collect();
                let agent = parts.get(2).copied().unwrap_or_default();
                if let Some(out) = parts.get(3).filter(|o| !o.is_empty()) {
                    step.outputs.push(out.to_string());
                }
                step.tasks = crate::pipeline::step::ids::dispatched_tasks(key);
                step.describe = format!(
                    "spawn_agent {} ({agent}){}",
                    state.current_phase,
                    if step.outputs.is_empty() {
                        String::new()
                    } else {
                        format!(" → {}", step.outputs.join(", "))
                    }
                );
            }
            "exec" => {
                let parts: Vec<&str> = key.splitn(4, '|').collect();
                let argv: Vec<String> = parts
                    .get(3)
                    .map(|a| a.split('\u{1f}').map(str::to_string).collect())
                    .unwrap_or_default();
                step.describe = format!("exec {}: {}", state.current_phase, argv.join(" "));
                step.argv = Some(argv);
            }
            "write" => {
                // `write|phase|file`, the file relative to the workspace:
                // the action's own file may be written.
                if let Some(file) = key.splitn(3, '|').nth(2).filter(|f| !f.is_empty()) {
                    step.outputs.push(file.to_string());
                }
                step.describe = format!("write_file {}", state.current_phase);
            }
            "ask" => {
                let name = key.splitn(3, '|').nth(2).unwrap_or_default();
                step.describe = name.to_string();
            }
            _ => step.describe = format!("the step of {}", state.current_phase),
        }
    }
    if state.current_phase_status == PhaseStatus::AwaitingHuman || state.pending_decision.is_some()
    {
        let asked = state
            .outstanding_action
            .as_ref()
            .filter(|o| o.key.starts_with("ask|"))
            .map(|_| step.describe.clone());
        step.waiting_for = Some(asked.unwrap_or_else(|| state.current_phase.clone()));
    }
    step
}

/// The key of the definition `state`'s run is pinned to, for a cached
/// [`ScopeTable`]: a built-in's is the digest of the text this binary
/// embeds (a new baton with a changed built-in compiles it again), a
/// project definition's the digest its pin records. `None` for a run
/// without a pin (it follows the current definition: nothing is cached).
pub fn definition_key(state: &WorkspaceState) -> Option<String> {
    let pin = state.definition.as_ref()?;
    Some(match pin.source {
        PinSource::Builtin => format!(
            "builtin:{}:{}",
            state.workflow,
            crate::pinning::digest(Registry::builtin_text(&pin.file)?)
        ),
        PinSource::Project => format!("project:{}", pin.digest),
    })
}

/// The rules for the run's current phase.
pub fn rules_for(
    def: &WorkflowDefinition,
    state: &WorkspaceState,
    ws: &WorkspaceRef,
    repo_root: &Path,
    specs_root: &Path,
    step: &Step,
) -> Rules {
    rules_from_table(&def.scope_table(), state, ws, repo_root, specs_root, step)
}

/// The rules for the run's current phase from its definition's scope data.
pub fn rules_from_table(
    def: &ScopeTable,
    state: &WorkspaceState,
    ws: &WorkspaceRef,
    repo_root: &Path,
    specs_root: &Path,
    step: &Step,
) -> Rules {
    let phase = def.phase(&state.current_phase);
    let scope = phase.map(|p| p.scope.clone()).unwrap_or_default();
    let specs_dir = specs_root
        .strip_prefix(repo_root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| ".specs".into());
    let mut protected = def.protected.clone();
    protected.extend(
        CONTROL_FILES
            .iter()
            .map(|p| p.replace("{specs}", &specs_dir)),
    );
    let ws_rel = ws.display.trim_end_matches('/').to_string();
    let mut own: Vec<String> = Vec::new();
    if let Some(p) = phase {
        own.extend(p.artifacts.iter().map(|a| format!("{ws_rel}/{a}")));
        let per_task = |prefix: &str, tasks: &[String], own: &mut Vec<String>| {
            for t in tasks {
                own.push(format!("{ws_rel}/{prefix}-{t}.md"));
            }
        };
        match p.per_task {
            Some(PerTask::Implement) => per_task("impl", &step.tasks, &mut own),
            Some(PerTask::Review) => per_task("review", &step.tasks, &mut own),
            _ => {}
        }
    }
    own.extend(step.outputs.iter().map(|o| format!("{ws_rel}/{o}")));
    own.sort();
    own.dedup();
    let home = std::env::var("HOME").ok().filter(|h| h.starts_with('/'));
    let mut outside_protected: Vec<String> = Vec::new();
    if let Some(home) = &home {
        for dir in [
            ".claude",
            ".claude.json",
            ".codex",
            ".cursor",
            ".config",
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".profile",
            ".zshrc",
            ".zshenv",
            ".zprofile",
            ".gitconfig",
            ".ssh",
            ".local/bin",
        ] {
            outside_protected.push(format!("{home}/{dir}"));
        }
    }
    let mut scratch_dirs = vec!["/tmp".to_string(), "/var/tmp".to_string()];
    if let Ok(tmp) = std::env::var("TMPDIR")
        && tmp.starts_with('/')
    {
        scratch_dirs.push(tmp.trim_end_matches('/').to_string());
    }
    Rules {
        workspace: ws.display.clone(),
        phase: state.current_phase.clone(),
        phase_label: phase.map(|p| p.label.clone()).unwrap_or_default(),
        writes: scope.writes,
        git: scope.git,
        tools: scope.tools,
        commands: scope.commands,
        protected,
        specs_dir,
        own_files: own,
        scratch_dirs,
        outside_protected,
        waiting_for: step.waiting_for.clone(),
        handed_out: step.argv.clone(),
        revertable: Vec::new(),
    }
}
