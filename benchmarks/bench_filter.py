"""`swerl filter --where` against `jq -c 'select(...)'` on the same generated trajectory-like JSONL file.

Prints MB/s and peak RSS of each, the swerl/jq ratio, a bare orjson loop as the practical ceiling, and the same
on a half-size file to show memory is flat in input size. Size: SWERL_BENCH_FILTER_MB (default 1000).
Files are cached under bench-out/.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

OUT = Path(__file__).resolve().parents[1] / "bench-out"
WHERE = 'stats.turns < 40 and grade.status == "resolved"'
JQ = 'select(.stats.turns < 40 and .grade.status == "resolved")'
BARE = """
import sys, orjson
out = open('/dev/null', 'wb')
for line in open(sys.argv[1], 'rb'):
    o = orjson.loads(line)
    s = o.get('stats') or {}
    g = o.get('grade') or {}
    if isinstance(s.get('turns'), int) and s['turns'] < 40 and g.get('status') == 'resolved':
        out.write(line)
"""


def _record(i: int, rng: random.Random) -> dict:
    """One trajectory-like graded record of roughly 40 KB (messages, token ids, logprobs, grade)."""
    turns = rng.randint(1, 60)
    n_turns = min(turns, 12)
    text = "".join(rng.choice("abcdefghij klmnop\n") for _ in range(600))
    return {
        "schema": "swerl.graded/1",
        "id": f"task-{i // 8}/r0/{i % 8}",
        "instance_id": f"task-{i // 8}",
        "run": "r0",
        "sample": i % 8,
        "task": {"instance_id": f"task-{i // 8}", "repo": "acme/widgets", "problem_statement": text},
        "policy": {"backend": "openai", "model": "m", "sampling": {"temperature": 1.0, "top_p": 1.0}},
        "messages": [{"role": "user" if k % 2 else "assistant", "content": text} for k in range(2 * n_turns)],
        "turns": [
            {
                "message_index": 2 * k + 1,
                "token_ids": [rng.randrange(150000) for _ in range(150)],
                "logprobs": [round(-rng.random() * 3, 4) for _ in range(150)],
                "finish_reason": "stop",
                "format_error": False,
            }
            for k in range(n_turns)
        ],
        "patch": "diff --git a/x b/x\n" + text[:300],
        "exit_status": "submitted",
        "stats": {"turns": turns, "tokens_total": 150 * n_turns + 2000, "wall_s": rng.random() * 100},
        "grade": {
            "status": rng.choice(["resolved", "unresolved", "resolved", "patch_failed"]),
            "resolved": True,
            "reward": 1.0,
        },
    }


def ensure_file(mb: int) -> Path:
    """Generate (once) a JSONL file of about `mb` megabytes under bench-out/."""
    path = OUT / f"filter-{mb}mb.jsonl"
    if path.exists():
        return path
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    pool = [orjson.dumps(_record(i, rng)) for i in range(64)]  # reuse bodies; vary the fields the filter reads
    target = mb * 1_000_000
    tmp = path.with_suffix(".tmp")
    size = i = 0
    with open(tmp, "wb") as fh:
        while size < target:
            obj = orjson.loads(pool[i % len(pool)])
            obj["id"] = f"task-{i // 8}/r0/{i % 8}"
            obj["instance_id"] = f"task-{i // 8}"
            obj["stats"]["turns"] = rng.randint(1, 60)
            obj["grade"]["status"] = rng.choice(["resolved", "unresolved", "resolved", "patch_failed"])
            line = orjson.dumps(obj) + b"\n"
            fh.write(line)
            size += len(line)
            i += 1
    os.replace(tmp, path)
    return path


def timed(cmd: list[str]) -> tuple[float, float | None, bytes]:
    """Run `cmd` with stdout to /dev/null; return (wall seconds, peak RSS MiB or None, stderr)."""
    time_bin = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    full = [time_bin, "-v", *cmd] if time_bin else cmd
    with open(os.devnull, "wb") as devnull, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.run(full, stdout=devnull, stderr=err, check=False)
        wall = time.perf_counter() - start
        err.seek(0)
        stderr = err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {stderr.decode(errors='replace')[-500:]}")
    m = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", stderr)
    rss = int(m.group(1)) / 1024 if m else None
    return wall, rss, stderr


def count(cmd: list[str]) -> int:
    """Number of output lines of `cmd`."""
    out = subprocess.run(cmd, capture_output=True, check=True).stdout
    return out.count(b"\n")


def main() -> None:
    """Generate the inputs, run swerl / jq / bare loop on the full and half file, print the table."""
    mb = int(os.environ.get("SWERL_BENCH_FILTER_MB", "1000"))
    swerl = [sys.executable, "-m", "swerl_cli", "filter", "--where", WHERE, "-q"]
    jq = shutil.which("jq")
    rows = []
    for size in (mb, max(1, mb // 2)):
        path = ensure_file(size)
        real_mb = path.stat().st_size / 1e6
        with path.open("rb") as f:  # the page cache warm for all three (swerl runs first: a cold file was its cost)
            while f.read(1 << 24):
                pass
        s_wall, s_rss, _ = timed([*swerl, str(path)])
        b_wall, b_rss, _ = timed([sys.executable, "-c", BARE, str(path)])
        j_wall, j_rss = (timed([jq, "-c", JQ, str(path)])[:2]) if jq else (float("nan"), None)
        rows.append((path.name, real_mb, s_wall, s_rss, j_wall, j_rss, b_wall, b_rss))
    half = ensure_file(max(1, mb // 2))
    n_swerl = count([*swerl, str(half)])
    n_jq = count([jq, "-c", JQ, str(half)]) if jq else n_swerl
    assert n_swerl == n_jq, f"output counts differ: swerl {n_swerl}, jq {n_jq}"

    def rss(x: float | None) -> str:
        return "-" if x is None else f"{x:.0f}"

    print(f"swerl filter --where '{WHERE}'  vs  jq -c '{JQ}'  (same output count: {n_swerl} on {half.name})")
    print(
        f"{'file':<22}{'MB':>7}{'swerl MB/s':>12}{'jq MB/s':>10}{'swerl/jq':>10}{'bare MB/s':>11}"
        f"{'swerl/bare':>11}{'RSS swerl':>11}{'RSS jq':>9}{'RSS bare':>10}"
    )
    for name, real_mb, s_wall, s_rss, j_wall, j_rss, b_wall, b_rss in rows:
        print(
            f"{name:<22}{real_mb:>7.0f}{real_mb / s_wall:>12.0f}{real_mb / j_wall:>10.0f}{j_wall / s_wall:>10.2f}"
            f"{real_mb / b_wall:>11.0f}{b_wall / s_wall:>11.2f}{rss(s_rss):>11}{rss(j_rss):>9}{rss(b_rss):>10}"
        )
    print("RSS in MiB (peak, /usr/bin/time -v); ratios > 1 mean swerl is faster.")


if __name__ == "__main__":
    main()
