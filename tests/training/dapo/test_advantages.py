"""Step penalty, rewards, group advantages and dynamic sampling against hand-computed values."""

from __future__ import annotations

import math

import pytest

from swerl_cli.core.errors import InputError
from swerl_cli.streams.graded import step_penalty
from swerl_cli.training.advantages import group_advantages, select_samples
from swerl_cli.training.dapo_config import DapoConfig
from tests.records import located, rollout


@pytest.mark.parametrize(
    ("turns", "expected"),
    [(1, 0.0), (9, 0.0), (10, 0.0), (11, -1 / 30), (25, -0.5), (40, -1.0)],
)
def test_step_penalty_stage1_values(turns, expected):
    assert step_penalty(turns, 10, 40) == pytest.approx(expected)


def test_step_penalty_stage2_and_paper_example():
    assert 1.0 + step_penalty(25, 10, 40) == pytest.approx(0.5)  # the paper's example: success at 25 steps
    assert step_penalty(80, 10, 80) == pytest.approx(-1.0)
    assert step_penalty(45, 10, 80) == pytest.approx(-0.5)


def test_group_advantages_population_std_by_hand():
    # rewards 1, 0, 0, 0: mean 0.25, population std sqrt(0.1875)
    sd = math.sqrt(0.1875)
    adv = group_advantages([1.0, 0.0, 0.0, 0.0], "population", 1e-6)
    assert adv[0] == pytest.approx(0.75 / (sd + 1e-6))
    assert adv[1] == pytest.approx(-0.25 / (sd + 1e-6))
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)


def test_group_advantages_sample_std_by_hand():
    sd = math.sqrt(0.75 / 3)  # sum of squares 0.75, ddof 1
    adv = group_advantages([1.0, 0.0, 0.0, 0.0], "sample", 0.01)
    assert adv[0] == pytest.approx(0.75 / (sd + 0.01))


@pytest.mark.parametrize("value", [0.0, 1.0, -0.1, 0.1 + 0.2, 1 / 3])
def test_group_advantages_all_equal_group_is_exactly_zero(value):
    assert group_advantages([value] * 10) == [0.0] * 10


def test_select_samples_rewards_penalty_drop_and_counts():
    cfg = DapoConfig(l_thr=10, t_max=40)
    recs = [
        # group A: one success at 25 turns (R = 0.5), one failure at 3 turns (R = 0), one max-turn failure (R = -1)
        rollout("A", 0, resolved=True, turns=25),
        rollout("A", 1, turns=3),
        rollout("A", 2, turns=40, exit_status="max_turns"),
        # group B: all fail quickly -> every advantage 0 -> dropped
        rollout("B", 0, turns=2),
        rollout("B", 1, turns=4),
        # group C: a grading infrastructure error is excluded (not reward 0); the rest is all-equal -> dropped
        rollout("C", 0, status="error"),
        rollout("C", 1, resolved=True, turns=1),
        rollout("C", 2, resolved=True, turns=1),
        # a collect-side infrastructure failure is excluded too
        rollout("D", 0, exit_status="error"),
    ]
    sel = select_samples(located(recs), cfg)
    c = sel.counts
    assert c["records"] == 9
    assert c["excluded_grade_error"] == 1
    assert c["excluded_collect_error"] == 1
    assert c["groups"] == 3
    assert c["groups_dropped"] == 2
    assert c["samples_dropped_zero_adv"] == 4
    assert c["samples_kept"] == 3
    assert c["max_turns"] == 1
    by = {(s.instance_id, s.sample): s for s in sel.samples}
    assert by["A", 0].reward == pytest.approx(0.5)
    assert by["A", 0].penalty == pytest.approx(-0.5)
    assert by["A", 2].reward == pytest.approx(-1.0)  # kept with its penalised reward, never masked
    rewards = [0.5, 0.0, -1.0]
    mean = sum(rewards) / 3
    sd = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)
    for i, r in enumerate(rewards):
        assert by["A", i].advantage == pytest.approx((r - mean) / (sd + 1e-6))


