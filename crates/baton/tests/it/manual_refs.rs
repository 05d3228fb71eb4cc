//! A pipeline run in a repository with manuals: the implementer's (and
//! every spawned agent's) prompt lists the manual sections most relevant
//! to the request — references, not text — and none without manuals or
//! with the references turned off (docs/manuals.md, "Manuals feed the
//! agents").

use std::path::Path;

use serde_json::Value;

use crate::common::pipeline::{Script, create, drive_until, git_repo};
use crate::common::spawn;

/// The repository's own fictional product manual (a real manual folder:
/// 16 files of guides and references).
fn copy_manual(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-manuals/eval/manuals/lumen-en");
    let mut stack = vec![from.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let target = to.join(path.strip_prefix(&from).unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&target).unwrap();
                stack.push(path);
            } else {
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }
}

const REQUEST: &str = "rotate the personal API tokens of service accounts used in CI";

async fn implementer_prompt(manuals: bool, env: &[(&str, &str)]) -> (String, String) {
    let repo = git_repo();
    if manuals {
        copy_manual(&repo.path().join("manuals/lumen"));
    }
    let root = repo.path().join("manuals");
    let mut env: Vec<(&str, &str)> = env.to_vec();
    let root_text = root.to_string_lossy().to_string();
    env.push(("MANUALS_ROOT", &root_text));
    let c = spawn(repo.path(), &[], &env).await;
    let ws = create(&c, REQUEST, "S", "--nopr").await;
    let mut script = Script::default();
    let first = drive_until(&c, &repo, &ws, &mut script, |a| a["type"] == "spawn_agent").await;
    let first_prompt = first["prompt"].as_str().unwrap().to_string();
    let implementer = drive_until(&c, &repo, &ws, &mut script, |a: &Value| {
        a["type"] == "spawn_agent" && a["agent"].as_str().is_some_and(|n| n.contains("implement"))
    })
    .await;
    c.close().await;
    (
        first_prompt,
        implementer["prompt"].as_str().unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_implementers_prompt_lists_the_relevant_manual_sections() {
    let (first, prompt) = implementer_prompt(true, &[]).await;
    for p in [&first, &prompt] {
        let at = p
            .find(baton_engine::pipeline::prompt::MANUALS_HEADING)
            .unwrap_or_else(|| panic!("no manual references: {p}"));
        let section = &p[at..];
        // The section on rotating tokens, by file, line and quoted heading.
        assert!(
            section.contains("- manuals/lumen/guides/authentication.md:")
                && section.contains("\"Rotating a token\""),
            "{section}"
        );
        // References, not text: the section's body is not in the prompt.
        let body = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../baton-manuals/eval/manuals/lumen-en/guides/authentication.md"),
        )
        .unwrap();
        let rotating = body.split("## Rotating a token").nth(1).unwrap();
        let first_line = rotating.lines().find(|l| l.trim().len() > 20).unwrap();
        assert!(!p.contains(first_line.trim()), "{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_manual_references_without_manuals_or_when_turned_off() {
    let (first, prompt) = implementer_prompt(false, &[]).await;
    for p in [&first, &prompt] {
        assert!(
            !p.contains(baton_engine::pipeline::prompt::MANUALS_HEADING),
            "{p}"
        );
    }
    let (first, prompt) = implementer_prompt(true, &[("MANUALS_PROMPT_REFERENCES", "off")]).await;
    for p in [&first, &prompt] {
        assert!(
            !p.contains(baton_engine::pipeline::prompt::MANUALS_HEADING),
            "{p}"
        );
    }
}
