//! The shape of the code inside the crates (ARCHITECTURE.md "Rules the code
//! keeps"): no circle of imports between the files of a layer, and no
//! source file over 900 lines of non-test code.
//!
//! A file *uses* another when it names something the other file defines:
//! through `crate::…`, `super::…`, `self::…` or a path that starts with one
//! of its own child modules — in `use` items, in code, and inside macro
//! calls. A re-export (`pub use a::B`) is followed to where `B` is
//! defined; declaring a module (`mod a;`) is no use of it. Test code
//! (`#[cfg(test)]`) is left out: it may look at anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A module path (`["plan", "tasks"]`), or a path's segments.
type ModulePath = Vec<String>;

/// One module of a crate: its file, and the module path it has.
#[derive(Debug, Clone)]
struct Module {
    file: PathBuf,
    /// Child modules declared in the file (inline ones included), by name,
    /// with their module paths.
    children: BTreeMap<String, Vec<String>>,
}

/// A crate's module tree: module path (`["plan", "tasks"]`) → module.
/// Inline modules map to the file that holds them.
#[derive(Default)]
struct Tree {
    modules: BTreeMap<Vec<String>, Module>,
    /// Per file: the module paths it holds and the syntax of each.
    files: BTreeMap<PathBuf, syn::File>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>().is_ok_and(|m| {
                let text = quote_tokens(&m);
                text == "test" || text.starts_with("all(test") || text.starts_with("any(test")
            })
    })
}

fn quote_tokens(meta: &syn::Meta) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let tokens = match meta {
        syn::Meta::Path(p) => return p.get_ident().map(|i| i.to_string()).unwrap_or_default(),
        syn::Meta::List(l) => {
            let _ = write!(
                out,
                "{}(",
                l.path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default()
            );
            &l.tokens
        }
        syn::Meta::NameValue(_) => return String::new(),
    };
    out.push_str(&tokens.to_string().replace(' ', ""));
    out
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Reads the module tree of the crate whose root file is `root`.
fn tree(root: &Path) -> Tree {
    let mut tree = Tree::default();
    load(
        &mut tree,
        root,
        Vec::new(),
        root.parent().unwrap().to_path_buf(),
    );
    tree
}

/// Loads `file` as the module `path`; its children's files are in `dir`.
fn load(tree: &mut Tree, file: &Path, path: Vec<String>, dir: PathBuf) {
    let syntax = parse(file);
    inline(tree, file, &syntax.items, path, &dir);
    tree.files.insert(file.to_path_buf(), syntax);
}

fn inline(tree: &mut Tree, file: &Path, items: &[syn::Item], path: Vec<String>, dir: &Path) {
    let mut children = BTreeMap::new();
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_cfg_test(&m.attrs) {
            continue;
        }
        let name = m.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        children.insert(name.clone(), child.clone());
        match &m.content {
            Some((_, inner)) => inline(tree, file, inner, child, &dir.join(&name)),
            None => {
                let child_file = match path_attr(&m.attrs) {
                    Some(p) => dir.join(p),
                    None if dir.join(format!("{name}.rs")).exists() => {
                        dir.join(format!("{name}.rs"))
                    }
                    None => dir.join(&name).join("mod.rs"),
                };
                load(tree, &child_file, child, dir.join(&name));
            }
        }
    }
    tree.modules.insert(
        path,
        Module {
            file: file.to_path_buf(),
            children,
        },
    );
}

/// Every path a module's code names, with the module it is named in.
#[derive(Default)]
struct Paths {
    /// The module the visitor is in.
    module: Vec<Vec<String>>,
    /// (module, path as segments).
    found: Vec<(Vec<String>, Vec<String>)>,
    /// Named re-exports: (module, name) → (module, path as segments).
    reexports: Vec<(Vec<String>, String, Vec<String>)>,
}

