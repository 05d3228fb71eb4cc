//! Parsing a definition file with precise diagnostics: every error names the
//! file, the line and column, and the field.
//!
//! Structure errors (unknown keys, wrong types) come from the YAML parser with
//! its location. The graph checks (duplicate ids, transitions to missing
//! phases, unreachable phases, loops with neither an exit nor a limit) use a
//! second, span-aware pass over the same text to point at the offending node.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::{COMPLETED, SETUP, WorkflowDefinition};

/// One problem in a definition file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    /// File name or path.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: u64,
    /// 1-based column (0 when unknown).
    pub column: u64,
    /// The field, as a path (`phases[2].transitions[0].goto`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.file, self.line, self.column, self.field, self.message
        )
    }
}

/// Largest definition file accepted.
pub const MAX_DEFINITION_BYTES: usize = 1024 * 1024;

/// Parses and validates a definition (YAML, or JSON which is YAML).
pub fn parse_definition(file: &str, text: &str) -> Result<WorkflowDefinition, Vec<Diagnostic>> {
    if text.len() > MAX_DEFINITION_BYTES {
        return Err(vec![Diagnostic {
            file: file.to_string(),
            line: 0,
            column: 0,
            field: "(file)".into(),
            message: format!("larger than {MAX_DEFINITION_BYTES} bytes"),
        }]);
    }
    let def: WorkflowDefinition = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        vec![Diagnostic {
            file: file.to_string(),
            line,
            column,
            field: field_from_message(&e.to_string()),
            message: first_line(&e.to_string()),
        }]
    })?;
    // The positions are only for the diagnostics: the text is read a
    // second time for them only when there is something to report.
    if check(file, &def, &SpanDoc::default()).is_empty() {
        return Ok(def);
    }
    let spans: SpanDoc = serde_saphyr::from_str(text).unwrap_or_default();
    Err(check(file, &def, &spans))
}

/// Parses a built-in definition from the JSON the build made of its YAML
/// (build.rs) and checks it like any other; an error names the file. Only
/// for the embedded definitions: a person's file goes through
/// [`parse_definition`], whose diagnostics point into their YAML.
pub(crate) fn parse_builtin_json(file: &str, json: &str) -> Result<WorkflowDefinition, String> {
    let def: WorkflowDefinition =
        serde_json::from_str(json).map_err(|e| format!("{file} (as JSON): {e}"))?;
    let diagnostics = check(file, &def, &SpanDoc::default());
    if diagnostics.is_empty() {
        Ok(def)
    } else {
        Err(diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.field, d.message))
            .collect::<Vec<_>>()
            .join("; "))
    }
}

/// The parser's first line, without its own "error: line L column C:" prefix
/// (the diagnostic carries the position already).
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message).trim();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    match line
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((position, text)) if position.contains("column") => text.to_string(),
        _ => line.to_string(),
    }
}

fn field_from_message(message: &str) -> String {
    // "unknown field `artefacts`, expected one of ..." → artefacts
    match (
        message.find('`'),
        message[message.find('`').map_or(0, |i| i + 1)..].find('`'),
    ) {
        (Some(start), Some(len)) => message[start + 1..start + 1 + len].to_string(),
        _ => "(structure)".to_string(),
    }
}

/// The span-aware view: only what the graph checks point at.
#[derive(Debug, Default, Deserialize)]
struct SpanDoc {
    #[serde(default)]
    id: Option<Spanned<String>>,
    #[serde(default)]
    phases: Vec<SpanPhase>,
}

#[derive(Debug, Default, Deserialize)]
struct SpanPhase {
    #[serde(default)]
    id: Option<Spanned<String>>,
    #[serde(default)]
    next: Option<Spanned<String>>,
    #[serde(default)]
    transitions: Vec<SpanTransition>,
    #[serde(default)]
    artifacts: Vec<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
struct SpanTransition {
    #[serde(default)]
    goto: Option<Spanned<String>>,
}

fn at<T>(span: Option<&Spanned<T>>) -> (u64, u64) {
    span.map(|s| (s.referenced.line(), s.referenced.column()))
        .unwrap_or((0, 0))
}

fn check(file: &str, def: &WorkflowDefinition, spans: &SpanDoc) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let diag = |pos: (u64, u64), field: String, message: String| Diagnostic {
        file: file.to_string(),
        line: pos.0,
        column: pos.1,
        field,
        message,
    };
    macro_rules! push {
        ($pos:expr, $field:expr, $message:expr $(,)?) => {
            out.push(diag($pos, $field, $message))
        };
    }
    let phase_span = |i: usize| spans.phases.get(i);

