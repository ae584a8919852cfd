"""The converter protocol: one source format's trajectories -> swerl records (registered in `registry.py`).

A converter declares how its files look (`whole_file`: always one JSON document; `document_suffixes`: file
endings that hold one document, the rest being JSON Lines), how `--from auto` recognises its objects (`matches`,
tried lowest `detect_rank` first; None: never detected per object), and converts one object with `convert`.
A format whose documents only make sense together (the harness's results) takes them with `add` and yields its
records from `finish` once every file is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from swerl_cli.core.errors import InputError
from swerl_cli.core.plugins import Options, Plugin


@dataclass(frozen=True, slots=True)
class ConverterOptions(Options):
    """Options of `swerl convert` a converter reads: rewrite shell actions to swerl's format (`--actions swerl`)."""

    rewrite: bool = True


class Converter(Plugin):
    """Base of every registered converter, built by `create(options)` from its `Options` (a `ConverterOptions`);
    `name` is its `--from` value."""

    detect_rank: ClassVar[int | None] = 0
    whole_file: ClassVar[bool] = False
    document_suffixes: ClassVar[tuple[str, ...]] = ()
    Options: ClassVar[type[ConverterOptions]] = ConverterOptions

    @classmethod
    def matches(cls, obj: Any) -> bool:
        """Whether `obj` has this format's shape."""
        return False

    def convert(self, obj: Any, path: str, line: int | None) -> dict[str, Any]:
        """One source object -> its trajectory's fields (`convert/common.py:trajectory_fields`; `convert_paths`
        adds run, sample and task); InputError when it cannot be used."""
        raise NotImplementedError

    def document_rows(self, obj: Any, path: str) -> list[tuple[int | None, Any]] | None:
        """The rows of a whole-file document that holds several (None: not such a document)."""
        return None

    def begin(self, paths: Iterable[str]) -> None:
        """Called with the command's paths before any file is read."""

    def add(self, obj: Any, path: str, *, chosen: bool) -> bool:
        """Take a whole-file document into a result built across files (`chosen`: `--from` named this format);
        False: not one of this format's documents."""
        return False

    def finish(self) -> Iterator[dict[str, Any] | InputError]:
        """The records built across files, after every file is read."""
        yield from ()
