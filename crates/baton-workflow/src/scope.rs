//! What the agent may touch while a phase runs: the phase's *scope*, as
//! data. The client hooks (`baton hook`) and the headless driver's agent
//! presets (`baton run --agent claude|codex`) enforce it for the run a
//! session works on; the engine never hard-codes a phase id for it.
//!
//! A phase that declares no `scope` gets one derived from its kind
//! ([`PhaseDefinition::effective_scope`]): agent and review phases may write
//! only their own artifacts, a per-task implementation phase may change the
//! repository, and phases that wait for a person or run baton's commands let
//! the agent write nothing. Whatever a phase says, baton's own control files
//! (every `state.json`, `.baton/`, the run history) are never the agent's to
//! write, and the workflow's [`WorkflowDefinition::protected`] paths (the
//! client's settings and hooks, `.mcp.json`, `baton.toml`) stay untouched
//! unless the workflow lists them otherwise.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{PerTask, PhaseDefinition, PhaseKind, WorkflowDefinition};

/// What the agent may touch while one phase runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhaseScope {
    /// Where the agent may write files.
    pub writes: WriteScope,
    /// Git subcommands the agent may run beyond the read-only ones (`status`,
    /// `diff`, `log`, `show`, …, always allowed), e.g. `[add, commit, push]`
    /// for a workflow whose agent commits. Commands the run's own command
    /// phases hand out (the final commit, the push) are allowed as handed
    /// out, whatever this list says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git: Vec<String>,
    /// Further client tools allowed while the phase runs, by name or
    /// pattern (`mcp__context7__*`), beyond those the scope allows anyway
    /// (reading and searching tools; writing tools within `writes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Shell commands the agent may run beyond the read-only ones while the
    /// phase runs, as command prefixes (`cargo test`, `npm test`, `gh pr
    /// view`), or `*` for any command (a verifier runs the project's test
    /// suite). A phase that may not change the repository still may not:
    /// after such a command the hooks compare the working tree and refuse
    /// to go on while a change outside the phase's scope is left
    /// (docs/clients.md). A phase with `writes: repository` runs any
    /// command anyway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

/// Where the agent may write while a phase runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteScope {
    /// Nothing: the phase waits for a person or runs baton's commands.
    #[default]
    None,
    /// Only the phase's own artifacts in the run's workspace folder (its
    /// `artifacts`, and `impl-N.md` / `review-N.md` of the task it works on
    /// in a per-task phase).
    Artifacts,
    /// Anything in the repository outside `.specs/` and the protected
    /// paths, plus the phase's own artifacts in the workspace folder.
    Repository,
}

impl WriteScope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteScope::None => "none",
            WriteScope::Artifacts => "artifacts",
            WriteScope::Repository => "repository",
        }
    }
}

/// Paths (relative to the repository, `*` within one folder, `**` across
/// folders) that no phase's agent may write unless a workflow lists its own
/// `protected` set: the agent clients' settings and hooks, MCP registration
/// and baton's configuration. baton's control files are protected on top of
/// these, always.
pub const DEFAULT_PROTECTED: &[&str] = &[
    ".claude/**",
    ".codex/**",
    ".cursor/**",
    ".mcp.json",
    "baton.toml",
    ".git/**",
];

/// baton's own control files (relative to the repository; `{specs}` is the
/// specs folder, `.specs` by default): the agent never writes them, whatever
/// a definition says — every run's state and its temporary and lock files,
/// the state archive, the run history, baton's folder (session bindings,
/// event log, transcripts, indexes).
pub const CONTROL_FILES: &[&str] = &[
    ".baton/**",
    "{specs}/*/state.json",
    "{specs}/*/.state*",
    "{specs}/*/state-archive.jsonl",
    "{specs}/.history/**",
    "{specs}/.*",
];

impl PhaseDefinition {
    /// The phase's scope: the declared one, or the one its kind implies.
    pub fn effective_scope(&self) -> PhaseScope {
        if let Some(scope) = &self.scope {
            return scope.clone();
        }
        let writes = match self.kind {
            PhaseKind::Agent | PhaseKind::Review if self.per_task == Some(PerTask::Implement) => {
                WriteScope::Repository
            }
            PhaseKind::Agent | PhaseKind::Review => WriteScope::Artifacts,
            PhaseKind::Checkpoint
            | PhaseKind::HumanGate
            | PhaseKind::Command
            | PhaseKind::WriteFile => WriteScope::None,
        };
        PhaseScope {
            writes,
            ..PhaseScope::default()
        }
    }
}

