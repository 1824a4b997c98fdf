//! The layers of ARCHITECTURE.md the compiler cannot hold, held by a test. The crates hold the
//! rest: a crate reaches only what its manifest names, so the core cannot import the A2A client
//! (`crates/core/src/lib.rs` has the doctest that fails to compile) and the hot paths, their own
//! crate (`crates/claude`), cannot reach a runtime; these tests keep the manifests so. Three kinds of
//! check:
//! - dependencies: the core names no heavy crate and no other crate of the workspace; the store,
//!   the machine layer and the claude crate no runtime, HTTP client or MCP server, and cargo's own
//!   tree of the claude crate reaches none through any crate;
//! - words: `crates/core/` names no IO, env, clock, async or network API (a grep, cheap and
//!   honest); the environment is read in one file; one statement changes a task; the binary's
//!   two hot shells call only the claude crate;
//! - citations: every file the docs and comments cite exists; no tracker numbers.
//!
//! A failure names each offending file and line. Test code (a file's `#[cfg(test)] mod tests`)
//! does not run in production and is not checked.

use std::collections::BTreeSet;
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

/// What the hot paths must not reach: each builds a runtime or a client, or pulls one in.
const HEAVY: &[&str] = &["tokio", "reqwest", "rmcp", "hyper", "axum"];

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
/// and no other crate of the workspace; the claude crate and the store and machine layer under it
/// name no runtime, HTTP client or MCP server; the protocol crate is pure like the core.
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
    for c in [
        "crates/store",
        "crates/os",
        "crates/config",
        "crates/results",
        "crates/claude",
    ] {
        let deps = dependencies(&at(c));
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| HEAVY.contains(&d.as_str()) || *d == "a2a-mod-a2a" || *d == "a2a-mod-serve")
            .collect();
        assert!(
            bad.is_empty(),
            "{c} is on the hot paths, yet depends on {bad:?}"
        );
    }
    // The protocol is pure like the core: values in, values out; only the core of the workspace.
    let proto = dependencies(&at("crates/proto"));
    let bad: Vec<&String> = proto
        .iter()
        .filter(|d| {
            heavy.contains(&d.as_str()) || (d.starts_with("a2a-mod") && *d != "a2a-mod-core")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "crates/proto must stay pure, yet depends on {bad:?}"
    );
}

/// Every call into the C library is the machine layer's: `libc` is in `crates/os`'s manifest
/// alone, and every other crate root, the test binary and each bench forbids `unsafe` (so the
/// compiler holds it, not a review).
#[test]
fn only_the_machine_layer_calls_the_c_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![root.join("Cargo.toml")];
    let mut roots = vec![root.join("src/main.rs"), root.join("src/lib.rs")];
    roots.push(root.join("tests/it/main.rs"));
    for e in std::fs::read_dir(root.join("benches")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "rs") {
            roots.push(e.path());
        }
    }
    for c in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        if c.file_name() != "os" {
            manifests.push(c.path().join("Cargo.toml"));
            roots.push(c.path().join("src/lib.rs"));
        }
    }
    let mut bad = Vec::new();
    for m in &manifests {
        if dependencies(&m.display().to_string()).contains(&"libc".to_string()) {
            bad.push(format!("{} depends on libc", m.display()));
        }
    }
    for r in &roots {
        let text = std::fs::read_to_string(r).unwrap_or_else(|e| panic!("{}: {e}", r.display()));
        if !text.contains("#![forbid(unsafe_code)]") {
            bad.push(format!("{} lacks #![forbid(unsafe_code)]", r.display()));
        }
    }
    assert_none("only crates/os calls the C library", bad);
}

/// The binary's manifest names only what `src/` uses (a crate named there but used only by the
/// tests is a door the app could walk through around the layers: SQLite around the store, HTTP
/// around the A2A client). A use is a path through the crate (`name::`) or a `use name`.
#[test]
fn the_root_manifest_names_only_what_src_uses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let text: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let unused: Vec<String> = dependencies(&root.join("Cargo.toml").display().to_string())
        .into_iter()
        .filter(|d| {
            let name = d.replace('-', "_");
            !text.contains(&format!("{name}::")) && !text.contains(&format!("use {name}"))
        })
        .collect();
    assert!(
        unused.is_empty(),
        "Cargo.toml [dependencies] names crates src/ does not use (a test's go in \
         [dev-dependencies]): {unused:?}"
    );
}

/// tests/README.md, the inventory of what the tests check (behaviour → layer → tests), names every
/// test of this binary: a test added without its row, or renamed, fails here, so the inventory
/// stays the list a change is checked against.
#[test]
fn every_test_is_in_the_inventory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let inventory = std::fs::read_to_string(root.join("tests/README.md")).unwrap();
    let mut files = Vec::new();
    rust_files(&root.join("tests/it"), &mut files);
    let mut missing = Vec::new();
    let mut count = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let mut attr = false;
        for line in text.lines().map(str::trim) {
            if line == "#[test]" || line.starts_with("#[tokio::test") {
                attr = true;
            } else if attr && let Some(rest) = line.split("fn ").nth(1) {
                let name = rest.split(['(', '<']).next().unwrap_or("");
                count += 1;
                if !inventory.contains(&format!("::{name}`")) {
                    missing.push(format!("{}: {name}", f.display()));
                }
                attr = false;
            }
        }
    }
    assert!(count > 250, "found only {count} tests: the scan is broken");
    assert_none("every test has its row in tests/README.md", missing);
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

