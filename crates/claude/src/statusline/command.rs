//! `a2a-mod statusline` as a process: reads stdin, runs the user's other status line (`--then`)
//! while [`super::line_for`] renders ours, prints both.
//!
//! HOT PATH (see [`super`]): `main` routes here before clap's full parse ([`fast_args`]) and
//! before any runtime; no network, no writes but the log when `A2A_MOD_LOG` is set, and always
//! exit 0.

use super::{Env, line_for};
use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Claude Code's payload is a few kB; anything past this is not a status-line payload.
const MAX_STDIN: u64 = 1 << 20;

/// Runs the command: reads stdin, prints the other status line (`then`) and ours. Returns the
/// exit code, always 0: a status line that fails loudly helps no one.
pub fn run(then: Option<&str>) -> i32 {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_STDIN).read_to_end(&mut input);
    let env = Env::from_process();
    // Theirs runs while we render ours.
    let other = then.and_then(|cmd| Then::spawn(cmd, &input));
    let mut warnings = Vec::new();
    let line = line_for(&input, &env, &mut warnings);
    let mut out = Vec::with_capacity(256);
    if let Some(other) = other {
        out = other.collect(env.then_deadline);
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    if !line.is_empty() {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    // A closed stdout (EPIPE) is not our failure; nothing else to do about it.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out).and_then(|()| stdout.flush());
    if !warnings.is_empty() {
        log_warnings(&env, &warnings);
    }
    0
}

/// `statusline`, `statusline --then CMD` or `statusline --then=CMD` without clap: `Some(then)`
/// for those exact shapes, `None` for anything else (clap then parses it and reports errors).
/// The status line runs every second, so it skips building clap's whole command tree.
pub fn fast_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Option<String>> {
    if args.next()? != "statusline" {
        return None;
    }
    let rest: Vec<_> = args.take(3).collect();
    match rest.as_slice() {
        [] => Some(None),
        [flag, cmd] if flag == "--then" => cmd.to_str().map(|c| Some(c.to_string())),
        [one] => one
            .to_str()
            .and_then(|s| s.strip_prefix("--then="))
            .map(|c| Some(c.to_string())),
        _ => None,
    }
}

/// Appends warnings to the log, only when logging is on: off, the status line writes nothing.
fn log_warnings(env: &Env, warnings: &[String]) {
    if !env.log {
        return;
    }
    let Some(ctx) = &env.ctx else { return };
    let mut text = String::new();
    for w in warnings {
        let one = a2a_mod_core::text::sanitize(w);
        text.push_str(&format!("{} WARN a2a_mod::statusline: {one}\n", env.now_ms));
    }
    if let Some(mut f) = crate::log::open_append(ctx) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// The user's other status-line command (`--then`), run with the same stdin while ours renders.
struct Then {
    pid: u32,
    chunks: mpsc::Receiver<Vec<u8>>,
}

impl Then {
    fn spawn(cmd: &str, input: &[u8]) -> Option<Then> {
        use std::process::{Command, Stdio};
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Its own process group, so a late command is killed with everything it started.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let mut child = c.spawn().ok()?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = input.to_vec();
            // A thread: a command that never reads stdin must not block us on a full pipe.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        let mut stdout = child.stdout.take()?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        // Not waited for: it is reaped by init after we exit, and waiting would cost time.
        Some(Then {
            pid: child.id(),
            chunks: rx,
        })
    }

    /// Its output, read until it closes stdout or the deadline passes. A late command is killed
    /// and only its complete lines are kept, so a half-drawn escape sequence never reaches the
    /// terminal before our line.
    fn collect(self, deadline: Duration) -> Vec<u8> {
        let end = Instant::now() + deadline;
        let mut out = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => {
                    out.extend_from_slice(&chunk);
                    if out.len() > 64 * 1024 {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return out,
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        self.kill();
        match out.iter().rposition(|b| *b == b'\n') {
            Some(i) => out.truncate(i + 1),
            None => out.clear(),
        }
        out
    }

    fn kill(&self) {
        // The group we created for the child: whatever it started goes too.
        a2a_mod_os::process::signal_group(self.pid, a2a_mod_os::process::Signal::Kill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_args_take_only_the_plain_shapes() {
        let f = |a: &[&str]| fast_args(a.iter().map(std::ffi::OsString::from));
        assert_eq!(f(&["statusline"]), Some(None));
        assert_eq!(
            f(&["statusline", "--then", "x y"]),
            Some(Some("x y".into()))
        );
        assert_eq!(f(&["statusline", "--then=x"]), Some(Some("x".into())));
        assert_eq!(f(&["statusline", "--help"]), None);
        assert_eq!(f(&["statusline", "--then"]), None);
        assert_eq!(f(&["statusline", "--then", "a", "b"]), None);
        assert_eq!(f(&["tasks"]), None);
        assert_eq!(f(&[]), None);
    }
}
