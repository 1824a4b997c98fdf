#!/usr/bin/env python3
"""A scripted A2A worker on the real Python `a2a-sdk`, for a2a-mod's peer tests.

It runs under either venv that `tests/peers/setup.sh` makes:
  - a2a-sdk 1.x  -> v1.0 JSON-RPC plus v0.3 compatibility on the same endpoint;
  - a2a-sdk 0.3.x -> v0.3 JSON-RPC only.
The SDK's major version is read at import and picks the matching API below.

The message text is a script (the same verbs as `a2a-mod fake-worker`):
  slow N <words>   working, then completed after N seconds (fractional ok) with an
                   artifact whose text is `done: <words>`
  tokens N S       working, then N artifact-update chunks `t000 `, `t001 `, ... over S seconds,
                   all on one artifact (`result`; append=true from the second on, lastChunk on
                   the last), then completed: a streamed answer, token by token
  slow-until T W   like slow, until the Unix time T in ms (tasks sent apart end together)
  ask <question>   input-required, the question as the status message; a follow-up on
                   the same taskId completes it with the artifact `you said: <answer>`
  fail <why>       failed, status message `<why>`
  reject           rejected
  auth             auth-required (a follow-up completes it, like `ask`)
  silent           submitted, then working; every GetTask / tasks/get on it hangs
  artifact <kind>  completed with artifacts beyond text: data, file [KiB],
                   url, chunks (one text artifact in three appended chunks), twins (two
                   artifacts named alike), hostile (names that try to escape), many N
  parts            completed at once, the artifact one JSON line describing every part
                   received (kind, name, media type, size and sha256 of the bytes, data),
                   in the format of a2a-mod's fake worker (crates/fake-worker/src/echo.rs)
  anything else    completed at once, the artifact echoing the text
Cancel works on any live task (slow, silent, ask, auth).

`--rest` also serves HTTP+JSON under `/rest` (1.x: v1.0 at `/rest/message:send`, ... and v0.3
at `/rest/v1/message:send`, ...; 0.3.x: v0.3 only) and lists it in the card after JSON-RPC.
`--push` (1.x) supports push notifications with the SDK's own config store and sender (the TCK's
yardstick, tests/tck/run.sh).
`--rest-only` (1.x) serves the same and lists only the HTTP+JSON interfaces in the card: a worker
whose clients must use the REST binding.

An ASGI layer in front of the SDK app (`RpcGate`) does what the SDK cannot: the bearer
check, OAuth2 client-credentials tokens (`--oauth-ttl`: `POST /oauth/token`, declared in the
card through the SDK's own security-scheme types), the hang for silent tasks, and the request
log. It reads each JSON-RPC body once and replays it to the SDK.

stdout carries exactly one line, the base URL, printed once the socket accepts
connections. Everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from importlib.metadata import version as dist_version
from types import FrameType
from typing import Any

import uvicorn

SDK_VERSION = dist_version("a2a-sdk")
SDK_MAJOR = int(SDK_VERSION.split(".")[0])

# The names differ in 0.3 only in where they live and how parts and states are spelled;
# the executor below is written once against these aliases.
if SDK_MAJOR >= 1:
    from a2a.helpers import new_task_from_user_message as _new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        ClientCredentialsOAuthFlow,
        HTTPAuthSecurityScheme,
        OAuth2SecurityScheme,
        OAuthFlows,
        Part,
        SecurityRequirement,
        SecurityScheme,
        TaskState,
    )
    from starlette.applications import Starlette

    INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}

    def text_part(text: str) -> Any:
        return Part(text=text)

    def data_part(value: Any) -> Any:
        from google.protobuf import json_format, struct_pb2

        return Part(data=json_format.ParseDict(value, struct_pb2.Value()), media_type="application/json")

    def bytes_part(filename: str, media_type: str, raw: bytes) -> Any:
        return Part(raw=raw, filename=filename, media_type=media_type)

    def url_part(filename: str, media_type: str, url: str) -> Any:
        return Part(url=url, filename=filename, media_type=media_type)

else:
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.apps import A2AStarletteApplication
    from a2a.server.apps.rest.rest_adapter import RESTAdapter
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        ClientCredentialsOAuthFlow,
        HTTPAuthSecurityScheme,
        OAuth2SecurityScheme,
        OAuthFlows,
        Part,
        SecurityScheme,
        TaskState,
        TextPart,
    )
    from a2a.utils import new_task as _new_task

    INTERRUPTED = {TaskState.input_required, TaskState.auth_required}

    def text_part(text: str) -> Any:
        return Part(root=TextPart(text=text))

    def data_part(value: Any) -> Any:
        from a2a.types import DataPart

        return Part(root=DataPart(data=value))

    def bytes_part(filename: str, media_type: str, raw: bytes) -> Any:
        import base64

        from a2a.types import FilePart, FileWithBytes

        b64 = base64.b64encode(raw).decode()
        return Part(root=FilePart(file=FileWithBytes(bytes=b64, name=filename, mime_type=media_type)))

    def url_part(filename: str, media_type: str, url: str) -> Any:
        from a2a.types import FilePart, FileWithUri

        return Part(root=FilePart(file=FileWithUri(uri=url, name=filename, mime_type=media_type)))


log = logging.getLogger("a2a-peer-worker")

RPC_PATH = "/"
# HTTP+JSON with --rest: the interface URL is <base>/rest (v0.3 paths are under <base>/rest/v1).
REST_PATH = "/rest"
TOKEN_PATH = "/oauth/token"
# Declared, not enforced: v1 requires a flow to list at least one.
SCOPES = {"tasks": "run tasks"}
GET_METHODS = {"GetTask", "tasks/get"}
SEND_METHODS = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
TASK_ID_METHODS = GET_METHODS | {
    "CancelTask",
    "tasks/cancel",
    "SubscribeToTask",
    "tasks/resubscribe",
}


# --- the script -------------------------------------------------------------------------


@dataclass(frozen=True)
class Script:
    verb: str  # slow | tokens | ask | fail | reject | auth | silent | artifact | parts | echo
    text: str  # the words, question, reason or echoed text
    seconds: float = 0.0


def parse_script(text: str) -> Script:
    """Read a message text as a script; anything unrecognised is an echo."""
    stripped = text.strip()
    head, _, rest = stripped.partition(" ")
    rest = rest.strip()
    if head == "slow":
        n, _, words = rest.partition(" ")
        try:
            seconds = float(n)
        except ValueError:
            return Script("echo", stripped)
        if seconds >= 0:
            return Script("slow", words.strip(), seconds)
        return Script("echo", stripped)
    if head == "slow-until":
        # `slow` until the Unix time T (ms): tasks sent apart end together.
        t, _, words = rest.partition(" ")
        try:
            until = int(t) / 1000.0
        except ValueError:
            return Script("echo", stripped)
        return Script("slow", words.strip(), max(0.0, until - time.time()))
    if head == "tokens":
        n, _, secs = rest.partition(" ")
        try:
            count, seconds = int(n), float(secs.strip() or "0")
        except ValueError:
            return Script("echo", stripped)
        if count >= 0 and seconds >= 0:
            return Script("tokens", str(count), seconds)
        return Script("echo", stripped)
    if head in ("ask", "fail"):
        return Script(head, rest)
    if head == "parts":
        return Script("parts", rest)
    if stripped in ("reject", "auth", "silent"):
        return Script(stripped, "")
    if head == "artifact" and rest.split(" ")[0] in ARTIFACT_KINDS:
        return Script("artifact", rest)
    return Script("echo", stripped)


# `artifact <kind>`, the same artifacts as the embedded fake worker's
# (crates/fake-worker/src/script.rs `Made`): data, file [KiB], url, chunks, twins, hostile, many N.
ARTIFACT_KINDS = {"data", "file", "url", "chunks", "twins", "hostile", "many", "report"}
CHUNKED_TEXT = ["alpha line\nbeta ", "line\ngamma ", "line\n"]


def file_bytes(kib: int) -> bytes:
    # i * 31 % 251 repeats every 251 bytes: built from one period, so 60 MiB takes no time.
    period = bytes((i * 31 % 251) for i in range(251))
    n = kib * 1024
    return (period * (n // 251 + 1))[:n]


async def make_artifacts(updater: Any, spec: str) -> None:
    kind, _, n = spec.partition(" ")
    octets = "application/octet-stream"
    if kind == "data":
        await updater.add_artifact([data_part({"rows": 3, "ok": True, "names": ["a", "b", "c"]})], name="stats")
    elif kind == "file":
        kib = int(n) if n.strip() else 1024
        await updater.add_artifact([bytes_part("blob.bin", octets, file_bytes(kib))], name="blob")
    elif kind == "report":
        kib = int(n) if n.strip() else 1024
        await updater.add_artifact([text_part(f"report: {kib} KiB attached")], name="report")
        await updater.add_artifact([bytes_part("blob.bin", octets, file_bytes(kib))], name="blob")
    elif kind == "url":
        await updater.add_artifact(
            [url_part("chart.png", "image/png", "https://example.invalid/chart.png")], name="chart"
        )
    elif kind == "chunks":
        aid = str(uuid.uuid4())
        for i, piece in enumerate(CHUNKED_TEXT):
            await updater.add_artifact(
                [text_part(piece)],
                artifact_id=aid,
                name="log.txt",
                append=i > 0,
                last_chunk=i == len(CHUNKED_TEXT) - 1,
            )
            await asyncio.sleep(0.05)
    elif kind == "twins":
        for body in (b"first report\n", b"second report\n"):
            await updater.add_artifact([bytes_part("report.txt", octets, body)], name="report")
    elif kind == "hostile":
        await updater.add_artifact([bytes_part("../../x", octets, b"escape attempt\n")], name="../../x")
        await updater.add_artifact(
            [bytes_part("ev\x1b[31mil\x07\n.txt", octets, b"control characters\n")], name="evil"
        )
    elif kind == "many":
        for i in range(int(n or "0")):
            await updater.add_artifact([bytes_part(f"f{i}.txt", octets, f"{i}\n".encode())], name=f"f{i}")


def _described(out: dict[str, Any], data: bytes) -> None:
    out["size"] = len(data)
    out["sha256"] = hashlib.sha256(data).hexdigest()


def describe_part(part: Any) -> dict[str, Any]:
    """One received part as the `parts` verb reports it (both SDK majors)."""
    out: dict[str, Any] = {}
    if SDK_MAJOR >= 1:
        from google.protobuf import json_format

        which = part.WhichOneof("content")
        if which == "text":
            out["kind"] = "text"
            _described(out, part.text.encode())
        elif which in ("raw", "url"):
            out["kind"] = "file"
            if part.filename:
                out["name"] = part.filename
            if part.media_type:
                out["mediaType"] = part.media_type
            if which == "raw":
                _described(out, part.raw)
            else:
                out["url"] = part.url
        elif which == "data":
            out["kind"] = "data"
            out["data"] = json_format.MessageToDict(part.data)
        else:
            out["kind"] = "unknown"
        return out
    root = part.root
    kind = getattr(root, "kind", "unknown")
    out["kind"] = kind
    if kind == "text":
        _described(out, root.text.encode())
    elif kind == "file":
        f = root.file
        if getattr(f, "name", None):
            out["name"] = f.name
        if getattr(f, "mime_type", None):
            out["mediaType"] = f.mime_type
        if getattr(f, "bytes", None) is not None:
            _described(out, base64.b64decode(f.bytes))
        else:
            out["url"] = f.uri
    elif kind == "data":
        out["data"] = root.data
    return out


def describe_parts(message: Any, context_id: str) -> str:
    parts = [describe_part(p) for p in (message.parts if message is not None else [])]
    return json.dumps({"contextId": context_id, "parts": parts}, separators=(",", ":"))


class ScriptedExecutor(AgentExecutor):
    """Plays a script per task. `silent_ids` is shared with `RpcGate`."""

    def __init__(self, silent_ids: set[str]) -> None:
        self.silent_ids = silent_ids

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            if context.message is None:
                raise ValueError("a send without a message")
            task = _new_task(context.message)
            await event_queue.enqueue_event(task)
            resuming = False
        else:
            resuming = task.status.state in INTERRUPTED
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        async def finish(result: str) -> None:
            await updater.add_artifact([text_part(result)], name="result")
            await updater.complete()

        def say(words: str) -> Any:
            return updater.new_agent_message([text_part(words)])

        if resuming:
            await finish(f"you said: {text.strip()}")
            return

        script = parse_script(text)
        if script.verb == "slow":
            await updater.start_work()
            await asyncio.sleep(script.seconds)
            await finish(f"done: {script.text}")
        elif script.verb == "tokens":
            await updater.start_work()
            count = int(script.text)
            aid = str(uuid.uuid4())
            for i in range(count):
                await asyncio.sleep(script.seconds / count)
                await updater.add_artifact(
                    [text_part(f"t{i:03d} ")],
                    artifact_id=aid,
                    name="result",
                    append=i > 0,
                    last_chunk=i == count - 1,
                )
            await updater.complete()
        elif script.verb == "ask":
            await updater.requires_input(say(script.text))
        elif script.verb == "fail":
            await updater.failed(say(script.text))
        elif script.verb == "reject":
            await updater.reject(say("rejected"))
        elif script.verb == "auth":
            await updater.requires_auth(say("authorization required"))
        elif script.verb == "artifact":
            await updater.start_work()
            await make_artifacts(updater, script.text)
            await updater.complete()
        elif script.verb == "parts":
            await finish(describe_parts(context.message, task.context_id))
        elif script.verb == "silent":
            # Registered before the task is visible to any client (the Task event above
            # reaches the client only after this coroutine yields).
            self.silent_ids.add(task.id)
            await updater.start_work()
            await asyncio.Event().wait()  # until cancelled
        else:
            await finish(script.text)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None or context.task_id is None:
            raise ValueError("cancel without a task")
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


# --- the agent card ---------------------------------------------------------------------


def build_card(
    base_url: str, auth: str | None, rest: bool = False, rest_only: bool = False, push: bool = False
) -> Any:
    """The card; `auth` is None, "bearer" or "oauth" (client credentials at TOKEN_PATH);
    `rest` adds the HTTP+JSON interfaces after the JSON-RPC ones, `rest_only` lists only those."""
    flow = ClientCredentialsOAuthFlow(token_url=base_url + TOKEN_PATH, scopes=SCOPES)
    skill = AgentSkill(
        id="script",
        name="Scripted replies",
        description="slow N <words> | tokens N S | ask <q> | fail <why> | reject | auth | silent | <echo>",
        tags=["test"],
        examples=["slow 2 build", "ask Which colour?", "fail out of disk"],
    )
    common: dict[str, Any] = dict(
        name="a2a-mod peer worker",
        description=f"Scripted test worker on a2a-sdk {SDK_VERSION}",
        version="1.0.0",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[skill],
    )
    if SDK_MAJOR >= 1:
        card = AgentCard(
            **common,
            supported_interfaces=[
                *(
                    AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version=v)
                    for v in (() if rest_only else ("1.0", "0.3"))
                ),
                *(
                    AgentInterface(url=base_url + REST_PATH, protocol_binding="HTTP+JSON", protocol_version=v)
                    for v in (("1.0", "0.3") if rest else ())
                ),
            ],
            capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        )
        if auth == "bearer":
            card.security_schemes["bearer"].CopyFrom(
                SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
            )
        elif auth == "oauth":
            card.security_schemes["oauth"].CopyFrom(
                SecurityScheme(
                    oauth2_security_scheme=OAuth2SecurityScheme(
                        flows=OAuthFlows(client_credentials=flow)
                    )
                )
            )
        if auth is not None:
            req = SecurityRequirement()
            req.schemes[auth].SetInParent()
            card.security_requirements.append(req)
        return card
    extra: dict[str, Any] = {}
    if auth == "bearer":
        extra["security_schemes"] = {
            "bearer": SecurityScheme(root=HTTPAuthSecurityScheme(type="http", scheme="bearer"))
        }
    elif auth == "oauth":
        extra["security_schemes"] = {
            "oauth": SecurityScheme(
                root=OAuth2SecurityScheme(
                    type="oauth2", flows=OAuthFlows(client_credentials=flow)
                )
            )
        }
    if auth is not None:
        extra["security"] = [{auth: []}]
    if rest:
        extra["additional_interfaces"] = [AgentInterface(url=base_url + REST_PATH, transport="HTTP+JSON")]
    return AgentCard(
        **common,
        url=base_url,
        preferred_transport="JSONRPC",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        **extra,
    )


def build_sdk_app(
    base_url: str,
    auth: str | None,
    silent_ids: set[str],
    rest: bool = False,
    rest_only: bool = False,
    push: bool = False,
) -> Any:
    card = build_card(base_url, auth, rest, rest_only, push)
    pushing: dict[str, Any] = {}
    if push:
        # The SDK's own config store and sender (1.x), as a deployment would wire them.
        import httpx
        from a2a.server.tasks import BasePushNotificationSender, InMemoryPushNotificationConfigStore

        store = InMemoryPushNotificationConfigStore()
        pushing = {
            "push_config_store": store,
            "push_sender": BasePushNotificationSender(httpx.AsyncClient(), store),
        }
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(silent_ids),
        task_store=InMemoryTaskStore(),
        **({"agent_card": card} if SDK_MAJOR >= 1 else {}),
        **pushing,
    )
    if SDK_MAJOR >= 1:
        routes = create_agent_card_routes(card) + create_jsonrpc_routes(
            handler, RPC_PATH, enable_v0_3_compat=True
        )
        if rest:
            routes += create_rest_routes(handler, enable_v0_3_compat=True, path_prefix=REST_PATH)
        return Starlette(routes=routes)
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build(rpc_url=RPC_PATH)
    if rest:
        from starlette.routing import Route

        for (path, verb), endpoint in RESTAdapter(card, handler).routes().items():
            app.router.routes.append(Route(REST_PATH + path, endpoint, methods=[verb]))
    return app


# --- the ASGI gate: bearer, silent hang, request log ------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_CAPTURE = 1 << 20


def _task_id_of_request(method: str | None, params: Any) -> str | None:
    if not isinstance(params, dict):
        return None
    if method in TASK_ID_METHODS:
        value = params.get("id")
    elif method in SEND_METHODS:
        message = params.get("message") or params.get("request")
        value = message.get("taskId") if isinstance(message, dict) else None
    else:
        value = params.get("taskId") or params.get("id")
    return value if isinstance(value, str) and value else None


def _rest_call(verb: str, path: str) -> tuple[bool, bool]:
    """(is a GetTask, is a send) for an HTTP+JSON request, v1.0 or v0.3 paths."""
    rest = path[len(REST_PATH) :]
    return (
        verb == "GET" and re.fullmatch(r"(/v1)?/tasks/[^/:]+", rest) is not None,
        re.fullmatch(r"(/v1)?/message:(send|stream)", rest) is not None,
    )


def _task_id_of_rest(path: str, doc: Any) -> str | None:
    m = re.search(r"/tasks/([^/:]+)", path)
    if m:
        return urllib.parse.unquote(m.group(1))
    return _task_id_of_request("SendMessage", doc)


def _task_id_of_result(body: bytes, rest: bool = False) -> str | None:
    """The task id in a send's response: plain JSON, or the first SSE `data:` event (no
    JSON-RPC envelope around either for HTTP+JSON, `rest`)."""
    text = body.decode("utf-8", "replace")
    doc: Any = None
    try:
        doc = json.loads(text)
    except ValueError:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("data:"):
                data = [line[5:]]
                if rest:
                    # 0.3.26's REST stream pretty-prints: one event, many `data:` lines.
                    data += [d[5:] for d in itertools.takewhile(lambda d: d.startswith("data:"), lines[i + 1 :])]
                try:
                    doc = json.loads("\n".join(data))
                except ValueError:
                    doc = None
                break
    result = (doc if rest else doc.get("result")) if isinstance(doc, dict) else None
    if not isinstance(result, dict):
        return None
    # v1 wraps the object: {"task": {..}}, {"message": {..}}, ...; v0.3 returns it bare.
    for key in ("task", "message", "statusUpdate", "artifactUpdate"):
        inner = result.get(key)
        if isinstance(inner, dict):
            result = inner
            break
    if result.get("kind") == "task" or ("status" in result and "taskId" not in result):
        value = result.get("id")  # a Task
    else:
        value = result.get("taskId")  # a Message or an update event
    return value if isinstance(value, str) and value else None


class TokenIssuer:
    """OAuth2 client-credentials tokens, each valid `ttl` seconds; any client is accepted."""

    def __init__(self, ttl: float, claimed_ttl: int | None) -> None:
        self.ttl = ttl
        # What `expires_in` says: longer than the real life lets a test force a 401 on a token
        # the client still believes in.
        self.claimed_ttl = claimed_ttl if claimed_ttl is not None else math.ceil(ttl)
        self.expiry: dict[str, float] = {}

    def issue(self) -> str:
        token = secrets.token_urlsafe(18)
        self.expiry[token] = time.monotonic() + self.ttl
        return token

    def valid(self, token: str) -> bool:
        return time.monotonic() < self.expiry.get(token, 0.0)


async def reply_json(send: Send, status: int, body: Any, headers: list | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body; None when the client went away first."""
    chunks: list[bytes] = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            return None
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            return b"".join(chunks)


