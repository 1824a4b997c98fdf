//! `a2a-mod task`: the `task` tool from the command line
//! ([`session::Session`](a2a_mod_app::session::Session), as Claude's).

use super::Run;
use super::shell::{print_outcome, runtime, user_session};
use crate::cli::TaskArgs;
use a2a_mod_app::session::{Budget, DEFAULT_BUDGET};
use anyhow::Result;

impl Run for TaskArgs {
    fn run(self) -> Result<i32> {
        let s = user_session(self.session.session.as_deref())?;
        let o = runtime()?.block_on(s.task(&self.task_id, Budget::new(DEFAULT_BUDGET)))?;
        if self.json {
            print_outcome(&o, true)?;
        } else {
            // The note lists the artifacts when there is more than the result text; the command
            // names every saved file either way.
            let mut text = o.note.clone();
            if !o.artifacts.is_empty() && !a2a_mod_core::artifact::worth_listing(&o.artifacts) {
                for k in &o.artifacts {
                    text.push('\n');
                    text.push_str(&a2a_mod_core::artifact::line(k));
                }
            }
            super::shell::out(&text)?;
        }
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}
