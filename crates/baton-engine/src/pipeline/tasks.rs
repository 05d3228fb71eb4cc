//! tasks.md: the task decomposer's output, parsed into the task registry,
//! with the dependency graph checked when tasks are registered (cycles and
//! unknown dependencies are refused, never silently skipped — forge defect A8).

use std::collections::{BTreeMap, BTreeSet};

use baton_state::{ExecutionMode, ImplStatus, ReviewStatus, Task};

/// Registered tasks by key, and warnings that do not block registration.
pub type ParsedTasks = (BTreeMap<String, Task>, Vec<String>);

/// Parses `## Task N: title [mode]` sections with `mode:`, `depends_on:` and
/// `files:` machine fields. Errors name the problem; warnings do not block.
pub fn parse_tasks(text: &str) -> Result<ParsedTasks, Vec<String>> {
    let mut tasks: BTreeMap<String, Task> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_files = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        if let Some(rest) = line.strip_prefix("## Task ") {
            in_files = false;
            let Some((number, title)) = rest.split_once(':') else {
                continue;
            };
            let number = number.trim();
            if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let key = number.trim_start_matches('0').to_string();
            let key = if key.is_empty() { "0".to_string() } else { key };
            tasks.insert(
                key.clone(),
                Task {
                    title: title.trim().to_string(),
                    execution_mode: ExecutionMode::Sequential,
                    impl_status: ImplStatus::Pending,
                    review_status: ReviewStatus::Pending,
                    ..Task::default()
                },
            );
            current = Some(key);
            continue;
        }
        let Some(key) = current.as_ref() else {
            continue;
        };
        let Some(task) = tasks.get_mut(key) else {
            continue;
        };
        let trimmed = line.trim();
        if in_files {
            if let Some(path) = trimmed.strip_prefix("- ") {
                let path = path.trim().trim_matches('`').to_string();
                if !path.is_empty() {
                    task.files.get_or_insert_with(Vec::new).push(path);
                }
                continue;
            }
            if !trimmed.is_empty() {
                in_files = false;
            }
        }
        let lower = trimmed.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("mode:") {
            task.execution_mode = match value.trim() {
                "parallel" => ExecutionMode::Parallel,
                "human_gate" => ExecutionMode::HumanGate,
                _ => ExecutionMode::Sequential,
            };
        } else if let Some(value) = lower.strip_prefix("depends_on:") {
            let deps: Vec<u32> = value
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect();
            task.depends_on = Some(deps);
        } else if lower == "files:" {
            in_files = true;
            task.files.get_or_insert_with(Vec::new);
        }
    }
    if tasks.is_empty() {
        return Err(vec![
            "no '## Task N: title' heading found in tasks.md".into(),
        ]);
    }
    let warnings = check_graph(&tasks)?;
    Ok((tasks, warnings))
}