impl Paths {
    fn here(&self) -> Vec<String> {
        self.module.last().cloned().unwrap_or_default()
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, public);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                full.push(n.ident.to_string());
                if public {
                    self.reexports
                        .push((self.here(), n.ident.to_string(), full.clone()));
                }
                self.found.push((self.here(), full));
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                if public {
                    self.reexports
                        .push((self.here(), r.rename.to_string(), full.clone()));
                }
                self.found.push((self.here(), full));
            }
            syn::UseTree::Glob(_) => self.found.push((self.here(), prefix.clone())),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, public);
                }
            }
        }
    }

    /// Paths inside a macro call's tokens: `a::b::c` sequences.
    fn tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut colons = 0;
        for t in tokens {
            match t {
                proc_macro2::TokenTree::Ident(i) => {
                    if colons == 2 || current.is_empty() {
                        current.push(i.to_string());
                    } else {
                        self.flush(&mut current);
                        current.push(i.to_string());
                    }
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
                proc_macro2::TokenTree::Group(g) => {
                    self.flush(&mut current);
                    colons = 0;
                    self.tokens(g.stream());
                }
                _ => {
                    self.flush(&mut current);
                    colons = 0;
                }
            }
        }
        self.flush(&mut current);
    }

    fn flush(&mut self, current: &mut Vec<String>) {
        if current.len() > 1 {
            self.found.push((self.here(), std::mem::take(current)));
        }
        current.clear();
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_cfg_test(item_attrs(item)) {
            return;
        }
        match item {
            syn::Item::Mod(m) => {
                // Inline modules are visited in their own module path; a
                // module in its own file is visited when its file is.
                if let Some((_, items)) = &m.content {
                    let mut inner = self.here();
                    inner.push(m.ident.to_string());
                    self.module.push(inner);
                    for i in items {
                        self.visit_item(i);
                    }
                    self.module.pop();
                }
            }
            syn::Item::Use(u) => {
                let public = !matches!(u.vis, syn::Visibility::Inherited);
                self.use_tree(&mut Vec::new(), &u.tree, public);
            }
            other => syn::visit::visit_item(self, other),
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.found.push((self.here(), segments));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The module a path names, from `module`: the longest prefix that is a
/// module, or `None` for paths outside the crate.
fn resolve(
    tree: &Tree,
    module: &[String],
    path: &[String],
) -> Option<(Vec<String>, Option<String>)> {
    let mut at: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            at = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            at = module.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            at = module.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if tree.modules.get(module)?.children.contains_key(first) => {
            at = module.to_vec();
        }
        _ => return None,
    }
    loop {
        let Some(next) = rest.first() else {
            return Some((at, None));
        };
        match tree.modules.get(&at).and_then(|m| m.children.get(next)) {
            Some(child) => {
                at = child.clone();
                rest = &rest[1..];
            }
            None => return Some((at, Some(next.clone()))),
        }
    }
}

/// The file-level use graph of the crate rooted at `root`.
fn graph(root: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let tree = tree(root);
    let mut paths = Paths::default();
    for (module_path, module) in &tree.modules {
        // Visit each file once, from its top module (inline modules are
        // visited from their parent).
        let top = tree
            .modules
            .iter()
            .filter(|(_, m)| m.file == module.file)
            .map(|(p, _)| p.len())
            .min()
            .unwrap_or(0);
        if module_path.len() != top {
            continue;
        }
        paths.module.push(module_path.clone());
        paths.visit_file(&tree.files[&module.file]);
        paths.module.pop();
    }
    let reexports: BTreeMap<(ModulePath, String), (ModulePath, ModulePath)> = paths
        .reexports
        .iter()
        .map(|(m, name, target)| ((m.clone(), name.clone()), (m.clone(), target.clone())))
        .collect();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (module, path) in &paths.found {
        let Some(mut target) = resolve(&tree, module, path) else {
            continue;
        };
        // Follow re-exports to where the item is defined.
        for _ in 0..8 {
            let Some(name) = &target.1 else { break };
            let Some((from, to)) = reexports.get(&(target.0.clone(), name.clone())) else {
                break;
            };
            match resolve(&tree, from, to) {
                Some(t) if t != target => target = t,
                _ => break,
            }
        }
        let from = &tree.modules[module].file;
        let to = &tree.modules[&target.0].file;
        if from != to {
            edges.entry(from.clone()).or_default().insert(to.clone());
        }
    }
    edges
}

/// The circles of `edges`: strongly connected components with more than one file.
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    // Tarjan's algorithm.
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[w].min(s.low[v]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.index[w].min(s.low[v]);
                    s.low.insert(v, low);
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn show(files: &[PathBuf]) -> String {
    let base = crates_dir();
    files
        .iter()
        .map(|f| f.strip_prefix(&base).unwrap_or(f).display().to_string())
        .collect::<Vec<_>>()
        .join(" ↔ ")
}

#[test]
fn no_file_of_the_engine_or_the_use_cases_imports_in_a_circle() {
    for krate in ["baton-engine", "baton-usecases"] {
        let root = crates_dir().join(krate).join("src/lib.rs");
        let found = circles(&graph(&root));
        assert!(
            found.is_empty(),
            "{krate}: files that import each other (move what both need into a module of its own):\n{}",
            found.iter().map(|c| show(c)).collect::<Vec<_>>().join("\n")
        );
    }
}

#[test]
fn the_circle_finder_sees_each_kind_of_reference() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub use d::Thing;\n",
    )
    .unwrap();
    // a/mod.rs names its child by a bare path; the child goes back up through super.
    std::fs::write(
        src.join("a/mod.rs"),
        "pub mod inner;\npub fn f() { inner::g(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("a/inner.rs"), "pub fn g() { let _ = super::f; }\n").unwrap();
    // b and c reach each other through crate:: inside a macro and a use item.
    std::fs::write(
        src.join("b.rs"),
        "pub fn h() { println!(\"{}\", crate::c::k()); }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "use crate::b::h;\npub fn k() -> u8 { h(); 1 }\n",
    )
    .unwrap();
    // d is reached only through the root's re-export; a test module is ignored.
    std::fs::write(
        src.join("d.rs"),
        "pub struct Thing;\n#[cfg(test)]\nmod tests { use crate::a::f; }\n",
    )
    .unwrap();
    let edges = graph(&src.join("lib.rs"));
    let found: Vec<String> = circles(&edges).iter().map(|c| show(c)).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found
            .iter()
            .any(|c| c.contains("a/inner.rs") && c.contains("a/mod.rs"))
    );
    assert!(
        found
            .iter()
            .any(|c| c.contains("b.rs") && c.contains("c.rs"))
    );
    // A use of the re-exported name reaches d.rs, not lib.rs.
    std::fs::write(
        src.join("c.rs"),
        "use crate::Thing;\npub fn k() -> u8 { 1 }\n",
    )
    .unwrap();
    let edges = graph(&src.join("lib.rs"));
    assert!(edges[&src.join("c.rs")].contains(&src.join("d.rs")));
    assert!(!edges[&src.join("c.rs")].contains(&src.join("lib.rs")));
    assert!(!edges.contains_key(&src.join("d.rs")));
}

