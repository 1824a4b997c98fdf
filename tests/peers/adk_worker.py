#!/usr/bin/env python3
"""A scripted Google ADK agent served by ADK's own A2A server, for a2a-mod's peer tests.

The agent is a custom `google.adk.agents.BaseAgent` that calls no model: it reads the message
text as a script and yields ADK `Event`s the way an LLM agent would. ADK's `to_a2a()` turns it
into a Starlette app (ADK's `A2aAgentExecutor` on a2a-sdk 1.x: v1.0 JSON-RPC plus v0.3
compatibility on `POST /`, the card at `/.well-known/agent-card.json`). Runs under
`$A2A_PEERS_DIR/venv-adk` (tests/peers/requirements-adk.txt).

Verbs (the message text; the names match worker.py where it has them):
  slow N <words>   completed after N seconds with the text `done: <words>`
  tokens N S       N partial events (`t000 `, `t001 `, ...) over S seconds, then the final
                   non-partial event with the whole text (how a streaming LLM agent ends)
  ask <question>   a long-running function call `ask_user` (ADK's human-in-the-loop), which
                   ADK turns into input-required; a follow-up on the same taskId (text, or a
                   function_response data part) completes it with `you said: <answer>`
  fail <why>       an event with error_code/error_message -> failed
  artifact file [KiB]  an inline_data blob (bytes, display name blob.bin, octet-stream)
  artifact data    a generic data part (ADK's tagged inline blob -> A2A data part)
  parts            one JSON line describing every part the agent received, as worker.py
  recall           the text of the previous user message in this contextId (ADK session)
  anything else    answered at once, echoing the text

stdout carries exactly one line, the base URL, once the socket accepts connections; the
request log (`--log`) and the stdin-EOF exit are worker.py's (`RpcGate`, `WorkerServer`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import sys
import threading
import uuid
from collections.abc import AsyncGenerator
from importlib.metadata import version as dist_version
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402
from google.adk.a2a.utils.agent_to_a2a import to_a2a  # noqa: E402
from google.adk.agents import BaseAgent  # noqa: E402
from google.adk.agents.invocation_context import InvocationContext  # noqa: E402
from google.adk.events import Event  # noqa: E402
from google.genai import types  # noqa: E402

import worker as base  # noqa: E402  (RpcGate, WorkerServer, watch_stdin, file_bytes)

ADK_VERSION = dist_version("google-adk")
ASK_TOOL = "ask_user"
# ADK's own markers for a generic JSON data part carried as an inline blob
# (google.adk.a2a.converters.part_converter).
DATA_START = b"<a2a_datapart_json>"
DATA_END = b"</a2a_datapart_json>"

log = logging.getLogger("a2a-adk-worker")


def text_of(content: types.Content | None) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(p.text for p in content.parts if p.text is not None)


def describe_genai_part(part: types.Part) -> dict[str, Any]:
    """A received part as worker.py's `parts` verb reports it, read from ADK's genai view."""
    out: dict[str, Any] = {}
    if part.text is not None:
        out["kind"] = "text"
        base._described(out, part.text.encode())
    elif part.inline_data is not None:
        blob = part.inline_data
        data = blob.data or b""
        if blob.mime_type == "text/plain" and data.startswith(DATA_START) and data.endswith(DATA_END):
            out["kind"] = "data"
            out["data"] = json.loads(data[len(DATA_START) : -len(DATA_END)])
        else:
            out["kind"] = "file"
            if blob.display_name:
                out["name"] = blob.display_name
            if blob.mime_type:
                out["mediaType"] = blob.mime_type
            base._described(out, data)
    elif part.file_data is not None:
        out["kind"] = "file"
        if part.file_data.display_name:
            out["name"] = part.file_data.display_name
        if part.file_data.mime_type:
            out["mediaType"] = part.file_data.mime_type
        out["url"] = part.file_data.file_uri
    elif part.function_response is not None:
        out["kind"] = "data"
        out["data"] = {"functionResponse": part.function_response.model_dump(mode="json", exclude_none=True)}
    else:
        out["kind"] = "unknown"
    return out


class ScriptedAgent(BaseAgent):
    """Plays the script in the new user message; no model."""

    def _event(self, ctx: InvocationContext, *parts: types.Part, **kw: Any) -> Event:
        content = types.Content(role="model", parts=list(parts)) if parts else None
        return Event(invocation_id=ctx.invocation_id, author=self.name, content=content, **kw)

    def _say(self, ctx: InvocationContext, text: str, **kw: Any) -> Event:
        return self._event(ctx, types.Part(text=text), **kw)

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        content = ctx.user_content
        text = text_of(content).strip()
        parts = list(content.parts or []) if content else []

        # A follow-up to an `ask`: the previous agent turn left an unanswered ask_user call.
        pending = self._pending_ask_before(ctx)
        if pending is not None:
            answer = text
            for p in parts:
                if p.function_response is not None:
                    resp = p.function_response.response or {}
                    answer = str(resp.get("answer", resp.get("result", json.dumps(resp))))
            yield self._say(ctx, f"you said: {answer}")
            return

        # Text parts arrive joined by newlines, so the verb ends at any whitespace.
        head, rest = (text.split(None, 1) + ["", ""])[:2]
        rest = rest.strip()
        if head == "slow":
            n, _, words = rest.partition(" ")
            try:
                seconds = float(n)
            except ValueError:
                seconds = -1.0
            if seconds >= 0:
                await asyncio.sleep(seconds)
                yield self._say(ctx, f"done: {words.strip()}")
                return
        elif head == "tokens":
            try:
                n_s = rest.split()
                count, seconds = int(n_s[0]), float(n_s[1])
            except (IndexError, ValueError):
                count = -1
                seconds = 0.0
            if count >= 0:
                chunks = [f"t{i:03d} " for i in range(count)]
                for chunk in chunks:
                    await asyncio.sleep(seconds / max(count, 1))
                    yield self._say(ctx, chunk, partial=True)
                yield self._say(ctx, "".join(chunks))
                return
        elif head == "ask":
            call_id = f"adk-{uuid.uuid4()}"
            call = types.FunctionCall(id=call_id, name=ASK_TOOL, args={"question": rest})
            yield self._event(
                ctx,
                types.Part(text=rest),
                types.Part(function_call=call),
                long_running_tool_ids={call_id},
            )
            return
        elif head == "fail":
            yield self._event(ctx, error_code="SCRIPTED_FAILURE", error_message=rest or "failed")
            return
        elif head == "artifact" and rest.split(" ")[0] in ("file", "data"):
            kind, _, kib = rest.partition(" ")
            if kind == "file":
                data = base.file_bytes(int(kib) if kib.strip() else 1024)
                blob = types.Blob(data=data, mime_type="application/octet-stream", display_name="blob.bin")
                yield self._event(ctx, types.Part(inline_data=blob))
            else:
                value = {"rows": 3, "ok": True, "names": ["a", "b", "c"]}
                raw = DATA_START + json.dumps(value).encode() + DATA_END
                yield self._event(ctx, types.Part(inline_data=types.Blob(data=raw, mime_type="text/plain")))
            return
        elif head == "parts":
            described = [describe_genai_part(p) for p in parts]
            line = json.dumps({"contextId": ctx.session.id, "parts": described}, separators=(",", ":"))
            yield self._say(ctx, line)
            return
        elif text == "recall":
            yield self._say(ctx, self._previous_user_text(ctx) or "(no previous message)")
            return
        yield self._say(ctx, text)

    @classmethod
    def _previous_user_text(cls, ctx: InvocationContext) -> str | None:
        """The text of the last user message in this session before the current one."""
        found: str | None = None
        for ev in cls._earlier_events(ctx):
            if ev.author == "user" and text_of(ev.content):
                found = text_of(ev.content)
        return found

    @staticmethod
    def _earlier_events(ctx: InvocationContext) -> list[Event]:
        """The session's events before the current user message (the runner appends that
        message to the session before the agent runs; when the message answers a long-running
        call, ADK resumes the call's invocation, so invocation ids cannot tell turns apart)."""
        events = list(ctx.session.events)
        for i in range(len(events) - 1, -1, -1):
            if events[i].author == "user":
                return events[:i]
        return events

    @classmethod
    def _pending_ask_before(cls, ctx: InvocationContext) -> str | None:
        """An `ask_user` call from an earlier turn in this session that nothing answered."""
        pending: str | None = None
        for ev in cls._earlier_events(ctx):
            for p in ev.content.parts if ev.content and ev.content.parts else []:
                if p.function_call is not None and p.function_call.name == ASK_TOOL:
                    pending = p.function_call.id
                elif p.function_response is not None or (ev.author == "user" and p.text):
                    pending = None  # answered on an earlier turn
        return pending


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Scripted Google ADK agent on ADK's A2A server.")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: OS-chosen)")
    p.add_argument("--log", metavar="FILE", help="append one JSON line per JSON-RPC request")
    p.add_argument("--exit-on-stdin-eof", action="store_true", help="shut down when stdin reaches EOF")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="a2a-adk-worker: %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("a2a.server.events").setLevel(logging.ERROR)
    # a2a-sdk 1.3's telemetry wrapper, on every cancel and client disconnect: "Failed to detach
    # context" (OpenTelemetry) and "Task was destroyed but it is pending" (asyncio, its
    # EventQueueSource._dispatch_loop). Noise, not our failure.
    logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").addFilter(
        lambda r: "EventQueueSource._dispatch_loop" not in r.getMessage()
    )
    # ADK marks its A2A support experimental on every call.
    import warnings

    warnings.filterwarnings("ignore", category=UserWarning)

    if args.log:
        try:
            open(args.log, "a", encoding="utf-8").close()
        except OSError as e:
            print(f"a2a-adk-worker: cannot append to --log {args.log!r}: {e}", file=sys.stderr)
            return 1

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as e:
        print(f"a2a-adk-worker: cannot bind 127.0.0.1:{args.port}: {e}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"

    agent = ScriptedAgent(name="a2a_mod_adk_peer", description="Scripted ADK test worker (no model)")
    # ADK builds the card (url http://127.0.0.1:PORT/) and attaches its routes in the lifespan.
    adk_app = to_a2a(agent, host="127.0.0.1", port=port, protocol="http")
    gate = base.RpcGate(adk_app, bearer=None, tokens=None, log_path=args.log, silent_ids=set())
    config = uvicorn.Config(
        gate,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    server = base.WorkerServer(config, base_url, gate)
    if args.exit_on_stdin_eof:
        threading.Thread(target=base.watch_stdin, args=(server,), daemon=True).start()
    print(f"a2a-adk-worker: google-adk {ADK_VERSION} on {base_url}", file=sys.stderr, flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
