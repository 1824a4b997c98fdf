"""A fake of the Anthropic Messages API for the TCK's live-task run (tests/tck/run.sh): Claude Code
behind `a2a-mod serve` asks to run a command first, so every task waits on a permission question
(input-required) until a client answers it; then the run ends with one line of text.

A main-loop request (one that offers tools) without a tool result gets a `Bash` tool use; one
with a tool result gets the text `Hello from TCK`; a side request (no tools: titles, topics) gets
`ok`. `/v1/messages/count_tokens` gets a count, any other path `{}`. Streamed when asked, in the
Messages API's SSE order. Prints its URL on stdout once it listens on 127.0.0.1 (an OS-picked
port), and serves until killed.
"""

import itertools
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ids = itertools.count(1)


def reply_for(body):
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    answered = isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )
    if not body.get("tools"):
        return [{"type": "text", "text": "ok"}], "end_turn"
    if answered:
        return [{"type": "text", "text": "Hello from TCK"}], "end_turn"
    command = {"command": "rm -rf build", "description": "clean the build"}
    return [{"type": "tool_use", "name": "Bash", "input": command}], "tool_use"


def usage():
    return {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_json({})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            return self.send_json({"input_tokens": 100})
        if path != "/v1/messages":
            return self.send_json({})
        n = next(ids)
        blocks, stop = reply_for(body)
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                b["id"] = f"toolu_tck{n:06}{i:02}"
        model = body.get("model") or "claude-fake"
        message = {"id": f"msg_tck{n:06}", "type": "message", "role": "assistant", "model": model,
                   "stop_sequence": None}
        if not body.get("stream"):
            return self.send_json(dict(message, content=blocks, stop_reason=stop, usage=usage()))
        events = [dict(type="message_start", message=dict(message, content=[], stop_reason=None,
                                                           usage=usage()))]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": b["text"]}
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            events.append({"type": "content_block_start", "index": i, "content_block": start})
            events.append({"type": "content_block_delta", "index": i, "delta": delta})
            events.append({"type": "content_block_stop", "index": i})
        events.append({"type": "message_delta", "delta": {"stop_reason": stop,
                       "stop_sequence": None}, "usage": {"output_tokens": 10}})
        events.append({"type": "message_stop"})
        data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
