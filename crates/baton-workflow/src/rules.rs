//! What a phase's artifacts must show to let the phase complete
//! (docs/workflows.md "Artifact rules"): a rule per artifact, declared in
//! the definition or implied by what the phase already declares.
//!
//! * `present` — the file exists and is not empty (every artifact's minimum).
//! * `non_empty` — a text file with something besides white space.
//! * `sections` — Markdown with at least one `## ` section; or, as
//!   `{sections: [Heading, …]}`, with each of these `## ` headings.
//! * `task_list` — a task list (the `## Task N: title` format of tasks.md)
//!   whose dependencies exist and form no cycle.
//! * `review` — a review stating one of the phase's `verdicts`.
//!
//! An artifact without a declared rule gets `review` in a phase with
//! `verdicts`, `present` elsewhere. A `per_task: review` phase checks one
//! review (`review-N.md`) per implemented task with the `review` rule.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{PerTask, PhaseDefinition, WorkflowDefinition};

/// The verdicts the review rule reads (baton's one verdict parser knows
/// these words; a review phase's `verdicts` must be among them).
pub const VERDICT_WORDS: [&str; 6] = [
    "APPROVE",
    "APPROVE_WITH_NOTES",
    "REVISE",
    "PASS",
    "PASS_WITH_NOTES",
    "FAIL",
];

/// The task list a `per_task` phase reads when no artifact of the workflow
/// declares the `task_list` rule.
pub const DEFAULT_TASK_LIST: &str = "tasks.md";

/// What one artifact must show.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ArtifactRule {
    /// The file exists and is not empty.
    Present,
    /// A text file with something besides white space.
    NonEmpty,
    /// Markdown with `## ` sections: at least one when the list is empty,
    /// else each of these headings (compared without case).
    Sections(Vec<String>),
    /// A task list whose dependencies exist and form no cycle.
    TaskList,
    /// A review stating one of the phase's verdicts.
    Review,
}

impl ArtifactRule {
    /// The rule's word in a definition.
    pub fn as_str(&self) -> &'static str {
        match self {
            ArtifactRule::Present => "present",
            ArtifactRule::NonEmpty => "non_empty",
            ArtifactRule::Sections(_) => "sections",
            ArtifactRule::TaskList => "task_list",
            ArtifactRule::Review => "review",
        }
    }

    const WORDS: &'static [&'static str] =
        &["present", "non_empty", "sections", "task_list", "review"];

    fn from_word(word: &str) -> Option<ArtifactRule> {
        Some(match word {
            "present" => ArtifactRule::Present,
            "non_empty" => ArtifactRule::NonEmpty,
            "sections" => ArtifactRule::Sections(Vec::new()),
            "task_list" => ArtifactRule::TaskList,
            "review" => ArtifactRule::Review,
            _ => return None,
        })
    }
}

impl Serialize for ArtifactRule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ArtifactRule::Sections(headings) if !headings.is_empty() => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("sections", headings)?;
                map.end()
            }
            other => serializer.serialize_str(other.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for ArtifactRule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ArtifactRule, D::Error> {
        struct RuleVisitor;
        impl<'de> Visitor<'de> for RuleVisitor {
            type Value = ArtifactRule;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an artifact rule: present, non_empty, sections, task_list, review, or {sections: [heading, …]}",
                )
            }

            fn visit_str<E: de::Error>(self, word: &str) -> Result<ArtifactRule, E> {
                ArtifactRule::from_word(word)
                    .ok_or_else(|| E::unknown_variant(word, ArtifactRule::WORDS))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ArtifactRule, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(
                        "an empty map is no artifact rule; write {sections: [heading, …]}",
                    ));
                };
                if key != "sections" {
                    return Err(de::Error::unknown_field(&key, &["sections"]));
                }
                let headings: Vec<String> = map.next_value()?;
                if let Some(extra) = map.next_key::<String>()? {
                    return Err(de::Error::unknown_field(&extra, &[]));
                }
                Ok(ArtifactRule::Sections(headings))
            }
        }
        deserializer.deserialize_any(RuleVisitor)
    }
}

impl JsonSchema for ArtifactRule {
    fn schema_name() -> Cow<'static, str> {
        "ArtifactRule".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What an artifact must show: present (exists, not empty), non_empty (text besides white space), sections (at least one `## ` section) or {sections: [heading, …]} (each of these `## ` headings), task_list (a task list whose dependencies form no cycle), review (states one of the phase's verdicts).",
            "oneOf": [
                {"type": "string", "enum": ArtifactRule::WORDS},
                {
                    "type": "object",
                    "properties": {"sections": {"type": "array", "items": {"type": "string"}}},
                    "required": ["sections"],
                    "additionalProperties": false
                }
            ]
        })
    }
}

