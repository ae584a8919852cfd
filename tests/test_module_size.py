"""No module over 300 lines, but those docs/architecture.md exempts (with the reason in their docstring)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "swerl_cli"
DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
LIMIT = 300
# The in-sandbox editor: one file shipped into every sandbox and imported by each tool call.
EXEMPT = {"agent/tools_bin/swerl_tools.py"}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_300_lines_but_the_documented_exemptions() -> None:
    long = {p.relative_to(SRC).as_posix(): _lines(p) for p in SRC.rglob("*.py") if _lines(p) > LIMIT}
    assert {k: v for k, v in long.items() if k not in EXEMPT} == {}


def test_every_exemption_is_documented_and_still_needed() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for rel in EXEMPT:
        assert f"`{rel}`" in doc, f"docs/architecture.md does not name the exemption {rel}"
        assert "300-line rule" in (SRC / rel).read_text(encoding="utf-8"), f"{rel}: its docstring does not say why"
        assert _lines(SRC / rel) > LIMIT, f"{rel} is under {LIMIT} lines now: drop the exemption"
