//! `a2a-mod send`: the `send` tool from the command line, on the same code path as Claude's
//! (`session::Session`), so a user can reproduce exactly what Claude saw. `--file`, `--data` and
//! `--context-id` are the tool's `files`, `data` and `contextId`.

use super::Run;
use super::shell::{load, print_outcome, runtime, user_command};
use crate::cli::SendArgs;
use crate::session::{Budget, DEFAULT_BUDGET, SendInput, Session};
use a2a_mod_sys::env::cli_session;
use anyhow::{Result, anyhow};

impl Run for SendArgs {
    fn run(self) -> Result<i32> {
        // Parsed before anything else runs: a typo in the JSON sends nothing.
        let data = match self.data.as_deref() {
            Some(text) => Some(serde_json::from_str(text).map_err(|e| {
                anyhow!(
                    "--data is not JSON ({e}) — pass one JSON value, e.g. --data '{{\"k\": 1}}'"
                )
            })?),
            None => None,
        };
        let ctx = user_command()?;
        let s = Session::open(
            &ctx,
            load(&ctx)?,
            &cli_session(self.session.session.as_deref())?,
        )?;
        let message = self.message.join(" ");
        let input = SendInput {
            task_id: self.task_id,
            context_id: self.context_id,
            files: self.files,
            data,
        };
        let o = runtime()?.block_on(s.send_input(
            &self.alias,
            &message,
            &input,
            Budget::new(DEFAULT_BUDGET),
            &|_| {},
            std::future::pending(),
        ))?;
        print_outcome(&o, self.json)?;
        Ok(crate::error::EXIT_OK)
    }
}
