"""`swerl sandbox`: manage sandbox containers."""

from __future__ import annotations

from typing import Annotated

import typer

from swerl_cli.cli._common import boundary, err_console
from swerl_cli.cli._images import RAY
from swerl_cli.sandbox import DEFAULT_BACKEND, one_of

app = typer.Typer(help="Manage sandbox containers.", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sandbox")


@app.command(
    "prune",
    help="Remove leftover swerl containers (label swerl.managed=1, and `tasks build` containers named swerl-build-*), "
    "optionally of one run only, from the --sandbox backend's engine; with --ray on every node of the cluster "
    "(each node's own engine).",
)
@boundary("sandbox prune")
def _prune(
    run: Annotated[str | None, typer.Option("--run", help="Only containers labelled swerl.run=RUN.")] = None,
    stale: Annotated[
        bool, typer.Option("--stale", help="Only containers whose owning swerl process is gone (safe during runs).")
    ] = False,
    ray: RAY = None,
    sandbox: Annotated[str, typer.Option(help=f"Sandbox backend whose leftovers go: {one_of()}.")] = DEFAULT_BACKEND,
) -> None:
    import functools

    from swerl_cli.executor import node_label, open_executor, ray_address
    from swerl_cli.sandbox import create

    backend = create(sandbox)  # an unknown name is a usage error before any node is asked
    prune = functools.partial(backend.prune, run, stale_only=stale)  # picklable: what every node runs
    address = ray_address(ray)
    if not address:
        removed = prune()
        err_console.print(f"swerl sandbox prune: removed {len(removed)} container(s)")
        return
    executor = open_executor(address, 1)
    nodes = executor.on_every_node(prune)
    executor.close()
    for node in nodes:
        err_console.print(f"swerl sandbox prune: node {node_label(node.node)}: removed {len(node.value)} container(s)")
    total = sum(len(n.value) for n in nodes)
    err_console.print(f"swerl sandbox prune: removed {total} container(s) on {len(nodes)} node(s)")