/// Unknown dependencies and cycles are errors; two parallel tasks writing the
/// same file is a warning.
pub fn check_graph(tasks: &BTreeMap<String, Task>) -> Result<Vec<String>, Vec<String>> {
    let mut errors = Vec::new();
    for (key, task) in tasks {
        for dep in task.depends_on.iter().flatten() {
            if !tasks.contains_key(&dep.to_string()) {
                errors.push(format!(
                    "task {key} depends on task {dep}, which does not exist"
                ));
            }
            if dep.to_string() == *key {
                errors.push(format!("task {key} depends on itself"));
            }
        }
    }
    if errors.is_empty()
        && let Some(cycle) = find_cycle(tasks)
    {
        errors.push(format!("dependency cycle: {}", cycle.join(" -> ")));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut warnings = Vec::new();
    let parallel: Vec<(&String, &Task)> = tasks
        .iter()
        .filter(|(_, t)| t.execution_mode == ExecutionMode::Parallel)
        .collect();
    for (i, (a, ta)) in parallel.iter().enumerate() {
        for (b, tb) in &parallel[i + 1..] {
            for f in ta.files.iter().flatten() {
                if tb.files.iter().flatten().any(|g| g == f) {
                    warnings.push(format!(
                        "parallel tasks {a} and {b} both write {f}: they run one after the other"
                    ));
                }
            }
        }
    }
    Ok(warnings)
}

fn find_cycle(tasks: &BTreeMap<String, Task>) -> Option<Vec<String>> {
    fn visit(
        key: &str,
        tasks: &BTreeMap<String, Task>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|k| k == key) {
            let mut cycle = path[i..].to_vec();
            cycle.push(key.to_string());
            return Some(cycle);
        }
        if done.contains(key) {
            return None;
        }
        path.push(key.to_string());
        for dep in tasks
            .get(key)
            .and_then(|t| t.depends_on.as_ref())
            .into_iter()
            .flatten()
        {
            if let Some(c) = visit(&dep.to_string(), tasks, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(key.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for key in tasks.keys() {
        if let Some(c) = visit(key, tasks, &mut done, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

/// Task keys in numeric order.
pub fn ordered_keys(tasks: &BTreeMap<String, Task>) -> Vec<String> {
    let mut keys: Vec<String> = tasks.keys().cloned().collect();
    keys.sort_by_key(|k| (k.parse::<u64>().unwrap_or(u64::MAX), k.clone()));
    keys
}

/// Tasks whose implementation is not done and whose dependencies all are, in
/// numeric order.
pub fn ready(tasks: &BTreeMap<String, Task>) -> Vec<String> {
    ordered_keys(tasks)
        .into_iter()
        .filter(|k| {
            let t = &tasks[k];
            t.impl_status != ImplStatus::Completed
                && t.depends_on.iter().flatten().all(|d| {
                    tasks
                        .get(&d.to_string())
                        .is_some_and(|dep| dep.impl_status == ImplStatus::Completed)
                })
        })
        .collect()
}

/// The next batch to dispatch: every ready parallel task at once (they do
/// not depend on each other, or they would not all be ready) except those
/// that declare a file an earlier task of the batch declares — two agents
/// never write the same file at the same time; the later one runs in a
/// later batch — else the first ready task alone.
pub fn next_batch(tasks: &BTreeMap<String, Task>) -> Vec<String> {
    let ready = ready(tasks);
    let mut claimed: BTreeSet<&str> = BTreeSet::new();
    let parallel: Vec<String> = ready
        .iter()
        .filter(|k| tasks[*k].execution_mode == ExecutionMode::Parallel)
        .filter(|k| {
            let files: Vec<&str> = tasks[*k]
                .files
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            if files.iter().any(|f| claimed.contains(f)) {
                return false;
            }
            claimed.extend(files);
            true
        })
        .cloned()
        .collect();
    match ready.first() {
        Some(first)
            if tasks[first].execution_mode == ExecutionMode::Parallel && parallel.len() > 1 =>
        {
            parallel
        }
        Some(first) => vec![first.clone()],
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TASKS: &str = "# Tasks\n\nOverview.\n\n## Task 1: Schema [sequential]\n\n**AC-1:** table exists\n\nmode: sequential\ndepends_on: []\nfiles:\n- src/schema.rs\n\n## Task 2: API [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- src/api.rs\n- src/shared.rs\n\n## Task 3: CLI [parallel]\n\nmode: parallel\ndepends_on: [1]\nfiles:\n- src/cli.rs\n- src/shared.rs\n\n## Task 10: Docs\n\nmode: human_gate\ndepends_on: [2, 3]\nfiles:\n";

    #[test]
    fn tasks_md_parses_into_the_registry() {
        let (tasks, warnings) = parse_tasks(TASKS).unwrap();
        assert_eq!(ordered_keys(&tasks), ["1", "2", "3", "10"]);
        assert_eq!(tasks["2"].title, "API [parallel]");
        assert_eq!(tasks["2"].execution_mode, "parallel");
        assert_eq!(tasks["2"].depends_on, Some(vec![1]));
        assert_eq!(
            tasks["3"].files,
            Some(vec!["src/cli.rs".into(), "src/shared.rs".into()])
        );
        assert_eq!(tasks["10"].execution_mode, "human_gate");
        assert_eq!(
            warnings,
            ["parallel tasks 2 and 3 both write src/shared.rs: they run one after the other"]
        );
    }

    #[test]
    fn the_ready_set_follows_the_dag_and_fans_out_parallel_tasks() {
        let (mut tasks, _) = parse_tasks(TASKS).unwrap();
        assert_eq!(next_batch(&tasks), ["1"]);
        tasks.get_mut("1").unwrap().impl_status = "completed".into();
        // Tasks 2 and 3 both declare src/shared.rs: never at the same time
        // (issue 20); without the shared file they fan out together.
        assert_eq!(next_batch(&tasks), ["2"]);
        let mut disjoint = tasks.clone();
        disjoint.get_mut("3").unwrap().files = Some(vec!["src/cli.rs".into()]);
        assert_eq!(next_batch(&disjoint), ["2", "3"]);
        tasks.get_mut("2").unwrap().impl_status = "completed".into();
        assert_eq!(next_batch(&tasks), ["3"]);
        tasks.get_mut("3").unwrap().impl_status = "completed".into();
        assert_eq!(next_batch(&tasks), ["10"]);
        tasks.get_mut("10").unwrap().impl_status = "completed".into();
        assert!(next_batch(&tasks).is_empty());
    }

    #[test]
    fn cycles_unknown_dependencies_and_empty_files_are_refused() {
        let cycle = "## Task 1: A\ndepends_on: [2]\n## Task 2: B\ndepends_on: [1]\n";
        assert_eq!(
            parse_tasks(cycle).unwrap_err(),
            ["dependency cycle: 1 -> 2 -> 1"]
        );
        let unknown = "## Task 1: A\ndepends_on: [7]\n";
        assert_eq!(
            parse_tasks(unknown).unwrap_err(),
            ["task 1 depends on task 7, which does not exist"]
        );
        assert!(parse_tasks("# Tasks\n\nnothing here\n").is_err());
    }
}
