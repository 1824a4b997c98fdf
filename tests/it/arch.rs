//! The layers of ARCHITECTURE.md the compiler cannot hold, held by a test. The crates hold the
//! rest: a crate reaches only what its manifest names, so the core cannot import the A2A client
//! (`crates/core/src/lib.rs` has the doctest that fails to compile), and these tests only keep
//! the manifests so. Three kinds of check:
//! - manifests: the core and the store name none of the heavy crates, the core no other crate
//!   of the workspace;
//! - words: `crates/core/` names no IO, env, clock, async or network API (a grep, cheap and
//!   honest); the environment is read in one file; one statement changes a task;
//! - edges: a module graph at file granularity over every crate of the workspace, built by
//!   reading their `src/**/*.rs` (every `use crate::…`, grouped `use crate::{x, y::z}`,
//!   `super::`/`self::` paths, paths used inline such as `crate::poller::ensure(…)` or
//!   `state::Store::open` after `use crate::state`, and a crate brought in under another name,
//!   `use a2a_mod_store as state`), with re-exports followed to the file that defines the item. On
//!   it: nothing the hot paths (`statusline`, `hook`, and their shells `cmd/statusline.rs`,
//!   `cmd/hook.rs`) reach mentions tokio, reqwest or rmcp, in whichever crate it lives.
//!
//! A failure names each offending edge (`src/a.rs -> src/b.rs: …`), the path and line that make
//! it, and for the hot paths the whole chain from the entry point. Test code (`#[cfg(test)]` items
//! and modules) is not part of the graph: it does not run in production.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "use tokio",
    "tokio::",
    "reqwest",
    "rmcp",
    "std::fs",
    "std::env",
    "SystemTime::now",
    "Instant::now",
    "std::process",
    "std::net",
];

/// The hot paths' entry files, besides everything in `src/hook/`: the status line's logic and
/// the command shells `main` routes the status line and the hooks to.
const HOT_ROOTS: &[&str] = &[
    "src/statusline/mod.rs",
    "src/cmd/statusline.rs",
    "src/cmd/hook.rs",
];

/// What the hot paths must not reach: each builds a runtime or a client, or pulls one in.
const HEAVY: &[&str] = &["tokio", "reqwest", "rmcp"];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every Rust file of the workspace's sources: the binary's `src/` and each crate's.
fn workspace_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for c in std::fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        rust_files(&c.path().join("src"), &mut files);
    }
    files.sort();
    files
}

/// Production code only: a file's `#[cfg(test)] mod tests` is its last item, and a `tests.rs`
/// is test code whole.
fn production_part(rel: &str, text: &str) -> String {
    if rel.ends_with("/tests.rs") {
        return String::new();
    }
    text.split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or("")
        .to_string()
}

/// The crate names a manifest's `[dependencies]` table lists (its dev-dependencies are test code).
fn dependencies(manifest: &str) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{manifest}: {e}"));
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or("");
            out.push(name.to_string());
        }
    }
    out
}

/// The layers the compiler holds are only as good as the manifests: the core names no heavy crate
/// and no other crate of the workspace; the store and the machine layer, which the status line and
/// the hooks use, name no runtime, HTTP client or MCP server.
#[test]
fn the_manifests_keep_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let at = |c: &str| root.join(c).join("Cargo.toml").display().to_string();
    let core = dependencies(&at("crates/core"));
    assert!(core.contains(&"serde".to_string()), "{core:?}");
    let heavy = ["tokio", "reqwest", "rusqlite", "rmcp", "axum", "hyper"];
    let bad: Vec<&String> = core
        .iter()
        .filter(|d| heavy.contains(&d.as_str()) || d.starts_with("a2a-mod"))
        .collect();
    assert!(
        bad.is_empty(),
        "crates/core must stay pure, yet depends on {bad:?}"
    );
    for c in ["crates/store", "crates/sys"] {
        let deps = dependencies(&at(c));
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| HEAVY.contains(&d.as_str()) || *d == "a2a-mod-a2a" || *d == "axum")
            .collect();
        assert!(
            bad.is_empty(),
            "{c} is on the hot paths, yet depends on {bad:?}"
        );
    }
}

