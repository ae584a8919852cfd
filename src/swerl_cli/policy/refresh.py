"""Refresh the weights of a running vLLM server in place, and prove it serves them (the RL loop's reload step).

    python -m swerl_cli.policy.refresh reload URL CKPT [--tol 1e-4] [--wake] [--drain]
    python -m swerl_cli.policy.refresh probe  URL CKPT [--tol 1e-4]

The server must run with `VLLM_SERVER_DEV_MODE=1` (vLLM's RL/dev routes). `reload`:

1. (`--wake`) `POST /wake_up` when the server was put to sleep to free the GPU for the update;
   (`--drain`, the async loop) `POST /pause?mode=wait`: requests in flight finish on the old weights and new ones
   wait, so no turn is sampled by two versions; `POST /resume` once the version is set (also on failure);
2. `POST /collective_rpc {"method": "swerl_reload_weights", "kwargs": {"weights_path": CKPT}}`: every worker reloads
   the checkpoint directory in place (no restart, no recompilation) and reprocesses tied output heads (the server
   runs with `--worker-extension-cls swerl_cli.policy.vllm_worker.WeightRefresh`, as scripts/rl-vllm.sh starts it;
   a server without the extension gets vLLM's own `reload_weights`, which leaves a tied head stale on CPU);
3. `POST /reset_prefix_cache`: vLLM keeps cached KV across a weight update, so without it a prompt that hits the
   cache is served with KV computed by the old weights;
4. `POST /update_weight_version {"new_version": CKPT}` (visible at `GET /weight_info`);
5. the probe check: the server's logprobs of a fixed probe sequence (prompt logprobs of `/v1/completions`) must
   equal a transformers fp32 forward pass of CKPT to within `--tol` (max absolute difference). When they do not,
   the command fails (exit 1): the loop must not collect with stale weights.

It prints one JSON line: the timings, the probe gap, and the gap the server had before the reload.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import httpx

from swerl_cli.core.errors import PolicyError

PROBE_TEXT = (
    "<|im_start|>user\nparse() drops the last field of a CSV line.<|im_end|>\n<|im_start|>assistant\n"
    "Let me look at the parser.\n```command\ngrep -rn 'def parse' .\n```<|im_end|>\n"
)
PROBE_TOKENS = 48


def _post(client: httpx.Client, url: str, **kwargs: Any) -> Any:
    try:
        resp = client.post(url, **kwargs)
    except httpx.HTTPError as e:
        raise PolicyError(f"{url}: {type(e).__name__}: {e}") from None
    if resp.status_code != 200:
        hint = " (is the server running with VLLM_SERVER_DEV_MODE=1?)" if resp.status_code == 404 else ""
        raise PolicyError(f"{url}: HTTP {resp.status_code}{hint}: {resp.text[:300]}")
    return resp.json() if resp.content else None


def probe_ids(ckpt: str) -> list[int]:
    """The fixed probe sequence, tokenised by the checkpoint's tokenizer."""
    from swerl_cli.core.errors import PolicyError
    from swerl_cli.core.model_dir import load_tokenizer

    return list(load_tokenizer(ckpt, PolicyError).encode(PROBE_TEXT, add_special_tokens=False))[:PROBE_TOKENS]


def trainer_logprobs(ckpt: str, ids: list[int]) -> list[float]:
    """log p(ids[i] | ids[:i]) for i >= 1 from a transformers fp32 forward pass of `ckpt` (what the trainer sees)."""
    from swerl_cli.policy.hf import forward_logprobs

    return forward_logprobs(ckpt, ids)


