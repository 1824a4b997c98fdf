//! A run's process, whatever it runs (Claude Code, [`crate::exec`]'s command): how it is
//! started (its own process group, no serve tokens, signalled when serve dies), read (bounded
//! lines, the tail of its stderr), stopped (SIGTERM to the group, SIGKILL after the grace) and
//! told as a failure.

use crate::engine::Job;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _};

/// The longest stdout line read whole; a longer one is skipped (a hostile or broken run cannot
/// make serve hold more than this for one event).
const MAX_LINE: usize = 16 << 20;

/// What of stderr is kept for a failure's words.
const STDERR_TAIL: usize = 4096;

/// Variables a run never inherits, whatever the config: a Claude Code that runs serve from
/// inside a session passes these down, and a run must be a top-level headless run.
const NOT_INHERITED: [&str; 3] = [
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SESSION_ID",
];

/// A run's process, whatever it runs: in the agent's dir, its stdio piped, its own process
/// group (a cancel signals the group), without serve's tokens or Claude Code's own session
/// variables, and on Linux signalled when serve dies.
pub(crate) fn command(
    program: &std::ffi::OsStr,
    job: &Job,
    scrub: &[String],
) -> tokio::process::Command {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new(program);
    cmd.current_dir(&job.agent.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for v in scrub.iter().map(String::as_str).chain(NOT_INHERITED) {
        cmd.env_remove(v);
    }
    // A run must not outlive serve (killed with SIGKILL, nothing left to stop it).
    a2a_mod_os::process::die_with_parent(&mut cmd);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    cmd
}

/// What a run's stderr ends with, kept while it runs (the last [`STDERR_TAIL`] bytes or so).
pub(crate) fn stderr_tail(
    stderr: Option<tokio::process::ChildStderr>,
) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut tail = Vec::new();
        if let Some(mut e) = stderr {
            let mut buf = [0u8; 8192];
            while let Ok(n) = e.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
        }
        tail
    })
}

/// A failed run's words: `<who> exited with status N<what>: <the last lines of its stderr>`,
/// cleaned, one line.
pub(crate) async fn failure(
    who: &str,
    status: Option<std::process::ExitStatus>,
    what: &str,
    tail: tokio::task::JoinHandle<Vec<u8>>,
) -> String {
    let tail = tail.await.unwrap_or_default();
    let tail = a2a_mod_core::text::sanitize_lines(String::from_utf8_lossy(&tail).trim());
    let last: Vec<&str> = tail
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let how = match status.and_then(|s| s.code()) {
        Some(c) => format!("exited with status {c}"),
        None => "stopped".to_string(),
    };
    if last.is_empty() {
        format!("{who} {how}{what}")
    } else {
        format!("{who} {how}{what}: {}", last.join(" / "))
    }
}

/// SIGTERM to the run's process group, then SIGKILL after `grace`.
pub(crate) async fn stop_group(
    pid: Option<u32>,
    child: &mut tokio::process::Child,
    grace: Duration,
) {
    use a2a_mod_os::process::{Signal, signal_group};
    let Some(pid) = pid else {
        let _ = child.kill().await;
        return;
    };
    // process_group(0) made the run the leader of a group of its own.
    signal_group(pid, Signal::Term);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        signal_group(pid, Signal::Kill);
        let _ = child.wait().await;
    } else {
        // The leader is gone; anything it left in the group goes too.
        signal_group(pid, Signal::Kill);
    }
}

/// Reads one line into `line` (without its `\n`); `Ok(false)` at the end. A line longer than
/// [`MAX_LINE`] is read past and comes back empty.
pub(crate) async fn next_line(
    r: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    line.clear();
    let mut overlong = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(!line.is_empty() || overlong);
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if !overlong && line.len() + take <= MAX_LINE {
            line.extend_from_slice(&buf[..take]);
        } else {
            overlong = true;
            line.clear();
        }
        r.consume(take);
        if done {
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn lines_are_bounded() {
        let mut data = vec![b'x'; MAX_LINE + 10];
        data.extend_from_slice(b"\nok\nlast");
        let mut r = BufReader::new(&data[..]);
        let mut line = Vec::new();
        assert!(next_line(&mut r, &mut line).await.unwrap());
        assert!(line.is_empty());
        assert!(next_line(&mut r, &mut line).await.unwrap());
        assert_eq!(line, b"ok");
        assert!(next_line(&mut r, &mut line).await.unwrap());
        assert_eq!(line, b"last");
        assert!(!next_line(&mut r, &mut line).await.unwrap());
    }

    /// A run that ignores SIGTERM is killed with its whole group once the grace is over, not
    /// before (paused time: the grace passes in no time, and is measured on the clock the wait
    /// reads).
    #[tokio::test(start_paused = true)]
    async fn a_run_that_ignores_sigterm_is_killed_with_its_group_after_the_grace() {
        use std::os::unix::process::ExitStatusExt as _;
        let dir = tempfile::tempdir().unwrap();
        let grandchild = dir.path().join("grandchild.pid");
        let script = format!("trap '' TERM; sleep 300 & echo $! > {grandchild:?}; wait");
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // The shell has started its own child when it has written its pid.
        let mut pid = None;
        for _ in 0..2000 {
            pid = std::fs::read_to_string(&grandchild)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok());
            if pid.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = pid.expect("the shell started its child within 10 s");
        let began = tokio::time::Instant::now();
        stop_group(child.id(), &mut child, Duration::from_secs(20)).await;
        assert_eq!(began.elapsed(), Duration::from_secs(20));
        let status = child.wait().await.unwrap();
        // SIGKILL (9 on every Unix): the one signal the run could not ignore.
        assert_eq!(status.signal(), Some(9), "{status:?}");
        // Its child went with the group (gone, or a zombie nobody has reaped yet).
        let dead = || {
            !a2a_mod_os::process::is_alive(pid)
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z"))
        };
        let gone = (0..2000).any(|_| {
            std::thread::sleep(Duration::from_millis(5));
            dead()
        });
        assert!(gone, "the run's own child outlived the group's kill");
    }
}
