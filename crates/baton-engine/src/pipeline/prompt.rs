//! The 4-layer prompt of a `spawn_agent` action (seed 001): agent
//! instructions, input/output artifacts (paths only — agents read the files
//! themselves), repository context and cross-run learning when data exists,
//! within a token budget. Layers 1 and 2 are never cut.

use crate::instruction::RepoProfile;

/// The prompt budget in estimated tokens (characters / 4) for all layers.
pub const PROMPT_BUDGET_TOKENS: usize = 8000;

/// What a prompt is built from.
#[derive(Debug, Clone, Copy)]
pub struct PromptParts<'a> {
    /// Layer 1: the agent's instructions, front matter removed.
    pub agent_body: &'a str,
    /// The workspace as shown to agents (e.g. `.specs/20260401-fix-auth`).
    pub workspace: &'a str,
    /// The work branch, if known.
    pub branch: Option<&'a str>,
    /// The spec name.
    pub spec_name: &'a str,
    /// The task key for per-task agents (`{N}`).
    pub task: Option<&'a str>,
    /// Input artifacts, relative to the workspace.
    pub input_files: &'a [String],
    /// The output artifact, relative to the workspace (none for fan-outs).
    pub output_file: Option<&'a str>,
    /// Layer 3 data.
    pub profile: &'a RepoProfile,
    /// Layer 4: lines of cross-run learning (similar runs, review patterns), if any.
    pub learning: &'a [String],
}

fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Substitutes `{workspace}`, `{branch}`, `{spec-name}` and `{N}` in one pass.
pub fn substitute(body: &str, parts: &PromptParts<'_>) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let replaced = [
            ("{workspace}", Some(parts.workspace)),
            ("{branch}", Some(parts.branch.unwrap_or(""))),
            ("{spec-name}", Some(parts.spec_name)),
            ("{N}", parts.task),
        ]
        .into_iter()
        .find_map(|(key, value)| tail.starts_with(key).then_some((key, value)));
        match replaced {
            Some((key, Some(value))) => {
                out.push_str(value);
                rest = &tail[key.len()..];
            }
            _ => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Builds the prompt.
pub fn assemble(parts: &PromptParts<'_>) -> String {
    let layer1 = substitute(parts.agent_body, parts).trim_end().to_string();
    let mut layer2 = String::new();
    if !parts.input_files.is_empty() {
        layer2.push_str("## Input Files\n\nRead these files before you start:\n");
        for f in parts.input_files {
            layer2.push_str(&format!("- {}/{f}\n", parts.workspace));
        }
    }
    if let Some(out) = parts.output_file {
        if !layer2.is_empty() {
            layer2.push('\n');
        }
        layer2.push_str(&format!(
            "## Output File\n\n- {}/{out}\n\nMANDATORY: write your complete result to this file before you finish; the pipeline reads the file, not your reply.\n",
            parts.workspace
        ));
    }
    if let Some(task) = parts.task {
        layer2.push_str(&format!("\n## Assigned Task\n\nTask {task}.\n"));
    }
    let mut prompt = if layer2.is_empty() {
        layer1
    } else {
        format!("{layer1}\n\n{}", layer2.trim_end())
    };
    let mut optional = Vec::new();
    if !parts.profile.quality_commands.is_empty() {
        let mut l3 = String::from(
            "## Repository Context\n\nThe repository's own checks (run them from the repository root):\n",
        );
        for c in &parts.profile.quality_commands {
            l3.push_str(&format!(
                "- {}: `{}` (from {})\n",
                c.name,
                c.argv.join(" "),
                c.source
            ));
        }
        optional.push(l3.trim_end().to_string());
    }
    if !parts.learning.is_empty() {
        let mut l4 = String::from("## Lessons From Past Runs\n\n");
        for line in parts.learning {
            l4.push_str(&format!("- {line}\n"));
        }
        optional.push(l4.trim_end().to_string());
    }
    for layer in optional {
        let candidate = format!("{prompt}\n\n{layer}");
        if estimate_tokens(&candidate) <= PROMPT_BUDGET_TOKENS {
            prompt = candidate;
        }
    }
    prompt.push('\n');
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruction::DetectedCommand;

    fn parts<'a>(
        body: &'a str,
        inputs: &'a [String],
        profile: &'a RepoProfile,
        learning: &'a [String],
    ) -> PromptParts<'a> {
        PromptParts {
            agent_body: body,
            workspace: ".specs/20260401-fix",
            branch: Some("fix/auth"),
            spec_name: "fix",
            task: None,
            input_files: inputs,
            output_file: Some("design.md"),
            profile,
            learning,
        }
    }

    #[test]
    fn layers_one_and_two_list_paths_never_contents() {
        let inputs = vec!["request.md".to_string(), "analysis.md".to_string()];
        let profile = RepoProfile::default();
        let p = assemble(&parts(
            "# Architect\n\nWork in {workspace} on {branch} ({spec-name}) {unknown}.\n",
            &inputs,
            &profile,
            &[],
        ));
        assert!(p.starts_with(
            "# Architect\n\nWork in .specs/20260401-fix on fix/auth (fix) {unknown}."
        ));
        assert!(p.contains("## Input Files\n\nRead these files before you start:\n- .specs/20260401-fix/request.md\n- .specs/20260401-fix/analysis.md\n"));
        assert!(p.contains("## Output File\n\n- .specs/20260401-fix/design.md\n"));
        assert!(
            !p.contains("## Repository Context"),
            "layer 3 only with data"
        );
    }

    #[test]
    fn layers_three_and_four_come_with_data_and_respect_the_budget() {
        let profile = RepoProfile {
            quality_commands: vec![DetectedCommand {
                name: "test".into(),
                argv: vec!["cargo".into(), "test".into()],
                source: "Cargo.toml".into(),
            }],
        };
        let learning = vec!["review often flags missing error context".to_string()];
        let p = assemble(&parts("# A\n", &[], &profile, &learning));
        assert!(
            p.contains("## Repository Context") && p.contains("`cargo test` (from Cargo.toml)")
        );
        assert!(p.contains("## Lessons From Past Runs\n\n- review often flags"));
        let huge = "x".repeat(4 * PROMPT_BUDGET_TOKENS);
        let p = assemble(&parts(&huge, &[], &profile, &learning));
        assert!(
            !p.contains("## Repository Context"),
            "optional layers are dropped over budget"
        );
        assert!(p.contains("## Output File"), "layers 1-2 are never cut");
    }

    #[test]
    fn the_task_number_is_substituted_for_per_task_agents() {
        let profile = RepoProfile::default();
        let mut pp = parts("Implement task {N}; write impl-{N}.md.", &[], &profile, &[]);
        pp.task = Some("3");
        pp.output_file = Some("impl-3.md");
        let p = assemble(&pp);
        assert!(p.starts_with("Implement task 3; write impl-3.md."));
        assert!(p.contains("## Assigned Task\n\nTask 3."));
    }
}
