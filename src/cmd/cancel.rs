//! `a2a-mod cancel`: the `cancel` tool from the command line
//! ([`session::Session`](a2a_mod_app::session::Session), as Claude's).

use super::Run;
use super::shell::{print_outcome, runtime, user_session};
use crate::cli::CancelArgs;
use a2a_mod_app::session::{Budget, DEFAULT_BUDGET};
use anyhow::Result;

impl Run for CancelArgs {
    fn run(self) -> Result<i32> {
        let a = self.task;
        let s = user_session(a.session.session.as_deref())?;
        let o = runtime()?.block_on(s.cancel(&a.task_id, Budget::new(DEFAULT_BUDGET)))?;
        print_outcome(&o, a.json)?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}