/// A task changes through one statement, the store's `persist` of what `core::lifecycle::apply`
/// decided (the whole `Life`, its columns named once); the schema's migrations (append-only history) are the only other writers of the table.
#[test]
fn one_statement_changes_a_task() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for f in workspace_files(root) {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel == "crates/store/src/schema.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in production_part(&rel, &text).lines().enumerate() {
            if line.contains("UPDATE tasks") {
                found.push(format!("{rel} line {}: {}", i + 1, line.trim()));
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("crates/store/src/store.rs")
            && found[0].contains("UPDATE tasks SET ({LIFE}, tracked)"),
        "{found:?}"
    );
}

#[test]
fn core_is_pure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("crates/core/src"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in FORBIDDEN {
            assert!(
                !text.contains(word),
                "{} uses `{word}`: crates/core must stay pure (pass values in, return values)",
                f.display()
            );
        }
    }
}

/// The environment is read in one module (`crates/sys/src/env.rs`), one named accessor per variable: what
/// a2a-mod reads, and where, is then one file to look at. Test code may read it as it likes.
#[test]
fn no_environment_read_outside_the_env_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for f in workspace_files(root) {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel == "crates/sys/src/env.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in production_part(&rel, &text).lines().enumerate() {
            if ["env::var(", "env::var_os(", "env::vars("]
                .iter()
                .any(|w| line.contains(w) && !line.contains("crate::env::"))
            {
                found.push(format!("{rel} line {}: {}", i + 1, line.trim()));
            }
        }
    }
    assert_none(
        "the environment is read in crates/sys/src/env.rs only (add a named accessor there)",
        found,
    );
}

#[test]
fn hot_paths_reach_no_tokio_reqwest_or_rmcp() {
    let g = Graph::of_the_workspace();
    let roots: Vec<&str> = g
        .files
        .keys()
        .map(String::as_str)
        .filter(|f| HOT_ROOTS.contains(f) || f.starts_with("src/hook/"))
        .collect();
    assert!(HOT_ROOTS.iter().all(|r| roots.contains(r)), "{roots:?}");
    assert!(
        roots.contains(&"src/statusline/mod.rs") && roots.len() > 1,
        "{roots:?}"
    );
    // The graph crosses into the crates (else this test would pass on a blind graph).
    let into_store = g.edges_where(|from, to| {
        from == "src/statusline/mod.rs" && to.starts_with("crates/store/src/")
    });
    assert!(
        !into_store.is_empty(),
        "no edge from the status line into the store"
    );
    assert_none(
        "the hot paths (status line, hooks) build no runtime and make no network call",
        g.heavy_reached_from(&roots),
    );
}

/// The graph sees every way a path is written, and follows re-exports to the defining file
/// (without that, `crate::poller::ensure` would always land in the poller's tokio loop).
#[test]
fn the_graph_sees_grouped_inline_super_and_reexported_paths() {
    let g = Graph::from_sources(&[
        ("src/lib.rs", "pub mod a; pub mod b; pub mod c; pub mod p;"),
        (
            "src/a.rs",
            "//! crate::p::loud is only a comment\n\
             use crate::{b::{self, Thing}, c};\n\
             fn f() { c::go(); let s = \"crate::p::loud\"; b::x(); }",
        ),
        (
            "src/b.rs",
            "pub struct Thing; pub fn x() { super::p::quiet(); }",
        ),
        (
            "src/c.rs",
            "pub fn go() {}\n#[cfg(test)]\nmod tests { fn t() { crate::p::loud(); } }",
        ),
        (
            "src/p/mod.rs",
            "mod quiet_part;\npub use quiet_part::quiet;\npub async fn loud() { tokio::task::yield_now().await }",
        ),
        ("src/p/quiet_part.rs", "pub fn quiet() {}"),
    ]);
    let edges: Vec<String> = g
        .edges_where(|_, _| true)
        .into_iter()
        .map(|e| format!("{} -> {} ({})", e.from, e.to, e.via))
        .collect();
    assert_eq!(
        edges,
        [
            "src/a.rs -> src/b.rs (crate::b::Thing)",
            "src/a.rs -> src/c.rs (c::go)",
            "src/b.rs -> src/p/quiet_part.rs (super::p::quiet)",
            "src/p/mod.rs -> src/p/quiet_part.rs (quiet_part::quiet)",
        ]
    );
    assert!(g.heavy_reached_from(&["src/a.rs"]).is_empty());
    let bad = g.heavy_reached_from(&["src/p/quiet_part.rs", "src/p/mod.rs"]);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].starts_with("src/p/mod.rs: mentions `tokio` (line 3)"),
        "{}",
        bad[0]
    );
}