    if !crate::registry::is_identifier(&def.id) {
        push!(
            at(spans.id.as_ref()),
            "id".into(),
            format!(
                "{:?} must match [a-z0-9][a-z0-9_-]* (at most 64 characters)",
                def.id
            ),
        );
    }
    if def.phases.is_empty() {
        push!(
            (0, 0),
            "phases".into(),
            "a workflow needs at least one phase".into()
        );
        return out;
    }
    let mut seen = BTreeMap::new();
    for (i, phase) in def.phases.iter().enumerate() {
        let id_pos = at(phase_span(i).and_then(|p| p.id.as_ref()));
        if phase.id == SETUP || phase.id == COMPLETED {
            push!(
                id_pos,
                format!("phases[{i}].id"),
                format!("{:?} is reserved", phase.id)
            );
        } else if !crate::registry::is_identifier(&phase.id) {
            push!(
                id_pos,
                format!("phases[{i}].id"),
                format!(
                    "{:?} must match [a-z0-9][a-z0-9_-]* (at most 64 characters)",
                    phase.id
                ),
            );
        }
        if let Some(first) = seen.insert(phase.id.clone(), i) {
            push!(
                id_pos,
                format!("phases[{i}].id"),
                format!(
                    "duplicate phase id {:?} (first defined as phases[{first}])",
                    phase.id
                ),
            );
        }
        for (j, artifact) in phase.artifacts.iter().enumerate() {
            if !crate::registry::is_relative_file(artifact) {
                push!(
                    at(phase_span(i).and_then(|p| p.artifacts.get(j))),
                    format!("phases[{i}].artifacts[{j}]"),
                    format!("{artifact:?} must be a relative path inside the workspace"),
                );
            }
        }
        for (j, input) in phase.inputs.iter().enumerate() {
            if !crate::registry::is_relative_file(input) {
                push!(
                    id_pos,
                    format!("phases[{i}].inputs[{j}]"),
                    format!("{input:?} must be a relative path inside the workspace"),
                );
            }
        }
        if phase.kind == crate::PhaseKind::WriteFile
            && (phase.content.is_none() || phase.artifacts.is_empty())
        {
            push!(
                id_pos,
                format!("phases[{i}]"),
                "a write_file phase needs `content` and an artifact to write it to".into(),
            );
        }
        let uses_run_files = matches!(&phase.commands, Some(crate::CommandSource::Fixed(steps))
            if steps.iter().any(|s| s.run().iter().any(|a| a == "{run-files}")));
        if uses_run_files && !phase.commits {
            push!(
                id_pos,
                format!("phases[{i}].commands"),
                "{run-files} is only known in a phase with `commits: true`".into(),
            );
        }
        if phase.commits && phase.kind != crate::PhaseKind::Command {
            push!(
                id_pos,
                format!("phases[{i}].commits"),
                "`commits: true` needs a command phase".into(),
            );
        }
        if let Some(crate::CommandSource::Fixed(steps)) = &phase.commands {
            for (j, step) in steps.iter().enumerate() {
                let argvs = [
                    Some(("", step.run())),
                    step.skip_if().map(|c| (".skip_if", c)),
                ];
                for (suffix, argv) in argvs.into_iter().flatten() {
                    if argv.first().is_none_or(|program| program.trim().is_empty()) {
                        push!(
                            id_pos,
                            format!("phases[{i}].commands.fixed[{j}]{suffix}"),
                            "a command needs a program (an argv array, program first)".into(),
                        );
                    }
                }
            }
        }
        if let Some(scope) = &phase.scope {
            for (j, word) in scope.git.iter().enumerate() {
                let valid = !word.is_empty()
                    && word.len() <= 32
                    && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
                if !valid {
                    push!(
                        id_pos,
                        format!("phases[{i}].scope.git[{j}]"),
                        format!(
                            "{word:?} is not a git subcommand (lower-case letters and '-', e.g. commit)"
                        ),
                    );
                }
            }
            for (j, tool) in scope.tools.iter().enumerate() {
                if tool.trim().is_empty()
                    || tool.len() > 200
                    || tool.chars().any(char::is_whitespace)
                {
                    push!(
                        id_pos,
                        format!("phases[{i}].scope.tools[{j}]"),
                        format!("{tool:?} is not a tool name or pattern (e.g. mcp__docs__*)"),
                    );
                }
            }
            for (j, command) in scope.commands.iter().enumerate() {
                let valid = !command.trim().is_empty()
                    && command.len() <= 200
                    && !command
                        .chars()
                        .any(|c| c.is_control() || "|&;<>()$`\\\"'".contains(c));
                if !valid {
                    push!(
                        id_pos,
                        format!("phases[{i}].scope.commands[{j}]"),
                        format!(
                            "{command:?} is not a command prefix (words like `cargo test`, or `*`; no shell operators or quotes)"
                        ),
                    );
                }
            }
        }
        for (file, rule) in &phase.artifact_rules {
            let field = format!("phases[{i}].artifact_rules[{file}]");
            if !phase.artifacts.contains(file) {
                push!(
                    id_pos,
                    field.clone(),
                    format!(
                        "{file:?} is not an artifact of this phase (artifacts: {})",
                        if phase.artifacts.is_empty() {
                            "none".to_string()
                        } else {
                            phase.artifacts.join(", ")
                        }
                    ),
                );
            }
            match rule {
                crate::ArtifactRule::Sections(headings) => {
                    for (j, heading) in headings.iter().enumerate() {
                        if heading.trim().is_empty() || heading.contains(['\n', '\r']) {
                            push!(
                                id_pos,
                                format!("{field}.sections[{j}]"),
                                "a heading is one non-empty line (the text after `## `)".into(),
                            );
                        }
                    }
                }
                crate::ArtifactRule::Review if phase.verdicts.is_empty() => {
                    push!(
                        id_pos,
                        field.clone(),
                        "the review rule reads one of the phase's `verdicts`, and the phase declares none".into(),
                    );
                }
                _ => {}
            }
        }
        if phase.per_task == Some(crate::PerTask::Review) && phase.verdicts.is_empty() {
            push!(
                id_pos,
                format!("phases[{i}].verdicts"),
                "a `per_task: review` phase reads a verdict from each task's review: declare the verdicts (e.g. [PASS, PASS_WITH_NOTES, FAIL])".into(),
            );
        }
        if phase.reads_reviews() {
            for (j, verdict) in phase.verdicts.iter().enumerate() {
                if !crate::rules::VERDICT_WORDS.contains(&verdict.as_str()) {
                    push!(
                        id_pos,
                        format!("phases[{i}].verdicts[{j}]"),
                        format!(
                            "{verdict:?} is not a verdict a review file can state (one of {}); use those words, or give the phase's artifacts another rule in `artifact_rules`",
                            crate::rules::VERDICT_WORDS.join(", ")
                        ),
                    );
                }
            }
        }
        if phase.max_visits == Some(0) {
            push!(
                id_pos,
                format!("phases[{i}].max_visits"),
                "must be at least 1".into()
            );
        }
    }
    let task_lists: BTreeSet<&str> = def.phases.iter().filter_map(|p| p.task_list()).collect();
    if task_lists.len() > 1 {
        push!(
            (0, 0),
            "phases".into(),
            format!(
                "a workflow has one task list, and these artifacts all have the task_list rule: {}",
                task_lists.into_iter().collect::<Vec<_>>().join(", ")
            ),
        );
    }
    for (j, path) in def.protected.iter().flatten().enumerate() {
        let plain = path.replace("**", "x").replace('*', "x");
        if !crate::registry::is_relative_file(&plain) {
            push!(
                (0, 0),
                format!("protected[{j}]"),
                format!(
                    "{path:?} must be a relative path inside the repository (`*` and `**` allowed)"
                ),
            );
        }
    }
    let known: BTreeSet<&str> = def.phases.iter().map(|p| p.id.as_str()).collect();
    let valid_target = |t: &str| t == COMPLETED || known.contains(t);
    for (i, phase) in def.phases.iter().enumerate() {
        if let Some(next) = &phase.next
            && !valid_target(next)
        {
            push!(
                at(phase_span(i).and_then(|p| p.next.as_ref())),
                format!("phases[{i}].next"),
                format!("no phase {next:?} (known: {}, completed)", join(&known)),
            );
        }
        if let Some(variant) = &phase.agent_when_skipped
            && !known.contains(variant.phase.as_str())
        {
            push!(
                at(phase_span(i).and_then(|p| p.id.as_ref())),
                format!("phases[{i}].agent_when_skipped.phase"),
                format!("no phase {:?} (known: {})", variant.phase, join(&known)),
            );
        }
        for (j, rule) in phase.transitions.iter().enumerate() {
            let pos = at(phase_span(i)
                .and_then(|p| p.transitions.get(j))
                .and_then(|t| t.goto.as_ref()));
            if !valid_target(&rule.goto) {
                push!(
                    pos,
                    format!("phases[{i}].transitions[{j}].goto"),
                    format!(
                        "no phase {:?} (known: {}, completed)",
                        rule.goto,
                        join(&known)
                    ),
                );
            }
            if rule.when.result.is_none() && rule.when.verdict.is_empty() {
                push!(
                    pos,
                    format!("phases[{i}].transitions[{j}].when"),
                    "a condition needs `result` or `verdict`".into(),
                );
            }
        }
    }
    if !out.is_empty() {
        return out;
    }

