//! `a2a-mod hook <event>`: Claude Code's hooks (JSON on stdin), each event served by
//! [`crate::hook`].
//!
//! HOT PATH: they run on every prompt and tool call, so no runtime and no logging set-up, and our
//! own trouble exits 0 quietly ([`crate::hook`] decides every exit code).

use super::Run;
use crate::cli::HookArgs;

impl Run for HookArgs {
    fn run(self) -> anyhow::Result<i32> {
        Ok(crate::hook::run(self.event))
    }
}