impl PhaseDefinition {
    /// The rule `artifact` of this phase passes: the declared one, else
    /// `review` in a phase with verdicts, else `present`.
    pub fn artifact_rule(&self, artifact: &str) -> ArtifactRule {
        match self.artifact_rules.get(artifact) {
            Some(rule) => rule.clone(),
            None if !self.verdicts.is_empty() => ArtifactRule::Review,
            None => ArtifactRule::Present,
        }
    }

    /// Whether something this phase writes is read with the review rule
    /// (a declared or implied `review` artifact, or per-task reviews).
    pub fn reads_reviews(&self) -> bool {
        self.per_task == Some(PerTask::Review)
            || (self.per_task.is_none()
                && self
                    .artifacts
                    .iter()
                    .any(|a| self.artifact_rule(a) == ArtifactRule::Review))
    }

    /// The task list this phase writes (its artifact with the `task_list`
    /// rule), if any.
    pub fn task_list(&self) -> Option<&str> {
        self.artifacts
            .iter()
            .find(|a| self.artifact_rule(a) == ArtifactRule::TaskList)
            .map(String::as_str)
    }
}

impl WorkflowDefinition {
    /// The task list of the workflow: the first artifact with the
    /// `task_list` rule, else [`DEFAULT_TASK_LIST`].
    pub fn task_list(&self) -> &str {
        self.phases
            .iter()
            .find_map(PhaseDefinition::task_list)
            .unwrap_or(DEFAULT_TASK_LIST)
    }

    /// The phases that write the task list (the decomposers), in order.
    pub fn task_list_authors(&self) -> impl Iterator<Item = &PhaseDefinition> {
        let file = self.task_list();
        self.phases
            .iter()
            .filter(move |p| p.artifacts.iter().any(|a| a == file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(yaml: &str) -> PhaseDefinition {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn rules_read_as_words_or_a_sections_map_and_write_back_the_same() {
        let p = phase(
            "id: d\nlabel: D\nkind: agent\nartifacts: [a.md, b.md, c.md, d.md]\nartifact_rules:\n  a.md: sections\n  b.md: {sections: [Approach, Risks]}\n  c.md: task_list\n  d.md: non_empty\n",
        );
        assert_eq!(p.artifact_rule("a.md"), ArtifactRule::Sections(vec![]));
        assert_eq!(
            p.artifact_rule("b.md"),
            ArtifactRule::Sections(vec!["Approach".into(), "Risks".into()])
        );
        assert_eq!(p.artifact_rule("c.md"), ArtifactRule::TaskList);
        assert_eq!(p.artifact_rule("d.md"), ArtifactRule::NonEmpty);
        assert_eq!(p.task_list(), Some("c.md"));
        let json = serde_json::to_value(&p.artifact_rules).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"a.md": "sections", "b.md": {"sections": ["Approach", "Risks"]}, "c.md": "task_list", "d.md": "non_empty"})
        );
        let back: std::collections::BTreeMap<String, ArtifactRule> =
            serde_json::from_value(json).unwrap();
        assert_eq!(back, p.artifact_rules);
    }

    #[test]
    fn undeclared_rules_follow_what_the_phase_declares() {
        let review = phase(
            "id: r\nlabel: R\nkind: review\nartifacts: [r.md]\nverdicts: [APPROVE, REVISE]\n",
        );
        assert_eq!(review.artifact_rule("r.md"), ArtifactRule::Review);
        assert!(review.reads_reviews());
        let plain = phase("id: a\nlabel: A\nkind: agent\nartifacts: [a.md]\n");
        assert_eq!(plain.artifact_rule("a.md"), ArtifactRule::Present);
        assert!(!plain.reads_reviews());
        let per_task =
            phase("id: c\nlabel: C\nkind: review\nper_task: review\nverdicts: [PASS, FAIL]\n");
        assert!(per_task.reads_reviews());
        // A review phase can opt an artifact out of the verdict check.
        let opted = phase(
            "id: r\nlabel: R\nkind: review\nartifacts: [r.md]\nverdicts: [OK, NOT_OK]\nartifact_rules: {r.md: present}\n",
        );
        assert!(!opted.reads_reviews());
    }

    #[test]
    fn an_unknown_rule_names_the_known_ones() {
        let err = serde_saphyr::from_str::<PhaseDefinition>(
            "id: d\nlabel: D\nkind: agent\nartifacts: [a.md]\nartifact_rules: {a.md: headings}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("headings") && err.contains("task_list"),
            "{err}"
        );
    }
}