    // Graph checks on a sound definition.
    let edges = graph(def);
    let reachable = reach(&def.phases[0].id, &edges);
    for (i, phase) in def.phases.iter().enumerate() {
        if !reachable.contains(phase.id.as_str()) {
            push!(
                at(phase_span(i).and_then(|p| p.id.as_ref())),
                format!("phases[{i}].id"),
                format!(
                    "phase {:?} is unreachable from the first phase {:?}",
                    phase.id, def.phases[0].id
                ),
            );
        }
    }
    for component in cycles(def, &edges) {
        let limited = component
            .iter()
            .any(|id| def.phase(id).and_then(|p| p.max_visits).is_some());
        let exits = component.iter().any(|id| {
            edges
                .get(*id)
                .is_some_and(|targets| targets.iter().any(|t| !component.contains(*t)))
        });
        if !limited && !exits {
            let first = component.iter().next().cloned().unwrap_or_default();
            let i = def.position(first).unwrap_or(0);
            push!(
                at(phase_span(i).and_then(|p| p.id.as_ref())),
                format!("phases[{i}]"),
                format!(
                    "the loop {} has neither an exit nor a limit (set max_visits on one of its phases)",
                    component.iter().cloned().collect::<Vec<_>>().join(" -> ")
                ),
            );
        }
    }
    out
}

