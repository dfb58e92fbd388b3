"""Every estimate's interval contains its point estimate, and everything is finite (issue 21).

Over IPS, SNIPS, DR (with the target's distribution or sampled actions), replay and the
shadow evaluation, on logs whose propensities may be right, too small, tiny or
inconsistent with the target, and rewards binary, fractional in [0, 1] or any reals:
an estimate is either refused with a ValueError naming the estimator, or has finite
value, interval and standard error with ``ci_low <= value <= ci_high``; when the rewards
and the value lie in [0, 1], so does the interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from glmbandits import LinUCB, RandomPolicy
from glmbandits.evaluation import (LoggedBanditData, doubly_robust, ips, replay, snips,
                                   target_actions)
from glmbandits.evaluation.shadow import evaluate_shadow
from property_helpers import no_foreign_warnings

_ESTIMATORS = {"ips": ips, "snips": snips, "dr": doubly_robust}


@st.composite
def _logs(draw: Any) -> LoggedBanditData:
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    T = draw(st.integers(1, 50))
    K = draw(st.integers(1, 4))
    d = draw(st.integers(1, 3))
    contexts = rng.normal(size=(T, K, d)) / np.sqrt(d)
    actions = rng.integers(0, K, size=T)
    kind = draw(st.sampled_from(("binary", "fraction", "ones", "reals")))
    if kind == "binary":
        rewards = (rng.random(T) < draw(st.sampled_from((0.0, 0.1, 0.5, 1.0)))).astype(float)
    elif kind == "fraction":
        rewards = rng.random(T)
    elif kind == "ones":
        rewards = np.ones(T)
    else:
        rewards = rng.normal(scale=draw(st.sampled_from((1.0, 1e3))), size=T)
    scheme = draw(st.sampled_from(("uniform", "small", "random", "tiny", "one")))
    if scheme == "uniform":
        propensities = np.full(T, 1.0 / K)
    elif scheme == "small":  # inconsistent with K: mean weight far above 1
        propensities = np.full(T, draw(st.sampled_from((0.1, 0.01))))
    elif scheme == "random":
        propensities = rng.uniform(0.01, 1.0, size=T)
    elif scheme == "tiny":
        propensities = rng.choice([1e-300, 1e-6, 0.5], size=T)
    else:
        propensities = np.ones(T)
    return LoggedBanditData(contexts, actions, rewards, propensities)


def _check(estimate: Any, rewards: np.ndarray) -> None:
    fields = (estimate.value, estimate.ci_low, estimate.ci_high, estimate.std_error)
    assert all(np.isfinite(v) for v in fields), estimate
    assert estimate.ci_low <= estimate.value <= estimate.ci_high, estimate
    if rewards.min() >= 0.0 and rewards.max() <= 1.0 and 0.0 <= estimate.value <= 1.0:
        assert 0.0 <= estimate.ci_low and estimate.ci_high <= 1.0, estimate


def _family(rewards: np.ndarray) -> str:
    return "logistic" if rewards.min() >= 0.0 and rewards.max() <= 1.0 else "linear"


@given(log=_logs(), name=st.sampled_from(sorted(_ESTIMATORS)),
       target=st.sampled_from(("linucb", "random")), sampled=st.booleans(),
       confidence=st.sampled_from((0.5, 0.95, 0.999)))
def test_every_interval_contains_its_estimate(log: LoggedBanditData, name: str, target: str,
                                              sampled: bool, confidence: float) -> None:
    policy = (LinUCB(log.n_features, seed=0) if target == "linucb"
              else RandomPolicy(log.n_features, seed=0))
    kwargs: dict[str, Any] = {"confidence": confidence}
    if sampled:
        kwargs["actions"] = target_actions(policy, log)
    if name == "dr":
        kwargs["family"] = _family(log.rewards)
    with no_foreign_warnings():
        try:
            estimate = _ESTIMATORS[name](policy, log, **kwargs)
        except ValueError as error:  # a clear refusal (overflowing weights, no match)
            assert name in str(error) or "doubly_robust" in str(error), error
            return
    _check(estimate, log.rewards)


@given(log=_logs())
def test_replay_interval_contains_its_estimate(log: LoggedBanditData) -> None:
    with no_foreign_warnings():
        try:
            estimate = replay(RandomPolicy(log.n_features, seed=0), log, seed=0)
        except ValueError as error:
            assert "replay" in str(error)
            return
    _check(estimate, log.rewards)


@given(log=_logs(), randomized=st.booleans())
def test_shadow_intervals_contain_their_estimates(log: LoggedBanditData,
                                                  randomized: bool) -> None:
    K = int(log.n_actions.max())
    pi = np.zeros((log.n_rounds, K))
    pi[:, 0] = 1.0
    family = _family(log.rewards)
    with no_foreign_warnings():
        try:
            result = evaluate_shadow(log, pi, family=family,
                                     default_propensities=log.propensities if randomized
                                     else None)
        except ValueError as error:
            assert "evaluate_shadow" in str(error), error
            return
    for estimate in (result.default, result.policy_dr, result.policy_snips):
        if estimate is not None:
            _check(estimate, log.rewards)
