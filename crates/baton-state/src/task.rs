//! A task of the run's task list (seed 001's `tasks` map) and where it
//! stands: its execution mode, its implementation and its review, as enums
//! with the seed's wire words. A word this version does not know (a file
//! written by a newer or older baton, or by hand) still loads: it is kept
//! as written (`Other`) and written back unchanged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a string enum: known words as variants, anything else kept in
/// `Other`, the empty string read as `$empty`; serialised as its word.
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $name:ident, empty reads as $empty:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $word:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A word this version does not know, kept as written.
            Other(String),
        }

        impl $name {
            /// The wire word.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $word, )*
                    $name::Other(word) => word,
                }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::$empty
            }
        }

        impl From<&str> for $name {
            fn from(word: &str) -> $name {
                if word.is_empty() {
                    return $name::$empty;
                }
                match word {
                    $( $word => $name::$variant, )*
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl From<String> for $name {
            fn from(word: String) -> $name {
                $name::from(word.as_str())
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.as_str().to_string()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, word: &str) -> bool {
                self.as_str() == word
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, word: &&str) -> bool {
                self.as_str() == *word
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                String::deserialize(d).map($name::from)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "description": concat!("One of: ", $( $word, " " ,)* "(other words from other versions are kept)."),
                })
            }
        }
    };
}

word_enum! {
    /// How a task runs.
    ExecutionMode, empty reads as Sequential {
        /// After the tasks it depends on, alone (`sequential`).
        Sequential => "sequential",
        /// Beside other ready parallel tasks (`parallel`).
        Parallel => "parallel",
        /// A person does it outside the run (`human_gate`).
        HumanGate => "human_gate",
    }
}

word_enum! {
    /// Where a task's implementation stands.
    ImplStatus, empty reads as Pending {
        /// Not implemented yet (`pending`).
        Pending => "pending",
        /// Implemented, by an agent or, for a gate, a person (`completed`).
        Completed => "completed",
    }
}

word_enum! {
    /// Where a task's review stands.
    ReviewStatus, empty reads as NotReviewed {
        /// No review yet, or its file no longer passes (the empty word).
        NotReviewed => "",
        /// Registered, not reviewed yet (`pending`).
        Pending => "pending",
        /// The review passed (`completed_pass`).
        Pass => "completed_pass",
        /// The review passed with notes (`completed_pass_with_notes`).
        PassWithNotes => "completed_pass_with_notes",
        /// The review failed: the task is implemented again (`completed_fail`).
        Fail => "completed_fail",
        /// A person accepted it without a passing review (`accepted_by_human`).
        AcceptedByHuman => "accepted_by_human",
        /// A person skipped it (`skipped_by_human`).
        SkippedByHuman => "skipped_by_human",
        /// A person did the gate task (`done_by_human`).
        DoneByHuman => "done_by_human",
    }
}

impl ReviewStatus {
    /// A review recorded as passed (its `review-N.md` must say so).
    pub fn passed(&self) -> bool {
        matches!(self, ReviewStatus::Pass | ReviewStatus::PassWithNotes)
    }

    /// The task's review is closed: passed, or a person accepted or skipped it.
    pub fn closed(&self) -> bool {
        self.passed()
            || matches!(
                self,
                ReviewStatus::AcceptedByHuman | ReviewStatus::SkippedByHuman
            )
    }
}

/// A unit of implementation work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Title.
    #[serde(default)]
    pub title: String,
    /// How the task runs.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    /// Keys of tasks that must finish first.
    #[serde(rename = "depends_on", default)]
    pub depends_on: Option<Vec<u32>>,
    /// Files the task writes.
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// Implementation status.
    #[serde(default)]
    pub impl_status: ImplStatus,
    /// Review status.
    #[serde(default)]
    pub review_status: ReviewStatus,
    /// Implementation retries.
    #[serde(default)]
    pub impl_retries: u32,
    /// Review retries.
    #[serde(default)]
    pub review_retries: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_words_read_as_variants_and_unknown_ones_are_kept() {
        let task: Task = serde_json::from_value(serde_json::json!({
            "title": "t",
            "executionMode": "human_gate",
            "implStatus": "completed",
            "reviewStatus": "reviewed_by_robot",
        }))
        .unwrap();
        assert_eq!(task.execution_mode, ExecutionMode::HumanGate);
        assert_eq!(task.impl_status, ImplStatus::Completed);
        assert_eq!(
            task.review_status,
            ReviewStatus::Other("reviewed_by_robot".into())
        );
        let back = serde_json::to_value(&task).unwrap();
        assert_eq!(back["reviewStatus"], "reviewed_by_robot");
        assert_eq!(back["executionMode"], "human_gate");
    }

    #[test]
    fn empty_words_of_older_files_read_as_the_default() {
        let task: Task = serde_json::from_value(serde_json::json!({
            "executionMode": "", "implStatus": "", "reviewStatus": ""
        }))
        .unwrap();
        assert_eq!(task.execution_mode, ExecutionMode::Sequential);
        assert_eq!(task.impl_status, ImplStatus::Pending);
        assert_eq!(task.review_status, ReviewStatus::NotReviewed);
        assert_eq!(serde_json::to_value(&task).unwrap()["reviewStatus"], "");
        assert!(ReviewStatus::Pass.closed() && ReviewStatus::SkippedByHuman.closed());
        assert!(!ReviewStatus::Fail.closed() && !ReviewStatus::DoneByHuman.closed());
    }

    #[test]
    fn an_older_state_file_with_words_this_version_does_not_know_loads_and_keeps_them() {
        // A forge v2 document (before baton) whose tasks carry the old
        // empty words and one this version never wrote.
        let v2 = r#"{"version":2,"specName":"fix-auth","workspace":".specs/20260330-fix-auth",
          "currentPhase":"phase-6","currentPhaseStatus":"in_progress","completedPhases":["setup"],
          "tasks":{"1":{"title":"Core","executionMode":"sequential","implStatus":"completed","reviewStatus":"in_second_review","depends_on":[]},
                   "2":{"title":"API","executionMode":"","implStatus":"","reviewStatus":"","implRetries":1}},
          "timestamps":{"created":"2026-03-30T09:00:00Z","lastUpdated":"2026-03-30T10:00:00Z"}}"#;
        let state = crate::WorkspaceState::from_json(v2).unwrap();
        let one = &state.tasks["1"];
        assert_eq!(one.impl_status, ImplStatus::Completed);
        assert_eq!(
            one.review_status,
            ReviewStatus::Other("in_second_review".into())
        );
        let two = &state.tasks["2"];
        assert_eq!(two.execution_mode, ExecutionMode::Sequential);
        assert_eq!(two.impl_status, ImplStatus::Pending);
        assert_eq!(two.review_status, ReviewStatus::NotReviewed);
        assert_eq!(two.impl_retries, 1);
        let written: serde_json::Value = serde_json::from_str(&state.to_json()).unwrap();
        assert_eq!(written["tasks"]["1"]["reviewStatus"], "in_second_review");
        assert_eq!(written["tasks"]["1"]["implStatus"], "completed");
    }
}
