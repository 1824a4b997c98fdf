#!/usr/bin/env python3
"""An A2A client on the real Python `a2a-sdk`, for a2a-mod's peer tests of `a2a-mod serve`.

It drives a server through the SDK's own client (`ClientFactory`, `ClientConfig`, the SDK's
transports), never by hand, so a test sees what the official client makes of the server.
It runs under either venv that `tests/peers/setup.sh` makes:
  - a2a-sdk 1.x  -> v1.0 or v0.3 (the SDK's compat transports), JSON-RPC or HTTP+JSON;
  - a2a-sdk 0.3.x -> v0.3 only, JSON-RPC or HTTP+JSON.
The SDK's major version is read at import and picks the matching API below.

  client.py --card-url URL [--binding jsonrpc|rest] [--version 1|0.3] [--token T]
            [--timeout S] ( --message TEXT [--stream | --no-wait] [--context-id ID] [--task-id ID]
                          | --get TASK_ID [--history-length N] | --cancel TASK_ID | --list )

stdout: one JSON object per line. With --stream, one line per streamed event
  {"event": "task"|"message"|"status-update"|"artifact-update", "taskId", "contextId",
   "state", "text", "statusText", "append", "lastChunk", "final" (v0.3 status updates)}
then, always, exactly one last line without "event":
  {"final": true, "taskId", "contextId", "state", "text", "statusText", "statusData", "metadata",
   "protocol", "binding", "history" (when the answer was a whole task)}
("statusData": the status message's data parts as JSON, e.g. a question's structured form.)
or, when the SDK raised a JSON-RPC or HTTP error,
  {"final": true, "error": {"code", "message", "type", "httpStatus"?}}   (exit status 0).
No answer at all (connection refused, timeout): the same error line with code 0, exit 1.
Bad usage: exit 2. Everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import traceback
import urllib.parse
import uuid
from importlib.metadata import version as dist_version
from typing import Any

import httpx

SDK_VERSION = dist_version("a2a-sdk")
SDK_MAJOR = int(SDK_VERSION.split(".")[0])

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}

if SDK_MAJOR >= 1:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.errors import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
    from a2a.compat.v0_3.versions import is_legacy_version
    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        Message,
        Part,
        Role,
        SendMessageRequest,
        TaskState,
    )
    from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP, A2AError
    from google.protobuf.json_format import MessageToDict
else:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.errors import (
        A2AClientError,
        A2AClientHTTPError,
        A2AClientJSONRPCError,
        A2AClientTimeoutError,
    )
    from a2a.types import (
        Message,
        MessageSendConfiguration,
        Part,
        Role,
        Task,
        TaskArtifactUpdateEvent,
        TaskIdParams,
        TaskQueryParams,
        TaskStatusUpdateEvent,
        TextPart,
    )

    A2AError = A2AClientError  # no separate server-error hierarchy on the client in 0.3


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def normal_state(raw: str) -> str:
    """`TASK_STATE_INPUT_REQUIRED` (v1) or `input-required` (v0.3) -> `input-required`."""
    s = raw.lower().removeprefix("task_state_").replace("_", "-")
    known = {"submitted", "working", "completed", "failed", "canceled", "rejected", "input-required", "auth-required"}
    return s if s in known else "unknown"


# --- SDK objects -> plain dicts ---------------------------------------------------------
# One adapter per SDK major; the rest of the script works on these dicts:
#   task     {"taskId", "contextId", "state", "statusText", "artifacts": [[id, text]], "metadata", "history"}
#   status   {"taskId", "contextId", "state", "statusText", "final"?}
#   artifact {"taskId", "contextId", "artifactId", "text", "append", "lastChunk"}
#   message  {"taskId", "contextId", "text"}

if SDK_MAJOR >= 1:

    def parts_text(parts: Any) -> str | None:
        texts = [p.text for p in parts if p.WhichOneof("content") == "text"]
        return "".join(texts) if texts else None

    def parts_data(parts: Any) -> list[Any] | None:
        data = [MessageToDict(p.data) for p in parts if p.WhichOneof("content") == "data"]
        return data or None

    def status_of(status: Any) -> tuple[str, str | None]:
        text = parts_text(status.message.parts) if status.HasField("message") else None
        return normal_state(TaskState.Name(status.state)), text

    def status_data(status: Any) -> list[Any] | None:
        return parts_data(status.message.parts) if status.HasField("message") else None

    def task_dict(task: Any) -> dict[str, Any]:
        state, status_text = status_of(task.status)
        return {
            "taskId": task.id or None,
            "contextId": task.context_id or None,
            "state": state,
            "statusText": status_text,
            "statusData": status_data(task.status),
            "artifacts": [[a.artifact_id, parts_text(a.parts) or ""] for a in task.artifacts],
            "metadata": MessageToDict(task.metadata) if task.HasField("metadata") else None,
            "history": [
                {"role": Role.Name(m.role).lower().removeprefix("role_"), "text": parts_text(m.parts)}
                for m in task.history
            ],
        }

    def message_dict(msg: Any) -> dict[str, Any]:
        return {"taskId": msg.task_id or None, "contextId": msg.context_id or None, "text": parts_text(msg.parts)}

    def stream_event(resp: Any) -> tuple[str, dict[str, Any]]:
        """A StreamResponse as (kind, dict)."""
        which = resp.WhichOneof("payload")
        if which == "task":
            return "task", task_dict(resp.task)
        if which == "message":
            return "message", message_dict(resp.message)
        if which == "status_update":
            ev = resp.status_update
            state, text = status_of(ev.status)
            return "status-update", {
                "taskId": ev.task_id or None,
                "contextId": ev.context_id or None,
                "state": state,
                "statusText": text,
                "statusData": status_data(ev.status),
            }
        if which == "artifact_update":
            ev = resp.artifact_update
            return "artifact-update", {
                "taskId": ev.task_id or None,
                "contextId": ev.context_id or None,
                "artifactId": ev.artifact.artifact_id,
                "text": parts_text(ev.artifact.parts),
                "append": ev.append,
                "lastChunk": ev.last_chunk,
            }
        raise ValueError(f"a StreamResponse without a payload: {resp}")

else:

    def parts_text(parts: Any) -> str | None:
        texts = [p.root.text for p in (parts or []) if getattr(p.root, "kind", None) == "text"]
        return "".join(texts) if texts else None

    def status_data(status: Any) -> list[Any] | None:
        parts = status.message.parts if status.message is not None else []
        data = [p.root.data for p in parts if getattr(p.root, "kind", None) == "data"]
        return data or None

    def status_of(status: Any) -> tuple[str, str | None]:
        text = parts_text(status.message.parts) if status.message is not None else None
        return normal_state(status.state.value), text

    def task_dict(task: Any) -> dict[str, Any]:
        state, status_text = status_of(task.status)
        return {
            "taskId": task.id,
            "contextId": task.context_id,
            "state": state,
            "statusText": status_text,
            "statusData": status_data(task.status),
            "artifacts": [[a.artifact_id, parts_text(a.parts) or ""] for a in (task.artifacts or [])],
            "metadata": task.metadata or None,
            "history": [{"role": m.role.value, "text": parts_text(m.parts)} for m in (task.history or [])],
        }

    def message_dict(msg: Any) -> dict[str, Any]:
        return {"taskId": msg.task_id, "contextId": msg.context_id, "text": parts_text(msg.parts)}

    def stream_event(item: Any) -> tuple[str, dict[str, Any]]:
        """What BaseClient.send_message yields: a Message, or (task, update) with update None
        when the event was the Task itself."""
        if isinstance(item, Message):
            return "message", message_dict(item)
        task, update = item
        if update is None or isinstance(update, Task):
            return "task", task_dict(task)
        if isinstance(update, TaskStatusUpdateEvent):
            state, text = status_of(update.status)
            return "status-update", {
                "taskId": update.task_id,
                "contextId": update.context_id,
                "state": state,
                "statusText": text,
                "statusData": status_data(update.status),
                "final": update.final,
            }
        if isinstance(update, TaskArtifactUpdateEvent):
            return "artifact-update", {
                "taskId": update.task_id,
                "contextId": update.context_id,
                "artifactId": update.artifact.artifact_id,
                "text": parts_text(update.artifact.parts),
                "append": bool(update.append),
                "lastChunk": bool(update.last_chunk),
            }
        raise ValueError(f"an unexpected event: {update!r}")


# --- the result ------------------------------------------------------------------------


def final_of_task(task: dict[str, Any], where: dict[str, Any]) -> dict[str, Any]:
    return {
        "final": True,
        "taskId": task["taskId"],
        "contextId": task["contextId"],
        "state": task["state"],
        "text": "\n".join(text for _, text in task["artifacts"]),
        "statusText": task["statusText"],
        "statusData": task["statusData"],
        "metadata": task["metadata"],
        "history": task["history"],
        **where,
    }


def final_of_message(msg: dict[str, Any], where: dict[str, Any]) -> dict[str, Any]:
    # The agent answered with a bare Message: there is no task, hence no state.
    return {
        "final": True,
        "taskId": msg["taskId"],
        "contextId": msg["contextId"],
        "state": "unknown",
        "text": msg["text"] or "",
        "statusText": None,
        "metadata": None,
        "message": True,
        **where,
    }


class StreamFold:
    """Folds streamed events into the final line: the last state and status text, and every
    artifact's text rebuilt from its chunks in order (append=false replaces, true appends)."""

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.state = "unknown"
        self.status_text: str | None = None
        self.status_data: Any = None
        self.metadata: Any = None
        self.artifacts: dict[str, str] = {}  # insertion order = first appearance
        self.message: dict[str, Any] | None = None

    def add(self, kind: str, ev: dict[str, Any]) -> dict[str, Any]:
        self.task_id = ev.get("taskId") or self.task_id
        self.context_id = ev.get("contextId") or self.context_id
        line: dict[str, Any] = {"event": kind, "taskId": ev.get("taskId"), "contextId": ev.get("contextId")}
        if kind == "task":
            self.state, self.status_text = ev["state"], ev["statusText"]
            self.status_data = ev["statusData"]
            self.metadata = ev["metadata"] if ev["metadata"] is not None else self.metadata
            for aid, text in ev["artifacts"]:
                self.artifacts[aid] = text
            line.update(
                state=ev["state"],
                statusText=ev["statusText"],
                text="\n".join(t for _, t in ev["artifacts"]) or None,
            )
        elif kind == "status-update":
            self.state = ev["state"]
            self.status_text = ev["statusText"]
            self.status_data = ev["statusData"]
            line.update(state=ev["state"], text=ev["statusText"])
            if "final" in ev:
                line["final"] = ev["final"]
        elif kind == "artifact-update":
            text = ev["text"] or ""
            if ev["append"]:
                self.artifacts[ev["artifactId"]] = self.artifacts.get(ev["artifactId"], "") + text
            else:
                self.artifacts[ev["artifactId"]] = text
            line.update(text=ev["text"], append=ev["append"], lastChunk=ev["lastChunk"])
        elif kind == "message":
            self.message = ev
            line.update(text=ev["text"])
        return line

    def final(self, where: dict[str, Any]) -> dict[str, Any]:
        if self.message is not None and self.task_id is None:
            return final_of_message(self.message, where)
        return {
            "final": True,
            "taskId": self.task_id,
            "contextId": self.context_id,
            "state": self.state,
            "text": "\n".join(self.artifacts.values()),
            "statusText": self.status_text,
            "statusData": self.status_data,
            "metadata": self.metadata,
            **where,
        }


