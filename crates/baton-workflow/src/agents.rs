//! Agent instruction files (prompt layer 1): eleven built-ins embedded in the
//! binary; a repository overrides one by putting a file of the same name in
//! its agents folder (`.baton/agents/<name>.md`).

use std::path::Path;

/// The built-in agents: (name, file text with front matter).
pub const BUILTIN_AGENTS: &[(&str, &str)] = &[
    (
        "situation-analyst",
        include_str!("../agents/situation-analyst.md"),
    ),
    ("investigator", include_str!("../agents/investigator.md")),
    (
        "situation-analyst-investigator",
        include_str!("../agents/situation-analyst-investigator.md"),
    ),
    ("architect", include_str!("../agents/architect.md")),
    (
        "design-reviewer",
        include_str!("../agents/design-reviewer.md"),
    ),
    (
        "task-decomposer",
        include_str!("../agents/task-decomposer.md"),
    ),
    ("task-reviewer", include_str!("../agents/task-reviewer.md")),
    ("implementer", include_str!("../agents/implementer.md")),
    ("impl-reviewer", include_str!("../agents/impl-reviewer.md")),
    (
        "comprehensive-reviewer",
        include_str!("../agents/comprehensive-reviewer.md"),
    ),
    ("verifier", include_str!("../agents/verifier.md")),
];

/// The orchestrator skill (a Claude Code command teaching the loop).
pub const PIPELINE_SKILL: &str = include_str!("../skill/baton-pipeline.md");

/// Where an agent's text came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    /// Embedded in the binary.
    Builtin,
    /// A repository file that overrides the built-in.
    Override(String),
}

/// An agent's instructions, front matter removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentText {
    /// The agent's name.
    pub name: String,
    /// The instructions (layer 1), without the YAML front matter.
    pub body: String,
    /// Where it came from.
    pub source: AgentSource,
}

/// Removes a leading `---` … `---` front-matter block.
pub fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(end) => rest[end + 5..].trim_start_matches('\n'),
        None => text,
    }
}

/// The agent `name`: the override in `override_dir` when present (names are
/// plain identifiers, so no path can escape the folder), else the built-in.
pub fn agent(name: &str, override_dir: Option<&Path>) -> Option<AgentText> {
    if !crate::registry::is_identifier(name) {
        return None;
    }
    if let Some(dir) = override_dir {
        let path = dir.join(format!("{name}.md"));
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.is_file()
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            return Some(AgentText {
                name: name.to_string(),
                body: strip_front_matter(&text).to_string(),
                source: AgentSource::Override(path.display().to_string()),
            });
        }
    }
    BUILTIN_AGENTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| AgentText {
            name: (*n).to_string(),
            body: strip_front_matter(text).to_string(),
            source: AgentSource::Builtin,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_forge_agent_is_embedded_with_its_front_matter_stripped() {
        let registry = crate::Registry::builtin();
        let forge = registry.get("forge").unwrap();
        for phase in &forge.phases {
            if let Some(name) = &phase.agent {
                let a = agent(name, None).unwrap_or_else(|| panic!("agent {name} missing"));
                assert!(!a.body.starts_with("---"), "{name}");
                assert!(a.body.contains("# "), "{name}");
            }
        }
        assert!(agent("situation-analyst-investigator", None).is_some());
        assert_eq!(BUILTIN_AGENTS.len(), 11);
    }

    #[test]
    fn repository_overrides_win_and_names_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("architect.md"),
            "---\nname: architect\n---\n\n# Our architect\n",
        )
        .unwrap();
        let a = agent("architect", Some(dir.path())).unwrap();
        assert_eq!(a.body, "# Our architect\n");
        assert!(matches!(a.source, AgentSource::Override(_)));
        assert_eq!(
            agent("verifier", Some(dir.path())).unwrap().source,
            AgentSource::Builtin
        );
        assert!(agent("../etc/passwd", Some(dir.path())).is_none());
        assert!(agent("nobody", None).is_none());
    }

    #[test]
    fn reviewers_state_the_verdict_line_baton_parses() {
        for name in ["design-reviewer", "task-reviewer", "impl-reviewer"] {
            let a = agent(name, None).unwrap();
            assert!(a.body.contains("## Verdict:"), "{name}");
            assert!(a.body.contains("[CRITICAL]"), "{name}");
        }
    }
}
