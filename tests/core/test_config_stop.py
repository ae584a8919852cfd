"""The rule that stops a run failing on its configuration (core/config_stop.py): configuration errors are held back
while nothing else has come; the `after`-th in a row, or the end of a run that had nothing else, stops the run with
one ConfigError; anything else releases them in order and turns the rule off."""

from __future__ import annotations

import pytest

from swerl_cli.core.config_stop import ConfigErrorStop
from swerl_cli.core.errors import ConfigError, SandboxError


def _error(record: dict) -> str | None:
    return record.get("error")


CFG = [{"id": i, "error": f"ConfigError: /repos: no git repository for org/r{i}"} for i in range(4)]
OK = {"id": "ok", "error": None}


def test_the_third_configuration_error_in_a_row_stops_with_the_first_one_named() -> None:
    stop = ConfigErrorStop(_error)
    assert stop.push(CFG[0]) == []
    assert stop.push(CFG[1]) == []
    with pytest.raises(ConfigError) as info:
        stop.push(CFG[2])
    assert str(info.value) == (
        "the first 3 episodes failed on the configuration, none wrote a record; the first: /repos: no git "
        "repository for org/r0"
    )


def test_another_result_releases_the_held_errors_in_order_and_ends_the_rule() -> None:
    stop = ConfigErrorStop(_error)
    assert stop.push(CFG[0]) == []
    assert stop.push(CFG[1]) == []
    assert stop.push(OK) == [CFG[0], CFG[1], OK]
    assert [stop.push(r) for r in CFG] == [[r] for r in CFG]  # later configuration errors are rows' records
    assert stop.finish() == []


def test_an_error_of_another_kind_releases_them_too() -> None:
    stop = ConfigErrorStop(_error)
    other = {"id": "x", "error": "SandboxError: could not pull img:1 from docker.io: manifest unknown"}
    assert stop.push(CFG[0]) == []
    assert stop.push(other) == [CFG[0], other]


def test_a_run_shorter_than_the_window_stops_at_its_end_when_it_had_nothing_else() -> None:
    with pytest.raises(ConfigError, match="^all 2 grading jobs failed on the configuration"):
        list(ConfigErrorStop(_error, "grading jobs").filter(CFG[:2]))
    assert list(ConfigErrorStop(_error).filter([])) == []
    assert list(ConfigErrorStop(_error).filter([OK, CFG[0]])) == [OK, CFG[0]]


DOWN = [{"id": i, "error": "SandboxError: no Docker engine reachable (Connection refused)"} for i in range(4)]


def test_sandbox_errors_of_an_engine_that_does_not_answer_stop_the_run_with_one_line() -> None:
    """paper-mini-gain's rollouts once wrote 104 such error records and exited 0 (dockerd had not started yet)."""
    stop = ConfigErrorStop(_error, unavailable=lambda: "Connection refused")
    assert stop.push(DOWN[0]) == []
    assert stop.push(CFG[0]) == []
    with pytest.raises(SandboxError, match=r"^the first 3 episodes could not get a sandbox and the engine does not "
                       r"answer \(Connection refused\); none wrote a record$"):  # fmt: skip
        stop.push(DOWN[1])
    with pytest.raises(SandboxError, match="^all 1 grading jobs could not get a sandbox"):
        list(ConfigErrorStop(_error, "grading jobs", unavailable=lambda: "down").filter(DOWN[:1]))


def test_sandbox_errors_of_an_engine_that_answers_are_the_rows_own_records() -> None:
    asked = []
    stop = ConfigErrorStop(_error, unavailable=lambda: asked.append(1))  # answers: None
    assert stop.push(DOWN[0]) == []
    assert stop.push(DOWN[1]) == []
    assert stop.push(DOWN[2]) == DOWN[:3]
    assert asked == [1]
    assert stop.push(DOWN[3]) == [DOWN[3]]
    assert list(ConfigErrorStop(_error, unavailable=lambda: None).filter(DOWN[:2])) == DOWN[:2]
    # without `unavailable` (a cluster's driver cannot speak for its workers) sandbox errors pass at once
    assert ConfigErrorStop(_error).push(DOWN[0]) == [DOWN[0]]
