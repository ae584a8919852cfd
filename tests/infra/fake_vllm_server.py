"""A stand-in for `python -m vllm.entrypoints.openai.api_server` with only what scripts/rl-vllm.sh talks to:
GET /health, POST /update_weight_version, GET /weight_info. Started with the same flags as the real server."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION: dict[str, str | None] = {"v": None}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # http.server's name
        if self.path == "/weight_info":
            self._send({"weight_version": VERSION["v"]})
        else:
            self._send({})

    def do_POST(self) -> None:  # http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/update_weight_version":
            VERSION["v"] = body.get("new_version")
        self._send({"success": True})


def main() -> None:
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
