//! The session's results folder (`state/results/<session>/`), the one home of files a2a-mod writes
//! from a worker's answer: each artifact of a task that ended or waits saved under
//! `<session>/<task>/`, with `.artifacts.json` beside the files saying what each is (the hooks run
//! later, in another process, and read it back to tell Claude); and the clean-up of old sessions'
//! results (`tasks --prune`, offered by `doctor`). `overflow.rs` (beside this file) keeps too-long
//! texts in the same folder.
//!
//! Saving is called where a task's outcome is seen: the binary's session (the tools and the CLI) and
//! the poller. Paths are built only from our own session id, the task id made one safe component
//! ([`core::artifact::task_dir_name`](a2a_mod_core::artifact::task_dir_name)) and names rebuilt
//! from safe characters ([`core::artifact::file_name`](a2a_mod_core::artifact::file_name)); files
//! are created new (`O_EXCL | O_NOFOLLOW`, 0600) and renamed into place, and a symlink where one of
//! our folders should be is refused, so nothing a worker names is ever written outside the task's
//! folder. No network, no tokio (this crate has neither): the hooks reach this.

use a2a_mod_core::artifact::{self, Artifact, Kept, Part};
use a2a_mod_core::bounds;
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_os::env::Ctx;
use anyhow::{Context, Result, anyhow};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The file beside a task's artifacts that lists them (hidden: no saved name starts with a dot).
pub const MANIFEST: &str = ".artifacts.json";

/// `state/results/`.
pub fn results_dir(ctx: &Ctx) -> PathBuf {
    ctx.state_dir.join("results")
}

/// A media type longer than this is not one (the longest registered are under 80).
const MEDIA_TYPE_CHARS: usize = 80;

/// `state/results/<session>/`.
pub fn session_dir(ctx: &Ctx, session: &str) -> PathBuf {
    results_dir(ctx).join(session)
}

/// `state/results/<session>/<task>/`.
pub fn task_dir(ctx: &Ctx, session: &str, task_id: &str) -> PathBuf {
    session_dir(ctx, session).join(artifact::task_dir_name(task_id))
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    worker: String,
    task_id: String,
    items: Vec<Kept>,
}

/// Where the bytes of a spilled file part (`Part::Spilled`, by index) are read from: the
/// answer's `a2a::Spills`. Copied to their file as they are read, never held whole.
pub type SpillReader<'a> = &'a dyn Fn(usize) -> Option<Box<dyn std::io::Read + 'a>>;

/// Saves every artifact of `task_id` under its folder, at most `max_bytes` in all (parts past it
/// are kept as `dropped` entries saying so), and lists them in [`MANIFEST`]. Never fails: what
/// could not be saved says why in its entry. Empty when there are no artifacts.
/// A spilled part's bytes are read with `spilled`.
pub fn save(
    ctx: &Ctx,
    session: &str,
    TaskKey { worker, task_id }: &TaskKey,
    artifacts: &[Artifact],
    max_bytes: u64,
    spilled: SpillReader<'_>,
) -> Vec<Kept> {
    if artifacts.is_empty() || !a2a_mod_os::env::valid_session_id(session) {
        return Vec::new();
    }
    let dir = task_dir(ctx, session, task_id);
    let mut saver = Saver {
        ready: private_dirs(ctx, session, &dir),
        dir,
        taken: HashSet::from([MANIFEST.to_string()]),
        used: 0,
        max_bytes,
        spilled,
    };
    let mut items = Vec::new();
    let mut parts_seen = 0usize;
    // Parts past the cap are counted, never decoded: 4 MiB of tiny parts must not become 400k
    // entries in the manifest and the tool result.
    let mut not_kept = 0usize;
    for a in artifacts {
        let room = bounds::ARTIFACT_PARTS.saturating_sub(parts_seen);
        if room == 0 {
            not_kept += a.parts.len().max(1);
            continue;
        }
        let shown = artifact::shown_name(a.name.as_deref());
        for piece in pieces(a, room, &mut not_kept) {
            parts_seen += 1;
            items.push(saver.keep(&shown, piece));
        }
    }
    if not_kept > 0 {
        items.push(Kept {
            artifact: format!("{not_kept} more parts"),
            kind: "parts".into(),
            dropped: Some(format!(
                "more than {} parts in one task",
                bounds::ARTIFACT_PARTS
            )),
            ..Kept::default()
        });
    }
    if saver.ready.is_ok() {
        let m = Manifest {
            worker: worker.to_string(),
            task_id: task_id.to_string(),
            items: items.clone(),
        };
        if let Ok(json) = serde_json::to_vec(&m)
            && let Err(e) = write_new(&saver.dir.join(MANIFEST), &json)
        {
            tracing::warn!("cannot list the artifacts of task {task_id}: {e:#}");
        }
    }
    items
}

