//! Real programs the tests drive from outside: the Claude Code CLI (in tmux). Each peer skips
//! with `SKIPPED: <reason>` when its program is not installed.

pub mod claude;