/// A forbidden edge fails with the edge, its path and line, and the chain from the entry point.
#[test]
fn a_forbidden_edge_is_named_with_its_chain() {
    let g = Graph::from_sources(&[
        ("src/lib.rs", "pub mod hook; pub mod poller; pub mod state;"),
        (
            "src/hook/mod.rs",
            "use crate::state::Store;\nfn f(s: Store) { s.go() }",
        ),
        ("src/state/mod.rs", "mod store;\npub use store::Store;"),
        (
            "src/state/store.rs",
            "pub struct Store;\nimpl Store { fn go(&self) { crate::poller::run(); } }",
        ),
        (
            "src/poller/mod.rs",
            "use tokio::sync::mpsc;\npub fn run() {}",
        ),
    ]);
    let bad = g.heavy_reached_from(&["src/hook/mod.rs"]);
    assert_eq!(
        bad,
        [
            "src/state/store.rs -> src/poller/mod.rs: reaches `tokio` (src/poller/mod.rs line 1) \
          through `crate::poller::run` (src/state/store.rs line 2); \
          chain: src/hook/mod.rs -> src/state/store.rs -> src/poller/mod.rs"
        ]
    );
}

fn assert_none(rule: &str, violations: Vec<impl std::fmt::Display>) {
    if violations.is_empty() {
        return;
    }
    let lines: Vec<String> = violations.iter().map(|v| format!("  {v}")).collect();
    panic!(
        "{} forbidden edge(s): {rule}\n{}",
        violations.len(),
        lines.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The graph.

/// One import of another file: `from` names `via` (as written, made absolute) on `line`.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    via: String,
    line: usize,
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -> {}: `{}` ({} line {})",
            self.from, self.to, self.via, self.from, self.line
        )
    }
}

struct FileInfo {
    module: Vec<String>,
    /// Names bound by `use` in this file, to the absolute path they stand for (crate-internal
    /// only): what a path starting with that name means, and what the file re-exports.
    bindings: BTreeMap<String, Vec<String>>,
    /// The first line naming each heavy crate.
    heavy: BTreeMap<&'static str, usize>,
    toks: Vec<Tok>,
    /// The leaves of every `use` tree: (path as written, name bound or `None` for a glob, line).
    use_items: Vec<(Vec<String>, Option<String>, usize)>,
    /// Token ranges of `use` declarations: their edges come from `use_items`, not the inline scan.
    use_ranges: Vec<(usize, usize)>,
}

struct Graph {
    /// By path relative to the crate root (`src/a/b.rs`).
    files: BTreeMap<String, FileInfo>,
    /// Module path → file.
    mods: BTreeMap<Vec<String>, String>,
    /// Deduplicated by (from, to); the first path seen is kept as the reason.
    edges: BTreeMap<(String, String), Edge>,
}

impl Graph {
    fn of_the_workspace() -> Graph {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let paths = workspace_files(root);
        let sources: Vec<(String, String)> = paths
            .iter()
            .map(|p| {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                (rel, std::fs::read_to_string(p).unwrap())
            })
            .collect();
        let refs: Vec<(&str, &str)> = sources
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let g = Graph::from_sources(&refs);
        assert!(g.files.len() > 20, "read only {} files", g.files.len());
        g
    }