/// What one artifact gives to save or list, at most `room` pieces: its text parts joined as one
/// file, then each other part; a non-text part past `room` counts in `not_kept`.
fn pieces(a: &Artifact, room: usize, not_kept: &mut usize) -> Vec<Piece> {
    let base = artifact::file_name(a.name.as_deref(), "artifact");
    let texts: Vec<&str> = a
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let mut pieces: Vec<Piece> = Vec::new();
    if !texts.is_empty() {
        let text = a2a_mod_core::fence::clean_multiline(&texts.join("\n"));
        pieces.push(Piece::File {
            kind: "text",
            name: ext_or(&base, "txt"),
            media_type: Some("text/plain".into()),
            bytes: Ok(Body::Held(text.into_bytes())),
        });
    }
    let file_name = |filename: &Option<String>| {
        artifact::file_name(filename.as_deref().or(a.name.as_deref()), "file")
    };
    for p in &a.parts {
        if pieces.len() >= room {
            *not_kept += usize::from(!matches!(p, Part::Text(_)));
            continue;
        }
        match p {
            Part::Text(_) => {}
            Part::Data(v) => pieces.push(Piece::File {
                kind: "data",
                name: artifact::with_ext(&base, "json"),
                media_type: Some("application/json".into()),
                bytes: serde_json::to_string_pretty(v)
                    .map(|s| Body::Held((s + "\n").into_bytes()))
                    .map_err(|_| "its data is not JSON".to_string()),
            }),
            Part::Bytes {
                filename,
                media_type,
                base64,
            } => pieces.push(Piece::File {
                kind: "file",
                name: file_name(filename),
                media_type: media_type.clone(),
                bytes: decode(base64)
                    .map(Body::Held)
                    .ok_or_else(|| "its bytes are not base64".to_string()),
            }),
            Part::Spilled {
                filename,
                media_type,
                bytes,
                index,
            } => pieces.push(Piece::File {
                kind: "file",
                name: file_name(filename),
                media_type: media_type.clone(),
                bytes: Ok(Body::Spilled {
                    len: *bytes,
                    index: index.clone(),
                }),
            }),
            Part::Url {
                filename: _,
                media_type,
                url,
            } => pieces.push(Piece::Url {
                media_type: media_type.clone(),
                url: url.clone(),
            }),
        }
    }
    pieces
}

/// One task's saving under way: its folder (and whether it could be made), the names taken and
/// the bytes written so far against the per-task cap.
struct Saver<'a> {
    dir: PathBuf,
    ready: Result<()>,
    taken: HashSet<String>,
    used: u64,
    max_bytes: u64,
    spilled: SpillReader<'a>,
}

