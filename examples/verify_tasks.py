"""Check every example task inside its image with the plain docker CLI (no swerl code involved).

Per task, in one throw-away container (network off) from the task's image:
  1. the repository: HEAD is base_commit, one commit in `git log --all`, no remotes, only refs/heads/main, a clean
     tree, and neither the gold nor the test patch is already applied;
  2. base + test.patch: the tests that fail are exactly FAIL_TO_PASS, every PASS_TO_PASS passes, nothing else runs;
  3. base + test.patch + fix.patch: every FAIL_TO_PASS and PASS_TO_PASS test passes;
  4. with a naive.patch: base + test.patch + naive.patch fails every test in the task's NAIVE_BREAKS.

    python examples/verify_tasks.py [NAME...]    # exit 1 when any task has a problem
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

EXAMPLES = Path(__file__).resolve().parent
_STATUS = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")
_MARK = "::swerl-verify::"


def load_tasks() -> list[tuple[dict, Path]]:
    """(task record, its source directory) for every example and toy task."""
    out = []
    for jsonl, kind in (("tasks.jsonl", "repos"), ("toy-tasks.jsonl", "toy")):
        for line in (EXAMPLES / jsonl).read_text().splitlines():
            task = json.loads(line)
            name = task["repo"].split("/", 1)[1]
            out.append((task, EXAMPLES / kind / name))
    return out


def parse_statuses(log: str, known: set[str]) -> dict[str, str]:
    """Per-test status from pytest `-rA` lines; ids may hold spaces, so known ids are matched first."""
    statuses = {}
    for line in log.splitlines():
        m = _STATUS.match(line)
        if not m:
            continue
        rest = m.group(2)
        test_id = next((k for k in known if rest == k or rest.startswith(k + " - ")), rest.split(" - ")[0])
        statuses[test_id] = m.group(1)
    return statuses


def _script(task: dict, repo_dir: Path) -> str:
    """The bash script run in the container; sections are separated by marker lines."""
    patches = {"test": task["test_patch"], "fix": task["patch"]}
    naive = repo_dir / "naive.patch"
    if naive.exists():
        patches["naive"] = naive.read_text()
    lines = ["cd /testbed", "mkdir -p /tmp/p"]
    for name, text in patches.items():
        lines.append(f"echo {base64.b64encode(text.encode()).decode()} | base64 -d > /tmp/p/{name}.patch")

    def section(name: str) -> None:
        lines.append(f"echo '{_MARK}{name}'")

    section("head")
    lines.append("git rev-parse HEAD")
    section("commits")
    lines.append("git log --all --format=%H")
    section("remotes")
    lines.append("git remote -v")
    section("refs")
    lines.append("git for-each-ref --format='%(refname)'")
    section("status")
    lines.append("git status --porcelain")
    section("apply-check")
    lines.append("git apply --check /tmp/p/fix.patch && git apply --check /tmp/p/test.patch && echo ok")
    section("before")
    lines += ["git apply /tmp/p/test.patch", task["test_cmd"] + " 2>&1"]
    section("after")
    lines += ["git apply /tmp/p/fix.patch", task["test_cmd"] + " 2>&1"]
    if "naive" in patches:
        section("naive")
        lines += ["git checkout -q -- . && git clean -fdq", "git apply /tmp/p/test.patch /tmp/p/naive.patch"]
        lines.append(task["test_cmd"] + " 2>&1")
    section("end")
    return "\n".join(lines) + "\n"


def verify_task(task: dict, repo_dir: Path) -> list[str]:
    """Problems found for one task (empty when it is sound)."""
    proc = subprocess.run(
        ["docker", "run", "--rm", "-i", "--network", "none", task["image"], "bash", "-s"],
        input=_script(task, repo_dir).encode(),
        capture_output=True,
        timeout=120,
    )
    out = proc.stdout.decode(errors="replace")
    sections: dict[str, str] = {}
    for chunk in out.split(_MARK)[1:]:
        name, _, body = chunk.partition("\n")
        sections[name] = body
    if "end" not in sections:
        return [f"container script did not finish (rc {proc.returncode}): {proc.stderr.decode()[-500:]}"]
    f2p, p2p = set(task["FAIL_TO_PASS"]), set(task["PASS_TO_PASS"])
    known = f2p | p2p
    problems = []
    if sections["head"].strip() != task["base_commit"]:
        problems.append(f"HEAD {sections['head'].strip()} != base_commit {task['base_commit']}")
    if len(sections["commits"].split()) != 1:
        problems.append(f"git log --all has {len(sections['commits'].split())} commits, want 1")
    if sections["remotes"].strip():
        problems.append(f"remotes present: {sections['remotes'].strip()}")
    if sections["refs"].split() != ["refs/heads/main"]:
        problems.append(f"refs {sections['refs'].split()} != ['refs/heads/main']")
    if sections["status"].strip():
        problems.append(f"working tree not clean: {sections['status'].strip()}")
    if sections["apply-check"].strip() != "ok":
        problems.append("fix.patch or test.patch does not apply to the image's tree (already applied?)")
    before = parse_statuses(sections["before"], known)
    failing = {t for t, s in before.items() if s in ("FAILED", "ERROR")}
    if failing != f2p:
        problems.append(f"before the fix, failing {sorted(failing)} != FAIL_TO_PASS {sorted(f2p)}")
    broken = sorted(t for t in p2p if before.get(t) != "PASSED")
    if broken:
        problems.append(f"before the fix, PASS_TO_PASS not passing: {broken}")
    if set(before) != known:
        problems.append(f"tests run before the fix {sorted(set(before) ^ known)} differ from F2P + P2P")
    after = parse_statuses(sections["after"], known)
    bad = sorted(t for t in known if after.get(t) != "PASSED")
    if bad or set(after) != known:
        problems.append(f"with the gold patch, not passing: {bad}; unexpected ids {sorted(set(after) - known)}")
    meta = yaml.safe_load((repo_dir / "meta.yaml").read_text())
    if "naive" in sections:
        naive = parse_statuses(sections["naive"], known)
        kept = sorted(t for t in meta.get("NAIVE_BREAKS", []) if naive.get(t) == "PASSED")
        if kept or not meta.get("NAIVE_BREAKS"):
            problems.append(f"naive.patch does not break NAIVE_BREAKS (still passing: {kept})")
    return problems


def main(argv: list[str]) -> int:
    """Verify the named tasks (default: all) and print one line per task."""
    failed = 0
    for task, repo_dir in load_tasks():
        if argv and repo_dir.name not in argv:
            continue
        problems = verify_task(task, repo_dir)
        failed += bool(problems)
        counts = f"F2P {len(task['FAIL_TO_PASS'])} P2P {len(task['PASS_TO_PASS'])}"
        print(f"{'ok  ' if not problems else 'FAIL'} {task['instance_id']:<32} {counts}", file=sys.stderr)
        for p in problems:
            print(f"     {p}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
