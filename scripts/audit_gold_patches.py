"""The static tampering audit's false positives on every gold patch this project can reach, without Docker
(docs/grading.md, "The static audit"): the example tasks, the synthesized tasks under .cache/synth (read only), the
tasks `swerl tasks mine` builds from tests/tasks/mining/fixture_repo.py, and the SWE-bench/SWE-smith rows of the
tests' fixtures. Prints one JSON object per source: {source, patches, flagged, findings: [...]}; exit 1 when any
gold patch has a finding.

usage: python scripts/audit_gold_patches.py [SYNTH_DIR ...]   (default: every .cache/synth/*/ with tasks)
       python scripts/audit_gold_patches.py --history REPO [N]   (N newest non-merge commits of a git repository)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.* fixtures (the mined repository, the fixture rows)

from swerl_cli.grading.audit_gold import audit_patch, from_patch_only  # noqa: E402

Item = tuple[str, Path, str, str]  # (name, base tree, gold patch, repository root in the sandbox)


def examples() -> Iterator[Item]:
    for tasks, repos in (("tasks.jsonl", "repos"), ("toy-tasks.jsonl", "toy")):
        for line in (ROOT / "examples" / tasks).read_text().splitlines():
            t = json.loads(line)
            name = t["instance_id"].split("__", 1)[1].rsplit("-", 1)[0]
            yield t["instance_id"], ROOT / "examples" / repos / name / "base", t["patch"], t["workdir"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def synthesized(dirs: list[Path], tmp: Path) -> Iterator[Item]:
    clones: dict[str, Path] = {}
    for d in dirs:
        for split in ("train.jsonl", "heldout.jsonl"):
            path = d / split
            for i, line in enumerate(path.read_text().splitlines() if path.exists() else []):
                t = json.loads(line)
                src = t["repo_source"]
                if src not in clones:
                    clones[src] = tmp / f"clone{len(clones)}"
                    subprocess.run(["git", "clone", "-q", "-b", "main", src, str(clones[src])], check=True)
                base = tmp / f"{d.name}-{split}-{i}"
                subprocess.run(["cp", "-a", str(clones[src]), str(base)], check=True)
                subprocess.run(["git", "apply", "-"], cwd=base, input=t["bug_patch"].encode(), check=True)
                yield t["instance_id"], base, t["patch"], t["workdir"]


def mined(tmp: Path) -> Iterator[Item]:
    from tests.tasks.mining.fixture_repo import build_repo

    repo = tmp / "calc"
    commits = build_repo(repo)
    for name in ("fix_clamp", "fix_mean", "flaky"):
        c = commits[name]
        base = tmp / f"mined-{name}"
        base.mkdir()
        archive = subprocess.run(["git", "archive", f"{c}~1"], cwd=repo, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        gold = _git(repo, "diff", f"{c}~1", c, "--", ".", ":(exclude)tests")
        yield f"mined/{name}", base, gold, "/testbed"


def fixture_rows(tmp: Path) -> Iterator[Item]:
    from tests.tasks.test_import import SMITH

    from swerl_cli.tasks.importers import reverse_patch

    rows = [("swe-smith/" + SMITH["instance_id"], reverse_patch(SMITH["patch"]))]
    preds = ROOT / "tests/convert/interop/all_preds.jsonl"
    for line in preds.read_text().splitlines():
        r = json.loads(line)
        if r.get("model_patch"):
            rows.append((f"interop/{r['instance_id']}", r["model_patch"]))
    for name, patch in rows:
        base = tmp / name.replace("/", "_")
        base.mkdir()
        from_patch_only(patch)(base)
        yield name, base, patch, "/testbed"


def history(repo: Path, limit: int) -> dict:
    """Every non-merge commit of a real repository's history (newest first, up to `limit`) as a gold patch: its
    non-test changes (what the SWE-bench split keeps in `patch`), each file at the parent and at the commit."""
    from swerl_cli.grading import infra
    from swerl_cli.grading.audit import Change, audit_changes

    def blob(spec: str) -> bytes | None:
        res = subprocess.run(["git", "cat-file", "blob", spec], cwd=repo, capture_output=True)
        return res.stdout if res.returncode == 0 else None

    commits = _git(repo, "rev-list", "--no-merges", f"--max-count={limit}", "HEAD").split()
    n, found = 0, []
    for c in commits:
        out = subprocess.run(["git", "diff-tree", "-r", "-z", "--no-commit-id", "--name-only", "--root", c],
                             cwd=repo, capture_output=True, check=True).stdout.decode("utf-8", "replace")  # fmt: skip
        paths = [p for p in out.split("\0") if p and not infra.is_infra(p)]
        if not paths:
            continue
        n += 1
        changes = []
        for p in paths:
            old, new = blob(f"{c}~1:{p}"), blob(f"{c}:{p}")
            changes.append(Change(p, old, new, new is not None, old is not None))
        found += [f"{c[:10]}: {h}" for h in audit_changes(changes, "/testbed")]
    flagged = len({f.split(":", 1)[0] for f in found})
    return {"source": f"history of {repo}", "patches": n, "flagged": flagged, "findings": found, "not_applied": []}


def measure(source: str, items: Iterator[Item]) -> dict:
    n, flagged, found, refused = 0, 0, [], []
    for name, base, patch, root in items:
        try:
            hits = audit_patch(base, patch, root)
        except ValueError as e:
            refused.append(f"{name}: {e}")
            continue
        n += 1
        flagged += bool(hits)
        found += [f"{name}: {h}" for h in hits]
    return {"source": source, "patches": n, "flagged": flagged, "findings": found, "not_applied": refused}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--history"]:  # --history REPO [N]: a real repository's commits, not gold patches of ours
        print(json.dumps(history(Path(argv[1]), int(argv[2]) if len(argv) > 2 else 1000)))
        return 0
    synth = [Path(a) for a in argv] or sorted(
        p for p in (ROOT / ".cache/synth").glob("*") if (p / "train.jsonl").exists()
    )
    with tempfile.TemporaryDirectory(prefix="swerl-audit-gold-") as t:
        tmp = Path(t)
        results = [
            measure("examples", examples()),
            measure("synthesized", synthesized(synth, tmp)),
            measure("mined", mined(tmp)),
            measure("fixture rows", fixture_rows(tmp)),
        ]
    for r in results:
        print(json.dumps(r))
    return 1 if any(r["flagged"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
