"""SWE-bench harness results -> swerl graded records (docs/interop.md).

Two inputs, as `swebench.harness.run_evaluation` writes them:
- the run summary `{model}.{run_id}.json` (`schema_version: 2`): id lists `resolved_ids`, `unresolved_ids`,
  `error_ids`, `empty_patch_ids`, `completed_ids`, `incomplete_ids`, `submitted_ids`, with counts;
- per-instance `logs/run_evaluation/{run_id}/{model}/{instance_id}/report.json`: `{instance_id: {patch_is_None,
  patch_exists, patch_successfully_applied, resolved, tests_status: {FAIL_TO_PASS: {success, failure}, ...}}}`,
  with the applied `patch.diff` beside it;
- v5's `logs/run_evaluation/{run_id}/run.json` (`dataset`, `split`, `task_repo`, `created_at`): what the run graded
  against, kept in each record's `source.harness_run`.

Every instance becomes one `swerl.graded/1` record. A report.json gives the verdict and the per-test lists; the
summary gives the verdict of every instance, errors and empty patches included (they have no report.json). When
both name an instance they are merged, and a verdict that differs between them is an error line. An error whose
`run_instance.log` (beside the report.json files read) says `>>>>> Patch Apply Failed` is `patch_failed`, one whose
`test_output.txt` ends with the harness's `Timeout error: N seconds exceeded.` is `timeout`, as swerl grades them.
Those files beside a report are read only when they are regular files: a symlink (never followed), FIFO, device or
directory there is one error line naming it, like any other bad harness file, and the record is made without it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swerl_cli.convert.base import Converter, ConverterOptions
from swerl_cli.convert.summary_ids import refusal, split_summary_id
from swerl_cli.core.errors import InputError
from swerl_cli.streams.records import GRADED, schema_tag, short_json

NAME = "swebench-report"
_LISTS = ("resolved_ids", "unresolved_ids", "error_ids", "empty_patch_ids")
_TEST_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
SEMANTICS = "swebench-harness"
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"  # what run_evaluation logs to run_instance.log before giving up
_REGULAR = "a harness log file must be a regular file"
_TIMEOUT = re.compile(r"\n\nTimeout error: [0-9.]+ seconds exceeded\.\s*$")  # appended to test_output.txt


def is_summary(obj: Any) -> bool:
    """The harness's run summary: `resolved_ids` and `unresolved_ids` lists."""
    return isinstance(obj, dict) and isinstance(obj.get("resolved_ids"), list) and "unresolved_ids" in obj


def is_report(obj: Any) -> bool:
    """A per-instance report.json: `{instance_id: {..., "resolved": bool, "patch_successfully_applied": ...}}`."""
    return (
        isinstance(obj, dict)
        and bool(obj)
        and all(isinstance(v, dict) and "resolved" in v and "patch_successfully_applied" in v for v in obj.values())
    )


def is_run_metadata(obj: Any) -> bool:
    """v5's run.json: `dataset`, `split` and `created_at`."""
    return isinstance(obj, dict) and {"dataset", "split", "created_at"} <= obj.keys() and len(obj) <= 6


def matches(obj: Any) -> bool:
    """A run summary, a report.json or a run.json."""
    return is_summary(obj) or is_report(obj) or is_run_metadata(obj)


def _grade(status: str, **fields: Any) -> dict[str, Any]:
    reward = None if status == "error" else (1.0 if status == "resolved" else 0.0)
    return {
        "status": status,
        "resolved": status == "resolved",
        "reward": reward,
        "patch_applied": fields.pop("patch_applied", None),
        "apply_method": None,
        "error": fields.pop("error", None),
        "semantics": SEMANTICS,
        **fields,
    }


