//! The manual crates are layered, file by file: no file imports from a
//! layer above its own, and no files import each other in a circle (in
//! `baton-manuals` and in `baton-text`). Imports are read from the source:
//! every `crate::…`, `super::…` and `self::…` path, `use` trees included,
//! and a module's paths to its own children (`pub use build::X` in
//! `corpus/mod.rs`). Unit-test modules (`#[cfg(test)] mod tests`) are not
//! counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `baton-manuals`' layers, bottom to top (the first folder or file name
/// under `src/`).
const LAYERS: &[&str] = &[
    "wire", "analyze", "index", "corpus", "search", "service", "tools", "eval", "lib",
];

struct Crate {
    /// File (relative to `src/`) → its source without comments and tests.
    files: BTreeMap<String, String>,
    /// Module path → file.
    modules: BTreeMap<Vec<String>, String>,
}

fn load(src: &Path) -> Crate {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(src)
                    .expect("under src")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&path).expect("read");
                files.insert(rel, strip(&text));
            }
        }
    }
    let modules = files.keys().map(|f| (module_of(f), f.clone())).collect();
    Crate { files, modules }
}

/// `a/b.rs` → `[a, b]`; `a/mod.rs` → `[a]`; `lib.rs` → `[]`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The source without line comments and without the unit-test module.
fn strip(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{')
        && tree.ends_with('}')
    {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let inner = &tree[open + 1..tree.len() - 1];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &base, out);
        return;
    }
    let tree = tree.split(" as ").next().unwrap_or(tree);
    let mut path = prefix.to_vec();
    path.extend(
        tree.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    );
    out.push(path);
}

/// The paths a file names: `use` trees and inline `crate::`/`super::` paths.
fn paths_of(source: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(end) = after.find(';') {
            expand(&after[..end].replace('\n', " "), &[], &mut out);
        }
    }
    for start in ["crate::", "super::"] {
        let mut rest = source;
        while let Some(i) = rest.find(start) {
            let before = rest[..i].chars().last();
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push(
                    tail[..end]
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            }
            rest = &tail[start.len()..];
        }
    }
    out
}

/// File → the files it imports from.
fn edges(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (file, source) in &krate.files {
        let me = module_of(file);
        let mut targets = BTreeSet::new();
        for path in paths_of(source) {
            let Some(first) = path.first() else { continue };
            let full: Vec<String> = match first.as_str() {
                "crate" => path[1..].to_vec(),
                "self" => me.iter().chain(&path[1..]).cloned().collect(),
                "super" => {
                    let mut base = me.clone();
                    let mut rest = &path[..];
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.into_iter().chain(rest.iter().cloned()).collect()
                }
                child => {
                    // A path to one of this module's own children.
                    let mut candidate = me.clone();
                    candidate.push(child.to_string());
                    if !krate.modules.contains_key(&candidate) {
                        continue;
                    }
                    me.iter().chain(&path).cloned().collect()
                }
            };
            let target = (0..=full.len())
                .rev()
                .find_map(|n| krate.modules.get(&full[..n]));
            if let Some(target) = target
                && target != file
            {
                targets.insert(target.clone());
            }
        }
        edges.insert(file.clone(), targets);
    }
    edges
}

/// Files that import each other in a circle (strongly connected groups).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn reach(from: &str, edges: &BTreeMap<String, BTreeSet<String>>, seen: &mut BTreeSet<String>) {
        for next in edges.get(from).into_iter().flatten() {
            if seen.insert(next.clone()) {
                reach(next, edges, seen);
            }
        }
    }
    let reachable: BTreeMap<&String, BTreeSet<String>> = edges
        .keys()
        .map(|f| {
            let mut seen = BTreeSet::new();
            reach(f, edges, &mut seen);
            (f, seen)
        })
        .collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (file, seen) in &reachable {
        if !seen.contains(*file) {
            continue;
        }
        let group: Vec<String> = seen
            .iter()
            .filter(|other| reachable[other].contains(*file))
            .cloned()
            .collect();
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

fn src(krate: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

fn layer(file: &str) -> usize {
    let top = file
        .split('/')
        .next()
        .unwrap_or(file)
        .trim_end_matches(".rs");
    LAYERS
        .iter()
        .position(|l| *l == top)
        .unwrap_or_else(|| panic!("{file} is in no layer: add its folder to LAYERS"))
}

#[test]
fn no_file_of_the_manual_crates_imports_in_a_circle() {
    for krate in ["baton-manuals", "baton-text"] {
        let graph = edges(&load(&src(krate)));
        assert!(graph.len() > 5, "{krate}: the sources were read");
        assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "{krate}");
    }
}

#[test]
fn no_file_of_baton_manuals_imports_from_a_layer_above_its_own() {
    let graph = edges(&load(&src("baton-manuals")));
    let mut upward = Vec::new();
    for (file, targets) in &graph {
        for target in targets {
            if layer(target) > layer(file) {
                upward.push(format!("{file} -> {target}"));
            }
        }
    }
    assert_eq!(upward, Vec::<String>::new());
}

#[test]
fn the_checker_sees_circles_and_upward_imports() {
    // The checks above must be able to fail: a made-up crate with a circle
    // through a `use` tree and an inline path, and an upward import.
    let mut files = BTreeMap::new();
    files.insert(
        "wire/a.rs".to_string(),
        strip("use crate::{index::{b}, wire};\n"),
    );
    files.insert(
        "index/b.rs".to_string(),
        strip("fn f() { crate::wire::a::g(); }\n// crate::tools::x\n"),
    );
    files.insert(
        "wire/mod.rs".to_string(),
        strip("pub mod a;\npub use a::Thing;\n#[cfg(test)]\nmod tests { use crate::index::b; }\n"),
    );
    files.insert("index/mod.rs".to_string(), String::new());
    let modules = files.keys().map(|f| (module_of(f), f.clone())).collect();
    let graph = edges(&Crate { files, modules });
    assert_eq!(
        graph["wire/a.rs"],
        BTreeSet::from(["index/b.rs".to_string(), "wire/mod.rs".to_string()])
    );
    assert_eq!(
        graph["wire/mod.rs"],
        BTreeSet::from(["wire/a.rs".to_string()])
    );
    assert_eq!(
        graph["index/b.rs"],
        BTreeSet::from(["wire/a.rs".to_string()])
    );
    let found = circles(&graph);
    assert!(found.iter().any(|g| g.contains(&"index/b.rs".to_string())));
    assert!(layer("index/b.rs") > layer("wire/a.rs"));
}
