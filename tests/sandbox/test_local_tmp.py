"""Concurrent local sandboxes on one machine (issue 43): swerl's fixed scratch paths under /tmp (a test_cmd's
/tmp/swerl-junit.xml, /tmp/swerl-bug.patch, the editor tools' /tmp/.swerl) were the host's, shared by every local
sandbox at once: one episode's editor state steered another's, and the tools were linked into the host's
/usr/local/bin. Each local sandbox now has a /tmp of its own for them (and TMPDIR)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from swerl_cli.agent import tools as T
from swerl_cli.agent.loop import AgentSettings, prepare_sandbox
from swerl_cli.sandbox import create, open_sandbox
from swerl_cli.sandbox.shell import ShellSandbox
from swerl_cli.streams.records import Located, Task
from tests.sandbox.toy import toy_task


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[ShellSandbox, ShellSandbox]]:
    task = Task.from_json(Located("t", 1, toy_task(tmp_path, "unused")))
    backend = create("local", repo_dir=str(tmp_path / "repo"))
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(open_sandbox(task, backend))
        b = stack.enter_context(open_sandbox(task, backend))
        yield a, b  # type: ignore[misc]


def test_two_local_sandboxes_at_once_keep_their_own_scratch_files(two: tuple[ShellSandbox, ShellSandbox]) -> None:
    a, b = two
    for sb, mark in ((a, "A"), (b, "B")):  # both written before either is read
        sb.write_file("/tmp/swerl-bug.patch", f"patch {mark}\n")
        assert sb.run(f"echo junit {mark} > /tmp/swerl-junit.xml && mkdir -p /tmp/.swerl && echo {mark} > "
                      "/tmp/.swerl/state").exit_code == 0  # fmt: skip
    for sb, mark in ((a, "A"), (b, "B")):
        assert sb.read_file("/tmp/swerl-bug.patch") == f"patch {mark}\n".encode()
        assert sb.run("cat /tmp/swerl-junit.xml /tmp/.swerl/state").output == f"junit {mark}\n{mark}\n"
        root = str(sb.root)  # type: ignore[attr-defined]
        assert Path(root, "tmp", "swerl-junit.xml").read_text() == f"junit {mark}\n"  # inside the sandbox's dir
        tmpdir = sb.run("python3 -c 'import tempfile; print(tempfile.gettempdir())'").output.strip()
        assert tmpdir == f"{root}/tmp"  # pytest's tmp_path, mktemp: the sandbox's own too
        # outputs name the scratch paths as commands do (the guard reads back the result path it chose)
        assert sb.run("echo $TMPDIR/swerl-junit.xml $TMPDIR/.swerl/state").output == (
            "/tmp/swerl-junit.xml /tmp/.swerl/state\n"
        )
        # paths that only look alike are left as they are: the sandbox's own root, /var/tmp, a relative tmp/
        assert sb.run(f"echo {sb.workdir} /var/tmp/swerl-x a/tmp/swerl-y").output == (
            f"{sb.workdir} /var/tmp/swerl-x a/tmp/swerl-y\n"
        )
    roots = [str(sb.root) for sb in two]  # type: ignore[attr-defined]
    for sb in two:
        sb.close()
    assert not any(os.path.exists(r) for r in roots)  # the scratch files go with the sandbox


def _bin_links() -> dict[str, tuple[int, int] | None]:
    out: dict[str, tuple[int, int] | None] = {}
    for tool in [*T.EDITOR_TOOLS, "submit"]:
        try:
            st = os.lstat(f"/usr/local/bin/{tool}")
            out[tool] = (st.st_ino, st.st_mtime_ns)
        except FileNotFoundError:
            out[tool] = None
    return out


def test_editor_state_is_per_sandbox_and_nothing_is_linked_into_the_host(
    two: tuple[ShellSandbox, ShellSandbox],
) -> None:
    a, b = two
    before = _bin_links()
    for sb in two:
        asyncio.run(prepare_sandbox(sb, AgentSettings(window=5)))
    assert _bin_links() == before  # before: `ln -sf` (re)made /usr/local/bin/open, edit, ... on the host
    assert "calc.py" in a.run("open calc.py").output
    assert "test_calc.py" in b.run("open tests/test_calc.py").output
    # A's next edit acts on A's open file, not on the file B opened last (one shared state file before)
    assert a.run("edit 1:1 'def add(a, b):  # A'").exit_code == 0
    assert T.parse_state(a.run(T.STATE_COMMAND).output, a.workdir)[1] == f"{a.workdir}/calc.py"
    assert T.parse_state(b.run(T.STATE_COMMAND).output, b.workdir)[1] == f"{b.workdir}/tests/test_calc.py"
    assert a.run("head -1 calc.py").output == "def add(a, b):  # A\n"
    assert b.run("git status --porcelain").output == ""
