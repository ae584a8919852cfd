"""Options built from config fields: a field declared with `core.config.flag` is a flag of every command built on
its config, with the help, metavar and names the field declares; nothing is written twice.

    @boundary("grade")
    @config_options(GradeConfig)
    def _grade(inputs: INPUTS = None, ..., flags: Flags = None) -> None:
        cfg = resolve_config(GradeConfig, config, **flags)

The `flags` parameter marks where the generated options go in `--help` and receives them as {field: value}; a
value left None was not given, so the YAML file's (or the default) stands (`resolve_config`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Collection
from typing import Annotated, Any, TypeVar

import typer

from swerl_cli.core.config import Flag, field_types, flag_fields

F = TypeVar("F", bound=Callable[..., Any])
Flags = dict[str, Any]
MARKER = "flags"


def _required(annotation: Any) -> Any:
    """`X` for a field annotated `X | None`, else the annotation."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return inner[0] if len(inner) == 1 else annotation
    return annotation


def _is_tuple(annotation: Any) -> bool:
    return typing.get_origin(_required(annotation)) is tuple


def _option_type(annotation: Any) -> Any:
    """The option's Python type for a field's: optional (None = not given); a tuple field is a repeatable option."""
    base = _required(annotation)
    if _is_tuple(base):
        return typing.Optional[list[typing.get_args(base)[0]]]  # type: ignore[misc]  # noqa: UP045
    return typing.Optional[base]  # noqa: UP045


def option(cls: type, name: str) -> Any:
    """The typer option of flag field `name` of config `cls`, for a command that takes the flag without the whole
    config (`--ray` of `sandbox prune`): `RAY = Annotated[str | None, option(JobSettings, "ray")]`."""
    for field, spec in flag_fields(cls):
        if field.name == name:
            return _option(spec)
    raise KeyError(f"{cls.__name__} has no flag field {name!r}")


def _shown(field: Any, spec: Flag) -> Any:
    """The parameter default of a flag field: the field's own, so --help shows `[default: ...]`, or None where it
    has none to show (None, a repeatable flag's (), a value `parse` makes from a string). Whether the user gave the
    flag is read from click (`_given`), not from the value, so the YAML file's value still wins over a default."""
    value = field.default
    if value is dataclasses.MISSING or value in ((), "") or spec.parse is not None:
        return None
    return value


def _given(ctx: typer.Context | None, name: str) -> bool:
    """Whether flag `name` came from the command line (or its envvar), not from its default; True when the command
    is called as a function, without a context."""
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is None or source.name != "DEFAULT"


def _option(spec: Flag) -> Any:
    return typer.Option(*spec.names, help=spec.help, metavar=spec.metavar)


def _annotated(spec: Flag, annotation: Any, optional: bool) -> Any:
    if spec.parse is not None:  # one string, parsed into the field's value
        return Annotated[str | None, _option(spec)]
    base = _option_type(annotation) if optional else annotation
    if not optional and _is_tuple(annotation):
        base = list[typing.get_args(_required(annotation))[0]]  # type: ignore[misc]
    return Annotated[base, _option(spec)]


def config_options(
    cls: type,
    *,
    include: Collection[str] | None = None,
    exclude: Collection[str] = (),
    marker: str = MARKER,
    defaults: bool = False,
) -> Callable[[F], F]:
    """Put the flag fields of `cls` (those in `include` when given, less `exclude`) into the decorated command's
    options, at its `marker` parameter (`flags`), which then receives them as a dict. --help shows each field's
    default; a flag not given on the command line arrives as None (the YAML file's value or the field's default
    stands, `resolve_config`), or with `defaults` as the field's default (an options object built from flags alone,
    no YAML)."""
    hints = field_types(cls)
    chosen = [
        (f, spec) for f, spec in flag_fields(cls) if (include is None or f.name in include) and f.name not in exclude
    ]
    tuples = {f.name for f, spec in chosen if _is_tuple(hints[f.name]) and spec.parse is None}
    parsers = {f.name: spec.parse for f, spec in chosen if spec.parse is not None}
    generated = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default if defaults else _shown(f, s),
            annotation=_annotated(s, hints[f.name], optional=not defaults),
        )
        for f, s in chosen
    ]

    def deco(fn: F) -> F:
        own = inspect.signature(fn, eval_str=True).parameters
        params: list[inspect.Parameter] = []
        for p in own.values():
            p = p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            params.extend(generated if p.name == marker else [p])
        context = f"_{marker}_context"  # typer passes the command's context here: where each value came from
        params.append(
            inspect.Parameter(context, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=typer.Context)
        )

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            ctx = kwargs.pop(context, None)
            flags = {f.name: kwargs.pop(f.name) for f, _ in chosen}
            if not defaults:  # a flag left at its shown default is not given: the YAML file's value stands
                flags = {name: value if _given(ctx, name) else None for name, value in flags.items()}
            for name in tuples:  # a repeatable option comes as a list; the field is a tuple
                flags[name] = tuple(flags[name]) if flags[name] else (None if not defaults else ())
            for name, parse in parsers.items():
                flags[name] = None if flags[name] is None else parse(flags[name])
            return fn(**kwargs, **{marker: flags})

        wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper  # type: ignore[return-value]

    return deco
