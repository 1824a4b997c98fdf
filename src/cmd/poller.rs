//! `a2a-mod poller --session ID`: one session's background poller, started by a2a-mod itself
//! ([`a2a_mod_app::poller::ensure`]); [`a2a_mod_app::poller`] is the loop.

use super::Run;
use super::shell::{entry_point, runtime};
use crate::cli::PollerArgs;
use anyhow::Result;

impl Run for PollerArgs {
    fn run(self) -> Result<i32> {
        let ctx = entry_point("poller")?;
        runtime()?.block_on(a2a_mod_app::poller::run(ctx, self.session))?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}
