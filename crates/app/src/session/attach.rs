//! The local files `send` attaches (the `files` input and `--file`): which paths may be
//! read, and reading them into file parts.
//!
//! Rules, in order, for each path (absolute, or relative to the project directory:
//! `CLAUDE_PROJECT_DIR`, else the working directory): it exists; it is inside the project
//! directory or a `[files] allow_dirs` directory once symlinks are resolved (a path that is inside
//! as written but leads out through a symlink is refused as such); it is a regular file (not a
//! directory, device, fifo or socket) on a file system of stored files (never procfs, sysfs or
//! devfs, whatever `allow_dirs` says); it is at most `max_file_mib`; and all of them together are
//! at most `max_send_mib`. Every path passes before any file is opened, so a refused send has read
//! nothing. Each file is then opened without following a symlink and without blocking, and checked
//! again on the open handle (same file, still regular, still under the cap), so a file swapped
//! after the checks is refused too.
//!
//! The judging is pure ([`judge`], [`lexical`], [`media_type`]); the IO is [`load`]. File contents
//! never reach a log or an error message; only names, sizes and the rule that refused.

use a2a_mod_a2a::OutPart;
use a2a_mod_config::FilesConfig;
use anyhow::{Result, anyhow};
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// The project directory relative paths start at: `CLAUDE_PROJECT_DIR` (Claude Code sets it in
/// the MCP server's environment), else the working directory.
pub fn project_dir() -> Result<PathBuf> {
    if let Some(d) = a2a_mod_os::env::project_dir() {
        return Ok(d);
    }
    std::env::current_dir().map_err(|e| {
        anyhow!(
            "cannot attach files: the working directory is unreadable ({e}) — pass absolute paths from a readable directory"
        )
    })
}

/// A directory files may come from: as configured (for messages) and with symlinks resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    pub given: PathBuf,
    pub real: PathBuf,
}

/// What the checks found about one path, before anything is opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The path as written, made absolute and with `.`/`..` resolved by name only.
    pub lexical: PathBuf,
    /// The path with every symlink resolved.
    pub real: PathBuf,
    pub kind: Kind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A device, fifo or socket.
    Other,
    /// A regular file of procfs, sysfs, devfs or their kin: the machine's or a process's state,
    /// shown as files. `/proc/self/environ` is a2a-mod's own environment, secrets included, and such files
    /// report size 0, so no cap would stop them.
    Pseudo,
}

/// Which rule refused a path; shown to Claude as the cause.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    Outside,
    SymlinkOut {
        to: PathBuf,
    },
    Directory,
    NotRegular,
    OverFile {
        size: u64,
        cap: u64,
    },
    /// a2a-mod's own state folder or config file (session stores, saved results, credentials).
    Private,
    Pseudo,
}

impl Refusal {
    fn cause(&self, roots: &[Root]) -> String {
        match self {
            Refusal::Outside => format!("it is outside {}", where_allowed(roots)),
            Refusal::SymlinkOut { to } => format!(
                "it is a symlink to {}, outside {}",
                quoted(to),
                where_allowed(roots)
            ),
            Refusal::Directory => "it is a directory".to_string(),
            Refusal::NotRegular => {
                "it is not a regular file (a device, fifo or socket)".to_string()
            }
            Refusal::OverFile { size, cap } => format!(
                "it is {}, over the per-file cap of {} ([files] max_file_mib in config.toml)",
                size_words(*size),
                size_words(*cap)
            ),
            Refusal::Private => "it is a2a-mod's own state or config (session stores, saved \
                results, worker credentials)"
                .to_string(),
            Refusal::Pseudo => "it is on /proc, /sys or /dev, whose files are the machine's and \
                its processes' state (a2a-mod's own environment among them), never sent whatever \
                [files] allow_dirs says"
                .to_string(),
        }
    }

