//! The definition format: good files load; bad files give exact diagnostics
//! naming file, line, column and field.

use baton_workflow::{Registry, parse_definition};

fn errors(text: &str) -> Vec<String> {
    parse_definition("wf.yaml", text)
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn builtins_load_and_the_issue_workflow_has_its_six_phases() {
    let registry = Registry::builtin();
    let issue = registry.get("issue").unwrap();
    let ids: Vec<_> = issue.phases.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "issue_start",
            "implementation",
            "quality_check",
            "pr_creation",
            "fix",
            "completion"
        ]
    );
    assert_eq!(issue.default_successor("pr_creation", &[]), "completion");
    assert_eq!(issue.default_successor("fix", &[]), "quality_check");
    assert_eq!(issue.default_successor("completion", &[]), "completed");
    for p in &issue.phases {
        let i = p.instruction.as_ref().unwrap();
        assert!(
            !i.preconditions.is_empty() && !i.acceptance_criteria.is_empty() && !i.tasks.is_empty()
        );
        assert_eq!(p.artifacts.len(), 1, "{}", p.id);
    }
}

#[test]
fn json_is_accepted_too() {
    let def = parse_definition(
        "wf.json",
        r#"{"id": "j", "label": "J", "phases": [{"id": "a", "label": "A", "kind": "agent"}]}"#,
    )
    .unwrap();
    assert_eq!(def.phases[0].id, "a");
}

#[test]
fn unknown_keys_are_reported_with_their_position() {
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    artefacts: [x.md]\n",
    );
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("wf.yaml:7:5: artefacts: unknown field `artefacts`"),
        "{}",
        e[0]
    );
}

#[test]
fn wrong_types_are_reported_with_their_position() {
    let e = errors("id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: robot\n");
    assert!(e[0].starts_with("wf.yaml:6:11: "), "{}", e[0]);
    assert!(e[0].contains("robot"), "{}", e[0]);
}

#[test]
fn transitions_to_missing_phases_name_the_goto() {
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    transitions:\n      - when: {result: failure}\n        goto: nowhere\n",
    );
    assert_eq!(
        e,
        ["wf.yaml:9:15: phases[0].transitions[0].goto: no phase \"nowhere\" (known: a, completed)"]
    );
}

#[test]
fn a_bad_next_is_reported() {
    let e =
        errors("id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    next: b\n");
    assert_eq!(
        e,
        ["wf.yaml:7:11: phases[0].next: no phase \"b\" (known: a, completed)"]
    );
}

#[test]
fn unreachable_phases_are_reported() {
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    next: completed\n  - id: b\n    label: B\n    kind: agent\n",
    );
    assert_eq!(
        e,
        ["wf.yaml:8:9: phases[1].id: phase \"b\" is unreachable from the first phase \"a\""]
    );
}

#[test]
fn loops_need_an_exit_or_a_limit() {
    let closed = "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n  - id: b\n    label: B\n    kind: agent\n    next: a\n";
    assert_eq!(
        errors(closed),
        [
            "wf.yaml:4:9: phases[0]: the loop a -> b has neither an exit nor a limit (set max_visits on one of its phases)"
        ]
    );
    let limited = closed.replace("    next: a\n", "    next: a\n    max_visits: 3\n");
    assert!(parse_definition("wf.yaml", &limited).is_ok());
    let with_exit = "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    transitions:\n      - when: {result: success}\n        goto: completed\n  - id: b\n    label: B\n    kind: agent\n    next: a\n";
    assert!(parse_definition("wf.yaml", with_exit).is_ok());
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    artifacts: [/etc/passwd]\n  - id: a\n    label: B\n    kind: agent\n  - id: setup\n    label: S\n    kind: agent\n",
    );
    assert_eq!(
        e,
        [
            "wf.yaml:7:17: phases[0].artifacts[0]: \"/etc/passwd\" must be a relative path inside the workspace",
            "wf.yaml:8:9: phases[1].id: duplicate phase id \"a\" (first defined as phases[0])",
            "wf.yaml:11:9: phases[2].id: \"setup\" is reserved",
        ]
    );
}

#[test]
fn the_user_example_in_docs_loads() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/release.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let def = parse_definition(path, &text).unwrap();
    assert_eq!(def.id, "release");
}