/// The environment is read in one module (`crates/os/src/env.rs`), one named accessor per variable: what
/// a2a-mod reads, and where, is then one file to look at. Test code may read it as it likes.
#[test]
fn no_environment_read_outside_the_env_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for f in workspace_files(root) {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel == "crates/os/src/env.rs" {
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
        "the environment is read in crates/os/src/env.rs only (add a named accessor there)",
        found,
    );
}

/// The hot paths are their own crate (`crates/claude`), so whatever they reach is what cargo's own
/// dependency tree lists for it, through every crate: no async runtime, HTTP client or MCP server.
#[test]
fn the_claude_crate_reaches_no_runtime_http_client_or_mcp_server() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "-p", "a2a-mod-claude", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(root)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let reached: BTreeSet<&str> = text.lines().filter_map(|l| l.split(' ').next()).collect();
    // Not a blind list: the store and SQLite under it are there.
    assert!(
        reached.contains("a2a-mod-store") && reached.contains("rusqlite"),
        "{reached:?}"
    );
    let heavy: Vec<&&str> = HEAVY.iter().filter(|h| reached.contains(**h)).collect();
    assert!(
        heavy.is_empty(),
        "crates/claude is the hot paths (status line, hooks), yet reaches {heavy:?}"
    );
}

/// `main` routes the status line and the hooks through the binary's two hot shells, and they
/// import the dispatch in `cmd/mod.rs`: the three name the claude crate, their clap types and the
/// `Run` trait, nothing of the binary that builds a runtime (the crate boundary holds the rest).
#[test]
fn the_hot_shells_name_only_the_claude_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for rel in ["src/cmd/statusline.rs", "src/cmd/hook.rs", "src/cmd/mod.rs"] {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        for (i, line) in production_part(rel, &text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let binary_paths = code
                .match_indices("crate::")
                .filter(|(at, _)| !code[at + 7..].starts_with("cli::"))
                .count();
            let heavy = HEAVY.iter().any(|h| code.contains(h)) || code.contains("shell::");
            if binary_paths > 0 || heavy {
                found.push(format!("{rel} line {}: {}", i + 1, line.trim()));
            }
        }
    }
    assert_none(
        "the hot shells call the claude crate (a2a_mod_claude), nothing else of the binary",
        found,
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

/// The A2A protocol has one home, `crates/proto`: one `Dialect`, one table of error codes (no
/// code spelled as a number elsewhere), one JSON-RPC envelope check that every server calls, and
/// no JSON read by hand with `.get("…")` in the three crates that speak A2A, but in the files
/// that read something other than A2A, each held to what it has.
#[test]
fn the_protocol_is_spelled_once() {
    const OTHER_JSON: &[(&str, usize, &str)] = &[
        (
            "crates/a2a/src/google.rs",
            11,
            "Google credential files, token answers",
        ),
        ("crates/a2a/src/auth.rs", 3, "OAuth token answers"),
        ("crates/a2a/src/signature.rs", 1, "a JWK set"),
        ("crates/serve/src/claude.rs", 6, "Claude Code's stream-json"),
        (
            "crates/serve/src/ask.rs",
            4,
            "Claude Code's control requests",
        ),
        ("crates/serve/src/engine.rs", 1, "serve's own task metadata"),
        ("crates/serve/src/http.rs", 1, "the A2A-Version header"),
        (
            "crates/fake-worker/src/server.rs",
            2,
            "a header, its own written task",
        ),
    ];
    const CODES: &[&str] = &[
        "-32001", "-32002", "-32003", "-32004", "-32005", "-32006", "-32007", "-32008", "-32009",
        "-32600", "-32601", "-32602", "-32603", "-32700",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for f in workspace_files(root) {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel.starts_with("crates/proto/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = production_part(&rel, &text);
        for (i, line) in code.lines().enumerate() {
            let at = |what: &str| format!("{rel} line {}: {what}: {}", i + 1, line.trim());
            if line.contains("enum Dialect") {
                found.push(at("a second Dialect (proto's is the one)"));
            }
            let comment = line.trim_start().starts_with("//");
            if let Some(c) = CODES.iter().find(|c| line.contains(*c) && !comment) {
                found.push(at(&format!(
                    "{c} spelled as a number (name it from proto::error)"
                )));
            }
            if line.contains("jsonrpc must be") {
                found.push(at(
                    "an envelope check of its own (proto::envelope::request)",
                ));
            }
        }
        let speaks = ["crates/a2a/", "crates/serve/", "crates/fake-worker/"];
        if speaks.iter().any(|c| rel.starts_with(c)) {
            let lookups = code.matches(".get(\"").count();
            let allowed = OTHER_JSON
                .iter()
                .find(|(f, ..)| *f == rel)
                .map_or(0, |o| o.1);
            if lookups > allowed {
                found.push(format!(
                    "{rel}: {lookups} `.get(\"…\")` lookups, {allowed} allowed: read A2A JSON through proto's shapes"
                ));
            }
        }
    }
    for server in [
        "crates/serve/src/http.rs",
        "crates/fake-worker/src/server.rs",
    ] {
        let text = std::fs::read_to_string(root.join(server)).unwrap();
        if !text.contains("envelope::request(") {
            found.push(format!(
                "{server} does not check requests with proto::envelope::request"
            ));
        }
    }
    assert_none("the protocol is spelled in crates/proto only", found);
}
