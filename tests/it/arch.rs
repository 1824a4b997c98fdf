//! Keeps `src/core/` pure and the status line off the heavy paths (STYLE.md): a grep, cheap and
//! honest. A failure names the file and the forbidden word.

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

#[test]
fn core_is_pure() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/core"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in FORBIDDEN {
            assert!(
                !text.contains(word),
                "{} uses `{word}`: src/core must stay pure (pass values in, return values)",
                f.display()
            );
        }
    }
}
