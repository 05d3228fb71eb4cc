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