impl Saver<'_> {
    /// One piece of the artifact `shown`: saved (its path), listed (a URL), or dropped with why.
    fn keep(&mut self, shown: &str, piece: Piece) -> Kept {
        let mut k = Kept {
            artifact: shown.to_string(),
            ..Kept::default()
        };
        let (kind, name, media_type, bytes) = match piece {
            Piece::Url { media_type, url } => {
                k.kind = "url".into();
                k.media_type = media_type.map(|m| artifact::plain(&m, MEDIA_TYPE_CHARS));
                k.url = Some(artifact::plain(&url, bounds::ARTIFACT_URL_CHARS));
                return k;
            }
            Piece::File {
                kind,
                name,
                media_type,
                bytes,
            } => (kind, name, media_type, bytes),
        };
        k.kind = kind.into();
        k.media_type = media_type.map(|m| artifact::plain(&m, MEDIA_TYPE_CHARS));
        if let Ok(b) = &bytes {
            k.bytes = Some(b.len());
        }
        let len = k.bytes.unwrap_or(0);
        let spilled = self.spilled;
        let source = bytes.and_then(|b| match b {
            Body::Held(v) => Ok(Box::new(std::io::Cursor::new(v)) as Box<dyn std::io::Read + '_>),
            Body::Spilled { index, .. } => {
                index.and_then(|i| spilled(i).ok_or_else(|| "its bytes were not kept".to_string()))
            }
        });
        let mut from = match source {
            Err(why) => {
                k.dropped = Some(why);
                return k;
            }
            Ok(_) if self.used.saturating_add(len) > self.max_bytes => {
                k.dropped = Some(format!(
                    "over the {} per-task cap ([results] max_task_mib)",
                    mib(self.max_bytes)
                ));
                return k;
            }
            Ok(from) => from,
        };
        if let Err(e) = &self.ready {
            k.dropped = Some(format!("cannot be saved: {e:#}"));
            return k;
        }
        let path = self.dir.join(artifact::unique_name(&name, &mut self.taken));
        match a2a_mod_os::fsx::write_atomic_from(&path, &mut from) {
            Ok(()) => {
                self.used += len;
                k.path = Some(path.display().to_string());
            }
            Err(e) => k.dropped = Some(format!("cannot be saved: {e:#}")),
        }
        k
    }
}

/// One thing to save (or list) from an artifact.
enum Piece {
    File {
        kind: &'static str,
        name: String,
        media_type: Option<String>,
        bytes: Result<Body, String>,
    },
    Url {
        media_type: Option<String>,
        url: String,
    },
}

/// A file's bytes: in memory, or spilled while the answer was read (`len` counted then; the
/// index into the answer's spills, or why they were not kept).
enum Body {
    Held(Vec<u8>),
    Spilled {
        len: u64,
        index: Result<usize, String>,
    },
}

impl Body {
    fn len(&self) -> u64 {
        match self {
            Body::Held(v) => v.len() as u64,
            Body::Spilled { len, .. } => *len,
        }
    }
}

/// What [`save`] listed for `worker`'s task, read back (the hooks). Empty when nothing was saved
/// or the list is not ours to read.
pub fn load(ctx: &Ctx, session: &str, worker: &str, task_id: &str) -> Vec<Kept> {
    let path = task_dir(ctx, session, task_id).join(MANIFEST);
    let Ok(bytes) = std::fs::read(&path) else {
        return Vec::new();
    };
    match serde_json::from_slice::<Manifest>(&bytes) {
        Ok(m) if m.worker == worker && m.task_id == task_id => m.items,
        _ => Vec::new(),
    }
}

/// `"<folder>"` as a note names a task's folder.
pub fn shown_dir(ctx: &Ctx, session: &str, task_id: &str) -> String {
    format!("\"{}\"", task_dir(ctx, session, task_id).display())
}

/// The summary of a task's saved artifacts for a note, at most `max` characters; empty when a
/// single text artifact is all there is (the result text shows it, as it always has).
pub fn summary(
    ctx: &Ctx,
    session: &str,
    TaskKey { worker, task_id }: &TaskKey,
    items: &[Kept],
    max: usize,
) -> String {
    if !artifact::worth_listing(items) {
        return String::new();
    }
    let folder = shown_dir(ctx, session, task_id);
    artifact::summary(items, &folder, (worker, task_id), max)
}

fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if m.fract() == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.2} MiB")
    }
}

fn ext_or(name: &str, ext: &str) -> String {
    match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => name.to_string(),
        _ => format!("{name}.{ext}"),
    }
}