class RpcGate:
    def __init__(
        self,
        app: Any,
        *,
        bearer: str | None,
        tokens: TokenIssuer | None,
        log_path: str | None,
        silent_ids: set[str],
        rest: bool = False,
    ) -> None:
        self.app = app
        self.rest = rest
        self.bearer = bearer
        self.tokens = tokens
        self.log_path = log_path
        self.silent_ids = silent_ids
        # Set when the server begins to shut down: hanging requests then get a 503, so
        # that shutdown is prompt and quiet instead of waiting out a timeout.
        self.stopping = asyncio.Event()

    def _log(self, at_ms: int, method: str | None, task_id: str | None, status: int | None) -> None:
        if not self.log_path:
            return
        line = json.dumps({"at_ms": at_ms, "method": method, "task_id": task_id, "status": status})
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def _authorized(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        if self.bearer is not None:
            return given == f"Bearer {self.bearer}"
        if self.tokens is not None:
            return given.startswith("Bearer ") and self.tokens.valid(given[len("Bearer ") :])
        return True

    async def _token(self, scope: Scope, receive: Receive, send: Send, at_ms: int) -> None:
        """`POST /oauth/token` (RFC 6749 client credentials, client authenticated by Basic)."""
        assert self.tokens is not None
        body = await read_body(receive)
        if body is None:
            return
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        headers = dict(scope.get("headers") or [])
        basic = headers.get(b"authorization", b"").startswith(b"Basic ")
        if scope["method"] != "POST" or form.get("grant_type") != ["client_credentials"]:
            self._log(at_ms, "token", None, 400)
            await reply_json(send, 400, {"error": "unsupported_grant_type"})
        elif not basic:
            self._log(at_ms, "token", None, 401)
            await reply_json(send, 401, {"error": "invalid_client"})
        else:
            self._log(at_ms, "token", None, 200)
            token = self.tokens.issue()
            answer = {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.tokens.claimed_ttl,
            }
            await reply_json(send, 200, answer)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        at_ms = int(time.time() * 1000)
        if scope["type"] == "http" and scope["path"] == TOKEN_PATH and self.tokens is not None:
            await self._token(scope, receive, send, at_ms)
            return
        rest = (
            self.rest
            and scope["type"] == "http"
            and (scope["path"] == REST_PATH or scope["path"].startswith(REST_PATH + "/"))
        )
        if not rest and (scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != RPC_PATH):
            await self.app(scope, receive, send)
            return

        body = await read_body(receive)
        if body is None:
            return

        method: str | None = None
        params: Any = None
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            raw_method = doc.get("method")
            method = raw_method if isinstance(raw_method, str) else None
            params = doc.get("params")
        task_id = _task_id_of_request(method, params)
        is_get, is_send = method in GET_METHODS, method in SEND_METHODS
        if rest:
            # Logged as sent: `POST /rest/message:send`, `GET /rest/v1/tasks/<id>`, ...
            method = f"{scope['method']} {scope['path']}"
            task_id = _task_id_of_rest(scope["path"], doc)
            is_get, is_send = _rest_call(scope["method"], scope["path"])

        if not self._authorized(scope):
            self._log(at_ms, method, task_id, 401)
            challenge = (b"www-authenticate", b'Bearer realm="a2a-peer-worker"')
            await reply_json(
                send, 401, {"error": "missing, invalid or expired bearer token"}, [challenge]
            )
            return

        if is_get and task_id in self.silent_ids:
            # The response never comes, so the line is written now, with no status.
            self._log(at_ms, method, task_id, None)
            await self._hang(receive, send)
            return

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        status: int | None = None
        captured = bytearray()
        logged = False

        def log_once() -> None:
            nonlocal logged, task_id
            if logged:
                return
            logged = True
            if is_send and task_id is None:
                task_id = _task_id_of_result(bytes(captured), rest)
            self._log(at_ms, method, task_id, status)

        async def watch(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = int(msg["status"])
            elif msg["type"] == "http.response.body":
                if len(captured) < MAX_CAPTURE:
                    captured.extend(msg.get("body", b""))
                if not msg.get("more_body", False):
                    # Logged before the last byte goes out: a client that has its answer
                    # (and a test reading the log right then) finds the request there.
                    log_once()
            await send(msg)

        try:
            await self.app(scope, replay, watch)
        finally:
            log_once()

    async def _hang(self, receive: Receive, send: Send) -> None:
        """Answer nothing until the client goes away; on shutdown, answer 503."""

        async def disconnected() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        waits = [
            asyncio.ensure_future(disconnected()),
            asyncio.ensure_future(self.stopping.wait()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        if self.stopping.is_set() and not waits[0].done():
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
                }
            )
            await send({"type": "http.response.body", "body": b'{"error":"shutting down"}'})


# --- serving ----------------------------------------------------------------------------


class WorkerServer(uvicorn.Server):
    """uvicorn, plus: the URL on stdout once listening; SIGTERM/SIGINT end it with exit 0;
    hanging requests are released when shutdown starts."""

    def __init__(self, config: uvicorn.Config, base_url: str, gate: RpcGate) -> None:
        super().__init__(config)
        self.base_url = base_url
        self.gate = gate

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if not self.should_exit:
            print(self.base_url, flush=True)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.gate.stopping.set()
        await super().shutdown(sockets=sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn's own version re-raises the signal after shutdown, so SIGTERM would end
        # the process with status 143; a test harness stopping us is a normal exit.
        def on_signal(sig: int, frame: FrameType | None) -> None:
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def watch_stdin(server: uvicorn.Server) -> None:
    """Ask the server to stop when stdin reaches EOF (the test that spawned us is gone)."""
    while sys.stdin.buffer.read1(65536):
        pass
    log.info("stdin closed; shutting down")
    server.should_exit = True


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Scripted A2A worker on the Python a2a-sdk.")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: OS-chosen)")
    p.add_argument(
        "--bearer", metavar="TOKEN", help="require `Authorization: Bearer TOKEN` on JSON-RPC"
    )
    p.add_argument("--bearer-env", metavar="VAR", help="like --bearer, the token read from env VAR")
    p.add_argument(
        "--oauth-ttl",
        type=float,
        metavar="SECONDS",
        help="issue OAuth2 client-credentials tokens at /oauth/token valid this long, and require them",
    )
    p.add_argument(
        "--oauth-claimed-ttl",
        type=int,
        metavar="SECONDS",
        help="the expires_in the token answer claims (default: --oauth-ttl rounded up)",
    )
    p.add_argument(
        "--log", metavar="FILE", help="append one JSON line per JSON-RPC request or token fetch"
    )
    p.add_argument(
        "--rest",
        action="store_true",
        help=f"also serve HTTP+JSON under {REST_PATH} (v1.0 and v0.3 on a2a-sdk 1.x, v0.3 on 0.3.x) "
        "and list it in the card",
    )
    p.add_argument(
        "--rest-only",
        action="store_true",
        help="serve HTTP+JSON as --rest does, and list only it in the card (a2a-sdk 1.x)",
    )
    p.add_argument(
        "--push",
        action="store_true",
        help="support push notifications with the SDK's own config store and sender (a2a-sdk 1.x)",
    )
    p.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="shut down when stdin reaches EOF",
    )
    args = p.parse_args(argv)
    if args.push and SDK_MAJOR < 1:
        p.error("--push needs a2a-sdk 1.x")
    if args.rest_only:
        if SDK_MAJOR < 1:
            p.error("--rest-only needs a2a-sdk 1.x")
        args.rest = True
    if args.bearer_env:
        if args.bearer:
            p.error("give --bearer or --bearer-env, not both")
        token = os.environ.get(args.bearer_env)
        if not token:
            p.error(f"--bearer-env: environment variable {args.bearer_env} is unset or empty")
        args.bearer = token
    if args.oauth_ttl is not None:
        if args.bearer:
            p.error("give --bearer or --oauth-ttl, not both")
        if not args.oauth_ttl > 0:
            p.error(f"--oauth-ttl {args.oauth_ttl} is not a positive number of seconds")
    elif args.oauth_claimed_ttl is not None:
        p.error("--oauth-claimed-ttl needs --oauth-ttl")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="a2a-peer-worker: %(levelname)s %(name)s: %(message)s",
    )
    # The SDK warns about its own queue teardown after every cancel; that is not news.
    logging.getLogger("a2a.server.events").setLevel(logging.ERROR)

    if args.log:
        try:
            open(args.log, "a", encoding="utf-8").close()
        except OSError as e:
            print(f"a2a-peer-worker: cannot append to --log {args.log!r}: {e}", file=sys.stderr)
            return 1

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as e:
        print(f"a2a-peer-worker: cannot bind 127.0.0.1:{args.port}: {e}", file=sys.stderr)
        return 1
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"

    silent_ids: set[str] = set()
    auth = "bearer" if args.bearer else "oauth" if args.oauth_ttl else None
    tokens = TokenIssuer(args.oauth_ttl, args.oauth_claimed_ttl) if args.oauth_ttl else None
    app = RpcGate(
        build_sdk_app(base_url, auth, silent_ids, args.rest, args.rest_only, args.push),
        bearer=args.bearer,
        tokens=tokens,
        log_path=args.log,
        silent_ids=silent_ids,
        rest=args.rest,
    )
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="off",
        # A last resort: hanging requests are answered when shutdown starts (RpcGate).
        timeout_graceful_shutdown=2,
    )
    server = WorkerServer(config, base_url, app)
    if args.exit_on_stdin_eof:
        threading.Thread(target=watch_stdin, args=(server,), daemon=True).start()
    print(f"a2a-peer-worker: a2a-sdk {SDK_VERSION} on {base_url}", file=sys.stderr, flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
