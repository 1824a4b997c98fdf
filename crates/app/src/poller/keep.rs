//! [`Keep`]: the artifacts of a task seen ending, saved off the runtime's thread by whoever saw
//! the end (the poller's polls and streams, the MCP server's stream read on after the window).

use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_os::env::Ctx;

/// Where an ended task's artifacts are saved, by the poll or the stream that saw the
/// end (the poller's, or the MCP server's stream read on after the window), before the ending is
/// stored: a hook that sees the ending finds them.
#[derive(Clone)]
pub(crate) struct Keep {
    ctx: Ctx,
    session: String,
    cap: u64,
}

impl Keep {
    pub(crate) fn new(ctx: &Ctx, session: &str, config: &a2a_mod_config::Config) -> Keep {
        Keep {
            ctx: ctx.clone(),
            session: session.to_string(),
            cap: config.results.max_task_bytes(),
        }
    }

    /// Off the runtime's thread: up to `[results] max_task_mib` of writes, each fsynced, must not
    /// stall the polls and streams beside it.
    pub(crate) async fn save(&self, worker: &str, v: &a2a_mod_a2a::TaskView) {
        if v.state.is_live() || v.artifacts.is_empty() {
            return;
        }
        let (k, key, arts, spills) = (
            self.clone(),
            TaskKey::new(worker, &v.task_id),
            v.artifacts.clone(),
            v.spills.clone(),
        );
        let _ = tokio::task::spawn_blocking(move || {
            let spilled = |i: usize| {
                spills
                    .reader(i)
                    .map(|r| Box::new(r) as Box<dyn std::io::Read + '_>)
            };
            a2a_mod_results::artifacts::save(&k.ctx, &k.session, &key, &arts, k.cap, &spilled)
        })
        .await;
    }
}
