"""Every relative Markdown link in the repository's docs resolves: the file exists and, with `#anchor`, the anchor is
a heading of that file as GitHub renders it (issue 43: docs/training.md linked to headings that had moved)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

# [text](target) and [text](target "title"); images too. Reference-style links are not used in these docs.
_LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: its rendered text, lower-cased, punctuation other than `-` and `_` dropped,
    each space a hyphen.

    >>> github_anchor("Training on one GPU (`make bench-gpu`, NVIDIA H200, 2026-11-27)")
    'training-on-one-gpu-make-bench-gpu-nvidia-h200-2026-11-27'
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays, its target goes
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file: headings (outside code fences; repeats get -1, -2, ...) and <a id=...>."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(_HTML_ANCHOR.findall(line))
        m = _HEADING.match(line)
        if m:
            slug = github_anchor(m.group(2))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link outside code fences and inline code."""
    out: list[tuple[int, str]] = []
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out += [(n, t) for t in _LINK.findall(re.sub(r"`[^`]*`", "", line))]
    return out


def markdown_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    files = [ROOT / f for f in listed.stdout.split()]
    files += [p for p in (ROOT / "docs").glob("*.md") if p not in files]  # a doc not yet committed
    return sorted(p for p in files if p.is_file())


def broken_links() -> list[str]:
    broken = []
    for md in markdown_files():
        for line, target in links(md):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (md.parent / file_part).resolve() if file_part else md
            where = f"{md.relative_to(ROOT)}:{line}: {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    return broken


def test_every_relative_markdown_link_and_anchor_resolves() -> None:
    broken = broken_links()
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Exit codes", "exit-codes"),
        ("`swerl tasks pull`", "swerl-tasks-pull"),
        ("DAPO: the objective as implemented", "dapo-the-objective-as-implemented"),
        (
            "Hostile input and flags: one line, the documented exit code",
            "hostile-input-and-flags-one-line-the-documented-exit-code",
        ),
        ("What `make rl` runs (K = 2)", "what-make-rl-runs-k--2"),
    ],
)
def test_github_anchor_rules(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_a_moved_heading_is_reported(tmp_path: Path) -> None:
    doc = tmp_path / "a.md"
    doc.write_text("# Title\n\n## Kept\n\n```\n# not a heading\n```\n")
    assert anchors(doc) == {"title", "kept"}
