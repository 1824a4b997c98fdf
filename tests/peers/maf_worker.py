#!/usr/bin/env python3
"""A scripted Microsoft Agent Framework agent served by agent-framework-a2a's A2AExecutor.

The agent is a custom `agent_framework.BaseAgent` that calls no model and no network: it reads
the message text as a script and answers with Agent Framework `AgentResponse`s (non-streaming)
or `AgentResponseUpdate`s in a `ResponseStream` (streaming), the way a chat-client agent does.
The A2A side is the framework's own: `agent_framework.a2a.A2AExecutor(agent, stream=...)`
(default `stream=False`; `--stream` turns it on) under a2a-sdk 1.x's `DefaultRequestHandler`,
with the JSON-RPC routes (v1.0 plus v0.3 compatibility) and the card routes the framework's
docstring shows. Runs under `$A2A_PEERS_DIR/venv-maf` (tests/peers/requirements-maf.txt).

What the executor hands the agent is `RequestContext.get_user_input()`: the message's text
parts joined by newlines, nothing else (no files, no data, no task id). It makes a fresh
`AgentSession(session_id=contextId)` for every request, so an agent keeps nothing between
requests of one context.

Verbs (the names match worker.py where it has them):
  slow N <words>   answers `done: <words>` after N seconds
  tokens N S       N updates `t000 `, `t001 `, ... over S seconds (streaming: one update each;
                   non-streaming: the framework joins them into one response)
  ask <question>   a function_approval_request for `ask_user` plus the question as text (how an
                   Agent Framework agent asks a human); the executor has no input-required
  fail <why>       raises; the executor turns that into failed with str(exception)
  artifact file [KiB]  a data content (bytes, media type application/octet-stream, name blob.bin)
  artifact data    a data content holding JSON (media type application/json): the framework has
                   no A2A data part, so it goes out as bytes
  parts            one JSON line describing the input the agent got, as worker.py's `parts`
  recall           the previous message of this context, from the agent's session state
  anything else    answered at once, echoing the text

stdout carries exactly one line, the base URL, once the socket accepts connections; the
request log (`--log`) and the stdin-EOF exit are worker.py's (`RpcGate`, `WorkerServer`).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator
from importlib.metadata import version as dist_version
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from agent_framework import (  # noqa: E402
    AgentResponse,
    AgentResponseUpdate,
    AgentSession,
    BaseAgent,
    Content,
    Message,
    ResponseStream,
)
from agent_framework.a2a import A2AExecutor  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

import worker as base  # noqa: E402  (RpcGate, WorkerServer, watch_stdin, file_bytes)

MAF_VERSION = dist_version("agent-framework-a2a")
HISTORY_KEY = "a2a_mod_history"

log = logging.getLogger("a2a-maf-worker")


def text_of(messages: Any) -> str:
    """The input text, whatever shape the executor passed (a str, a Message, a list)."""
    if messages is None:
        return ""
    if isinstance(messages, str):
        return messages
    if isinstance(messages, Message):
        return messages.text or ""
    if isinstance(messages, (list, tuple)):
        return "\n".join(text_of(m) for m in messages)
    return str(messages)


def update(*contents: Content) -> AgentResponseUpdate:
    return AgentResponseUpdate(contents=list(contents), role="assistant")


class ScriptedAgent(BaseAgent):
    """Plays the script in the input text; no model."""

    def run(  # type: ignore[override]
        self,
        messages: Any = None,
        *,
        stream: bool = False,
        session: AgentSession | None = None,
        **kwargs: Any,
    ) -> Any:
        text = text_of(messages).strip()
        if stream:
            return ResponseStream(self._play(text, session), finalizer=AgentResponse.from_updates)
        return self._run_once(text, session)

    async def _run_once(self, text: str, session: AgentSession | None) -> AgentResponse:
        # Non-streaming is the stream collected, the way the framework's chat clients do it.
        return AgentResponse.from_updates([u async for u in self._play(text, session)])

    async def _play(self, text: str, session: AgentSession | None) -> AsyncIterator[AgentResponseUpdate]:
        history: list[str] = []
        if session is not None:
            history = session.state.setdefault(HISTORY_KEY, [])
        previous = history[-1] if history else None
        history.append(text)

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
                yield update(Content.from_text(text=f"done: {words.strip()}"))
                return
        elif head == "tokens":
            try:
                count, seconds = int(rest.split()[0]), float(rest.split()[1])
            except (IndexError, ValueError):
                count, seconds = -1, 0.0
            if count >= 0:
                for i in range(count):
                    await asyncio.sleep(seconds / max(count, 1))
                    yield update(Content.from_text(text=f"t{i:03d} "))
                return
        elif head == "ask":
            call = Content.from_function_call(call_id="ask-1", name="ask_user", arguments={"question": rest})
            yield update(
                Content.from_text(text=rest),
                Content.from_function_approval_request(id="ask-1", function_call=call),
            )
            return
        elif head == "fail":
            raise RuntimeError(rest or "failed")
        elif head == "artifact" and rest.split(" ")[0] in ("file", "data"):
            kind, _, kib = rest.partition(" ")
            if kind == "file":
                data = base.file_bytes(int(kib) if kib.strip() else 1024)
                yield update(Content.from_data(data=data, media_type="application/octet-stream", name="blob.bin"))
            else:
                value = {"rows": 3, "ok": True, "names": ["a", "b", "c"]}
                yield update(Content.from_data(data=json.dumps(value).encode(), media_type="application/json"))
            return
        elif head == "parts":
            # All the executor passes is the joined text of the text parts.
            raw = text.encode()
            part = {"kind": "text", "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
            context_id = session.session_id if session is not None else None
            line = json.dumps({"contextId": context_id, "parts": [part]}, separators=(",", ":"))
            yield update(Content.from_text(text=line))
            return
        elif text == "recall":
            yield update(Content.from_text(text=previous or "(no previous message)"))
            return
        yield update(Content.from_text(text=text))


def build_app(base_url: str, stream: bool) -> Starlette:
    card = AgentCard(
        name="a2a-mod MAF peer",
        description=f"Scripted Agent Framework test worker (agent-framework-a2a {MAF_VERSION}, stream={stream})",
        version="1.0.0",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[
            AgentInterface(url=base_url + "/", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base_url + "/", protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        skills=[AgentSkill(id="script", name="Scripted replies", description="see maf_worker.py", tags=["test"])],
    )
    agent = ScriptedAgent(name="a2a-mod-maf-peer", description="Scripted test agent (no model)")
    handler = DefaultRequestHandler(
        agent_executor=A2AExecutor(agent, stream=stream),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Scripted Agent Framework agent on agent-framework-a2a.")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: OS-chosen)")
    p.add_argument("--stream", action="store_true", help="A2AExecutor(stream=True) (default False)")
    p.add_argument("--log", metavar="FILE", help="append one JSON line per JSON-RPC request")
    p.add_argument("--exit-on-stdin-eof", action="store_true", help="shut down when stdin reaches EOF")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="a2a-maf-worker: %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("a2a.server.events").setLevel(logging.ERROR)
    # a2a-sdk 1.3's telemetry wrapper, on every cancel and client disconnect: "Failed to detach
    # context" (OpenTelemetry) and "Task was destroyed but it is pending" (asyncio, its
    # EventQueueSource._dispatch_loop). Noise, not our failure.
    logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
    logging.getLogger("asyncio").addFilter(
        lambda r: "EventQueueSource._dispatch_loop" not in r.getMessage()
    )
    # `fail` is logged by the executor with a traceback; one line is enough.
    logging.getLogger("agent_framework.a2a").setLevel(logging.CRITICAL)
    import warnings

    warnings.filterwarnings("ignore")

    if args.log:
        try:
            open(args.log, "a", encoding="utf-8").close()
        except OSError as e:
            print(f"a2a-maf-worker: cannot append to --log {args.log!r}: {e}", file=sys.stderr)
            return 1

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as e:
        print(f"a2a-maf-worker: cannot bind 127.0.0.1:{args.port}: {e}", file=sys.stderr)
        return 1
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    gate = base.RpcGate(build_app(base_url, args.stream), bearer=None, tokens=None, log_path=args.log, silent_ids=set())
    config = uvicorn.Config(gate, log_config=None, access_log=False, lifespan="off", timeout_graceful_shutdown=2)
    server = base.WorkerServer(config, base_url, gate)
    if args.exit_on_stdin_eof:
        threading.Thread(target=base.watch_stdin, args=(server,), daemon=True).start()
    print(
        f"a2a-maf-worker: agent-framework-a2a {MAF_VERSION} (stream={args.stream}) on {base_url}",
        file=sys.stderr,
        flush=True,
    )
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
