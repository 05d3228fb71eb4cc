//! Workflows are data: no built-in phase id appears in the engine's or the
//! use cases' code (ARCHITECTURE.md). A rule that matched `phase-3` in Rust
//! would give a user's workflow none of it; the rules come from the
//! definition instead (docs/workflows.md). Tests and comments may name
//! phases; string literals in code may not.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// String literals of code (test modules and `#[cfg(test)]` items left
/// out).
#[derive(Default)]
struct Literals {
    found: Vec<String>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

impl<'ast> Visit<'ast> for Literals {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Doc comments and attributes are documentation, not code.
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.found.push(lit.value());
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Literals inside macro calls (format!, json!, matches!) too.
        fn walk(tokens: proc_macro2::TokenStream, out: &mut Vec<String>) {
            for t in tokens {
                match t {
                    proc_macro2::TokenTree::Literal(l) => {
                        if let Ok(s) = syn::parse_str::<syn::LitStr>(&l.to_string()) {
                            out.push(s.value());
                        }
                    }
                    proc_macro2::TokenTree::Group(g) => walk(g.stream(), out),
                    _ => {}
                }
            }
        }
        walk(mac.tokens.clone(), &mut self.found);
        syn::visit::visit_macro(self, mac);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// Whether `text` names the phase `id`: the whole literal, or — for ids
/// that are no everyday word (they hold `-`, `_` or a digit) — the id as a
/// word inside it.
fn names_phase(text: &str, id: &str) -> bool {
    if text == id {
        return true;
    }
    let distinctive = id.contains(['-', '_']) || id.chars().any(|c| c.is_ascii_digit());
    distinctive
        && text.match_indices(id).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + id.len()..].chars().next();
            let word =
                |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
            !word(before) && !word(after)
        })
}

#[test]
fn no_built_in_phase_id_appears_in_engine_or_use_case_code() {
    let registry = baton_workflow::Registry::builtin();
    let ids: Vec<String> = registry
        .iter()
        .flat_map(|(def, _)| def.phases.iter().map(|p| p.id.clone()))
        .collect();
    assert!(ids.iter().any(|id| id == "phase-3b"), "{ids:?}");
    // Literals that equal an issue-workflow id by coincidence, with why
    // they are no phase.
    let not_phases: [(&str, &str); 1] = [("fix", "a conventional-commit kind in branch names")];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["baton-engine", "baton-usecases"] {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 30, "{}", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut literals = Literals::default();
        literals.visit_file(&syntax);
        for value in literals.found {
            let line = text
                .lines()
                .position(|l| l.contains(&value))
                .map_or(0, |i| i + 1);
            for id in &ids {
                if names_phase(&value, id) && !not_phases.iter().any(|(w, _)| *w == value) {
                    found.push(format!(
                        "{}:{line}: {value:?} names the built-in phase {id}",
                        file.strip_prefix(&root).unwrap_or(file).display()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "phase ids in code (put the rule in the workflow definition instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_search_tells_ids_from_everyday_words() {
    assert!(names_phase("phase-3b", "phase-3b"));
    assert!(names_phase("go back to phase-3b now", "phase-3b"));
    assert!(!names_phase("phase-3bx", "phase-3b"));
    assert!(!names_phase("phase-3", "phase-3b"));
    assert!(names_phase("completion", "completion"));
    assert!(!names_phase("no completion here", "completion"));
}