# --- errors ----------------------------------------------------------------------------


class NoInterface(Exception):
    """The card offers no interface for the binding and version asked for."""


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def error_line(exc: BaseException, binding: str) -> tuple[dict[str, Any], int]:
    """The error line for an SDK exception, and the exit status (0: the server answered)."""
    chain = _chain(exc)
    http_error = next((e for e in chain if isinstance(e, httpx.HTTPStatusError)), None)
    status = http_error.response.status_code if http_error is not None else None
    message = getattr(exc, "message", None) or str(exc)
    code: int | None = None

    if SDK_MAJOR >= 1:
        rpc_code = JSON_RPC_ERROR_CODE_MAP.get(type(exc))
        if rpc_code is None and isinstance(exc, A2AClientError):
            m = re.match(r"JSON-RPC Error (-?\d+): (.*)", str(exc), re.S)
            if m:
                rpc_code, message = int(m.group(1)), m.group(2)
        if isinstance(exc, AgentCardResolutionError) and exc.status_code is not None:
            status = exc.status_code
        # JSON-RPC errors are reported by their code; REST errors (and any HTTP error on
        # JSON-RPC, e.g. a 401) by their HTTP status. A REST error inside an SSE stream has
        # no status, only the A2A error it maps to.
        if rpc_code is not None and (binding == "JSONRPC" or status is None):
            code = rpc_code
        elif status is not None:
            code = status
    else:
        if isinstance(exc, A2AClientJSONRPCError):
            code, message = exc.error.code, exc.error.message
        elif status is not None:
            code = status
        elif isinstance(exc, A2AClientHTTPError) and not any(isinstance(e, httpx.RequestError) for e in chain):
            code = exc.status_code

    err: dict[str, Any] = {"message": message, "type": type(exc).__name__}
    if status is not None:
        err["httpStatus"] = status
    if http_error is not None:
        # The error body as the server sent it (the SDK's message may not say what it said).
        try:
            err["body"] = http_error.response.json()
        except (httpx.ResponseNotRead, ValueError):
            pass
    if code is not None:
        err["code"] = code
        return {"final": True, "error": err}, 0
    no_answer = isinstance(exc, (A2AClientTimeoutError, httpx.RequestError)) or any(
        isinstance(e, httpx.RequestError) for e in chain
    )
    err["code"] = 0
    if not no_answer:
        traceback.print_exception(exc, file=sys.stderr)
    return {"final": True, "error": err}, 1


