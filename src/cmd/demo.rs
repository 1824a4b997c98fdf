//! `a2a-mod demo`: the whole loop on a fresh machine, with no worker and no Claude Code. It starts
//! the embedded fake worker, sends a slow task and an input-required task through the same code
//! paths Claude's tools use ([`session::Session`](a2a_mod_app::session::Session)), the real background
//! poller, draws the status line in place as it changes, then prints the wake line and the hidden
//! context Claude would get. Its own temporary home keeps the user's config and sessions untouched.
//! Plain output, one line per status change, when stdout is not a terminal.

use super::Run;
use super::shell::{runtime, user_command};
use crate::cli::DemoArgs;
use a2a_mod_app::session::{Budget, DEFAULT_BUDGET, SendRequest, Session};
use a2a_mod_claude::statusline::theme::Theme;
use a2a_mod_config::Config;
use a2a_mod_fake_worker::{FakeWorker, FakeWorkerOptions};
use a2a_mod_os::env::{Ctx, now_ms};
use anyhow::{Context, Result};
use crossterm::{cursor, execute, terminal};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

const SESSION: &str = "demo";

fn say(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{text}");
    let _ = o.flush();
}

impl Run for DemoArgs {
    fn run(self) -> Result<i32> {
        // The demo keeps nothing in the user's folders (it runs in a temporary home), but starts
        // like every user command.
        user_command()?;
        start()?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

fn start() -> Result<()> {
    let home = tempfile::Builder::new()
        .prefix("a2a-mod-demo-")
        .tempdir()
        .context("cannot create a temporary folder for the demo")?;
    let ctx = Ctx::at(home.path());
    runtime()?.block_on(demo(ctx))
}

async fn demo(ctx: Ctx) -> Result<()> {
    let tty = std::io::stdout().is_terminal();
    let worker = FakeWorker::start(FakeWorkerOptions::default()).await?;
    a2a_mod_config::save_worker(
        &ctx.config_path(),
        "fake",
        &a2a_mod_config::WorkerConfig {
            url: worker.url.clone(),
            ..Default::default()
        },
    )?;
    let config = Config::load(&ctx.config_path())?;
    let done_ms = config.timing.done_display_ms();
    let session = Arc::new(Session::open(&ctx, config, SESSION)?);
    say(&format!(
        "a2a-mod demo: the embedded fake worker runs at {}; Claude's tools are called as Claude calls them.\n",
        worker.url
    ));

    say("» send(worker: \"fake\", message: \"ask Which colour should the chart be?\")");
    let ask = send(&session, "ask Which colour should the chart be?", None).await?;
    say(&indent(&ask.note));

    say(
        "» send(worker: \"fake\", message: \"slow 12 build the index\")   (Claude waits up to ~7.5 s)",
    );
    let slow_session = session.clone();
    let slow =
        tokio::spawn(async move { send(&slow_session, "slow 12 build the index", None).await });

    let mut line = StatusLine::new(tty);
    let theme = if tty && !a2a_mod_os::env::no_color() {
        Theme::default_theme()
    } else {
        Theme::plain()
    };
    let render = |s: &Session| -> Result<String> {
        let snap = s.store(|st| Ok(st.summarize()?))?;
        Ok(a2a_mod_core::status::render_snapshot(
            &snap,
            now_ms(),
            done_ms,
            &theme,
            true,
        ))
    };

    // The inline window of the slow task, with the status line drawn meanwhile.
    let slow = loop {
        line.draw(&render(&session)?);
        if slow.is_finished() {
            break slow.await??;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    line.finish();
    say(&indent(&slow.note));

    say(
        "» send(worker: \"fake\", taskId: <the ask task>, message: \"blue\")   (Claude answers the question)",
    );
    let answer = send(&session, "blue", Some(&ask.task_id)).await?;
    say(&indent(&answer.note));

    say(
        "… Claude carries on with other work; the background poller checks the slow task every 5 s:",
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    loop {
        line.draw(&render(&session)?);
        let pending = session.store(|s| s.has_unannounced())?;
        if pending || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Hold the "done" line a moment, as the status line does for 5 s.
    for _ in 0..8 {
        line.draw(&render(&session)?);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    line.finish();

    show_wake_up(&ctx, &session)?;
    worker.stop().await;
    Ok(())
}

/// What Claude gets when the slow task ends: the monitor's line and the hook's hidden context.
fn show_wake_up(ctx: &Ctx, session: &Session) -> Result<()> {
    let now = now_ms();
    let announced = session.store(|s| s.claim_unannounced(now))?;
    let delivered = session.store(|s| s.take_undelivered(now))?;
    if announced.is_empty() {
        say("\nThe slow task did not end in time; `a2a-mod tasks --session demo` would show it.");
        return Ok(());
    }
    say("\nThe monitor wakes Claude with one line (what the transcript shows):");
    say(&indent(&a2a_mod_claude::wake::line(&announced)));
    say("\nand a hook attaches the result as hidden context (what Claude reads, you do not see):");
    let context = a2a_mod_claude::wake::context(ctx, &session.id, &delivered, 0);
    say(&indent(&context));
    say(
        "Use it from Claude Code: `./install.sh` (or `a2a-mod install`) connects it, `a2a-mod worker add <alias> <url>` adds a worker, then start `claude`.",
    );
    Ok(())
}

fn indent(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The status line drawn in place on a terminal; elsewhere, printed once per change.
struct StatusLine {
    tty: bool,
    last: String,
}

impl StatusLine {
    fn new(tty: bool) -> StatusLine {
        StatusLine {
            tty,
            last: String::new(),
        }
    }

    fn draw(&mut self, text: &str) {
        if self.tty {
            let mut o = std::io::stdout().lock();
            let _ = execute!(
                o,
                cursor::MoveToColumn(0),
                terminal::Clear(terminal::ClearType::CurrentLine)
            );
            let _ = write!(o, "    {text}");
            let _ = o.flush();
        } else if text != self.last && !text.is_empty() {
            // Spinner frames and clocks change every second; print only when the words change.
            let words: String = strip_clock(text);
            if words != strip_clock(&self.last) {
                say(&format!("    {text}"));
            }
        }
        self.last = text.to_string();
    }

    fn finish(&mut self) {
        if self.tty {
            say("");
        }
        self.last.clear();
    }
}

/// The line without its spinner frame and clock, to tell real changes from ticks.
fn strip_clock(s: &str) -> String {
    s.split_whitespace()
        .filter(|w| {
            !w.chars().all(|c| c.is_ascii_digit() || c == ':')
                && !w.chars().all(|c| ('\u{2800}'..='\u{28ff}').contains(&c))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `send` to the fake worker as Claude calls it: the text, and the task it answers.
async fn send(
    session: &Session,
    message: &str,
    task_id: Option<&str>,
) -> Result<a2a_mod_app::session::Outcome> {
    let mut req = SendRequest::new("fake", message, Budget::new(DEFAULT_BUDGET));
    req.input.task_id = task_id.map(str::to_string);
    Ok(session.send(req).await?.0)
}
