#!/usr/bin/env python3
"""Walks every script verb through each real peer, as a2a-mod's client speaks to it.

Usage: tests/peers/smoke.py [PEERS_DIR]   (default $A2A_PEERS_DIR or <repo>/target/peers)

Three walks: v1 JSON-RPC and v0.3 JSON-RPC against the a2a-sdk 1.x worker, and v0.3 against
the 0.3 worker. Each starts worker.py, sends with the non-blocking option, polls with
historyLength 0, answers an input-required task, cancels live tasks, checks that `silent`
hangs and that --bearer gives 401, then reads the --log file. Stdlib only; exits non-zero on
the first mismatch. This is the by-hand check of tests/peers/README.md, made repeatable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOKEN = "smoke-token"


@dataclass
class Dialect:
    name: str
    v1: bool

    def headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        if self.v1:
            h["A2A-Version"] = "1.0"
        return h

    def send_params(self, text: str, task_id: str | None) -> tuple[str, dict[str, Any]]:
        mid = str(uuid.uuid4())
        if self.v1:
            msg: dict[str, Any] = {"messageId": mid, "role": "ROLE_USER", "parts": [{"text": text}]}
            conf = {"returnImmediately": True, "historyLength": 0}
            method = "SendMessage"
        else:
            msg = {
                "kind": "message",
                "messageId": mid,
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
            }
            conf = {"blocking": False, "historyLength": 0}
            method = "message/send"
        if task_id:
            msg["taskId"] = task_id
        return method, {"message": msg, "configuration": conf}

    def task_of_send(self, result: dict[str, Any]) -> dict[str, Any]:
        return result["task"] if self.v1 else result

    def state(self, task: dict[str, Any]) -> str:
        """The state in a2a-mod's spelling."""
        raw = task["status"]["state"]
        if raw.startswith("TASK_STATE_"):
            raw = raw.removeprefix("TASK_STATE_").lower().replace("_", "-")
        return "canceled" if raw == "cancelled" else raw

    def get(self) -> str:
        return "GetTask" if self.v1 else "tasks/get"

    def cancel(self) -> str:
        return "CancelTask" if self.v1 else "tasks/cancel"


V1 = Dialect("v1", True)
V03 = Dialect("v0.3", False)


class Peer:
    def __init__(self, python: Path, log: Path) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(HERE / "worker.py"), "--bearer", TOKEN, "--log", str(log)],
            stdout=subprocess.PIPE,
            stdin=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"smoke: worker did not print its URL (got {self.url!r})")

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=10)


def rpc(peer: Peer, d: Dialect, method: str, params: dict[str, Any], timeout: float = 5) -> Any:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(peer.url, data=body, headers=d.headers(), method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        doc = json.load(resp)
    if "error" in doc:
        return doc["error"]
    return doc["result"]


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"smoke: FAILED: {what}")


def poll(peer: Peer, d: Dialect, task_id: str, until: set[str], limit: float = 10) -> dict:
    deadline = time.monotonic() + limit
    while True:
        task = rpc(peer, d, d.get(), {"id": task_id, "historyLength": 0})
        if d.state(task) in until or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def text_of(task: dict[str, Any]) -> str:
    parts = [p for a in task.get("artifacts", []) for p in a.get("parts", [])]
    return "\n".join(p["text"] for p in parts if "text" in p)


def status_text(task: dict[str, Any]) -> str:
    msg = task["status"].get("message") or {}
    return "\n".join(p["text"] for p in msg.get("parts", []) if "text" in p)