# --- the run ---------------------------------------------------------------------------


def version_matches(iface_version: str, want: str) -> bool:
    """As the 1.x SDK reads an interface's version: an empty one is *not* v0.3 (it gets the
    v1.0 transport; @a2a-js/sdk reads it the other way)."""
    legacy = is_legacy_version(iface_version)
    return legacy if want == "0.3" else not legacy and (not iface_version or iface_version.split(".")[0] == "1")


def split_card_url(url: str) -> tuple[str, str]:
    """`http://h:p/a/b.json?x` -> (`http://h:p`, `/a/b.json?x`): the resolver joins them again."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise ValueError(f"--card-url {url!r} is not an http(s) URL")
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    return f"{u.scheme}://{u.netloc}", path


async def run(args: argparse.Namespace, http: httpx.AsyncClient) -> int:
    binding = BINDINGS[args.binding]
    origin, card_path = split_card_url(args.card_url)
    where: dict[str, Any] = {"binding": binding}

    if SDK_MAJOR >= 1:
        config = ClientConfig(
            streaming=args.stream,
            polling=args.no_wait,
            httpx_client=http,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
        )
        factory = ClientFactory(config)  # sets `A2A-Version: 1.0` on `http`, the card fetch included
        card = await A2ACardResolver(http, origin).get_agent_card(relative_card_path=card_path)
        ours = [i for i in card.supported_interfaces if i.protocol_binding == binding]
        if args.version:
            keep = [i for i in ours if version_matches(i.protocol_version, args.version)]
            if not keep:
                listed = [f"{i.protocol_binding} {i.protocol_version or '(none)'}" for i in card.supported_interfaces]
                raise NoInterface(f"the card lists no {binding} interface for version {args.version}: {listed}")
            # The SDK picks the 1.0 interface whenever the card has one; to speak another
            # version it must not see it.
            for iface in [i for i in card.supported_interfaces if i.protocol_binding == binding and i not in keep]:
                card.supported_interfaces.remove(iface)
            ours = keep
        if not ours:
            raise NoInterface(f"the card lists no {binding} interface")
        # The interface the factory will pick, by its own rule (1.0 first, then newer, then 0.3).
        chosen = ClientFactory._find_best_interface(list(card.supported_interfaces), protocol_bindings=[binding])
        where["protocol"] = "0.3" if chosen is not None and is_legacy_version(chosen.protocol_version) else "1.0"
        client = factory.create(card)
    else:
        config = ClientConfig(
            streaming=args.stream,
            polling=args.no_wait,
            httpx_client=http,
            supported_transports=[binding],
            use_client_preference=True,
        )
        card = await A2ACardResolver(http, origin).get_agent_card(relative_card_path=card_path)
        offered = {card.preferred_transport or "JSONRPC"} | {i.transport for i in card.additional_interfaces or []}
        if binding not in offered:
            raise NoInterface(f"the card lists no {binding} interface (it has {sorted(offered)})")
        where["protocol"] = "0.3"
        client = ClientFactory(config).create(card)

    try:
        if args.get:
            task = await get_task(client, args.get, args.history_length)
            emit(final_of_task(task_dict(task), where))
        elif args.cancel:
            task = await cancel_task(client, args.cancel)
            emit(final_of_task(task_dict(task), where))
        elif args.list:
            tasks = await list_tasks(client, args.history_length)
            out = []
            for t in tasks:
                d = task_dict(t)
                emit({"event": "task", "taskId": d["taskId"], "contextId": d["contextId"], "state": d["state"],
                      "statusText": d["statusText"], "text": "\n".join(x for _, x in d["artifacts"]) or None})
                out.append({"taskId": d["taskId"], "contextId": d["contextId"], "state": d["state"]})
            emit({"final": True, "tasks": out, **where})
        else:
            await send(client, args, where)
    finally:
        await client.close()
    return 0


async def send(client: Any, args: argparse.Namespace, where: dict[str, Any]) -> None:
    fold = StreamFold()
    last: tuple[str, dict[str, Any]] | None = None
    if SDK_MAJOR >= 1:
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=args.message)],
            context_id=args.context_id or "",
            task_id=args.task_id or "",
        )
        request = SendMessageRequest(message=message)
        if args.history_length is not None:
            request.configuration.history_length = args.history_length
        stream = client.send_message(request)
    else:
        message = Message(
            role=Role.user,
            message_id=str(uuid.uuid4()),
            parts=[Part(root=TextPart(text=args.message))],
            context_id=args.context_id,
            task_id=args.task_id,
        )
        configuration = None
        if args.history_length is not None:
            configuration = MessageSendConfiguration(history_length=args.history_length)
        stream = client.send_message(message, configuration=configuration)

    async for item in stream:
        last = stream_event(item)
        if args.stream:
            emit(fold.add(*last))
    if args.stream:
        emit(fold.final(where))
    elif last is None:
        raise ValueError("the send returned nothing")
    elif last[0] == "task":
        emit(final_of_task(last[1], where))
    else:
        emit(final_of_message(last[1], where))


async def get_task(client: Any, task_id: str, history_length: int | None) -> Any:
    if SDK_MAJOR >= 1:
        req = GetTaskRequest(id=task_id)
        if history_length is not None:
            req.history_length = history_length
        return await client.get_task(req)
    return await client.get_task(TaskQueryParams(id=task_id, history_length=history_length))


async def cancel_task(client: Any, task_id: str) -> Any:
    if SDK_MAJOR >= 1:
        return await client.cancel_task(CancelTaskRequest(id=task_id))
    return await client.cancel_task(TaskIdParams(id=task_id))


async def list_tasks(client: Any, history_length: int | None) -> list[Any]:
    req = ListTasksRequest()
    if history_length is not None:
        req.history_length = history_length
    tasks: list[Any] = []
    while True:
        resp = await client.list_tasks(req)
        tasks.extend(resp.tasks)
        if not resp.next_page_token:
            return tasks
        req.page_token = resp.next_page_token


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=f"A2A client on the Python a2a-sdk ({SDK_VERSION}).")
    p.add_argument("--card-url", required=True, help="the agent card's URL")
    p.add_argument("--binding", choices=sorted(BINDINGS), default="jsonrpc", help="the card's transport to use")
    p.add_argument("--version", choices=["1", "0.3"], help="protocol version (default: what the SDK picks)")
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=False,
                   help="SendStreamingMessage instead of a blocking SendMessage")
    p.add_argument("--token", help="sent as `Authorization: Bearer TOKEN` on every request")
    p.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (default 60)")
    p.add_argument("--message", help="the text to send")
    p.add_argument("--context-id", help="the contextId of the message")
    p.add_argument("--task-id", help="the taskId of the message (a follow-up)")
    p.add_argument("--history-length", type=int, help="historyLength for --get, --list and sends")
    p.add_argument("--no-wait", action="store_true", help="non-blocking send: print the task at once")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--get", metavar="TASK_ID", help="GetTask instead of sending")
    what.add_argument("--cancel", metavar="TASK_ID", help="CancelTask instead of sending")
    what.add_argument("--list", action="store_true", help="ListTasks instead of sending (v1 only)")
    args = p.parse_args(argv)
    sending = not (args.get or args.cancel or args.list)
    if sending and args.message is None:
        p.error("give --message TEXT, or one of --get, --cancel, --list")
    if not sending and (args.message is not None or args.stream or args.no_wait or args.task_id or args.context_id):
        p.error("--message, --stream, --no-wait, --task-id and --context-id go with a send only")
    if args.stream and args.no_wait:
        p.error("--no-wait is a non-blocking SendMessage; it does not go with --stream")
    if args.list and (SDK_MAJOR < 1 or args.version == "0.3"):
        p.error(f"--list: ListTasks has no v0.3 binding (a2a-sdk {SDK_VERSION} with --version "
                f"{args.version or '0.3'} cannot send it)")
    if SDK_MAJOR < 1 and args.version == "1":
        p.error(f"a2a-sdk {SDK_VERSION} speaks v0.3 only; --version 1 needs the 1.x venv")
    try:
        split_card_url(args.card_url)
    except ValueError as e:
        p.error(str(e))
    return args


async def amain(args: argparse.Namespace) -> int:
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    async with httpx.AsyncClient(headers=headers, timeout=args.timeout) as http:
        try:
            return await run(args, http)
        except NoInterface as e:
            # The card does not offer what was asked for: the server answered, with a card.
            emit({"final": True, "error": {"code": 0, "message": str(e), "type": "NoMatchingInterface"}})
            return 1
        except Exception as e:  # noqa: BLE001 - every SDK error becomes the error line
            line, status = error_line(e, BINDINGS[args.binding])
            emit(line)
            return status


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