/// Base64 as workers send it: standard or URL-safe alphabet, padded or not, line breaks allowed.
fn decode(b64: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let clean: String = b64
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && *c != '=')
        .collect();
    STANDARD_NO_PAD
        .decode(&clean)
        .or_else(|_| URL_SAFE_NO_PAD.decode(&clean))
        .ok()
}

/// Creates `results/`, `results/<session>/` and the task's folder 0700, refusing any that is a
/// symlink or not a folder (creating through one would write wherever it points).
fn private_dirs(ctx: &Ctx, session: &str, task: &Path) -> Result<()> {
    ready_session_dir(ctx, session)?;
    make_private_dir(task)
}

/// `state/results/<session>/`, made (private) if missing, for a writer about to write in it. A
/// symlink where one of the two folders should be is refused, here and by [`prune`] alike:
/// following it would write, or delete, in whatever folder it points to.
pub fn ready_session_dir(ctx: &Ctx, session: &str) -> Result<PathBuf> {
    make_private_dir(&results_dir(ctx))?;
    let dir = session_dir(ctx, session);
    make_private_dir(&dir)?;
    Ok(dir)
}

fn make_private_dir(d: &Path) -> Result<()> {
    if own_dir(d)? {
        a2a_mod_os::fsx::tighten(d);
        Ok(())
    } else {
        a2a_mod_os::fsx::create_private_dir(d)
            .with_context(|| format!("cannot create \"{}\"", d.display()))
    }
}

/// Whether our folder `d` is there (false: nothing is); an error when something else is.
fn own_dir(d: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(d) {
        Ok(m) if m.file_type().is_dir() => Ok(true),
        Ok(m) if m.file_type().is_symlink() => Err(anyhow!(
            "\"{}\" is a symlink, not a folder of a2a-mod's — remove the link (a2a-mod makes the folder again)",
            d.display()
        )),
        Ok(_) => Err(anyhow!(
            "\"{}\" is not a folder — move it away (a2a-mod makes the folder again)",
            d.display()
        )),
        Err(_) => Ok(false),
    }
}

/// Writes `bytes` to `path`, replacing what is there ([`a2a_mod_os::fsx::write_atomic_from`]: a
/// new private temp file renamed over the name, which replaces a symlink itself and never writes
/// through it).
fn write_new(path: &Path, mut bytes: &[u8]) -> Result<()> {
    a2a_mod_os::fsx::write_atomic_from(path, &mut bytes)
}

/// One session's results folder as `tasks --prune` and `doctor` see it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionResults {
    pub session: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// Seconds since anything of the session (its results, its store) last changed.
    pub idle_s: u64,
    /// The session has a live task or a running poller, monitor or waiter: never pruned.
    pub live: bool,
}

/// Every session's results folder, with how long it has been idle and whether it is live.
pub fn sessions(ctx: &Ctx, now: SystemTime) -> Vec<SessionResults> {
    // Through a symlink these would be another folder's (`prune` says so).
    let dir = results_dir(ctx);
    if !own_dir(&dir).unwrap_or(false) {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<SessionResults> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let session = e.file_name().to_str()?.to_string();
            if !a2a_mod_os::env::valid_session_id(&session) {
                return None;
            }
            let path = e.path();
            let paths = a2a_mod_store::SessionPaths::of_owner(ctx, &session);
            let (bytes, mut newest) = tree(&path, 3);
            for f in [
                paths.db.clone(),
                PathBuf::from(format!("{}-wal", paths.db.display())),
                ctx.sessions_dir().join(format!("{session}.status")),
            ] {
                if let Ok(t) = std::fs::symlink_metadata(&f).and_then(|m| m.modified()) {
                    newest = newest.max(Some(t));
                }
            }
            let idle_s = newest
                .and_then(|t| now.duration_since(t).ok())
                .map_or(0, |d| d.as_secs());
            Some(SessionResults {
                live: is_live(&paths),
                session,
                path,
                bytes,
                idle_s,
            })
        })
        .collect();
    out.sort_by(|a, b| a.session.cmp(&b.session));
    out
}

