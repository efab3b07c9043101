"""A real HTTP server on 127.0.0.1 that replays chat-completion replies in the OpenAI wire format, for tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm"


@dataclass
class Reply:
    """One scripted answer: HTTP status, JSON body (or raw text), delay before answering, extra headers."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def recorded(name: str) -> Reply:
    """A reply recorded in ``tests/fixtures/llm/NAME.json`` (status and body exactly as the server sent them)."""
    data = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return Reply(status=int(data["status"]), body=data["response"])


def completion(content: str, *, finish: str = "stop", prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    """A hand-written successful reply in the wire format (for transport tests, not a model's words)."""
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "replay",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


@dataclass
class Script:
    """The queue of replies (the last one repeats when the queue runs out) and what was received."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0

    def next_reply(self) -> Reply:
        with self.lock:
            if not self.replies:
                return completion('{"memories": []}')
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class _Handler(BaseHTTPRequestHandler):
    script: Script

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        script = self.script
        with script.lock:
            script.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            script.in_flight += 1
            script.max_in_flight = max(script.max_in_flight, script.in_flight)
        try:
            reply = script.next_reply()
            time.sleep(reply.delay)
            payload = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            pass
        finally:
            with script.lock:
                script.in_flight -= 1


@contextmanager
def replay_server(*replies: Reply) -> Iterator[tuple[str, Script]]:
    """Serve ``replies`` in order on a free port; yields the API root (``http://127.0.0.1:PORT/v1``) and script."""
    script = Script(replies=list(replies))
    handler = type("ReplayHandler", (_Handler,), {"script": script})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()