    fn fix(&self) -> &'static str {
        match self {
            Refusal::Outside | Refusal::SymlinkOut { .. } => {
                "send a file inside the project directory, or ask the user to add its directory to [files] allow_dirs in config.toml"
            }
            Refusal::Directory => "name the files in it one by one",
            Refusal::NotRegular => "send a regular file",
            Refusal::OverFile { .. } => {
                "send a smaller file, or ask the user to raise [files] max_file_mib"
            }
            Refusal::Private => {
                "read a saved result with the Read tool instead, or send a copy from the project directory"
            }
            Refusal::Pseudo => "send a regular file from the project directory instead",
        }
    }
}

fn where_allowed(roots: &[Root]) -> String {
    let mut dirs = roots.iter().map(|r| quoted(&r.given));
    match roots.len() {
        0 => "every directory files may come from (none is readable)".to_string(),
        1 => format!("the project directory {}", dirs.next().unwrap_or_default()),
        _ => format!(
            "the project directory and the allowed directories ({})",
            dirs.collect::<Vec<_>>().join(", ")
        ),
    }
}

fn quoted(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

/// `12.0 MiB`, `512 KiB`, `17 bytes`.
pub fn size_words(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

/// `p` made absolute against `base`, with `.` and `..` resolved by name (no symlinks followed).
pub fn lexical(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether one path may be read, from what the checks found: inside a root once resolved, not in
/// a2a-mod's own state or config (`private`, resolved) unless an allowed directory (not the
/// project directory) inside them names it, a regular file, under the per-file cap. The private
/// rule is there because Claude Code often runs in `$HOME`, which holds our state: a prompt in a
/// worker's answer must not get Claude to send another worker's results or credentials.
pub fn judge(f: &Facts, roots: &[Root], private: &[PathBuf], max_file: u64) -> Result<(), Refusal> {
    if f.kind == Kind::Pseudo {
        return Err(Refusal::Pseudo);
    }
    let real_inside = roots.iter().any(|r| f.real.starts_with(&r.real));
    if !real_inside {
        let written_inside = roots
            .iter()
            .any(|r| f.lexical.starts_with(&r.given) || f.lexical.starts_with(&r.real));
        return Err(if written_inside {
            Refusal::SymlinkOut { to: f.real.clone() }
        } else {
            Refusal::Outside
        });
    }
    let in_private = |p: &Path| private.iter().any(|d| p.starts_with(d));
    let allowed_there = roots
        .iter()
        .skip(1)
        .any(|r| in_private(&r.real) && f.real.starts_with(&r.real));
    if in_private(&f.real) && !allowed_there {
        return Err(Refusal::Private);
    }
    match f.kind {
        Kind::Dir => return Err(Refusal::Directory),
        Kind::Other => return Err(Refusal::NotRegular),
        Kind::File | Kind::Pseudo => {}
    }
    if f.size > max_file {
        return Err(Refusal::OverFile {
            size: f.size,
            cap: max_file,
        });
    }
    Ok(())
}

/// The media type of a file: its content's signature when it has a known one (a PNG named `.txt`
/// is a PNG), else its name's extension, else `text/plain` for UTF-8 text without NULs, else
/// `application/octet-stream`.
pub fn media_type(name: &str, bytes: &[u8]) -> String {
    if let Some(t) = infer::get(bytes) {
        return t.mime_type().to_string();
    }
    if let Some(m) = by_extension(name) {
        return m.to_string();
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains('\0') => "text/plain".to_string(),
        _ => "application/octet-stream".to_string(),
    }
}

/// The media type a file's extension names, for the formats a coding agent hands a worker. A
/// `match` rather than `mime_guess`: that crate's table of ~1,100 extensions is static data with
/// pointers, relocated at every start of this binary, the status line's once a second included
/// (docs/design.md "Start-up cost"). A
/// `match` on literals is code and costs nothing until it runs. An extension not listed falls
/// back to the content (`text/plain` or `application/octet-stream`).
fn by_extension(name: &str) -> Option<&'static str> {
    let (_, ext) = name.rsplit_once('.')?;
    Some(match ext.to_ascii_lowercase().as_str() {
        "txt" | "text" | "log" | "out" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "xml" => "application/xml",
        "json" | "map" => "application/json",
        "jsonl" | "ndjson" => "application/x-ndjson",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "js" | "mjs" | "cjs" | "jsx" => "text/javascript",
        "ts" | "mts" | "cts" | "tsx" => "text/x-typescript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "go" => "text/x-go",
        "java" => "text/x-java",
        "kt" | "kts" => "text/x-kotlin",
        "c" | "h" => "text/x-c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "text/x-c++",
        "cs" => "text/x-csharp",
        "rb" => "text/x-ruby",
        "php" => "application/x-httpd-php",
        "swift" => "text/x-swift",
        "sh" | "bash" | "zsh" => "application/x-sh",
        "sql" => "application/sql",
        "diff" | "patch" => "text/x-diff",
        "ini" | "cfg" | "conf" | "env" => "text/plain",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "ico" => "image/vnd.microsoft.icon",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "bz2" => "application/x-bzip2",
        "xz" => "application/x-xz",
        "zst" => "application/zstd",
        "wasm" => "application/wasm",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "ipynb" => "application/x-ipynb+json",
        "parquet" => "application/vnd.apache.parquet",
        _ => return None,
    })
}

/// The directories files may come from: the project directory and `[files] allow_dirs`, each
/// with symlinks resolved; one that does not exist is left out.
pub fn roots(project: &Path, cfg: &FilesConfig) -> Vec<Root> {
    let home = a2a_mod_os::env::home_dir();
    let mut given = vec![project.to_path_buf()];
    for d in &cfg.allow_dirs {
        match (d.strip_prefix("~/"), &home) {
            (Some(rest), Some(h)) => given.push(h.join(rest)),
            (Some(_), None) => {}
            (None, _) => given.push(PathBuf::from(d)),
        }
    }
    given
        .into_iter()
        .filter_map(|g| {
            let real = std::fs::canonicalize(&g).ok()?;
            Some(Root {
                given: lexical(Path::new("/"), &g),
                real,
            })
        })
        .collect()
}

/// Checks every path, then reads them all: the files as parts, in the order given. The error
/// names the path and the rule that refused it; nothing is read unless every path passes.
pub fn load(
    paths: &[String],
    project: &Path,
    cfg: &FilesConfig,
    private: &[PathBuf],
) -> Result<Vec<OutPart>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let roots = roots(project, cfg);
    let private: Vec<PathBuf> = private
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let (max_file, max_send) = (cfg.max_file_bytes(), cfg.max_send_bytes());
    let mut checked = Vec::with_capacity(paths.len());
    let mut total: u64 = 0;
    for p in paths {
        let shown = format!("{p:?}");
        if p.trim().is_empty() {
            return Err(anyhow!(
                "file \"\" refused: the path is empty — name a file; nothing was sent"
            ));
        }
        let lex = lexical(project, Path::new(p));
        let real = std::fs::canonicalize(&lex).map_err(|e| {
            anyhow!(
                "file {shown} refused: cannot find it ({}) — check the path (a relative path starts at the project directory {}); nothing was sent",
                io_words(&e),
                quoted(project)
            )
        })?;
        let meta = std::fs::metadata(&real).map_err(|e| {
            anyhow!(
                "file {shown} refused: cannot look at it ({}) — check its permissions; nothing was sent",
                io_words(&e)
            )
        })?;
        let kind = if meta.is_file()
            && a2a_mod_os::fsx::on_pseudo_fs(&real, a2a_mod_os::fsx::fs_type(&real))
        {
            Kind::Pseudo
        } else if meta.is_file() {
            Kind::File
        } else if meta.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        };
        let facts = Facts {
            lexical: lex.clone(),
            real,
            kind,
            size: meta.len(),
        };
        judge(&facts, &roots, &private, max_file).map_err(|r| {
            anyhow!(
                "file {shown} refused: {} — {}; nothing was sent",
                r.cause(&roots),
                r.fix()
            )
        })?;
        total = total.saturating_add(facts.size);
        if total > max_send {
            return Err(anyhow!(
                "files refused: together they are over the per-send cap of {} ([files] max_send_mib in config.toml), {shown} is where the sum passed it — send fewer or smaller files, or ask the user to raise [files] max_send_mib; nothing was sent",
                size_words(max_send)
            ));
        }
        checked.push((p, lex, facts, meta_id(&meta)));
    }
    let mut parts = Vec::with_capacity(checked.len());
    let mut read_total: u64 = 0;
    for (p, lex, facts, id) in checked {
        let bytes = read_checked(&facts.real, id, max_file).map_err(|why| {
            anyhow!("file {p:?} refused: {why} — send it again once it stays put; nothing was sent")
        })?;
        read_total = read_total.saturating_add(bytes.len() as u64);
        if read_total > max_send {
            return Err(anyhow!(
                "files refused: they grew past the per-send cap of {} while being read — send them again once they stay put; nothing was sent",
                size_words(max_send)
            ));
        }
        let name = lex
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "file".to_string());
        let media_type = media_type(&name, &bytes);
        parts.push(OutPart::File {
            name,
            media_type,
            bytes,
        });
    }
    Ok(parts)
}

fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

/// (device, inode): the file the checks saw, to compare with the one opened.
fn meta_id(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (m.dev(), m.ino())
}

/// Opens the checked file without following a symlink or blocking (a fifo swapped in must not
/// hang the send), checks the handle is the same regular file, reads at most `max + 1` bytes.
fn read_checked(real: &Path, id: (u64, u64), max: u64) -> std::result::Result<Vec<u8>, String> {
    let mut f = a2a_mod_os::fsx::open_read_nofollow(real)
        .map_err(|e| format!("cannot open it ({})", io_words(&e)))?;
    let meta = f
        .metadata()
        .map_err(|e| format!("cannot look at it ({})", io_words(&e)))?;
    if !meta.is_file()
        || meta_id(&meta) != id
        || a2a_mod_os::fsx::on_pseudo_fs(real, a2a_mod_os::fsx::fs_type_of(&f))
    {
        return Err("it changed between the checks and the read".to_string());
    }
    let mut bytes = Vec::with_capacity(meta.len().min(max) as usize);
    (&mut f)
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it ({})", io_words(&e)))?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "it grew past the per-file cap of {} while being read",
            size_words(max)
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(p: &str) -> Root {
        Root {
            given: PathBuf::from(p),
            real: PathBuf::from(p),
        }
    }

    fn facts(lexical: &str, real: &str, kind: Kind, size: u64) -> Facts {
        Facts {
            lexical: lexical.into(),
            real: real.into(),
            kind,
            size,
        }
    }

    #[test]
    fn lexical_resolves_dots_by_name() {
        let base = Path::new("/p/q");
        assert_eq!(lexical(base, Path::new("a/./b")), Path::new("/p/q/a/b"));
        assert_eq!(lexical(base, Path::new("../x")), Path::new("/p/x"));
        assert_eq!(lexical(base, Path::new("/etc/../tmp")), Path::new("/tmp"));
        assert_eq!(lexical(base, Path::new("../../../..")), Path::new("/"));
    }

    #[test]
    fn each_rule() {
        let roots = [root("/p")];
        let ok = facts("/p/a", "/p/a", Kind::File, 10);
        assert_eq!(judge(&ok, &roots, &[], 10), Ok(()));
        assert_eq!(
            judge(&facts("/etc/x", "/etc/x", Kind::File, 1), &roots, &[], 10),
            Err(Refusal::Outside)
        );
        // "/pp" is not inside "/p": components, not string prefixes.
        assert_eq!(
            judge(&facts("/pp/x", "/pp/x", Kind::File, 1), &roots, &[], 10),
            Err(Refusal::Outside)
        );
        assert_eq!(
            judge(
                &facts("/p/link", "/etc/passwd", Kind::File, 1),
                &roots,
                &[],
                10
            ),
            Err(Refusal::SymlinkOut {
                to: "/etc/passwd".into()
            })
        );
        assert_eq!(
            judge(&facts("/p/d", "/p/d", Kind::Dir, 1), &roots, &[], 10),
            Err(Refusal::Directory)
        );
        assert_eq!(
            judge(&facts("/p/f", "/p/f", Kind::Other, 0), &roots, &[], 10),
            Err(Refusal::NotRegular)
        );
        assert_eq!(
            judge(&facts("/p/a", "/p/a", Kind::File, 11), &roots, &[], 10),
            Err(Refusal::OverFile { size: 11, cap: 10 })
        );
        // Outside wins over what the file is: a device outside is refused as outside.
        assert_eq!(
            judge(
                &facts("/dev/zero", "/dev/zero", Kind::Other, 0),
                &roots,
                &[],
                10
            ),
            Err(Refusal::Outside)
        );
        // An allowed directory counts like the project directory.
        let two = [root("/p"), root("/srv/shared")];
        assert_eq!(
            judge(
                &facts("/srv/shared/x", "/srv/shared/x", Kind::File, 1),
                &two,
                &[],
                10
            ),
            Ok(())
        );
        // Our own state and config: refused inside the project directory or a wider allowed one,
        // readable only through an allowed directory inside them.
        let state = [PathBuf::from("/p/.state")];
        let saved = facts("/p/.state/r/x", "/p/.state/r/x", Kind::File, 1);
        assert_eq!(judge(&saved, &roots, &state, 10), Err(Refusal::Private));
        let wide = [root("/q"), root("/p")];
        assert_eq!(judge(&saved, &wide, &state, 10), Err(Refusal::Private));
        let narrow = [root("/q"), root("/p/.state/r")];
        assert_eq!(judge(&saved, &narrow, &state, 10), Ok(()));
        // A file of /proc is refused even inside an allowed directory.
        let proc = [root("/p"), root("/proc/7")];
        let env = facts("/proc/7/environ", "/proc/7/environ", Kind::Pseudo, 0);
        assert_eq!(judge(&env, &proc, &[], 10), Err(Refusal::Pseudo));
        let cfg = [PathBuf::from("/p/config.toml")];
        let f = facts("/p/config.toml", "/p/config.toml", Kind::File, 1);
        assert_eq!(judge(&f, &roots, &cfg, 10), Err(Refusal::Private));
    }

    #[test]
    fn media_types() {
        assert_eq!(
            media_type("x.txt", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            "image/png"
        );
        assert_eq!(media_type("a.json", b"{}"), "application/json");
        assert_eq!(media_type("notes", b"plain words"), "text/plain");
        assert_eq!(
            media_type("blob", b"\0\x01\x02"),
            "application/octet-stream"
        );
        assert_eq!(media_type("doc.pdf", b"%PDF-1.7\n"), "application/pdf");
        assert_eq!(media_type("fix.PATCH", b"--- a\n"), "text/x-diff");
        assert_eq!(media_type("lib.rs", b"fn main() {}"), "text/x-rust");
        assert_eq!(
            media_type("odd.xyz", b"words"),
            "text/plain",
            "unknown: by content"
        );
        assert_eq!(media_type("noext", b"\0\0"), "application/octet-stream");
    }

    #[test]
    fn sizes_in_words() {
        assert_eq!(size_words(17), "17 bytes");
        assert_eq!(size_words(1536), "1.5 KiB");
        assert_eq!(size_words(10 * 1024 * 1024), "10.0 MiB");
    }
}
