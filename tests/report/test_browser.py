"""The report in a real headless Chromium (Debian's), driven over the DevTools protocol: clean load, offline,
charts with the right number of points, a selected trajectory shows its turns; and a 10,000-record page."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from tests.conftest import run_swerl
from tests.report.cdp import Browser, chromium_path
from tests.report.records import graded, make_run, write_jsonl

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    if chromium_path() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: `make setup` installs it")
        pytest.skip("chromium is not installed (make setup installs it)")
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


def _count(b: Browser, chart: str, what: str = "circle.pt") -> dict[str, int]:
    js = (
        f"(() => {{ const out = {{}};"
        f" for (const e of document.querySelectorAll('figure[data-chart=\"{chart}\"] {what}'))"
        " out[e.dataset.series] = (out[e.dataset.series] || 0) + 1; return out; })()"
    )
    return b.eval(js)


def test_report_page_in_chromium(browser: Browser, tmp_path: Path):
    run = make_run(tmp_path / "runs", [[1, 4], [2, 4], [4, 4]])
    (run / "iter-1" / "probe.json").write_text('{"gold_edit_logprob": -1.25, "frame_drift": 0.02}\n')
    out = tmp_path / "report.html"
    res = run_swerl("report", str(run), "-o", str(out))
    assert res.returncode == 0, res.stderr.decode()
    assert f"-> {out}" in res.stderr.decode()
    browser.events.clear()
    browser.open(out)
    assert browser.problems() == []
    assert browser.requests() == [out.resolve().as_uri()]  # nothing fetched but the file itself
    # 3 iterations: train pass@1 at each, eval from iter-1 on; DAPO numbers per iteration; 6 optimizer steps
    assert _count(browser, "pass1") == {"train": 3, "eval": 2}
    assert _count(browser, "steps") == {"steps": 3}
    assert _count(browser, "clip") == {"low": 3, "high": 3}
    assert _count(browser, "step_loss") == {"loss": 6}
    assert _count(browser, "groups", "rect.bar") == {"kept": 3, "dropped": 3}
    # the learning curve: one line for the run, the probe of checkpoint 1 alone, a table row per iteration
    assert _count(browser, "curve_pass") == {"runs": 3}
    # error bars at iterations 0 and 1 (iteration 2 resolved 8 of 8: SE 0, no bar)
    assert browser.eval("document.querySelectorAll('figure[data-chart=curve_pass] line.err').length") == 2
    assert _count(browser, "curve_gold") == {"runs": 1}
    assert browser.eval("document.querySelectorAll('table.curve tbody tr').length") == 3
    assert browser.eval("document.querySelectorAll('table.heat[data-split=train] tbody tr').length") == 2
    # a heat-map cell filters the list to that task and iteration; a row click shows the trajectory's turns
    browser.click('table.heat[data-split=train] tr[data-task="T0"] td[data-iter="1"]')
    listed = browser.eval("[...document.querySelectorAll('#list tbody tr')].map(r => r.cells[1].textContent)")
    assert listed == ["T0"] * 4
    browser.click("#list tbody tr:nth-child(3)")  # T0 sample 2 of iter-1: 3 turns, unresolved
    shown = browser.wait_for("document.getElementById('detail').dataset.shown")
    assert browser.eval("document.querySelector('#list tr.sel').dataset.i") == shown
    assert browser.eval("document.querySelectorAll('#detail .turn.assistant').length") == 3
    cmds = browser.eval("[...document.querySelectorAll('#detail pre.cmd')].map(p => p.textContent)")
    assert cmds == ["cat greet/core.py  # step 0", "cat greet/core.py  # step 1", "submit"]
    assert "T0/iter-1/2" in browser.eval("document.querySelector('#detail h3').textContent")
    assert browser.eval("document.querySelector('#detail table.tests td.bad') !== null")  # the failing F2P test
    shot = browser.screenshot(tmp_path / "report.png")
    assert shot.stat().st_size > 10_000
    assert browser.problems() == []


def test_report_with_10000_trajectories_stays_usable(browser: Browser, tmp_path: Path):
    # 10 iterations x 250 tasks x 4 samples; each record has ~4 kB of varied text (compresses like source code)
    rng = random.Random(0)
    words = [f"{rng.choice('abcdefgh')}{n}_{rng.randrange(10**6):x}" for n in range(2000)]

    def obs() -> str:
        return "\n".join(" ".join(rng.choices(words, k=8)) for _ in range(20))

    for k in range(10):
        recs = [
            graded(f"task-{t:03d}", i, run=f"iter-{k}", resolved=(t + i + k) % 3 == 0, turns=3, observation=obs())
            for t in range(250)
            for i in range(4)
        ]
        write_jsonl(tmp_path / "runs" / f"iter-{k}" / "graded.jsonl", recs)
    out = tmp_path / "big.html"
    t0 = time.monotonic()
    res = run_swerl("report", str(tmp_path / "runs"), "-o", str(out), timeout=300)
    build_s = time.monotonic() - t0
    assert res.returncode == 0, res.stderr.decode()
    size_mb = out.stat().st_size / 1e6
    browser.events.clear()
    load_s = browser.open(out)
    assert browser.problems() == []
    assert browser.eval("document.getElementById('f-count').textContent") == "10000 records (first 300 listed)"
    t0 = time.monotonic()
    browser.eval("document.getElementById('f-iter').value = '9'; document.getElementById('f-task').value = '249';"
                 "document.getElementById('f-task').dispatchEvent(new Event('change'))")  # fmt: skip
    browser.click("#list tbody tr:last-child")
    assert browser.wait_for("document.getElementById('detail').dataset.shown") == "9999"
    assert browser.eval("document.querySelector('#detail h3').textContent") == "task-249/iter-9/3"
    select_s = time.monotonic() - t0
    assert browser.eval("document.querySelectorAll('#detail .turn.assistant').length") == 3
    print(f"10k records: build {build_s:.1f}s, {size_mb:.1f} MB, load {load_s:.2f}s, select {select_s:.2f}s")
    assert size_mb < 30
    assert load_s < 20
    assert select_s < 5
    assert browser.problems() == []
