"""Offline estimators on extreme logs: finite estimates or a clear error, intervals in range."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from glmbandits import LinUCB, RandomPolicy
from glmbandits.evaluation import LoggedBanditData, doubly_robust, ips, replay, snips
from property_helpers import no_foreign_warnings

_ESTIMATORS = {"ips": ips, "snips": snips, "dr": doubly_robust}


@st.composite
def logs(draw: Any) -> LoggedBanditData:
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    T = draw(st.integers(1, 60))
    K = draw(st.integers(1, 5))
    d = draw(st.integers(1, 3))
    contexts = rng.normal(size=(T, K, d)) / np.sqrt(d)
    actions = rng.integers(0, K, size=T)
    rewards = (rng.random(T) < draw(st.sampled_from((0.0, 0.3, 1.0)))).astype(float)
    kind = draw(st.sampled_from(("uniform", "tiny", "subnormal", "mixed", "one")))
    propensities = np.full(T, 1.0 / K)
    if kind == "tiny":
        propensities[:] = 1e-300
    elif kind == "subnormal":
        propensities[:] = 5e-324
    elif kind == "mixed":
        propensities = rng.choice([1.0, 1e-300, 1e-3, 0.5], size=T)
    elif kind == "one":
        propensities[:] = 1.0
    return LoggedBanditData(contexts, actions, rewards, propensities)


@given(log=logs(), name=st.sampled_from(sorted(_ESTIMATORS)), target=st.sampled_from(("linucb", "random")))
def test_estimates_are_finite_or_refused_and_intervals_contain_the_estimate(
        log: LoggedBanditData, name: str, target: str) -> None:
    policy = (LinUCB(log.n_features, seed=0) if target == "linucb"
              else RandomPolicy(log.n_features, seed=0))
    with no_foreign_warnings():
        try:
            estimate = _ESTIMATORS[name](policy, log)
        except ValueError as error:  # a clear refusal is allowed, never a NaN or inf
            assert name in str(error) or "doubly_robust" in str(error), error
            return
    for field in ("value", "ci_low", "ci_high", "std_error"):
        assert np.isfinite(getattr(estimate, field)), (field, estimate)
    assert estimate.ci_low <= estimate.value <= estimate.ci_high, estimate
    if 0.0 <= estimate.value <= 1.0:  # rewards are 0/1: the interval is clipped to [0, 1]
        assert 0.0 <= estimate.ci_low and estimate.ci_high <= 1.0, estimate


@given(log=logs())
def test_replay_is_finite_and_its_interval_stays_in_range(log: LoggedBanditData) -> None:
    with no_foreign_warnings():
        try:
            estimate = replay(RandomPolicy(log.n_features, seed=0), log, seed=0)
        except ValueError as error:  # e.g. no matched event: refused, not NaN
            assert "replay" in str(error)
            return
    for field in ("value", "ci_low", "ci_high"):
        value = getattr(estimate, field)
        assert np.isfinite(value) and 0.0 <= value <= 1.0, (field, estimate)
