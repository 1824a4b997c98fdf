//! Claude Code integration: the wire types of what Claude Code sends us (tolerant readers only,
//! CONTRIBUTING.md, "Read tolerantly, write strictly"), the settings entries `install` owns, and
//! the embedded plugin files.
//! Nothing here does IO.

pub mod hook_input;
pub mod plugin;
pub mod settings;
pub mod statusline_input;