/// Whether a session is in use: a live task in its store (or a store we cannot read, to be
/// safe), or any of its processes (poller, monitor, waiter, Stop hook) holding its lock.
fn is_live(paths: &a2a_mod_store::SessionPaths) -> bool {
    let locked = ["poller", "monitor", "waker", "stop"]
        .iter()
        .any(|w| a2a_mod_os::fsx::is_locked(&paths.lock(w)));
    if locked {
        return true;
    }
    match a2a_mod_store::Reader::open(&paths.db) {
        Ok(None) => false,
        Ok(Some(s)) => s.live_count().map_or(true, |n| n > 0),
        Err(_) => true,
    }
}

/// Total size and newest mtime under `dir`, `depth` levels down, symlinks not followed.
fn tree(dir: &Path, depth: usize) -> (u64, Option<SystemTime>) {
    let mut bytes = 0;
    let mut newest = std::fs::symlink_metadata(dir)
        .and_then(|m| m.modified())
        .ok();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            newest = newest.max(m.modified().ok());
            if m.is_dir() && depth > 0 {
                let (b, n) = tree(&e.path(), depth - 1);
                bytes += b;
                newest = newest.max(n);
            } else if m.is_file() {
                bytes += m.len();
            }
        }
    }
    (bytes, newest)
}

/// The sessions whose results `prune` would remove: idle at least `keep`, and not live.
pub fn prunable(ctx: &Ctx, keep: Duration, now: SystemTime) -> Vec<SessionResults> {
    sessions(ctx, now)
        .into_iter()
        .filter(|s| !s.live && s.idle_s >= keep.as_secs())
        .collect()
}

/// Removes the results of every session idle at least `keep` and not live; returns them.
pub fn prune(ctx: &Ctx, keep: Duration, now: SystemTime) -> Result<Vec<SessionResults>> {
    own_dir(&results_dir(ctx)).context("nothing was pruned")?;
    let gone = prunable(ctx, keep, now);
    for s in &gone {
        // remove_dir_all removes a symlink inside, never what it points to.
        std::fs::remove_dir_all(&s.path)
            .with_context(|| format!("cannot remove \"{}\"", s.path.display()))?;
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn art(name: &str, parts: Vec<Part>) -> Artifact {
        Artifact {
            name: Some(name.into()),
            parts,
        }
    }

    #[test]
    fn saves_private_files_inside_the_task_folder() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::at(dir.path());
        let arts = vec![
            art(
                "../../x",
                vec![Part::Bytes {
                    filename: Some("../../x".into()),
                    media_type: None,
                    base64: "aGk=".into(),
                }],
            ),
            art("d", vec![Part::Data(serde_json::json!({"a": 1}))]),
            art("d", vec![Part::Data(serde_json::json!({"a": 2}))]),
        ];
        let kept = save(
            &ctx,
            "s1",
            &TaskKey::new("fake", "../t"),
            &arts,
            1 << 20,
            &|_| None,
        );
        assert_eq!(kept.len(), 3);
        let td = task_dir(&ctx, "s1", "../t");
        for k in &kept {
            let p = PathBuf::from(k.path.as_ref().unwrap());
            assert_eq!(p.parent().unwrap(), td);
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        assert_ne!(kept[1].path, kept[2].path);
        assert_eq!(
            std::fs::read(kept[0].path.as_ref().unwrap()).unwrap(),
            b"hi"
        );
        assert_eq!(load(&ctx, "s1", "fake", "../t"), kept);
        assert!(load(&ctx, "s1", "other", "../t").is_empty());
    }

    #[test]
    fn the_cap_drops_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::at(dir.path());
        let big = |n| Part::Bytes {
            filename: Some(format!("f{n}")),
            media_type: None,
            base64: "AAAA".repeat(100),
        };
        let arts = [art("a", vec![big(1), big(2)])];
        let kept = save(&ctx, "s1", &TaskKey::new("w", "t"), &arts, 400, &|_| None);
        assert!(kept[0].path.is_some());
        assert!(kept[1].dropped.as_ref().unwrap().contains("per-task cap"));
    }
}