#[test]
fn guarded_command_steps_load_and_empty_commands_are_reported() {
    let ok = parse_definition(
        "wf.yaml",
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: command\n    commands:\n      fixed:\n        - [git, add, --all]\n        - run: [git, commit, -m, x]\n          skip_if: [git, diff, --cached, --quiet]\n",
    )
    .unwrap();
    let Some(baton_workflow::CommandSource::Fixed(steps)) = &ok.phases[0].commands else {
        panic!("fixed commands")
    };
    assert_eq!(steps[0].skip_if(), None);
    assert_eq!(steps[1].run(), ["git", "commit", "-m", "x"]);
    assert_eq!(
        steps[1].skip_if(),
        Some(
            &[
                "git".to_string(),
                "diff".into(),
                "--cached".into(),
                "--quiet".into()
            ][..]
        )
    );
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: command\n    commands:\n      fixed:\n        - []\n        - run: [git, commit]\n          skip_if: []\n",
    );
    assert_eq!(
        e,
        [
            "wf.yaml:4:9: phases[0].commands.fixed[0]: a command needs a program (an argv array, program first)",
            "wf.yaml:4:9: phases[0].commands.fixed[1].skip_if: a command needs a program (an argv array, program first)",
        ]
    );
}

#[test]
fn artifact_rules_are_checked_with_their_field_paths() {
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    artifacts: [a.md]\n    artifact_rules:\n      b.md: non_empty\n      a.md: {sections: [Scope, '']}\n  - id: r\n    label: R\n    kind: review\n    artifacts: [r.md]\n    verdicts: [LGTM, REVISE]\n  - id: c\n    label: C\n    kind: review\n    per_task: review\n  - id: d\n    label: D\n    kind: agent\n    artifacts: [d.md]\n    artifact_rules: {d.md: review}\n",
    );
    assert_eq!(
        e,
        [
            "wf.yaml:4:9: phases[0].artifact_rules[a.md].sections[1]: a heading is one non-empty line (the text after `## `)",
            "wf.yaml:4:9: phases[0].artifact_rules[b.md]: \"b.md\" is not an artifact of this phase (artifacts: a.md)",
            "wf.yaml:11:9: phases[1].verdicts[0]: \"LGTM\" is not a verdict a review file can state (one of APPROVE, APPROVE_WITH_NOTES, REVISE, PASS, PASS_WITH_NOTES, FAIL); use those words, or give the phase's artifacts another rule in `artifact_rules`",
            "wf.yaml:16:9: phases[2].verdicts: a `per_task: review` phase reads a verdict from each task's review: declare the verdicts (e.g. [PASS, PASS_WITH_NOTES, FAIL])",
            "wf.yaml:20:9: phases[3].artifact_rules[d.md]: the review rule reads one of the phase's `verdicts`, and the phase declares none",
        ]
    );
    // Words of the phase's own are fine where no review file is read.
    let ok = parse_definition(
        "wf.yaml",
        "id: w\nlabel: W\nphases:\n  - id: r\n    label: R\n    kind: review\n    artifacts: [r.md]\n    verdicts: [LGTM, NOPE]\n    artifact_rules: {r.md: present}\n",
    );
    assert!(ok.is_ok(), "{ok:?}");
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    artifacts: [one.md]\n    artifact_rules: {one.md: task_list}\n  - id: b\n    label: B\n    kind: agent\n    artifacts: [two.md]\n    artifact_rules: {two.md: task_list}\n",
    );
    assert_eq!(
        e,
        [
            "wf.yaml:0:0: phases: a workflow has one task list, and these artifacts all have the task_list rule: one.md, two.md"
        ]
    );
    let e = errors(
        "id: w\nlabel: W\nphases:\n  - id: a\n    label: A\n    kind: agent\n    artifacts: [a.md]\n    artifact_rules: {a.md: headings}\n",
    );
    assert!(
        e[0].contains("phases[0].artifact_rules") || e[0].contains("headings"),
        "{e:?}"
    );
    assert!(e[0].contains("task_list"), "{e:?}");
}

#[test]
fn the_forge_pipeline_declares_its_artifact_rules() {
    use baton_workflow::ArtifactRule;
    let forge = Registry::builtin().get("forge").unwrap();
    let rule = |phase: &str, file: &str| forge.phase(phase).unwrap().artifact_rule(file);
    assert_eq!(rule("phase-1", "analysis.md"), ArtifactRule::NonEmpty);
    assert_eq!(rule("phase-3", "design.md"), ArtifactRule::Sections(vec![]));
    assert_eq!(rule("phase-3b", "review-design.md"), ArtifactRule::Review);
    assert_eq!(rule("phase-4", "tasks.md"), ArtifactRule::TaskList);
    assert_eq!(rule("phase-4b", "review-tasks.md"), ArtifactRule::Review);
    assert_eq!(rule("final-summary", "summary.md"), ArtifactRule::NonEmpty);
    assert!(forge.phase("phase-6").unwrap().reads_reviews());
    assert_eq!(forge.task_list(), "tasks.md");
    let authors: Vec<&str> = forge.task_list_authors().map(|p| p.id.as_str()).collect();
    assert_eq!(authors, ["phase-4"]);
}
