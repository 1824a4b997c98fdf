//! Claude Code integration: the wire types of what Claude Code sends us. Tolerant readers only
//! (STYLE.md convention 6); nothing here does IO.

pub mod statusline_input;
