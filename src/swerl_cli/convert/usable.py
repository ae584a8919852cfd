"""`convert --from swerl`: the records of the inputs that can become predictions; each line that cannot (not JSON,
not a swerl trajectory or graded record, no instance_id, a patch that is not text) goes to `skip` with its file and
line, and the rest still convert (exit 4 at the end, as for every other source format). A source that cannot be read
at all (missing, a directory, an empty or unparsable .json document) stops the run (exit 3): nothing of it is
usable, and a mistyped name should not pass for a partial success."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from swerl_cli.convert.predictions import to_prediction
from swerl_cli.core.errors import InputError
from swerl_cli.streams.jsonl import STDIN, lenient_records, read_records
from swerl_cli.streams.records import Located


def usable_records(
    sources: Iterable[str], model_name: str | None, skip: Callable[[InputError], None]
) -> Iterator[Located]:
    """Each source's records that `to_prediction` accepts; `skip(error)` for every other line."""
    for src in sources:
        for loc in _rows(src, skip):
            checked = usable(loc, model_name)
            if isinstance(checked, InputError):
                skip(checked)
                continue
            yield loc


def usable(loc: Located, model_name: str | None) -> Located | InputError:
    """`loc` when `to_prediction` accepts it, else the error that says why not."""
    try:
        to_prediction(loc, model_name)
    except InputError as e:
        return e
    return loc


def _rows(src: str, skip: Callable[[InputError], None]) -> Iterator[Located]:
    """The JSON objects of `src`, line by line for JSONL so one bad line costs that line only."""
    if src != STDIN and src.endswith((".json", ".traj")):
        yield from read_records(src)  # one document: it parses or it does not
        return
    for row in lenient_records(src):  # a file that is not JSON Lines at all raises: the run stops (exit 3)
        if isinstance(row, InputError):
            skip(row)
        else:
            yield row