def test_select_samples_groups_by_run_and_instance():
    recs = [rollout("A", 0, run="r1", resolved=True), rollout("A", 0, run="r2"), rollout("A", 1, run="r2")]
    sel = select_samples(located(recs), DapoConfig())
    assert sel.counts["groups"] == 2
    assert sel.counts["groups_too_small"] == 1
    assert sel.counts["samples_kept"] == 0


def test_select_samples_refuses_biased_sampling_unless_allowed():
    recs = [rollout("A", 0, resolved=True), rollout("A", 1, sampling={"temperature": 1.0, "top_k": 20})]
    with pytest.raises(InputError, match=r"graded.jsonl:2: field 'policy.sampling'.*top_k=20.*--allow-biased"):
        select_samples(located(recs), DapoConfig())
    flagged = [rollout("A", 0, resolved=True, biased=True), rollout("A", 1)]
    with pytest.raises(InputError, match="biased_sampling is true"):
        select_samples(located(flagged), DapoConfig())
    sel = select_samples(located(recs), DapoConfig(allow_biased_sampling=True))
    assert sel.counts["samples_kept"] == 2


def test_select_samples_refuses_mixed_policy_versions():
    recs = [rollout("A", 0, resolved=True, version="v1"), rollout("A", 1, version="v2")]
    with pytest.raises(InputError, match=r"graded.jsonl:2: field 'policy.version'.*graded.jsonl:1"):
        select_samples(located(recs), DapoConfig())


def test_select_samples_refuses_turns_beyond_t_max():
    with pytest.raises(InputError, match=r"stats.turns.*--t-max"):
        select_samples(located([rollout("A", 0, turns=41)]), DapoConfig(t_max=40))


def test_logprob_gap_warning_on_level_and_jump():
    from swerl_cli.training.dapo_steps import diff_warning as _diff_warning

    cfg = DapoConfig()
    assert _diff_warning(None, 0.01, cfg) is None
    assert _diff_warning(0.02, 0.015, cfg) is None
    assert "jumped from 0.0100 to 0.0300" in _diff_warning(0.03, 0.01, cfg)
    assert "> 0.1" in _diff_warning(0.5, None, cfg)


def test_select_samples_order_does_not_depend_on_input_order():
    # grade writes records as they finish: the same rollouts in another order must give the same samples in the same
    # order, so the seeded step split (and so the update) is the same
    recs = [rollout(t, s, resolved=(s + len(t)) % 3 == 0) for t in ("B", "A", "CC") for s in range(4)]
    key = [(s.instance_id, s.sample, s.advantage) for s in select_samples(located(recs), DapoConfig()).samples]
    shuffled = [recs[i] for i in (7, 2, 11, 0, 5, 9, 1, 10, 3, 6, 4, 8)]
    assert [
        (s.instance_id, s.sample, s.advantage) for s in select_samples(located(shuffled), DapoConfig()).samples
    ] == key
    assert [k[:2] for k in key] == sorted(k[:2] for k in key)


def test_tampering_patch_scores_zero_and_is_counted():
    # a patch whose conftest.py was set aside and whose run crashed: unresolved, reward 0 like any other failure
    tampered = rollout("T", 0, turns=2)
    tampered["grade"].update(set_aside=["conftest.py"], reason="tests_crashed")
    untrusted = rollout("T", 1, turns=2)
    untrusted["grade"].update(reason="results_untrusted")
    recs = [tampered, untrusted, rollout("T", 2, resolved=True, turns=2)]
    sel = select_samples(located(recs), DapoConfig(l_thr=10, t_max=40))
    c = sel.counts
    assert (c["patches_set_aside"], c["unresolved_tests_crashed"], c["unresolved_results_untrusted"]) == (1, 1, 1)
    assert c["unresolved_timeout"] == c["unresolved_no_results"] == 0
    by = {s.sample: s for s in sel.samples}
    assert by[0].test_reward == by[1].test_reward == 0.0
    assert by[2].test_reward == 1.0
    assert by[0].advantage < 0 < by[2].advantage
