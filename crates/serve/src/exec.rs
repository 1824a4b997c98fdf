//! Any command as a worker: an agent whose config names one (`exec = ["codex", "exec"]`) runs it
//! once per task instead of Claude Code, in the agent's dir. The message's text goes on its stdin
//! (then closed); each line of its stdout is a chunk of the answer as it comes; exit 0 ends the
//! task `completed`, any other end `failed` with the last lines of its stderr. The process is
//! made, cancelled and tied to serve's life as a Claude Code run is ([`crate::process`]): its own
//! process group, SIGTERM then SIGKILL after the grace.

use crate::engine::{Executor, Job};
use crate::process::{command, failure, next_line, stderr_tail, stop_group};
use crate::task::{Reply, Report};
use a2a_mod_core::task::TaskState;
use futures::future::BoxFuture;
use serde_json::{Map, json};
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, watch};

/// The executor of agents whose config names a command (`exec`): it asks nothing, so the
/// replies are never read.
#[derive(Clone)]
pub struct Exec {
    /// Variables the command must not inherit: serve's own tokens.
    pub scrub: Vec<String>,
    /// Between SIGTERM and SIGKILL when a task is canceled.
    pub grace: std::time::Duration,
}

impl Executor for Exec {
    fn run(
        &self,
        job: Job,
        reports: mpsc::Sender<Report>,
        stop: watch::Receiver<bool>,
        _replies: mpsc::UnboundedReceiver<Reply>,
    ) -> BoxFuture<'static, ()> {
        let me = self.clone();
        Box::pin(async move {
            let argv = job.agent.config.exec.clone().unwrap_or_default();
            run(&me.scrub, me.grace, &argv, &job, &reports, stop).await;
        })
    }
}

/// Runs `argv` for `job` to its end (or until `stop`), reporting its lines and its end.
async fn run(
    scrub: &[String],
    grace: std::time::Duration,
    argv: &[String],
    job: &Job,
    reports: &mpsc::Sender<Report>,
    mut stop: watch::Receiver<bool>,
) {
    let started = std::time::Instant::now();
    let Some((program, args)) = argv.split_first() else {
        return;
    };
    let mut cmd = command(program.as_ref(), job, scrub);
    cmd.args(args);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let words = format!("cannot start {program}: {e}");
            let _ = reports
                .send(ended(TaskState::Failed, Some(words), None, 0))
                .await;
            return;
        }
    };
    let pid = child.id();
    let tail = stderr_tail(child.stderr.take());
    if let Some(mut stdin) = child.stdin.take() {
        let mut text = job.text.clone();
        text.push('\n');
        // Written beside the reading: a command that prints before it reads, or never reads,
        // must not hold the run up. A closed pipe is the command's business.
        tokio::spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
        });
    }
    let Some(stdout) = child.stdout.take() else {
        return;
    };
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        tokio::select! {
            r = next_line(&mut reader, &mut line) => match r {
                Ok(true) => {
                    let mut chunk = String::from_utf8_lossy(&line).into_owned();
                    chunk.push('\n');
                    if reports.send(Report::Text(chunk)).await.is_err() {
                        break;
                    }
                }
                Ok(false) | Err(_) => break,
            },
            () = crate::engine::stopped(&mut stop) => {
                stop_group(pid, &mut child, grace).await;
                return;
            }
        }
    }
    let status = tokio::select! {
        s = child.wait() => s.ok(),
        () = crate::engine::stopped(&mut stop) => {
            stop_group(pid, &mut child, grace).await;
            return;
        }
    };
    let ms = started.elapsed().as_millis() as u64;
    let code = status.and_then(|s| s.code());
    let end = if code == Some(0) {
        ended(TaskState::Completed, None, code, ms)
    } else {
        let words = failure(program, status, "", tail).await;
        ended(TaskState::Failed, Some(words), code, ms)
    };
    let _ = reports.send(end).await;
}

/// The end, with the run's exit code and duration as the task's `metadata.exec`.
fn ended(state: TaskState, words: Option<String>, code: Option<i32>, ms: u64) -> Report {
    let mut metadata = Map::new();
    metadata.insert("exec".into(), json!({"exitCode": code, "durationMs": ms}));
    Report::Ended {
        state,
        words,
        metadata,
    }
}
