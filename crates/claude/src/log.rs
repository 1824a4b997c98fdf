//! The log file, opened for appending: the one way into `state/a2a-mod.log`, for the status line
//! (which writes only when `A2A_MOD_LOG` is set) and the binary's logging set-up.

use a2a_mod_os::env::Ctx;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;

/// Opens the log for appending, creating it 0600 (it may name workers and task ids) in a 0700
/// state folder. No tightening here: the status line appends through this (when logging is on),
/// and the hot path chmods nothing; the binary's `log::init_file` tightens.
pub fn open_append(ctx: &Ctx) -> Option<std::fs::File> {
    let _ = a2a_mod_os::fsx::create_private_dir(&ctx.state_dir);
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(a2a_mod_os::fsx::PRIVATE_FILE)
        .open(ctx.log_path())
        .ok()
}
