"""`--request-timeout-s` is a total deadline per policy request, not an idle limit: a server that sends its reply
one byte per second (headers at once, then a trickle) makes each request fail at the deadline, and the episode is
an `error` record (docs/reliability.md, issue 43). Before, the first turn's /tokenize probe had only httpx's 30 s
idle limit, which the trickle never reached: `swerl collect` waited forever."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES


class _Drip(BaseHTTPRequestHandler):
    paths: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _drip(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "10000")
        self.end_headers()
        try:
            for _ in range(10000):  # never a whole reply in any deadline a test waits for
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(1.0)
        except OSError:
            pass  # the client gave up: what the test wants

    do_POST = do_GET = _drip  # http.server's names


@pytest.fixture
def drip_url() -> Iterator[str]:
    _Drip.paths = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Drip)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_server_that_drips_one_byte_per_second_fails_each_request_at_its_deadline(
    drip_url: str, tmp_path: Path
) -> None:
    timeout_s = 2.0
    (tmp_path / "repos").mkdir()
    cmd = [sys.executable, "-m", "swerl_cli", "collect", str(EXAMPLES / "toy-tasks.jsonl"), "--base-url", drip_url,
           "--model", "m", "--request-timeout-s", str(timeout_s), "--max-retries", "0", "--sandbox", "local",
           "--repo-dir", str(tmp_path / "repos")]  # fmt: skip
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    wall = time.monotonic() - t0
    assert res.returncode == 0, res.stderr[-2000:]  # a failed episode is a record, the run goes on (exit 0)
    (rec,) = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert rec["exit_status"] == "error"
    assert rec["error"].startswith("PolicyError: gave up after 1 attempts: "), rec["error"]
    assert rec["error"].endswith("/v1/chat/completions: TimeoutError"), rec["error"]
    # the first turn sends two requests, the /tokenize probe and the completion, each ending at its deadline
    assert _Drip.paths == ["/tokenize", "/v1/chat/completions"]
    assert 2 * timeout_s - 0.5 <= rec["stats"]["policy_s"] <= 2 * timeout_s + 2.0, rec["stats"]
    assert wall < 30, wall
    assert "1 episodes: 1 error" in res.stderr
