//! `a2a-mod mcp`: the stdio MCP server Claude Code starts at every session start ([`a2a_mod_app::mcp`]).

use super::Run;
use super::shell::entry_point;
use crate::cli::McpArgs;
use anyhow::Result;

impl Run for McpArgs {
    fn run(self) -> Result<i32> {
        // Stdout is the protocol: logs go to the state log file only.
        let ctx = entry_point("mcp")?;
        // Two workers: tool calls run concurrently (one may sit in its inline window) while the
        // keeper and the transport go on.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?
            .block_on(a2a_mod_app::mcp::serve_stdio(ctx))?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}