class HarnessRun:
    """Accumulates the summary and report.json files of one harness run; `records()` yields the merged records."""

    def __init__(self, run: str | None, model: str | None) -> None:
        self.run, self.model = run, model
        self.named_model = model  # --model-name: wins over every name the files give
        self.by_id: dict[str, dict[str, Any]] = {}  # instance_id -> record
        self.errors: list[InputError] = []
        self._summary_stem: str | None = None
        # where instance log directories are: model directories of the report.json files read, directories given
        self.roots: dict[Path, None] = {}
        self._metadata: dict[str, Any] | None = None

    def add(self, obj: Any, path: str) -> None:
        """Take one harness file (already parsed); problems are kept as error lines."""
        try:
            if is_summary(obj):
                self._add_summary(obj, path)
            elif is_report(obj):
                self._add_report(obj, path)
            elif is_run_metadata(obj):
                self.run = self.run or Path(path).parent.name
                self._metadata = obj
            else:
                raise InputError(path, None, None, "not a SWE-bench run summary or report.json")
        except InputError as e:
            self.errors.append(e)

    def _add_report(self, obj: dict[str, Any], path: str) -> None:
        parts = Path(path).parts
        for iid, rep in obj.items():
            if len(parts) >= 4 and parts[-2] == iid:  # logs/run_evaluation/{run_id}/{model}/{iid}/report.json
                self.run = self.run or parts[-4]
                self.model = self.model or parts[-3].replace("__", "/")
                self.roots[Path(path).parent.parent] = None
            tests = rep.get("tests_status")
            if tests is not None and not isinstance(tests, dict):
                raise InputError(path, None, f"{iid}.tests_status", f"expected an object, got {short_json(tests)}")
            for key in ("resolved", "patch_successfully_applied"):
                if not isinstance(rep.get(key), bool):
                    raise InputError(path, None, f"{iid}.{key}", f"expected bool, got {short_json(rep.get(key))}")
            empty = bool(rep.get("patch_is_None")) or rep.get("patch_exists") is False
            grade = _grade(
                "resolved" if rep["resolved"] else "unresolved",
                patch_applied=not empty,
                tests={k: tests[k] for k in _TEST_LISTS if isinstance(tests, dict) and isinstance(tests.get(k), dict)},
                harness={k: v for k, v in rep.items() if k != "tests_status"},
            )
            patch = self._side_file(Path(path).with_name("patch.diff"))
            self._put(iid, grade, path, patch)

    def _add_summary(self, obj: dict[str, Any], path: str) -> None:
        self._summary_stem = self._summary_stem or Path(path).name.removesuffix(".json")
        verdicts: dict[str, str] = {}
        for key in _LISTS:
            ids = obj.get(key, [])
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise InputError(path, None, key, f"expected an array of instance ids, got {short_json(ids)}")
            for iid in ids:
                if why := refusal(iid):
                    raise InputError(path, None, key, why)
                if iid in verdicts:
                    raise InputError(path, None, key, f"{iid!r} is also in {verdicts[iid]}")
                verdicts[iid] = key
        for iid, key in sorted(verdicts.items()):
            if key == "error_ids":
                why = "the harness wrote no report.json (patch did not apply, tests timed out, or the run failed)"
                grade = _grade("error", error=why, harness={"summary": key})
            elif key == "empty_patch_ids":
                grade = _grade("unresolved", patch_applied=False, harness={"summary": key, "patch_is_None": True})
            else:
                grade = _grade(
                    "resolved" if key == "resolved_ids" else "unresolved", patch_applied=True, harness={"summary": key}
                )
            self._put(iid, grade, path, "" if key == "empty_patch_ids" else None)

    def _put(self, iid: str, grade: dict[str, Any], path: str, patch: str | None) -> None:
        old = self.by_id.get(iid)
        if old is None:
            self.by_id[iid] = {"instance_id": iid, "patch": patch, "grade": grade, "files": [path]}
            return
        if old["grade"]["status"] != grade["status"]:
            was, first = old["grade"]["status"], old["files"][0]
            raise InputError(path, None, iid, f"harness verdict {grade['status']!r} differs from {was!r} in {first}")
        if "tests" in grade:  # the report.json's detail wins over the summary's bare verdict
            grade["harness"] = {**old["grade"].get("harness", {}), **grade["harness"]}
            old["grade"] = grade
        old["patch"] = old["patch"] if patch is None else patch
        old["files"].append(path)

    def _side_file(self, path: Path) -> str | None:
        """The text of a file beside a report (`patch.diff`, `run_instance.log`, `test_output.txt`); None when it is
        absent. A symlink, FIFO, device or directory there is never followed or read: like any bad harness file it
        is one error line naming it (exit 4 at the end), and the record is made as if the file were absent."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as e:
            if os.path.islink(path):
                why = f"a symlink, not followed: {_REGULAR}"
            else:
                why = f"cannot read: {e.strerror or e}"
            self.errors.append(InputError(str(path), None, None, why))
            return None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
            self.errors.append(InputError(str(path), None, None, f"{kind}, not read: {_REGULAR}"))
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")

    def _instance_dirs(self) -> dict[str, Path]:
        """instance_id -> its log directory (`{run_id}/{model}/{iid}/`, the run's and model's own when known)."""
        model = (self.model or "").replace("/", "__")
        found: dict[str, Path] = {}
        for root in self.roots:
            for log in sorted(root.rglob("run_instance.log")):
                d = log.parent
                if d.name not in found or (d.parent.name == model and d.parent.parent.name == self.run):
                    found[d.name] = d
        return found

    def _classify_error(self, rec: dict[str, Any], d: Path | None) -> None:
        """An `error` instance whose logs show a patch that did not apply (`patch_failed`) or tests that timed out
        (`timeout`) gets swerl's status for it; other errors stay infra errors."""
        if d is None:
            return
        log, out = d / "run_instance.log", d / "test_output.txt"
        if APPLY_PATCH_FAIL in (self._side_file(log) or ""):
            status, why, evidence = "patch_failed", APPLY_PATCH_FAIL, log
        elif m := _TIMEOUT.search(self._side_file(out) or ""):
            status, why, evidence = "timeout", m.group(0).strip(), out
        else:
            return
        patch = self._side_file(d / "patch.diff")
        rec["patch"] = rec["patch"] if patch is None else patch
        harness = {**rec["grade"].get("harness", {}), "log": why}
        error = why if status == "timeout" else None
        rec["grade"] = _grade(status, patch_applied=status == "timeout", harness=harness, error=error)
        rec["files"].append(str(evidence))

    def records(self) -> list[dict[str, Any] | InputError]:
        """The merged records (input order), then the error lines."""
        model = self.model
        run = self.run or self._summary_stem or NAME
        if model is None and self._summary_stem and self.run and self._summary_stem.endswith(f".{self.run}"):
            model = self._summary_stem.removesuffix(f".{self.run}").replace("__", "/")
        out: list[dict[str, Any] | InputError] = []
        dirs = self._instance_dirs() if any(r["grade"]["status"] == "error" for r in self.by_id.values()) else {}
        for key, r in self.by_id.items():
            sid = split_summary_id(key)  # swerl's own summary lists record ids: INSTANCE/RUN/SAMPLE, INSTANCE/MODEL
            if r["grade"]["status"] == "error":
                self._classify_error(r, dirs.get(sid.instance_id))
            out.append(
                {
                    "instance_id": sid.instance_id,
                    "run": sid.run or run,
                    **({"sample": sid.sample} if sid.sample is not None else {}),
                    "policy": {"backend": "import", "model": self.named_model or sid.model or model},
                    "patch": r["patch"] if r["patch"] is not None else "",
                    "exit_status": "submitted",
                    "grade": r["grade"],
                    "source": {
                        "format": NAME,
                        "file": r["files"][0],
                        "line": None,
                        "files": r["files"],
                        "harness_run": self._metadata,
                    },
                    "schema": schema_tag(GRADED),
                }
            )
        return [*out, *self.errors]


@dataclass(frozen=True, slots=True)
class HarnessOptions(ConverterOptions):
    """`--run` and `--model-name`: the run and model of the records when the files do not name them."""

    run: str | None = None
    model: str | None = None


class SwebenchReport(Converter):
    """The harness's run summary, report.json and run.json files of one run -> graded records, built across files."""

    name = NAME
    detect_rank = None  # its documents are taken whole (`add`), never converted one object at a time
    whole_file = True
    document_suffixes = (".json",)
    Options = HarnessOptions

    @classmethod
    def matches(cls, obj: Any) -> bool:
        return matches(obj)

    def begin(self, paths: Iterable[str]) -> None:
        assert isinstance(self.options, HarnessOptions)
        self.harness = HarnessRun(self.options.run, self.options.model)
        # a directory of harness logs also holds the run_instance.log of failed instances
        self.harness.roots.update((Path(p), None) for p in paths if Path(p).is_dir())

    def add(self, obj: Any, path: str, *, chosen: bool) -> bool:
        if not (chosen or matches(obj)):
            return False
        self.harness.add(obj, path)  # merged with the run's other files at the end
        return True

    def finish(self) -> Iterator[dict[str, Any] | InputError]:
        yield from self.harness.records()