    fn from_sources(sources: &[(&str, &str)]) -> Graph {
        let mut files = BTreeMap::new();
        let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
        for (rel, text) in sources {
            // The binary's root routes every entry point; it is no layer of its own.
            if *rel == "src/main.rs" {
                continue;
            }
            let module = module_of(rel);
            let (toks, test_mods) = strip_test_items(lex(text));
            for m in test_mods {
                let mut child = module.clone();
                child.push(m);
                test_only.insert(child);
            }
            let mut heavy = BTreeMap::new();
            for t in &toks {
                if let Kind::Ident(w) = &t.kind
                    && let Some(h) = HEAVY.iter().find(|h| *h == w)
                {
                    heavy.entry(*h).or_insert(t.line);
                }
            }
            let (use_items, use_ranges) = parse_uses(&toks);
            files.insert(
                rel.to_string(),
                FileInfo {
                    module,
                    bindings: BTreeMap::new(),
                    heavy,
                    toks,
                    use_items,
                    use_ranges,
                },
            );
        }
        files.retain(|_, f| !test_only.iter().any(|t| f.module.starts_with(t)));
        let mods = files
            .iter()
            .map(|(rel, f)| (f.module.clone(), rel.clone()))
            .collect();
        let mut g = Graph {
            files,
            mods,
            edges: BTreeMap::new(),
        };
        g.bind();
        g.link();
        g
    }

    /// Every file's `use` bindings, made absolute. Two passes: a `use` may start from a name an
    /// earlier `use` bound (`use crate::state; use state::Store;`).
    fn bind(&mut self) {
        for _ in 0..2 {
            let rels: Vec<String> = self.files.keys().cloned().collect();
            for rel in rels {
                let f = &self.files[&rel];
                let mut found = Vec::new();
                for (path, bind, _) in &f.use_items {
                    if let (Some(name), Some(abs)) = (bind, self.absolute(&rel, path)) {
                        found.push((name.clone(), abs));
                    }
                }
                self.files.get_mut(&rel).unwrap().bindings.extend(found);
            }
        }
    }

    fn link(&mut self) {
        let mut edges = Vec::new();
        for (rel, f) in &self.files {
            // `use` trees: an item imported is an edge; a module imported is only a name, whose
            // uses below make the edges (so `use crate::poller;` then `poller::ensure` reaches
            // the file defining `ensure`, not the whole module); a glob reaches the module.
            for (path, bind, line) in &f.use_items {
                let Some(abs) = self.absolute(rel, path) else {
                    continue;
                };
                if let Some((to, is_module)) = self.resolve(&abs, 0)
                    && (!is_module || bind.is_none())
                {
                    edges.push(Edge {
                        from: rel.clone(),
                        to,
                        via: display_path(path),
                        line: *line,
                    });
                }
            }
            // Paths used inline: `crate::x::f()`, `super::y::Z`, `state::Store::open`.
            let mut i = 0;
            while i < f.toks.len() {
                if let Some(&(_, end)) = f.use_ranges.iter().find(|(s, _)| *s == i) {
                    i = end + 1;
                    continue;
                }
                let starts = matches!(f.toks[i].kind, Kind::Ident(_))
                    && !(i > 0 && f.toks[i - 1].kind == Kind::Sep);
                if !starts {
                    i += 1;
                    continue;
                }
                let line = f.toks[i].line;
                let mut path = Vec::new();
                let mut j = i;
                while let Some(Kind::Ident(w)) = f.toks.get(j).map(|t| &t.kind) {
                    path.push(w.clone());
                    if f.toks.get(j + 1).map(|t| &t.kind) == Some(&Kind::Sep) {
                        j += 2;
                    } else {
                        j += 1;
                        break;
                    }
                }
                i = j.max(i + 1);
                if path.len() < 2 {
                    continue;
                }
                let Some(abs) = self.absolute(rel, &path) else {
                    continue;
                };
                if let Some((to, false)) = self.resolve(&abs, 0) {
                    edges.push(Edge {
                        from: rel.clone(),
                        to,
                        via: display_path(&path),
                        line,
                    });
                }
            }
        }
        for e in edges {
            if e.from != e.to {
                self.edges
                    .entry((e.from.clone(), e.to.clone()))
                    .or_insert(e);
            }
        }
    }

