"""`swerl collect`: run the agent on task records and write one trajectory record per (task, sample)."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from swerl_cli.cli._common import (
    APPEND_OUTPUT,
    CONFIG,
    EPISODE_CPUS,
    EPISODE_MEMORY_GB,
    INPUT,
    MAX_EPISODE_RETRIES,
    RAY,
    boundary,
    err_console,
)
from swerl_cli.cli._images import IMAGE_BUDGET, PULL, REGISTRY, apply_images, worker_images

Opt = typer.Option


def register(app: typer.Typer) -> None:
    app.command("collect", help="Run the agent on task records and write one trajectory record per (task, sample).")(
        _collect
    )


@boundary("collect")
def _collect(
    input: INPUT = "-",
    output: APPEND_OUTPUT = None,
    config: CONFIG = None,
    policy: Annotated[str | None, Opt(help="Policy backend: openai, hf, vllm, gold, gold-steps, replay.")] = None,
    model: Annotated[str | None, Opt(help="Model name (openai) or checkpoint directory (hf, vllm).")] = None,
    base_url: Annotated[list[str] | None, Opt(help="OpenAI-compatible base URL (…/v1); repeat to spread load.")] = None,
    replay: Annotated[str | None, Opt(help="Trajectory file whose actions the replay policy re-plays.")] = None,
    policy_version: Annotated[
        str | None,
        Opt(
            help="Checkpoint identity recorded in policy.version and each turn's policy_version; 'server' (openai): "
            "read each turn's from the server's GET /weight_info (the async loop)."
        ),
    ] = None,
    samples: Annotated[int | None, Opt(help="Samples per task (the group size G).")] = None,
    concurrency: Annotated[int | None, Opt(help="Episodes running at once.")] = None,
    prefetch: Annotated[
        int | None, Opt(help="Sandboxes started ahead for queued episodes (default: --concurrency; 0 = off).")
    ] = None,
    run: Annotated[str | None, Opt(help="Run name recorded in every trajectory (ids are instance/run/sample).")] = None,
    shard: Annotated[str | None, Opt(help="Only tasks i, i+n, ... of the input: i/n.")] = None,
    resume: Annotated[bool, Opt(help="Keep records already in -o and run only the missing ids.")] = False,
    max_turns: Annotated[int | None, Opt(help="Assistant turns per episode (paper: 40, then 80).")] = None,
    max_context_tokens: Annotated[int | None, Opt(help="Context budget in tokens (paper: 65536 / 131072).")] = None,
    command_timeout_s: Annotated[float | None, Opt(help="Time limit of one command in the sandbox.")] = None,
    episode_timeout_s: Annotated[float | None, Opt(help="Wall-time limit of one episode.")] = None,
    max_observation_chars: Annotated[int | None, Opt(help="Observations longer than this are cut.")] = None,
    max_format_errors: Annotated[int | None, Opt(help="Consecutive format errors that end an episode.")] = None,
    action_format: Annotated[str | None, Opt(help="text (```command blocks, the paper's) or tools (native).")] = None,
    demo: Annotated[bool | None, Opt("--demo/--no-demo", help="Add the one-shot demonstration (RFT data).")] = None,
    prompt_config: Annotated[str | None, Opt(help="Prompt YAML file (default: the packaged paper-style one).")] = None,
    temperature: Annotated[float | None, Opt(help="Sampling temperature (default 1.0, unbiased).")] = None,
    top_p: Annotated[float | None, Opt(help="Nucleus cut (default 1.0 = off; < 1 marks the run biased).")] = None,
    top_k: Annotated[int | None, Opt(help="Top-k cut (default -1 = off).")] = None,
    min_p: Annotated[float | None, Opt(help="Min-p cut (default 0 = off).")] = None,
    repetition_penalty: Annotated[float | None, Opt(help="Repetition penalty (default 1.0 = off).")] = None,
    max_new_tokens: Annotated[int | None, Opt(help="Tokens per assistant turn.")] = None,
    seed: Annotated[int | None, Opt(help="Base sampling seed (sample s uses seed + s).")] = None,
    sandbox: Annotated[str | None, Opt(help="Sandbox backend: docker, podman or local.")] = None,
    network: Annotated[bool | None, Opt("--network/--no-network", help="Give sandboxes network access.")] = None,
    registry: REGISTRY = None,
    pull: PULL = None,
    image_budget_gb: IMAGE_BUDGET = None,
    sandbox_user: Annotated[
        str | None,
        Opt(
            metavar="USER",
            help="Episode user (default: the image's, unprivileged `swerl` in images swerl "
            "builds; root is an explicit choice).",
        ),
    ] = None,
    request_timeout_s: Annotated[float | None, Opt(help="Hard timeout of one policy request.")] = None,
    max_retries: Annotated[int | None, Opt(help="Retries of a failed policy request (429/5xx/connection).")] = None,
    device: Annotated[str | None, Opt(help="Device of the hf policy (cpu, cuda).")] = None,
    dtype: Annotated[
        str | None,
        Opt(
            help="Sampler dtype of the hf and vllm policies: auto (default: the trainer's, fp32 on CPU, bf16 on "
            "CUDA), float32 (fp32), bfloat16 (bf16), float16 (fp16)."
        ),
    ] = None,
    tensor_parallel_size: Annotated[int | None, Opt(help="GPUs per vLLM engine (vllm policy).")] = None,
    gpu_memory_utilization: Annotated[
        float | None, Opt(help="Share of GPU memory vLLM may take (vllm policy; default 0.9).")
    ] = None,
    ray: RAY = None,
    episode_cpus: EPISODE_CPUS = None,
    episode_memory_gb: EPISODE_MEMORY_GB = None,
    max_episode_retries: MAX_EPISODE_RETRIES = None,
) -> None:
    flags: dict[str, Any] = {k: v for k, v in locals().items() if k not in ("input", "output", "config", "resume")}
    from swerl_cli.collect import CollectConfig
    from swerl_cli.core.config import resolve_config
    from swerl_cli.executor import ray_address
    from swerl_cli.streams.stdio import engine_output_to_stderr

    flags["base_url"] = tuple(base_url) if base_url else None
    flags["ray"] = ray_address(ray)
    cfg = resolve_config(CollectConfig, config, **flags)
    apply_images(cfg, "collect")
    # An engine's processes (vLLM's engine core and workers, Ray's) print to descriptor 1: it points at stderr for
    # the whole run, and records go to the real stdout through a private descriptor.
    with engine_output_to_stderr():
        summary, failures = _run(cfg, input, output, resume, replay)
    err_console.print(f"swerl collect: {summary}")
    failures.check()  # exit 4 when some rows were refused (each has its error record)


def _run(cfg: Any, input: str, output: str | None, resume: bool, replay: str | None) -> tuple[str, Any]:
    from swerl_cli.collect import build_policy, plan_jobs, run_jobs
    from swerl_cli.executor import open_executor
    from swerl_cli.streams.jsonl import read_records
    from swerl_cli.streams.outputs import open_output
    from swerl_cli.tasks.fields import RowFailures

    inputs = [input, *([replay] if replay else [])]
    executor = None
    if cfg.ray:  # the policy is checked and the cluster joined before the output is touched
        from swerl_cli.collect.distributed import check_distributable, run_jobs_on

        check_distributable(cfg)
        executor = open_executor(cfg.ray, cfg.concurrency, cfg.placement(), setup=worker_images(cfg))
    failures = RowFailures()
    with open_output(output, "append", resume=resume, inputs=inputs) as out:
        # Every task is validated and the policy configured before the first record: bad input loses nothing.
        jobs = plan_jobs(read_records(input), cfg, out.done_ids)
        backend = build_policy(cfg)
        for loc in out.previous():  # a resumed run: rows refused earlier still count toward the exit code
            failures.add(loc.obj)

        def write(record: dict[str, Any]) -> None:
            out.write(record)
            failures.add(record)

        progress = _Progress(len(out.done_ids))
        with progress:
            if executor is not None:
                run_jobs_on(executor, jobs, cfg, write, policy=backend, on_event=progress.event)
            else:
                run_jobs(jobs, cfg, write, on_event=progress.event, policy=backend)
    return progress.summary(), failures


class _Progress:
    """Rich progress on stderr: done/total, running, submitted, errors, generated tokens per second."""

    def __init__(self, skipped: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("collect"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=err_console,
            transient=True,
        )
        self.task = self.bar.add_task("", total=None)
        self.skipped, self.running, self.done, self.errors, self.tokens = skipped, 0, 0, 0, 0
        self.status: dict[str, int] = {}
        self.t0 = time.perf_counter()

    def __enter__(self) -> _Progress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def event(self, kind: str, payload: Any) -> None:
        if kind == "plan":
            self.bar.update(self.task, total=payload)
        elif kind == "start":
            self.running += 1
        elif kind == "end":
            self.running -= 1
            self.done += 1
            self.errors += payload["exit_status"] == "error"
            self.status[payload["exit_status"]] = self.status.get(payload["exit_status"], 0) + 1
            self.tokens += payload["stats"].get("tokens_generated", 0)
            self.bar.update(self.task, completed=self.done)
        rate = self.tokens / max(1e-9, time.perf_counter() - self.t0)
        desc = (
            f"running {self.running}  submitted {self.status.get('submitted', 0)}  errors {self.errors}  "
            f"{rate:.0f} tok/s"
        )
        self.bar.update(self.task, description=desc)

    def summary(self) -> str:
        parts = ", ".join(f"{n} {s}" for s, n in sorted(self.status.items())) or "nothing to do"
        skipped = f" ({self.skipped} already done)" if self.skipped else ""
        return f"{self.done} episodes: {parts}{skipped}; {self.tokens} tokens generated"