def walk(label: str, peer: Peer, d: Dialect) -> list[str]:
    notes: list[str] = []

    def send(text: str, task_id: str | None = None) -> dict[str, Any]:
        method, params = d.send_params(text, task_id)
        return d.task_of_send(rpc(peer, d, method, params))

    first = send("hello there")
    notes.append(f"first state of a non-blocking send: {first['status']['state']}")
    notes.append(f"history in a send answer with historyLength 0: {len(first.get('history', []))}")
    done = poll(peer, d, first["id"], {"completed"})
    check(text_of(done) == "hello there", f"{label} echo: {done}")
    notes.append(f"history in GetTask with historyLength 0: {len(done.get('history', []))}")

    t = send("slow 0.5 build it")
    mid = rpc(peer, d, d.get(), {"id": t["id"], "historyLength": 0})
    check(d.state(mid) in {"submitted", "working"}, f"{label} slow is live: {mid}")
    done = poll(peer, d, t["id"], {"completed"})
    check(text_of(done) == "done: build it", f"{label} slow result: {done}")

    t = send("ask Which colour?")
    asked = poll(peer, d, t["id"], {"input-required"})
    check(d.state(asked) == "input-required", f"{label} ask: {asked}")
    check(status_text(asked) == "Which colour?", f"{label} ask question: {asked}")
    answer = send("blue", t["id"])
    notes.append(f"state in the answer to a follow-up send: {answer['status']['state']}")
    done = poll(peer, d, t["id"], {"completed"})
    check(text_of(done) == "you said: blue", f"{label} follow-up: {done}")

    for script, state, why in [
        ("fail out of disk", "failed", "out of disk"),
        ("reject", "rejected", "rejected"),
        ("auth", "auth-required", "authorization required"),
    ]:
        t = send(script)
        ended = poll(peer, d, t["id"], {state})
        check(d.state(ended) == state, f"{label} {script}: {ended}")
        check(status_text(ended) == why, f"{label} {script} message: {ended}")
        notes.append(f"{script.split()[0]} -> {ended['status']['state']}")

    for script in ("slow 30 long", "ask Q?", "silent"):
        t = send(script)
        time.sleep(0.2)
        canceled = rpc(peer, d, d.cancel(), {"id": t["id"]})
        check(d.state(canceled) == "canceled", f"{label} cancel {script}: {canceled}")
        notes.append(f"cancel {script.split()[0]} -> {canceled['status']['state']}")
    again = rpc(peer, d, d.cancel(), {"id": t["id"]})
    notes.append(f"cancel of a canceled task -> error {again.get('code')}")
    missing = rpc(peer, d, d.get(), {"id": "no-such-task"})
    notes.append(f"GetTask on an unknown id -> error {missing.get('code')}")

    t = send("silent")
    try:
        rpc(peer, d, d.get(), {"id": t["id"], "historyLength": 0}, timeout=1)
        check(False, f"{label} silent GetTask answered")
    except TimeoutError:
        notes.append("silent GetTask: no answer within 1 s")

    req = urllib.request.Request(
        peer.url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        urllib.request.urlopen(req, timeout=5)
        check(False, f"{label}: a request without a token was served")
    except urllib.error.HTTPError as e:
        check(e.code == 401, f"{label}: no token gave HTTP {e.code}")
    with urllib.request.urlopen(f"{peer.url}/.well-known/agent-card.json", timeout=5) as r:
        check(r.status == 200, f"{label}: card without a token gave HTTP {r.status}")
    return notes


def main() -> int:
    default = os.environ.get("A2A_PEERS_DIR") or str(HERE.parent.parent / "target" / "peers")
    peers = Path(sys.argv[1] if len(sys.argv) > 1 else default)
    failures = 0
    for venv, dialects in (("venv-v1", (V1, V03)), ("venv-v03", (V03,))):
        python = peers / venv / "bin" / "python"
        if not python.exists():
            print(f"smoke: {python} missing — run tests/peers/setup.sh", file=sys.stderr)
            return 2
        for d in dialects:
            label = f"{venv} / {d.name}"
            with tempfile.TemporaryDirectory() as tmp:
                log = Path(tmp) / "requests.jsonl"
                peer = Peer(python, log)
                try:
                    notes = walk(label, peer, d)
                except SystemExit as e:
                    print(e, file=sys.stderr)
                    failures += 1
                    notes = []
                finally:
                    rc = peer.stop()
                lines = [json.loads(x) for x in log.read_text().splitlines()]
                methods = sorted({str(x["method"]) for x in lines})
                statuses = sorted({str(x["status"]) for x in lines})
            print(f"== {label}: {'ok' if notes else 'FAILED'} (exit on SIGTERM: {rc})")
            for n in notes:
                print(f"   {n}")
            print(f"   log: {len(lines)} lines, methods {methods}, statuses {statuses}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
