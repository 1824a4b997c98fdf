//! Changes out: when an agent's dir is a git work tree, what a run changed comes back as a
//! `changes.patch` artifact (`git diff --binary` of the run, new files included, ignored files
//! and the inbox left out) and the files it touched as `metadata.changedFiles`.
//!
//! The work tree is read into a tree object before the run and again after it, each through a
//! throwaway index (a copy of the repository's, so only changed files are hashed again): the
//! user's index, branches and stash are never touched, and changes that were there before the
//! run are not the run's. Runs in one git dir take turns (the engine holds a lock per dir), so
//! two runs' changes never mix in one patch.

use std::path::{Path, PathBuf};
use tokio::process::Command;

/// The largest patch returned; a larger one is left out and the task says so.
pub const MAX_PATCH_BYTES: usize = 8 << 20;
/// The most changed files listed.
const MAX_FILES: usize = 1000;

/// A git work tree an agent runs in.
#[derive(Debug, Clone)]
pub struct Repo {
    dir: PathBuf,
}

/// What a run changed.
#[derive(Debug)]
pub struct Changes {
    /// The patch; `None` when it is over [`MAX_PATCH_BYTES`].
    pub patch: Option<String>,
    pub files: Vec<String>,
}

impl Repo {
    /// The repository `dir` is in, if it is a git work tree (and git runs).
    pub async fn at(dir: &Path) -> Option<Repo> {
        let r = Repo {
            dir: dir.to_path_buf(),
        };
        let inside = r
            .git(&["rev-parse", "--is-inside-work-tree"], None)
            .await
            .ok()?;
        (inside.trim() == "true").then_some(r)
    }

    fn command(&self, args: &[&str], index: Option<&Path>) -> Command {
        let mut c = Command::new("git");
        c.arg("-C").arg(&self.dir).args(args);
        // Nothing of serve's environment decides which repository or index this is.
        for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"] {
            c.env_remove(v);
        }
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        c.kill_on_drop(true);
        c
    }

    async fn git(&self, args: &[&str], index: Option<&Path>) -> anyhow::Result<String> {
        let out = self.command(args, index).output().await?;
        if !out.status.success() {
            anyhow::bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The work tree as a tree object, the inbox left out.
    pub async fn snapshot(&self, tag: &str) -> anyhow::Result<String> {
        let real = self
            .git(&["rev-parse", "--git-path", "index"], None)
            .await?;
        let index = self.dir.join(real.trim());
        let temp = index.with_file_name(format!("a2a-mod-{tag}.index"));
        if index.exists() {
            // One file of a few MiB at most, before and after a run: not worth a thread.
            std::fs::copy(&index, &temp)?;
        }
        let exclude = format!(":(exclude){}", crate::inbox::INBOX);
        let tree = async {
            self.git(&["add", "-A", "--", ".", &exclude], Some(&temp))
                .await?;
            self.git(&["write-tree"], Some(&temp)).await
        }
        .await;
        let _ = std::fs::remove_file(&temp);
        Ok(tree?.trim().to_string())
    }

    /// What changed from tree `before` to tree `after`.
    pub async fn diff(&self, before: &str, after: &str) -> anyhow::Result<Changes> {
        let names = self
            .git(&["diff", "--name-only", "-z", before, after], None)
            .await?;
        let files: Vec<String> = names
            .split('\0')
            .filter(|n| !n.is_empty())
            .take(MAX_FILES)
            .map(str::to_string)
            .collect();
        if files.is_empty() {
            return Ok(Changes { patch: None, files });
        }
        let out = self
            .command(
                &[
                    "diff",
                    "--binary",
                    "--no-ext-diff",
                    "--no-color",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    before,
                    after,
                ],
                None,
            )
            .output()
            .await?;
        let patch = (out.status.success() && out.stdout.len() <= MAX_PATCH_BYTES)
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned());
        Ok(Changes { patch, files })
    }
}
