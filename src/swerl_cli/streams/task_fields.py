"""Checks of the task fields that reach docker and git: `image`, `workdir`, `setup`, `base_commit`, `repo_source`.

A row that fails one is refused before any engine or git call, with the field and the reason, so one bad row costs
its own record and never the run (docs/reliability.md). The image reference is parsed by the grammar of the
distribution project's reference package (the one the engine uses), restated here:

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ domain "/" ] path           (at most 255 characters)
    domain     := host [ ":" port ]             host: DNS-like components joined by ".", or "[" IPv6 "]"
    path       := component ( "/" component )*  component: [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
    tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
    digest     := algorithm ":" [0-9a-fA-F]{32,}   algorithm: [A-Za-z][A-Za-z0-9]* joined by one of + . - _

As docker reads a name, its first component is a registry host only when it holds "." or ":", is "localhost" or
has an upper-case letter; a name that is 64 lower-case hex digits is an image id, not a repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swerl_cli.core.errors import InputError, RowsFailedError
from swerl_cli.streams.records import Located, Task

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_DOMAIN_PART = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?")
_IPV6 = re.compile(r"\[[a-fA-F0-9:]+\]")
_PORT = re.compile(r"[0-9]+")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-+._][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_IMAGE_ID = re.compile(r"[a-f0-9]{64}")
NAME_MAX = 255


def image_problem(ref: str) -> str | None:
    """Why `ref` is not an image reference docker accepts, or None.

    >>> image_problem("swebench/sweb.eval.x86_64.django_1776_django-16255:latest") is None
    True
    >>> image_problem("localhost:5000/a/b@sha256:" + "0" * 64) is None
    True
    >>> image_problem("Swebench/x:latest") is None  # an upper-case first component is a registry host
    True
    >>> image_problem("swebench/Django:1")
    "path component 'Django' must be lower-case letters and digits joined by '.', '_', '__' or '-'"
    >>> image_problem("x:latest;id")
    "tag 'latest;id' must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'"
    """
    if not ref:
        return "empty"
    if not ref.isascii() or not ref.isprintable() or any(c.isspace() for c in ref):
        return "holds a space, a control or a non-ASCII character"
    name, at, digest = ref.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        return f"digest {digest!r} must be ALGORITHM:HEX (e.g. sha256: and at least 32 hex digits)"
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:  # a tag (a colon after the last slash; a port's colon comes before a slash)
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG.fullmatch(tag):
            return f"tag {tag!r} must be 1-128 of [A-Za-z0-9_.-], not starting with '.' or '-'"
    if len(name) > NAME_MAX:
        return f"name is {len(name)} characters long; at most {NAME_MAX}"
    if _IMAGE_ID.fullmatch(name):
        return "a 64-hex-digit name is an image id, not a repository name"
    first, _, rest = name.partition("/")
    if rest and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        problem = _domain_problem(first)
        if problem:
            return problem
        path = rest
    else:
        path = name
    for component in path.split("/"):
        if not _COMPONENT.fullmatch(component):
            shown = component or "(empty)"
            return f"path component {shown!r} must be lower-case letters and digits joined by '.', '_', '__' or '-'"
    return None


def _domain_problem(domain: str) -> str | None:
    host, port = domain, None
    if domain.startswith("["):
        end = domain.find("]")
        host, rest = domain[: end + 1], domain[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return f"registry host {domain!r} is not HOST[:PORT]"
        port = rest[1:] if rest else None
        ok = _IPV6.fullmatch(host) is not None
    else:
        host, colon, port_text = domain.partition(":")
        port = port_text if colon else None
        ok = all(_DOMAIN_PART.fullmatch(p) for p in host.split("."))
    if not ok or (port is not None and not _PORT.fullmatch(port)):
        return f"registry host {domain!r} is not HOST[:PORT]"
    return None


def workdir_problem(workdir: str) -> str | None:
    """Why `workdir` cannot be the repository path in an image, or None.

    >>> workdir_problem("testbed")
    'must be an absolute path (e.g. /testbed)'
    """
    if not workdir.startswith("/"):
        return "must be an absolute path (e.g. /testbed)"
    if not workdir.isprintable() or len(workdir) > 4096:
        return "holds a control character, or is longer than 4096 characters"
    parts = workdir.split("/")
    if ".." in parts or "." in parts:
        return "must not contain '.' or '..' components"
    if workdir.rstrip("/") == "":
        return "must not be / (the repository needs its own directory)"
    return None


def setup_problem(setup: Any) -> str | None:
    """Why `setup` is not shell commands (a string or a list of strings, no NUL byte), or None."""
    items = [setup] if isinstance(setup, str) else setup
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        return f"expected a string or an array of strings, got {type(setup).__name__}"
    if any("\0" in s for s in items):
        return "holds a NUL byte"
    return None


def revision_problem(rev: str) -> str | None:
    """Why `rev` cannot be a git revision passed to git as data (it would read as an option), or None."""
    if not rev:
        return "empty"
    if rev.startswith("-"):
        return "starts with '-' (git would read it as an option)"
    if not rev.isprintable() or any(c.isspace() for c in rev):
        return "holds a space or a control character"
    return None


# A repository URL: https/http/git/ssh with a host, or scp-like user@host:path. Nothing else (no file://, no ext::
# transport, which runs a command) and no host starting with '-' (ssh would read it as an option).
_URL = re.compile(r"(?:https?|git|ssh|git\+ssh)://(?:[^@/\s]+@)?[A-Za-z0-9\[][^/\s]*(?:/\S*)?")
_SCP = re.compile(r"[A-Za-z0-9_.-]+@[A-Za-z0-9][A-Za-z0-9.-]*:[^\s]+")


def is_repository_url(value: str) -> bool:
    """https://, http://, git://, ssh:// (host not starting with '-') or user@host:path.

    >>> [is_repository_url(u) for u in ("https://github.com/a/b.git", "git@github.com:a/b", "ext::sh -c x")]
    [True, True, False]
    """
    return value.isprintable() and (_URL.fullmatch(value) is not None or _SCP.fullmatch(value) is not None)


def repo_source_problem(value: Any, allowed: Iterable[str | Path] = ()) -> str | None:
    """Why `value` may not be fetched into a build, or None: a repository URL, or a path (symlinks followed) under
    one of the `allowed` directories the user named (`--allow-source DIR`)."""
    if not isinstance(value, str) or not value:
        return "expected a repository URL or a path, as a non-empty string"
    if is_repository_url(value):
        return None
    if "://" in value or "::" in value:
        return "only https://, http://, git://, ssh:// and user@host:path URLs are fetched"
    roots = [Path(d).expanduser().resolve() for d in allowed]
    try:
        real = Path(value).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):
        return f"{value!r} does not exist (a repository directory, a bundle file or a URL)"
    if not any(real == root or real.is_relative_to(root) for root in roots):
        named = ", ".join(str(r) for r in roots) or "none"
        return (
            f"the host path {str(real)!r} is not under a directory allowed with --allow-source DIR (allowed: {named})"
        )
    return None


def _shown(value: str) -> str:
    return repr(value if len(value) <= 80 else value[:77] + "...")


def task_problem(
    task: Task, *, images: bool = True, build: bool = False, allowed: Iterable[str | Path] = ()
) -> tuple[str, str] | None:
    """(field, why) of the first task field docker or git would refuse, or None.

    Checked always: `workdir`, `base_commit` and `test_cmd` (no NUL byte); `image` with `images` (the sandbox backend
    starts from images; the local one uses none). With `build` (the fields an image build uses): `setup` and
    `repo_source` too, the latter against the `allowed` directories, and the image must be a NAME[:TAG] (a build
    cannot make a digest)."""
    checks: list[tuple[str, Any]] = [
        ("image", lambda: images and _with("not a valid image reference", task.image, image_problem(task.image))),
        ("workdir", lambda: _with("", task.workdir, workdir_problem(task.workdir))),
        ("base_commit", lambda: _with("", task.base_commit, revision_problem(task.base_commit))),
        # a NUL cannot reach a shell command line: the sandbox's framed shell waited forever on it
        ("test_cmd", lambda: "\0" in task.test_cmd and "holds a NUL byte"),
    ]
    if build:
        checks.append(("image", lambda: "@" in task.image and "a built image is NAME[:TAG], not a digest"))
        checks.append(("setup", lambda: setup_problem(task.setup)))
        if "repo_source" in task.extra:
            checks.append(("repo_source", lambda: repo_source_problem(task.extra["repo_source"], allowed)))
    for field, check in checks:
        problem = check()
        if problem:
            return field, problem
    return None


def task_row_error(loc: Located, task: Task, prefix: str = "", **checks: Any) -> InputError | None:
    """`task_problem` as an InputError naming the row (`loc`) and the field (under `prefix`), or None."""
    bad = task_problem(task, **checks)
    return None if bad is None else loc.error(f"{prefix}{bad[0]}", bad[1])


def _with(what: str, value: str, problem: str | None) -> str | None:
    return None if problem is None else f"{what} {_shown(value)}: {problem}".lstrip()


class RowFailures:
    """Counts the records of refused rows (`invalid_field` set on the record, its `grade` or its `validation`) among
    all written,
    earlier ones of a resumed output included, and ends a finished run with exit 4 when there are any."""

    def __init__(self) -> None:
        self.failed, self.total, self.first = 0, 0, ""

    def add(self, record: Any) -> None:
        """Count one written record: a trajectory, a graded record or a validated task."""
        self.total += 1
        if not isinstance(record, dict):
            return
        for where in (record.get("grade"), record.get("validation"), record):
            if isinstance(where, dict) and where.get("invalid_field"):
                self.failed += 1
                error = where.get("error") or (where.get("errors") or [""])[0]
                self.first = self.first or str(error).removeprefix("InputError: ")
                return

    def check(self) -> None:
        """RowsFailedError (exit 4) when any record is a refused row's."""
        if self.failed:
            raise RowsFailedError(self.failed, self.total, self.first)
