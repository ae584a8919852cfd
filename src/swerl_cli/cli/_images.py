"""Image options shared by collect, grade, tasks validate and tasks pull, and the call that applies them."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from swerl_cli.cli._common import err_console

REGISTRY = Annotated[
    str | None,
    typer.Option(metavar="HOST[:PORT]/NAMESPACE", help="Pull every task image from this mirror (same name and tag)."),
]
PULL = Annotated[
    bool | None,
    typer.Option("--pull/--no-pull", help="Pull a task's missing image (default) or fail naming the fetch command."),
]
IMAGE_BUDGET = Annotated[
    float | None,
    typer.Option(metavar="GB", help="Remove least recently used pulled images not in use past this many GB."),
]


def apply_images(cfg: Any, command: str) -> None:
    """Set the process-wide image settings from a config with registry, pull and image_budget_gb fields."""
    from swerl_cli.sandbox import images

    images.configure(
        registry=cfg.registry,
        pull=cfg.pull,
        budget_gb=cfg.image_budget_gb,
        log=lambda msg: err_console.print(f"swerl {command}: {msg}"),
    )


def worker_images(cfg: Any) -> Any:
    """The same image settings for the workers of a cluster (`--ray`): run there before each job."""
    import functools

    from swerl_cli.sandbox import images

    return functools.partial(images.configure, registry=cfg.registry, pull=cfg.pull, budget_gb=cfg.image_budget_gb)