impl WorkflowDefinition {
    /// The protected paths: the workflow's own list, or [`DEFAULT_PROTECTED`].
    pub fn protected_paths(&self) -> Vec<String> {
        match &self.protected {
            Some(list) => list.clone(),
            None => DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// A definition's scope data alone, compiled from its phases: what the
/// client hooks need to judge a tool call (each phase's scope, label,
/// artifacts and per-task kind, and the protected paths). Small and plain
/// JSON, so a hook keeps it beside its session binding and judges calls
/// without parsing the definition's YAML again ([`WorkflowDefinition::scope_table`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeTable {
    /// [`WorkflowDefinition::protected_paths`].
    pub protected: Vec<String>,
    /// Every phase, in definition order.
    pub phases: Vec<PhaseScopeEntry>,
}

/// One phase of a [`ScopeTable`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseScopeEntry {
    /// The phase's id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// [`PhaseDefinition::effective_scope`].
    pub scope: PhaseScope,
    /// Its artifacts, relative to the workspace folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// Its per-task kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_task: Option<PerTask>,
}

impl ScopeTable {
    /// The entry of phase `id`.
    pub fn phase(&self, id: &str) -> Option<&PhaseScopeEntry> {
        self.phases.iter().find(|p| p.id == id)
    }
}

impl WorkflowDefinition {
    /// The definition's [`ScopeTable`].
    pub fn scope_table(&self) -> ScopeTable {
        ScopeTable {
            protected: self.protected_paths(),
            phases: self
                .phases
                .iter()
                .map(|p| PhaseScopeEntry {
                    id: p.id.clone(),
                    label: p.label.clone(),
                    scope: p.effective_scope(),
                    artifacts: p.artifacts.clone(),
                    per_task: p.per_task,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(yaml: &str) -> PhaseDefinition {
        serde_saphyr::from_str(yaml).expect("phase parses")
    }

    #[test]
    fn an_undeclared_scope_follows_the_kind() {
        let analysis = phase("id: a\nlabel: A\nkind: agent\nartifacts: [a.md]\n");
        assert_eq!(analysis.effective_scope().writes, WriteScope::Artifacts);
        let implement = phase("id: i\nlabel: I\nkind: agent\nper_task: implement\n");
        assert_eq!(implement.effective_scope().writes, WriteScope::Repository);
        let review = phase("id: r\nlabel: R\nkind: review\nper_task: review\n");
        assert_eq!(review.effective_scope().writes, WriteScope::Artifacts);
        for kind in ["checkpoint", "human_gate", "command", "write_file"] {
            let p = phase(&format!("id: c\nlabel: C\nkind: {kind}\n"));
            assert_eq!(p.effective_scope().writes, WriteScope::None, "{kind}");
            assert!(p.effective_scope().git.is_empty());
        }
    }

    #[test]
    fn a_declared_scope_wins_and_unknown_keys_are_refused() {
        let p = phase(
            "id: f\nlabel: F\nkind: agent\nscope: {writes: repository, git: [add, commit], tools: ['mcp__docs__*']}\n",
        );
        let s = p.effective_scope();
        assert_eq!(s.writes, WriteScope::Repository);
        assert_eq!(s.git, ["add", "commit"]);
        assert_eq!(s.tools, ["mcp__docs__*"]);
        let bad: Result<PhaseDefinition, _> =
            serde_saphyr::from_str("id: f\nlabel: F\nkind: agent\nscope: {writes: everything}\n");
        assert!(bad.is_err());
        let bad: Result<PhaseDefinition, _> =
            serde_saphyr::from_str("id: f\nlabel: F\nkind: agent\nscope: {write: none}\n");
        assert!(bad.is_err());
    }

    #[test]
    fn every_builtin_phase_declares_its_scope() {
        let registry = crate::Registry::builtin();
        for (def, _) in registry.iter() {
            for p in &def.phases {
                assert!(p.scope.is_some(), "{}/{} declares no scope", def.id, p.id);
            }
            assert_eq!(def.protected_paths(), DEFAULT_PROTECTED);
        }
    }

    #[test]
    fn bad_scope_values_are_diagnosed_with_their_field() {
        let text = "id: w\nlabel: W\nprotected: ['../x']\nphases:\n  - id: a\n    label: A\n    kind: agent\n    scope: {writes: artifacts, git: ['commit; rm'], tools: ['']}\n";
        let errors = crate::parse_definition("w.yaml", text).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|d| d.field.as_str()).collect();
        assert!(fields.contains(&"phases[0].scope.git[0]"), "{errors:?}");
        assert!(fields.contains(&"phases[0].scope.tools[0]"), "{errors:?}");
        assert!(fields.contains(&"protected[0]"), "{errors:?}");
    }

    #[test]
    fn a_scope_table_keeps_what_the_hooks_judge_and_round_trips() {
        let registry = crate::Registry::builtin();
        for (def, _) in registry.iter() {
            let table = def.scope_table();
            assert_eq!(table.protected, def.protected_paths());
            assert_eq!(table.phases.len(), def.phases.len());
            for p in &def.phases {
                let entry = table.phase(&p.id).expect("every phase");
                assert_eq!(entry.scope, p.effective_scope(), "{}/{}", def.id, p.id);
                assert_eq!(
                    (&entry.label, &entry.artifacts, entry.per_task),
                    (&p.label, &p.artifacts, p.per_task)
                );
            }
            let text = serde_json::to_string(&table).expect("json");
            let back: ScopeTable = serde_json::from_str(&text).expect("parses");
            assert_eq!(back, table);
        }
        assert!(ScopeTable::default().phase("phase-1").is_none());
    }
}
