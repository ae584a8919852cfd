"""A small Chrome DevTools Protocol client over Debian's headless Chromium (tests only).

Chromium is started with a fresh profile and --remote-debugging-port=0; the port comes from the profile's
DevToolsActivePort file, the page's websocket from /json/list. Console calls, uncaught exceptions, log entries and
network requests are recorded as they arrive, so a test can assert that a page loaded cleanly and offline.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
)


def chromium_path() -> str | None:
    """Debian's chromium binary, if installed."""
    return shutil.which("chromium")


class Browser:
    """One headless Chromium with one page, driven over CDP."""

    def __init__(self, profile: Path, timeout_s: float = 60.0):
        import websocket  # websocket-client

        exe = chromium_path()
        if exe is None:
            raise RuntimeError("chromium is not installed: run `make setup` (apt-get install chromium)")
        profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.timeout_s = timeout_s
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"chromium did not open its DevTools port (exit {self.proc.returncode})")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        pages = []
        while not pages and time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            time.sleep(0.05)
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=timeout_s, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its result; events seen meanwhile are kept in `events`."""
        mid = next(self.ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout_s: float | None = None) -> dict[str, Any]:
        """Wait for the next event named `method` (one already received counts)."""
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == method:
                return msg
            self.events.append(msg)
        raise TimeoutError(method)

    def open(self, path: Path, width: int = 1400, height: int = 1000) -> float:
        """Load a local file; returns seconds until its load event."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        t0 = time.monotonic()
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - t0

    def eval(self, expression: str) -> Any:
        """Evaluate JS in the page and return its JSON value; a thrown exception fails."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"JS error: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 10.0) -> Any:
        """Poll a JS expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.eval(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.02)

    def click(self, selector: str) -> None:
        """A real mouse click (press + release) at the centre of the first element matching `selector`."""
        box = self.eval(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path) -> Path:
        """Save a PNG of the viewport."""
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path

    def problems(self) -> list[str]:
        """Console errors/warnings, uncaught exceptions and error log entries seen so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p.get('args', [])]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('exception', {}).get('description')}")
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        """URLs the page requested."""
        return [ev["params"]["request"]["url"] for ev in self.events if ev.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        """Stop the browser."""
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
