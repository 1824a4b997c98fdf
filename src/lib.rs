//! a2a-mod: Claude Code hands work to remote A2A agents ("workers") and is woken when it ends.
//! One binary; the library exists for `main.rs` (which only parses and runs a [`cmd::Run`]) and,
//! through the small [`testing`] surface, for `tests/` and `benches/`. Everything else is private
//! to the crate, so an item nothing uses is a warning.

#![forbid(unsafe_code)]

pub mod cli;
pub mod cmd;

pub use a2a_mod_claude::error;

/// What `tests/` and `benches/` use besides the binary: the store as the poller leaves it, the
/// fake worker in process, the status line's pure parts, the lock and clock helpers. Not an API:
/// hidden from the docs, and it changes with any commit.
#[doc(hidden)]
pub mod testing {
    pub use a2a_mod_a2a::{Outgoing, Started, Worker, http_client};
    pub use a2a_mod_app::poller::{is_running, lock_path};
    pub use a2a_mod_claude::statusline::theme::{BUILTIN, Theme, load, parse as parse_theme};
    pub use a2a_mod_claude::statusline::{Env, HotConfig, line_for};
    pub use a2a_mod_claude::statusline_input::WireStatuslineInput;
    pub use a2a_mod_config::WorkerConfig;
    pub use a2a_mod_core::lifecycle::{Event, NewTask, TaskKey};
    pub use a2a_mod_core::{status, task};
    pub use a2a_mod_fake_worker::{FakeWorker, FakeWorkerOptions, StreamMode, token_text};
    pub use a2a_mod_os::env::{Ctx, now_ms};
    pub use a2a_mod_os::fsx::{is_locked, try_lock};
    pub use a2a_mod_os::ids::uuid_v4;
    pub use a2a_mod_results::note::whole_result;
    pub use a2a_mod_store::{MIGRATIONS, Reader, Store, TaskRecord, notify, session, snapshot};
}
