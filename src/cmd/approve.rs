//! `a2a-mod approve`: a person answers a worker's pending permission question from a shell
//! (`allow`, `always`, `deny` with a reason), as the reply `send --task-id` would carry, so the
//! answer is the person's and not a model's. The task must be this session's and asking.

use super::Run;
use super::shell::user_session;
use crate::cli::{ApproveArgs, SendArgs, Verdict};
use a2a_mod_core::task::TaskState;
use anyhow::{Result, bail};

impl Run for ApproveArgs {
    fn run(self) -> Result<i32> {
        let id = self.task_id.clone();
        let s = user_session(self.session.session.as_deref())?;
        let Some(rec) = s.store(|st| st.find(&id))? else {
            bail!(
                "approve: no task \"{id}\" in this session — `a2a-mod tasks` lists them (pass --session for another)"
            );
        };
        if rec.state != TaskState::InputRequired {
            bail!(
                "approve: task \"{id}\" is {} and asks nothing now — `a2a-mod task {id}` shows it",
                rec.state
            );
        }
        drop(s);
        SendArgs {
            alias: rec.worker.clone(),
            message: vec![reply(self.verdict, &self.reason.join(" "))],
            task_id: Some(id),
            context_id: None,
            files: Vec::new(),
            data: None,
            session: self.session,
            json: self.json,
            no_keep: false,
            keeper: false,
        }
        .run()
    }
}

/// The reply a worker's question takes for the verdict.
fn reply(verdict: Verdict, reason: &str) -> String {
    use a2a_mod_core::status::Verdict as V;
    let v = match verdict {
        Verdict::Allow => V::Allow,
        Verdict::Always => V::Always,
        Verdict::Deny => V::Deny,
    };
    v.reply(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_the_reply_serve_reads() {
        assert_eq!(reply(Verdict::Allow, "ignored"), "allow");
        assert_eq!(reply(Verdict::Always, ""), "allow always");
        assert_eq!(reply(Verdict::Deny, "  "), "deny");
        assert_eq!(
            reply(Verdict::Deny, "the build dir is shared"),
            "deny: the build dir is shared"
        );
    }
}