fn join(known: &BTreeSet<&str>) -> String {
    known.iter().copied().collect::<Vec<_>>().join(", ")
}

/// Every phase's possible successors: its transitions and its default successor.
fn graph(def: &WorkflowDefinition) -> BTreeMap<&str, Vec<&str>> {
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, phase) in def.phases.iter().enumerate() {
        let mut targets: Vec<&str> = phase.transitions.iter().map(|t| t.goto.as_str()).collect();
        let default = match &phase.next {
            Some(n) => n.as_str(),
            None => def.phases.get(i + 1).map_or(COMPLETED, |p| p.id.as_str()),
        };
        targets.push(default);
        // Skippable successors: a skipped phase passes on to the one after.
        if let Some(next) = def.phases.get(i + 1)
            && !next.skip_for.is_empty()
        {
            targets.push(next.id.as_str());
            let mut k = i + 2;
            while let Some(after) = def.phases.get(k) {
                targets.push(after.id.as_str());
                if after.skip_for.is_empty() {
                    break;
                }
                k += 1;
            }
        }
        edges.insert(phase.id.as_str(), targets);
    }
    edges
}

fn reach<'a>(start: &'a str, edges: &BTreeMap<&'a str, Vec<&'a str>>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(node) = stack.pop() {
        if !seen.insert(node) {
            continue;
        }
        if let Some(next) = edges.get(node) {
            stack.extend(next.iter().copied());
        }
    }
    seen
}

/// Strongly connected components with a cycle (Tarjan), as sets of phase ids.
fn cycles<'a>(
    def: &'a WorkflowDefinition,
    edges: &BTreeMap<&'a str, Vec<&'a str>>,
) -> Vec<BTreeSet<&'a str>> {
    struct Tarjan<'a, 'b> {
        edges: &'b BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<BTreeSet<&'a str>>,
    }
    impl<'a> Tarjan<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            let targets = self.edges.get(v).cloned().unwrap_or_default();
            for w in targets {
                if w == COMPLETED {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(lw));
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.insert(w);
                    if w == v {
                        break;
                    }
                }
                let self_loop = self.edges.get(v).is_some_and(|t| t.contains(&v));
                if component.len() > 1 || self_loop {
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for phase in &def.phases {
        if !t.index.contains_key(phase.id.as_str()) {
            t.visit(phase.id.as_str());
        }
    }
    t.out
}
