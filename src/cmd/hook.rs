//! `a2a-mod hook <event>`: Claude Code's hooks (JSON on stdin), each event served by
//! [`a2a_mod_claude::hook`].
//!
//! HOT PATH: they run on every prompt and tool call, so no runtime and no logging set-up, and our
//! own trouble exits 0 quietly ([`a2a_mod_claude::hook`] decides every exit code).

use super::Run;
use crate::cli::HookArgs;

impl Run for HookArgs {
    fn run(self) -> anyhow::Result<i32> {
        Ok(a2a_mod_claude::hook::run(self.event))
    }
}