    /// `path` as written in `rel`, made absolute (from its crate's name); `None` for a path
    /// outside the workspace (`std::…`, `serde::…`, `Self::…`).
    fn absolute(&self, rel: &str, path: &[String]) -> Option<Vec<String>> {
        let f = &self.files[rel];
        let first = path.first()?.as_str();
        let mut m = f.module.clone();
        match first {
            "crate" => {
                let mut abs = vec![m[0].clone()];
                abs.extend_from_slice(&path[1..]);
                Some(abs)
            }
            // Another crate of the workspace, by its own name.
            _ if self.mods.contains_key(&path[..1]) => Some(path.to_vec()),
            "self" => {
                m.extend_from_slice(&path[1..]);
                Some(m)
            }
            "super" => {
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    m.pop()?;
                    rest = &rest[1..];
                }
                m.extend_from_slice(rest);
                Some(m)
            }
            _ => {
                let mut child = m.clone();
                child.push(first.to_string());
                if self.mods.contains_key(&child) {
                    m.extend_from_slice(path);
                    return Some(m);
                }
                let mut abs = f.bindings.get(first)?.clone();
                abs.extend_from_slice(&path[1..]);
                Some(abs)
            }
        }
    }

    /// The file an absolute path lands in, and whether it names a module (rather than an item).
    /// An item its module brought in by `use` (a re-export) is followed to where it is defined.
    fn resolve(&self, path: &[String], depth: usize) -> Option<(String, bool)> {
        if depth > 16 {
            return None;
        }
        let mut m: Vec<String> = Vec::new();
        let mut i = 0;
        while i < path.len() {
            m.push(path[i].clone());
            if !self.mods.contains_key(&m) {
                m.pop();
                break;
            }
            i += 1;
        }
        let file = self.mods.get(&m)?;
        if i == path.len() {
            return Some((file.clone(), true));
        }
        if let Some(target) = self.files[file].bindings.get(&path[i]) {
            let mut next = target.clone();
            next.extend_from_slice(&path[i + 1..]);
            if next != path
                && let Some(found) = self.resolve(&next, depth + 1)
            {
                return Some(found);
            }
        }
        Some((file.clone(), false))
    }

    fn edges_where(&self, rule: impl Fn(&str, &str) -> bool) -> Vec<Edge> {
        self.edges
            .values()
            .filter(|e| rule(&e.from, &e.to))
            .cloned()
            .collect()
    }

    /// Every file reachable from `roots` that names a heavy crate, as one line each: the last
    /// edge, the word and where, and the chain (shortest, breadth first) from a root.
    fn heavy_reached_from(&self, roots: &[&str]) -> Vec<String> {
        let mut came_from: BTreeMap<String, Option<Edge>> = BTreeMap::new();
        let mut queue = VecDeque::new();
        for r in roots {
            came_from.insert(r.to_string(), None);
            queue.push_back(r.to_string());
        }
        while let Some(f) = queue.pop_front() {
            for e in self.edges.values().filter(|e| e.from == f) {
                if !came_from.contains_key(&e.to) {
                    came_from.insert(e.to.clone(), Some(e.clone()));
                    queue.push_back(e.to.clone());
                }
            }
        }
        let mut out = Vec::new();
        for (file, how) in &came_from {
            let Some(info) = self.files.get(file) else {
                continue;
            };
            // One line per file is enough to find it; the first heavy word stands for all.
            if let Some((word, line)) = info.heavy.iter().next() {
                let mut chain = vec![file.clone()];
                let mut at = how.clone();
                while let Some(e) = at {
                    chain.push(e.from.clone());
                    at = came_from[&e.from].clone();
                }
                chain.reverse();
                out.push(match how {
                    Some(e) => format!(
                        "{} -> {}: reaches `{word}` ({file} line {line}) through `{}` ({} line {}); chain: {}",
                        e.from,
                        e.to,
                        e.via,
                        e.from,
                        e.line,
                        chain.join(" -> ")
                    ),
                    None => format!("{file}: mentions `{word}` (line {line}), and is itself a hot path"),
                });
            }
        }
        out
    }
}