/// Most lines of non-test code a source file may hold (ARCHITECTURE.md).
const MAX_FILE_LINES: usize = 900;

/// The files allowed over [`MAX_FILE_LINES`], each with the most non-test
/// lines it may have: a ratchet, empty since the last three were split. None
/// may grow; one split under the limit must leave the list (the test says
/// so). A file that crosses the limit fails the test: split it, or list it
/// here in a commit that says why.
const OVER_THE_LIMIT: &[(&str, usize)] = &[];

/// Lines of `file` outside items marked `#[cfg(test)]`.
fn non_test_lines(file: &Path) -> usize {
    use syn::spanned::Spanned;
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let total = text.lines().count();
    let test: usize = syntax
        .items
        .iter()
        .filter(|item| is_cfg_test(item_attrs(item)))
        .map(|item| {
            let span = item.span();
            span.end().line + 1 - span.start().line
        })
        .sum();
    total - test
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Every non-test source file of the workspace's crates (the module trees
/// of each crate's `lib.rs` and `main.rs`), relative to `crates/`.
fn source_files() -> BTreeMap<String, PathBuf> {
    let base = crates_dir();
    let mut out = BTreeMap::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    for krate in crates {
        for root in ["src/lib.rs", "src/main.rs"] {
            let root = krate.join(root);
            if !root.is_file() {
                continue;
            }
            for file in tree(&root).files.into_keys() {
                let shown = file.strip_prefix(&base).unwrap().display().to_string();
                out.insert(shown, file);
            }
        }
    }
    out
}

#[test]
fn no_source_file_is_over_900_lines_of_non_test_code() {
    let files = source_files();
    assert!(
        files.contains_key("baton-usecases/src/pipeline/next.rs")
            && files.contains_key("baton/src/main.rs"),
        "the walk missed the crates' files: {:?}",
        files.keys().take(5).collect::<Vec<_>>()
    );
    let allowed: BTreeMap<&str, usize> = OVER_THE_LIMIT.iter().copied().collect();
    let mut problems = Vec::new();
    for (shown, file) in &files {
        let lines = non_test_lines(file);
        match allowed.get(shown.as_str()) {
            None if lines > MAX_FILE_LINES => problems.push(format!(
                "{shown}: {lines} lines of non-test code (at most {MAX_FILE_LINES}): split it by concern"
            )),
            Some(&ceiling) if lines > ceiling => problems.push(format!(
                "{shown}: {lines} lines, and it may not grow past {ceiling} until it is split under {MAX_FILE_LINES}"
            )),
            Some(_) if lines <= MAX_FILE_LINES => problems.push(format!(
                "{shown}: {lines} lines, under the limit now: take it off OVER_THE_LIMIT"
            )),
            _ => {}
        }
    }
    for shown in allowed.keys() {
        if !files.contains_key(*shown) {
            problems.push(format!("{shown} is gone: take it off OVER_THE_LIMIT"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_line_count_leaves_out_test_items_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.rs");
    std::fs::write(
        &file,
        "/// A.\npub fn a() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n\n#[cfg(not(test))]\nfn b() {}\n",
    )
    .unwrap();
    // 11 lines, of which the test module's 5 are left out.
    assert_eq!(non_test_lines(&file), 6);
}
