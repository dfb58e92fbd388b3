"""Issue 21: an estimate's interval always contains its point estimate.

The interval of a value known to lie in the reward range [0, 1] used to be clipped to it
while the point estimate was not: IPS with every propensity 0.1 and every reward 1 printed
5.0 with the interval [1.0, 1.0]. The rule now (``intervals.clip_to_unit``): the point
estimate is never clipped (IPS and DR stay unbiased, and a value outside the reward range
shows that something is wrong); the interval is clipped to the reward range only when the
point estimate lies in it, and otherwise stays around the estimate.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from offline_helpers import FirstActionPolicy

from glmbandits import RandomPolicy
from glmbandits.evaluation import (LoggedBanditData, OffPolicyWarning, doubly_robust, ips,
                                   replay, snips)
from glmbandits.evaluation.intervals import clip_to_unit
from glmbandits.evaluation.shadow import evaluate_shadow


def _contains(estimate) -> bool:
    return estimate.ci_low <= estimate.value <= estimate.ci_high


def test_issue_example_ips_above_the_reward_range_keeps_its_point_inside_its_interval():
    T = 50
    log = LoggedBanditData(np.zeros((T, 2, 1)), np.zeros(T, dtype=int), np.ones(T),
                           np.full(T, 0.1))  # wrong propensities: the target's π is 1/2
    with pytest.warns(OffPolicyWarning, match=r"ips: the whole interval \[5, 5\] lies outside "
                                               r"\[0, 1\]"):
        estimate = ips(RandomPolicy(1, seed=0), log)
    assert estimate.value == pytest.approx(5.0)
    assert _contains(estimate), estimate
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((5.0, 5.0))  # not [1, 1]


def test_an_interval_that_cannot_contain_the_value_warns_and_one_that_can_does_not():
    """Rewards in [0, 1] put the value in [0, 1]: an interval wholly outside misses it surely."""
    log = LoggedBanditData(np.zeros((50, 2, 1)), np.zeros(50, dtype=int),
                           np.tile([1.0, 0.0], 25), np.full(50, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", OffPolicyWarning)
        estimate = ips(RandomPolicy(1, seed=0), log)  # consistent propensities: 0.5 [..]
    assert 0.0 <= estimate.ci_low <= estimate.value <= estimate.ci_high <= 1.0
    rewards = np.linspace(-3.0, 3.0, 50)  # rewards outside [0, 1]: no range to check
    log = LoggedBanditData(np.zeros((50, 2, 1)), np.zeros(50, dtype=int), rewards + 4.0,
                           np.full(50, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", OffPolicyWarning)
        ips(RandomPolicy(1, seed=0), log)


def test_an_interval_is_clipped_to_the_range_only_when_its_point_lies_in_it():
    rewards = np.ones(4)
    assert clip_to_unit(0.9, 1.2, rewards, value=0.98) == (0.9, 1.0)
    assert clip_to_unit(-0.3, 0.1, rewards, value=0.02) == (0.0, 0.1)
    assert clip_to_unit(0.9, 1.2, rewards, value=1.05) == (0.9, 1.2)
    assert clip_to_unit(-0.3, 0.1, rewards, value=-0.02) == (-0.3, 0.1)
    assert clip_to_unit(4.0, 6.0, rewards, value=5.0) == (4.0, 6.0)
    assert clip_to_unit(-3.0, 6.0, np.array([-2.0, 3.0]), value=1.0) == (-3.0, 6.0)


def test_dr_below_zero_keeps_its_point_inside_its_interval():
    rng = np.random.default_rng(3)
    T = 40
    contexts = rng.normal(size=(T, 2, 2))
    rewards = np.zeros(T)
    rewards[0] = 1.0
    log = LoggedBanditData(contexts, np.zeros(T, dtype=int), rewards, np.full(T, 0.5))
    # the model predicts about 1/40 for every action; each residual is -1/40 at weight 2
    estimate = doubly_robust(FirstActionPolicy(np.zeros(2)), log)
    assert _contains(estimate), estimate


@pytest.mark.parametrize("estimator", [ips, snips, doubly_robust])
def test_every_estimator_on_inconsistent_propensities(estimator):
    rng = np.random.default_rng(0)
    T = 60
    log = LoggedBanditData(rng.normal(size=(T, 3, 2)), rng.integers(3, size=T),
                           (rng.random(T) < 0.9).astype(float), np.full(T, 0.05))
    estimate = estimator(RandomPolicy(2, seed=0), log)
    assert _contains(estimate), estimate


def test_replay_and_shadow_intervals_contain_their_points():
    rng = np.random.default_rng(1)
    T = 80
    actions = rng.integers(2, size=T)
    log = LoggedBanditData(rng.normal(size=(T, 2, 2)), actions, rng.random(T), np.full(T, 0.5))
    assert _contains(replay(RandomPolicy(2, seed=0), log, seed=0))
    pi = np.zeros((T, 2))
    pi[:, 0] = 1.0
    result = evaluate_shadow(log, pi, default_propensities=np.full(T, 0.01))
    for estimate in (result.default, result.policy_dr, result.policy_snips):
        assert estimate.ci_low <= estimate.value <= estimate.ci_high, estimate