fn display_path(path: &[String]) -> String {
    path.join("::")
}

/// A file's module path, its crate's name first: `src/a/b.rs` is `a2a_mod::a::b`,
/// `crates/store/src/snapshot.rs` is `a2a_mod_store::snapshot` (every crate of the workspace is
/// named `a2a-mod-<its folder>`).
fn module_of(rel: &str) -> Vec<String> {
    let (krate, p) = match rel
        .strip_prefix("crates/")
        .and_then(|r| r.split_once("/src/"))
    {
        Some((dir, p)) => (format!("a2a_mod_{}", dir.replace('-', "_")), p),
        None => (
            "a2a_mod".to_string(),
            rel.strip_prefix("src/").unwrap_or(rel),
        ),
    };
    let p = p.strip_suffix(".rs").unwrap_or(p);
    let mut m = vec![krate];
    if p != "lib" {
        let p = p.strip_suffix("/mod").unwrap_or(p);
        m.extend(p.split('/').map(String::from));
    }
    m
}

// ---------------------------------------------------------------------------------------------
// Reading Rust just well enough: identifiers, `::` and punctuation, with comments, strings and
// character literals dropped (so a doc comment saying "no tokio here" is no mention of tokio).

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Ident(String),
    /// `::`
    Sep,
    Punct(char),
}

#[derive(Debug, Clone)]
struct Tok {
    kind: Kind,
    line: usize,
}

