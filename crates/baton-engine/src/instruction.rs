//! The instruction an agent receives for a phase (seed 004 PhaseInstruction),
//! filled with what the handler detected about the repository.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use baton_workflow::{CommandSource, PhaseKind, WorkflowDefinition};

/// A command detected in the repository (argv, never a shell string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DetectedCommand {
    /// What it checks: lint, format, typecheck, test, e2e.
    pub name: String,
    /// The argv to run from the repository root.
    pub argv: Vec<String>,
    /// Where it was detected (e.g. "Cargo.toml", "package.json scripts.lint").
    pub source: String,
}

/// What the handler knows about the repository; data only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RepoProfile {
    /// Quality commands in the order they should run.
    pub quality_commands: Vec<DetectedCommand>,
}

/// Seed 004's PhaseInstruction (field names as in the seed).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseInstruction {
    /// Phase id.
    pub phase_name: String,
    /// Human-readable label.
    pub label: String,
    /// Phase kind.
    pub kind: String,
    /// What must hold before the phase starts.
    pub preconditions: Vec<String>,
    /// What must hold for the phase to be complete (report them in acceptanceCriteriaMet).
    pub acceptance_criteria: Vec<String>,
    /// The work to do (report them in completedTasks, by text or number).
    pub tasks: Vec<String>,
    /// Files the phase must write in the workspace folder.
    pub artifacts: Vec<String>,
    /// Phase-specific data: the commands to run, the visit number, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
}

/// Builds the instruction for `phase` on its `visit`-th entry (1-based).
pub fn instruction(
    definition: &WorkflowDefinition,
    phase: &str,
    visit: u32,
    profile: &RepoProfile,
) -> Option<PhaseInstruction> {
    let def = definition.phase(phase)?;
    let source = def.instruction.clone().unwrap_or_default();
    let mut context = match source.context {
        Some(Value::Object(map)) => map,
        Some(other) => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }
        None => serde_json::Map::new(),
    };
    match &def.commands {
        Some(CommandSource::Quality) => {
            context.insert("commands".into(), json!(profile.quality_commands));
            if profile.quality_commands.is_empty() {
                context.insert(
                    "commandsNote".into(),
                    json!("no lint/test commands were detected in the repository; run the project's checks by hand and list them in the report"),
                );
            }
        }
        Some(CommandSource::Fixed(list)) => {
            let commands: Vec<DetectedCommand> = list
                .iter()
                .map(|step| DetectedCommand {
                    name: step.run().first().cloned().unwrap_or_default(),
                    argv: step.run().to_vec(),
                    source: "workflow definition".into(),
                })
                .collect();
            context.insert("commands".into(), json!(commands));
        }
        None => {}
    }
    if visit > 1 {
        context.insert("visit".into(), json!(visit));
    }
    Some(PhaseInstruction {
        phase_name: def.id.clone(),
        label: def.label.clone(),
        kind: kind_name(def.kind).to_string(),
        preconditions: source.preconditions,
        acceptance_criteria: source.acceptance_criteria,
        tasks: source.tasks,
        artifacts: def.artifacts.clone(),
        context: (!context.is_empty()).then_some(Value::Object(context)),
    })
}

/// The wire name of a phase kind.
pub fn kind_name(kind: PhaseKind) -> &'static str {
    match kind {
        PhaseKind::Agent => "agent",
        PhaseKind::Review => "review",
        PhaseKind::Checkpoint => "checkpoint",
        PhaseKind::Command => "command",
        PhaseKind::WriteFile => "write_file",
        PhaseKind::HumanGate => "human_gate",
    }
}
