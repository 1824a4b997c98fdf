//! `a2a-mod statusline`: Claude Code's status-line command, [`a2a_mod_claude::statusline::run`].
//! HOT PATH: `main` routes the plain shapes there before clap's full parse
//! ([`a2a_mod_claude::statusline::fast_args`]); this shell is what clap's parse leads to.

use super::Run;
use crate::cli::StatuslineArgs;

impl Run for StatuslineArgs {
    fn run(self) -> anyhow::Result<i32> {
        Ok(a2a_mod_claude::statusline::run(self.then.as_deref()))
    }
}