fn lex(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let at = |i: usize| c.get(i).copied();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips a quoted string whose opening quote is at `i`; returns the index after it.
    let skip_string = |mut i: usize, line: &mut usize| {
        i += 1;
        while i < n && c[i] != '"' {
            if c[i] == '\\' {
                i += 1;
            }
            if c.get(i) == Some(&'\n') {
                *line += 1;
            }
            i += 1;
        }
        i + 1
    };
    while i < n {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == Some('/') {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == Some('*') {
            let mut depth = 0;
            while i < n {
                if c[i] == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(i, &mut line);
        } else if ch == '\'' {
            // A character literal, or a lifetime (whose name then lexes as a harmless word).
            if at(i + 1) == Some('\\') {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == Some('\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if matches!(word.as_str(), "r" | "br" | "cr") && matches!(at(i), Some('"' | '#')) {
                let mut j = i;
                while at(j) == Some('#') {
                    j += 1;
                }
                let hashes = j - i;
                if at(j) == Some('"') {
                    j += 1;
                    while j < n {
                        if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == Some('#')) {
                            j += 1 + hashes;
                            break;
                        }
                        if c[j] == '\n' {
                            line += 1;
                        }
                        j += 1;
                    }
                    i = j;
                    continue;
                }
                if word == "r" && hashes == 1 {
                    // A raw identifier (`r#type`): the word follows.
                    i = j;
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && at(i) == Some('"') {
                i = skip_string(i, &mut line);
                continue;
            }
            if word == "b" && at(i) == Some('\'') {
                continue;
            }
            out.push(Tok {
                kind: Kind::Ident(word),
                line,
            });
        } else if ch.is_ascii_digit() {
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok {
                kind: Kind::Punct('0'),
                line,
            });
        } else if ch == ':' && at(i + 1) == Some(':') {
            out.push(Tok {
                kind: Kind::Sep,
                line,
            });
            i += 2;
        } else {
            out.push(Tok {
                kind: Kind::Punct(ch),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_punct(t: Option<&Tok>, ch: char) -> bool {
    t.is_some_and(|t| t.kind == Kind::Punct(ch))
}

fn is_ident(t: Option<&Tok>, w: &str) -> bool {
    t.is_some_and(|t| matches!(&t.kind, Kind::Ident(x) if x == w))
}

/// Drops every item under `#[cfg(test)]`; returns the tokens left and the names of the file
/// modules declared test-only (`#[cfg(test)] mod tests;`).
fn strip_test_items(toks: Vec<Tok>) -> (Vec<Tok>, Vec<String>) {
    let is_cfg_test = |i: usize| {
        let want = ["#", "[", "cfg", "(", "test", ")", "]"];
        want.iter().enumerate().all(|(k, w)| {
            let t = toks.get(i + k);
            match w.chars().next() {
                Some(ch) if !ch.is_alphabetic() => is_punct(t, ch),
                _ => is_ident(t, w),
            }
        })
    };
    let mut out = Vec::new();
    let mut test_mods = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if !is_cfg_test(i) {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        // Skip this attribute and any that follow, then the item: up to a `;` outside brackets,
        // or the `}` closing its body.
        let mut j = i + 7;
        while is_punct(toks.get(j), '#') && is_punct(toks.get(j + 1), '[') {
            let mut depth = 0;
            while j < toks.len() {
                match toks[j].kind {
                    Kind::Punct('[') => depth += 1,
                    Kind::Punct(']') => {
                        depth -= 1;
                        if depth == 0 {
                            j += 1;
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        let start = j;
        let mut depth = 0i32;
        while j < toks.len() {
            match toks[j].kind {
                Kind::Punct('(' | '[' | '{') => depth += 1,
                // The end of the enclosing item (a `#[cfg(test)]` field or arm): stop before it.
                Kind::Punct(')' | ']' | '}') if depth == 0 => {
                    j -= 1;
                    break;
                }
                Kind::Punct(')' | ']') => depth -= 1,
                Kind::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Kind::Punct(';') if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        let item = &toks[start..j.min(toks.len())];
        if let Some(k) = item
            .iter()
            .position(|t| t.kind == Kind::Ident("mod".into()))
            && let Some(Kind::Ident(name)) = item.get(k + 1).map(|t| &t.kind)
            && toks.get(j).is_some_and(|t| t.kind == Kind::Punct(';'))
            && k + 2 == item.len()
        {
            test_mods.push(name.clone());
        }
        i = j + 1;
    }
    (out, test_mods)
}

/// Every `use` declaration: its leaves as (path as written, the name bound or `None` for a glob,
/// line), and the token range each declaration spans.
#[allow(clippy::type_complexity)]
fn parse_uses(
    toks: &[Tok],
) -> (
    Vec<(Vec<String>, Option<String>, usize)>,
    Vec<(usize, usize)>,
) {
    let mut items = Vec::new();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // `use<'a>` is precise capturing, not an import.
        if is_ident(toks.get(i), "use") && !is_punct(toks.get(i + 1), '<') {
            let line = toks[i].line;
            let mut leaves = Vec::new();
            let mut end = use_tree(toks, i + 1, Vec::new(), &mut leaves);
            while end < toks.len() && !is_punct(toks.get(end), ';') {
                end += 1;
            }
            items.extend(leaves.into_iter().map(|(p, b)| (p, b, line)));
            ranges.push((i, end));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    (items, ranges)
}

/// One use tree from `i` under `prefix`; pushes its leaves and returns the index after it.
fn use_tree(
    toks: &[Tok],
    mut i: usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    if toks.get(i).is_some_and(|t| t.kind == Kind::Sep) {
        i += 1;
    }
    loop {
        let Some(t) = toks.get(i) else {
            return toks.len();
        };
        match &t.kind {
            Kind::Punct('{') => {
                i += 1;
                loop {
                    if i >= toks.len() {
                        return toks.len();
                    }
                    if is_punct(toks.get(i), '}') {
                        return i + 1;
                    }
                    i = use_tree(toks, i, path.clone(), out);
                    if is_punct(toks.get(i), ',') {
                        i += 1;
                    }
                }
            }
            Kind::Punct('*') => {
                out.push((path, None));
                return i + 1;
            }
            Kind::Ident(w) => {
                let w = w.clone();
                i += 1;
                if toks.get(i).is_some_and(|t| t.kind == Kind::Sep) {
                    path.push(w);
                    i += 1;
                    continue;
                }
                let mut bind = w.clone();
                if is_ident(toks.get(i), "as")
                    && let Some(Kind::Ident(alias)) = toks.get(i + 1).map(|t| &t.kind)
                {
                    bind = alias.clone();
                    i += 2;
                } else if w == "self" {
                    // `{self, …}` binds the prefix module itself.
                    bind = path.last().cloned().unwrap_or_default();
                }
                if w != "self" {
                    path.push(w);
                }
                out.push((path, Some(bind)));
                return i;
            }
            _ => return i + 1,
        }
    }
}

/// Every file the docs, the comments and the scripts cite exists, in this repository (another
/// project's file is no citation a reader can follow). Cited = a word starting with one of the repository's folders
/// (or one of its top-level documents) and ending in a file extension.
#[test]
fn every_cited_file_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = std::process::Command::new("git")
        .args(["ls-files"])
        .current_dir(root)
        .output();
    let Some(listed) = listed.ok().filter(|o| o.status.success()) else {
        eprintln!("every_cited_file_exists: skipped, not a git checkout");
        return;
    };
    let tracked = String::from_utf8_lossy(&listed.stdout).into_owned();
    const FOLDERS: &[&str] = &[
        "src/", "crates/", "docs/", "tests/", "benches/", "themes/", "hooks/", "bin/", ".ci/",
    ];
    const DOCS: &[&str] = &[
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "Cargo.toml",
    ];
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    let mut missing = Vec::new();
    for rel in tracked.lines() {
        // The graph tests' fixtures name files of a made-up crate.
        if rel == "tests/it/arch.rs"
            || !(rel.ends_with(".rs")
                || rel.ends_with(".md")
                || rel.ends_with(".toml")
                || rel.ends_with(".sh")
                || rel.ends_with(".py")
                || rel == ".ci/run")
        {
            continue;
        }
        let text = std::fs::read_to_string(root.join(rel)).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            // In Rust, what comments cite: a path in code is checked by running it.
            let line = match rel.ends_with(".rs") {
                true => line.split_once("//").map_or("", |(_, c)| c),
                false => line,
            };
            for word in line.split(|c: char| !is_path_char(c)) {
                let word = word.trim_end_matches(['.', '/']);
                let cited = FOLDERS.iter().any(|f| word.starts_with(f)) || DOCS.contains(&word);
                let has_ext = word.rsplit_once('.').is_some_and(|(stem, ext)| {
                    !stem.ends_with('/')
                        && ["rs", "md", "toml", "sh", "py", "json", "mjs"].contains(&ext)
                });
                if cited && has_ext && !root.join(word).exists() {
                    missing.push(format!("{rel} line {}: {word}", i + 1));
                }
            }
        }
    }
    assert_none(
        "every file cited exists (fix the path or the citation)",
        missing,
    );
}

/// Comments name features, not tracker numbers: a number means nothing to a reader of the code
/// (CONTRIBUTING.md, "Comments"). Code, tests, benches and ARCHITECTURE.md.
#[test]
fn no_tracker_number_in_code_or_architecture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = workspace_files(root);
    rust_files(&root.join("tests"), &mut files);
    rust_files(&root.join("benches"), &mut files);
    files.push(root.join("ARCHITECTURE.md"));
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel == "tests/it/arch.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap().to_lowercase();
        for (i, line) in text.lines().enumerate() {
            let numbered = line.match_indices("issue").any(|(at, w)| {
                let rest = line[at + w.len()..]
                    .trim_start_matches('s')
                    .trim_start_matches([' ', '#']);
                rest.starts_with(|c: char| c.is_ascii_digit())
            });
            if numbered {
                found.push(format!("{rel} line {}: {}", i + 1, line.trim()));
            }
        }
    }
    assert_none("name the feature, not the tracker number", found);
}
