"""The summary record of a training command (`rft`, `dapo`), for the next stage or for a person.

- stdout not a terminal (a pipe, a file): the record as one JSON line there, for `| jq` or the next stage; stderr
  gets the run in one line, or a table when stderr is a terminal.
- stdout a terminal: a table of the record there instead of the raw JSON, which a terminal wraps and cuts mid-key;
  nothing more on stderr (the same person reads both). `config` is left out: the checkpoint's
  swerl_run_config.json holds it. Redirect or pipe stdout for the record itself.

Both commands point descriptor 1 at stderr while they train (streams/stdio.py); the real stdout is
`records_stream()`, so the table is rendered to text and written there.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from swerl_cli.cli._common import err_console
from swerl_cli.streams.stdio import records_stream

_LEFT_OUT = ("schema", "config")


def stdout_is_terminal() -> bool:
    """Whether the real stdout (also while descriptor 1 points at stderr) is a terminal."""
    try:
        return records_stream().isatty()
    except (OSError, ValueError, AttributeError):
        return False


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) or "-"
    return "-" if value is None else str(value)


def summary_rows(summary: dict[str, Any]) -> dict[str, str]:
    """The record's fields as text, one row each (a nested object on one row: `key value, ...`), config left out."""
    return {k.replace("_", " "): _text(v) for k, v in summary.items() if k not in _LEFT_OUT}


def table(title: str, rows: dict[str, str]) -> Table:
    """Two columns, the values folded (never cut) to the terminal's width."""
    out = Table(title=title, show_header=False)
    out.add_column(no_wrap=True, style="bold")
    out.add_column(overflow="fold")
    for key, value in rows.items():
        out.add_row(key, value)
    return out


def _width() -> int:
    try:
        return os.get_terminal_size(records_stream().fileno()).columns
    except (OSError, ValueError, AttributeError):
        return int(os.environ.get("COLUMNS") or 100)


def show_summary(
    summary: dict[str, Any], title: str, write: Callable[[dict[str, Any]], None], rows: dict[str, str] | None = None
) -> None:
    """Hand `summary` on as the module docstring says: `write` (the command's stdout Output) gets the record unless
    stdout is a terminal; `rows` (default: every field) is what stderr shows of it."""
    if stdout_is_terminal():
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=True, width=_width(), highlight=False, markup=False)
        console.print(table(f"{title} (redirect stdout for the JSON record)", summary_rows(summary)))
        stream = records_stream()
        stream.write(buf.getvalue().encode())
        stream.flush()
        return
    write(summary)
    rows = rows if rows is not None else summary_rows(summary)
    if err_console.is_terminal:
        err_console.print(table(title, rows))
    else:
        err_console.print(f"{title}: " + "; ".join(f"{k} {v}" for k, v in rows.items()))
