//! `a2a-mod watch`: the plugin's monitor, one per session ([`a2a_mod_claude::wake::watch`] is the loop).

use super::Run;
use super::shell::entry_point;
use crate::cli::WatchArgs;
use anyhow::Result;

impl Run for WatchArgs {
    fn run(self) -> Result<i32> {
        let ctx = entry_point("watch")?;
        let session = match self.session.session {
            Some(s) => s,
            None => a2a_mod_os::env::cli_session(None)?,
        };
        Ok(a2a_mod_claude::wake::watch::run(ctx, session))
    }
}
