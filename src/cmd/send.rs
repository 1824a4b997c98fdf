//! `a2a-mod send`: the `send` tool from the command line, on the same code path as Claude's
//! (`ops::Session`), so a user can reproduce exactly what Claude saw.

use super::Run;
use super::shell::{load, print_outcome, runtime, user_command};
use crate::cli::SendArgs;
use crate::env::cli_session;
use crate::ops::{Budget, DEFAULT_BUDGET, Session};
use anyhow::Result;

impl Run for SendArgs {
    fn run(self) -> Result<i32> {
        let ctx = user_command()?;
        let s = Session::open(
            &ctx,
            load(&ctx)?,
            &cli_session(self.session.session.as_deref())?,
        )?;
        let message = self.message.join(" ");
        let o = runtime()?.block_on(s.send(
            &self.alias,
            &message,
            self.task_id.as_deref(),
            Budget::new(DEFAULT_BUDGET),
            &|_| {},
        ))?;
        print_outcome(&o, self.json)?;
        Ok(crate::error::EXIT_OK)
    }
}
