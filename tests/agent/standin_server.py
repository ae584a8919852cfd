"""A stand-in policy server (the async bench, the async learning test): the tiny model's real token ids and logprobs,
with `scripted=True` (the bench) a scripted agent whose
turn count per episode follows a long-tailed distribution, per-turn latency drawn from a lognormal, and the vLLM
routes the RL loop uses (weight reload, prefix-cache reset, version, pause/resume in drain mode, prompt logprobs
for the probe check), so `policy/refresh.py` pushes weights into it exactly as into vLLM.

Turn count of an episode (seeded by the request's seed and task): T = min(t_max, 1 + floor(Pareto(alpha))), alpha
1.1 by default: most episodes submit within a few turns, a few run to t_max (agent episodes are long-tailed; the
paper's Figure of turn counts has this shape: most trajectories end well before T_max, a tail reaches it). Half the
episodes run the toy task's fix before submitting, so groups have mixed rewards. The server counts the time it has
at least one request in flight, for the sampler's idle share. With `scripted=False` the model samples freely (a
real policy whose weights the loop updates).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from typing import Any

from tests.agent.server import TinyServer

FIX = "sed -i '/upper/d' greet/core.py"


def _episode_key(messages: list[dict[str, Any]], body: dict[str, Any]) -> int:
    """A seed for one episode: its request seed and its whole task prompt (tasks of one pass share the seed)."""
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    return int.from_bytes(hashlib.sha256(f"{body.get('seed')}|{first_user}".encode()).digest()[:8], "big")


def _block(cmd: str, note: str) -> str:
    return f"{note}\n```command\n{cmd}\n```"


class StandInServer(TinyServer):
    def __init__(
        self, model_path: str, *, t_max: int = 12, latency_s: float = 0.3, alpha: float = 1.1, scripted: bool = True
    ):
        super().__init__(model_path)
        self.scripted = scripted
        self.t_max, self.latency_s, self.alpha = t_max, latency_s, alpha
        self.version = model_path
        self.cond = threading.Condition()
        self.paused = False
        self.inflight = 0
        self.busy_s = 0.0
        self._busy_since: float | None = None
        self.turn_counts: list[int] = []

    # ---------------------------------------------------------------------------------------------- the agent
    def _episode(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> random.Random:
        return random.Random(_episode_key(messages, body))

    def scripted_reply(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> str | None:
        if not self.scripted:
            return None
        rng = self._episode(messages, body)
        turns = min(self.t_max, 1 + int(rng.paretovariate(self.alpha)))
        solve = rng.random() < 0.5
        k = sum(1 for m in messages if m["role"] == "assistant")
        if k == 0:
            self.turn_counts.append(turns)
        if k >= turns - 1:
            return _block("submit", "Done.")
        if solve and k == turns - 2:
            return _block(FIX, "Removing the line.")
        return _block("ls", "Looking around.")

    # ---------------------------------------------------------------------------------------------- HTTP
    def respond(self, path: str, body: Any) -> tuple[int, bytes]:
        if body is None:
            return self._get(path)
        if path.endswith("/chat/completions"):
            return self._chat(path, body)
        route = path.split("?")[0]
        if route == "/pause":
            with self.cond:
                self.paused = True
                self.cond.wait_for(lambda: self.inflight == 0)  # drain: requests in flight finish first
            return 200, b'{"status": "paused"}'
        if route == "/resume":
            with self.cond:
                self.paused = False
                self.cond.notify_all()
            return 200, b'{"status": "resumed"}'
        if route == "/collective_rpc":
            self._reload(body["kwargs"]["weights_path"])
            return 200, b"{}"
        if route == "/reset_prefix_cache":
            return 200, b'{"success": true}'
        if route == "/update_weight_version":
            self.version = body["new_version"]
            return 200, b'{"success": true}'
        if route.endswith("/completions"):
            return 200, json.dumps(self._prompt_logprobs(body["prompt"])).encode()
        return 404, b'{"error": {"message": "not found"}}'

    def _get(self, path: str) -> tuple[int, bytes]:
        if path == "/weight_info":
            return 200, json.dumps({"weight_version": self.version}).encode()
        if path.endswith("/models"):
            return 200, b'{"data": [{"id": "swerl-policy"}]}'
        return 200, b"{}"

    def _chat(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        with self.cond:
            self.cond.wait_for(lambda: not self.paused)
            if self.inflight == 0:
                self._busy_since = time.perf_counter()
            self.inflight += 1
        try:
            if self.latency_s > 0:
                rng = random.Random(_episode_key(body["messages"], body) + len(body["messages"]))
                time.sleep(self.latency_s * rng.lognormvariate(0.0, 0.6))
            return super().respond(path, body)
        finally:
            with self.cond:
                self.inflight -= 1
                if self.inflight == 0 and self._busy_since is not None:
                    self.busy_s += time.perf_counter() - self._busy_since
                self.cond.notify_all()

    def _reload(self, ckpt: str) -> None:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(ckpt, dtype=self.torch.float32).eval()
        with self.lock:
            self.model = model

    def _prompt_logprobs(self, ids: list[int]) -> dict[str, Any]:
        torch = self.torch
        with self.lock, torch.no_grad():
            logits = self.model(torch.tensor([ids])).logits[0, :-1].float()
        lps = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
        steps: list[Any] = [None] + [{str(t): {"logprob": lp}} for t, lp in zip(ids[1:], lps, strict=True)]
        return {"choices": [{"text": "", "prompt_logprobs": steps}]}

    def reset_busy(self) -> None:
        with self.cond:
            self.busy_s, self._busy_since = 0.0, (time.perf_counter() if self.inflight else None)