def served_model(client: httpx.Client, root: str) -> str:
    """The name the server serves (the first of GET /v1/models)."""
    try:
        data = client.get(f"{root}/v1/models").json()
        return str(data["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as e:
        raise PolicyError(f"{root}/v1/models: cannot read the served model: {e}") from None


def server_logprobs(client: httpx.Client, root: str, ids: list[int]) -> list[float]:
    """The server's prompt logprobs of `ids` (positions 1..n-1), from one /v1/completions request."""
    body = {
        "model": served_model(client, root),
        "prompt": ids,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": 0,
    }
    data = _post(client, f"{root}/v1/completions", json=body)
    steps = data["choices"][0].get("prompt_logprobs") or data.get("prompt_logprobs")
    if not steps or len(steps) != len(ids):
        raise PolicyError(f"{root}: no prompt_logprobs for the probe in the completion response")
    return [float(step[str(t)]["logprob"]) for step, t in zip(steps[1:], ids[1:], strict=True)]


def gap(a: list[float], b: list[float]) -> float:
    """Max absolute difference of two logprob lists."""
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def probe(root: str, ckpt: str, *, client: httpx.Client | None = None) -> float:
    """Max |server - trainer| logprob over the probe sequence for checkpoint `ckpt`."""
    ids = probe_ids(ckpt)
    with client or httpx.Client(timeout=600) as c:
        return gap(server_logprobs(c, root, ids), trainer_logprobs(ckpt, ids))


def reload(root: str, ckpt: str, *, tol: float = 1e-4, wake: bool = False, drain: bool = False) -> dict[str, Any]:
    """Reload `ckpt` into the running server, reset its prefix cache, and check the probe; returns the report."""
    root = root.rstrip("/").removesuffix("/v1")
    ids = probe_ids(ckpt)
    expected = trainer_logprobs(ckpt, ids)
    report: dict[str, Any] = {"checkpoint": ckpt}
    with httpx.Client(timeout=600) as client:
        report["gap_before"] = gap(server_logprobs(client, root, ids), expected)
        t0 = time.perf_counter()
        if wake:
            _post(client, f"{root}/wake_up")
        if drain:
            _post(client, f"{root}/pause", params={"mode": "wait"})
        try:
            t1, report["tied_reprocessed"] = _swap(client, root, ckpt)
        finally:
            if drain:
                _post(client, f"{root}/resume")
        report["reload_s"] = round(t1 - t0, 4)
        report["refresh_s"] = round(time.perf_counter() - t0, 4)
        report["gap_after"] = gap(server_logprobs(client, root, ids), expected)
    report["probe_ok"] = report["gap_after"] <= tol
    if not report["probe_ok"]:
        raise PolicyError(
            f"probe check failed after reloading {ckpt}: the server's logprobs differ from the trainer's by "
            f"{report['gap_after']:.3g} (> {tol}); refusing to collect with stale weights"
        )
    return report


def _reload_weights(client: httpx.Client, root: str, ckpt: str) -> int | None:
    """Reload `ckpt` in every worker: swerl's worker extension when the server has it (tied heads reprocessed; the
    count is returned), else vLLM's own `reload_weights` (None)."""
    from swerl_cli.policy.vllm_worker import METHOD

    body = {"method": METHOD, "kwargs": {"weights_path": ckpt}}
    try:
        resp = client.post(f"{root}/collective_rpc", json=body)
    except httpx.HTTPError as e:
        raise PolicyError(f"{root}/collective_rpc: {type(e).__name__}: {e}") from None
    if resp.status_code == 200:
        results = (resp.json() or {}).get("results") or [0]
        return int(results[0] or 0)
    _post(client, f"{root}/collective_rpc", json={"method": "reload_weights", "kwargs": {"weights_path": ckpt}})
    return None


def _swap(client: httpx.Client, root: str, ckpt: str) -> tuple[float, int | None]:
    """Reload the weights, reset the prefix cache, set the version; returns the time the reload finished and the
    number of tied modules reprocessed (None: a server without swerl's worker extension)."""
    tied = _reload_weights(client, root, ckpt)
    t1 = time.perf_counter()
    reset = _post(client, f"{root}/reset_prefix_cache")
    if isinstance(reset, dict) and reset.get("success") is False:
        raise PolicyError(f"{root}/reset_prefix_cache: the server could not reset its prefix cache")
    _post(client, f"{root}/update_weight_version", json={"new_version": ckpt})
    return t1, tied


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    tol, wake, drain = 1e-4, "--wake" in args, "--drain" in args
    args = [a for a in args if a not in ("--wake", "--drain")]
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 3 or args[0] not in ("reload", "probe"):
        usage = "reload|probe URL CKPT [--tol T] [--wake] [--drain]"
        sys.stderr.write(f"usage: python -m swerl_cli.policy.refresh {usage}\n")
        return 2
    action, url, ckpt = args
    try:
        if action == "reload":
            out = reload(url, ckpt, tol=tol, wake=wake, drain=drain)
        else:
            g = probe(url.rstrip("/").removesuffix("/v1"), ckpt)
            out = {"checkpoint": ckpt, "gap": g, "probe_ok": g <= tol}
    except PolicyError as e:
        sys.stderr.write(f"swerl refresh: {e}\n")
        return 1
    sys.stdout.write(json.dumps(out) + "\n")
    return 0 if out["probe_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
