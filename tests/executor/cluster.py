"""A real two-node Ray cluster on this machine, started with `ray start` (head + one worker node), for the tests.

Each node is its own raylet with its own resources (a custom resource names it) and uses the local Docker engine.
Ports are free ports on 127.0.0.1 and the session directory is private, so the cluster never collides with another
one on the machine; teardown kills exactly the processes whose command line names that directory.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _agent_ports() -> list[str]:
    # Agents default to fixed ports; two nodes on one machine need their own.
    return [
        *("--dashboard-agent-listen-port", str(_free_port())),
        *("--dashboard-agent-grpc-port", str(_free_port())),
        *("--runtime-env-agent-port", str(_free_port())),
        *("--metrics-export-port", str(_free_port())),
    ]


class Cluster:
    """`address` of the head; `node_ids` of the head and the worker node; `kill_node(b)` loses a node."""

    def __init__(self, cpus_per_node: float = 2, memory_gb: float = 8):
        self.dir = tempfile.mkdtemp(prefix="swr-", dir="/tmp")  # short: unix socket paths are limited to 107 bytes
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus, self.memory = cpus_per_node, int(memory_gb * 2**30)
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.node_ids: dict[str, str] = {}

    def _ray_start(self, name: str, *args: str) -> None:
        cmd = [
            RAY,
            "start",
            "--disable-usage-stats",
            "--num-cpus",
            str(self.cpus),
            "--memory",
            str(self.memory),
            "--object-store-memory",
            str(100 * 2**20),
            "--resources",
            json.dumps({f"swerl_test_{name}": 1}),
            *_agent_ports(),
            *args,
        ]
        res = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=180, start_new_session=True)
        if res.returncode != 0:
            raise RuntimeError(f"ray start ({name}) failed: {res.stderr[-2000:]}")

    def start(self) -> Cluster:
        head = ["--head", "--port", str(self.port), "--include-dashboard", "false", "--temp-dir", self.dir]
        self._ray_start("a", *head)
        self.add_node("b")
        return self

    def add_node(self, name: str) -> None:
        """Start (or restart) the worker node `name` and wait until the head lists it."""
        self._ray_start(name, "--address", self.address)
        deadline = time.time() + 60
        while time.time() < deadline:
            nodes = self.nodes()
            for n in nodes:
                for key in n["Resources"]:
                    if key.startswith("swerl_test_"):
                        self.node_ids[key.removeprefix("swerl_test_")] = n["NodeID"]
            if name in self.node_ids and any(n["NodeID"] == self.node_ids[name] for n in nodes):
                return
            time.sleep(0.5)
        raise RuntimeError(f"node {name} did not join")

    def nodes(self) -> list[dict]:
        """Live nodes, asked from a separate driver process (the test process never joins the cluster)."""
        code = (
            "import json,ray;ray.init(address=%r,logging_level='ERROR');"
            "print(json.dumps([n for n in ray.nodes() if n['Alive']]))"
        )
        res = subprocess.run(
            [sys.executable, "-c", code % self.address], env=self.env, capture_output=True, text=True, timeout=120
        )
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-2000:])
        return json.loads(res.stdout.strip().splitlines()[-1])

    def kill_node(self, name: str) -> None:
        """SIGKILL the node's raylet (its workers die with it): the node is lost mid-run."""
        node_id = self.node_ids[name]
        for pid, cmd in self._processes():
            if "/raylet " in cmd + " " and f"--node_id={node_id}" in cmd:
                os.kill(pid, signal.SIGKILL)

    def _processes(self) -> list[tuple[int, str]]:
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if self.dir in cmd:
                out.append((int(entry.name), cmd))
        return out

    def stop(self) -> None:
        """Kill every process of this cluster (found by its private session directory)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            procs = self._processes()
            for pid, _ in procs:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + 10
            while procs and time.time() < deadline and self._processes():
                time.sleep(0.2)
        subprocess.run(["rm", "-rf", self.dir], check=False)
