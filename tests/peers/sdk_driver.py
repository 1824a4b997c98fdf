"""Drives Claude Code through the official Python Agent SDK (`claude-agent-sdk`) with the set-up
docs/claude-code.md gives for it: the a2a-mod plugin loaded through the SDK's `plugins` option and
its MCP server's tools allowed by name, nothing else configured. The SDK runs its own bundled
Claude Code, as it does for users.

    python sdk_driver.py PLUGIN_DIR PROMPT

Prints one JSON line per SDK message (`{"type": ..., ...}`); the `ResultMessage` as
`{"type": "result", "result": ..., "is_error": ...}`, last. The environment (HOME, the model
API's ANTHROPIC_BASE_URL, A2A_MOD_HOME) is the caller's, passed on to Claude Code by the SDK.
"""

import asyncio
import json
import sys

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    UserMessage,
    query,
)

# The plugin's MCP server as Claude Code names it: `mcp__plugin_<plugin>_<server>`.
A2A_TOOLS = "mcp__plugin_a2a-mod_a2a"


def line(message):
    if isinstance(message, ResultMessage):
        return {
            "type": "result",
            "subtype": message.subtype,
            "result": message.result,
            "is_error": message.is_error,
            "num_turns": message.num_turns,
        }
    if isinstance(message, SystemMessage):
        return {"type": "system", "subtype": message.subtype, "data": message.data}
    if isinstance(message, AssistantMessage):
        return {"type": "assistant", "content": [repr(b) for b in message.content]}
    if isinstance(message, UserMessage):
        return {"type": "user"}
    return {"type": type(message).__name__}


async def main(plugin_dir, prompt):
    options = ClaudeAgentOptions(
        plugins=[{"type": "local", "path": plugin_dir}],
        allowed_tools=[A2A_TOOLS],
    )
    async for message in query(prompt=prompt, options=options):
        print(json.dumps(line(message), default=str), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: sdk_driver.py PLUGIN_DIR PROMPT")
    asyncio.run(main(sys.argv[1], sys.argv[2]))
