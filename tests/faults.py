"""A scripted OpenAI-compatible server that injects faults: HTTP 503, garbage, empty and wrongly shaped bodies.

Turn n of every conversation (n = assistant messages already in the request) is answered with `script[n]`. A
request fails when the next entry of `fail_next` says so, or with probability `fail_share` (kinds drawn in turn).
Each injected fault is counted by kind in `injected`. Only chat completions are answered (or failed); any other
route, such as the policy's `/tokenize` probe, gets 404 as from a plain OpenAI-compatible server.
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

from tests.http_server import JsonServer

FAULTS = {
    "http_503": (503, b'{"error": {"message": "injected overload"}}'),
    "garbage": (200, b"<html>proxy error</html>"),
    "empty": (200, b""),
    "message_not_object": (200, b'{"choices": [{"message": "hi"}]}'),
    "content_not_string": (200, b'{"choices": [{"message": {"role": "assistant", "content": 7}}]}'),
    "no_choices": (200, b'{"choices": []}'),
}


class FaultyServer(JsonServer):
    """Serve on 127.0.0.1:<free port>; `base_url` ends in /v1. Use as a context manager."""

    def __init__(self, script: list[str], *, fail_share: float = 0.0, seed: int = 0):
        self.script = script
        self.fail_share = fail_share
        self.fail_next: list[str] = []
        self.rng = random.Random(seed)
        self.injected: dict[str, int] = {}
        self.fault_times: list[float] = []  # time.monotonic() of each injected fault
        self.served = 0
        self.lock = threading.Lock()
        super().__init__()

    def respond(self, path: str, body: Any) -> tuple[int, bytes]:
        if not path.endswith("/chat/completions"):  # e.g. the policy's /tokenize probe: a plain OpenAI server
            return 404, b'{"error": {"message": "not found"}}'
        return self.answer(body)

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        with self.lock:
            kind = self.fail_next.pop(0) if self.fail_next else None
            if kind is None and self.fail_share and self.rng.random() < self.fail_share:
                kind = list(FAULTS)[sum(self.injected.values()) % len(FAULTS)]
            if kind is not None:
                self.injected[kind] = self.injected.get(kind, 0) + 1
                self.fault_times.append(time.monotonic())
                return FAULTS[kind]
            self.served += 1
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        text = self.script[min(turn, len(self.script) - 1)]
        reply = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
        return 200, json.dumps(reply).encode()
