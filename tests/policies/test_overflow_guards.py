"""Rows far beyond ‖x‖ <= 1 under the Poisson link: handled or refused, never inf, NaN or a warning.

Found by the property suite (tests/properties): before these guards, one row of norm 1e3
made GLOC's state NaN (every later select crashed), OFUGLB's scores inf or NaN, GLM-TSL's
Hessian overflow, and UCB-GLM's refits leak overflow RuntimeWarnings.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from glmbandits import GLMTSL, GLOC, OFUGLB, UCBGLM, EpsilonGreedy, GLMUCB


def _play(policy, rows, rewards):
    """Play the rows (one action per round); return the refused calls as exception strings."""
    refused = []
    for x, reward in zip(rows, rewards):
        X = np.array([x], dtype=float)
        before = pickle.dumps(policy)
        try:
            action = policy.select(X)
        except ValueError as error:
            assert pickle.dumps(policy) == before
            refused.append(str(error))
            continue
        assert np.isfinite(policy.last_scores_.ucb).all()
        before = pickle.dumps(policy)
        try:
            policy.update(X[action], reward)
        except ValueError as error:
            assert pickle.dumps(policy) == before
            refused.append(str(error))
    return refused


ROWS = [[1.0], [1.0], [1000.0], [-1.0], [1.0], [1.0]]
REWARDS = [1.0, 7.0, 0.0, 2.0, 1.0, 3.0]


@pytest.mark.parametrize("cls", [UCBGLM, GLMUCB, EpsilonGreedy, GLMTSL])
def test_refitted_policies_handle_a_huge_poisson_row_without_warnings(cls):
    policy = cls(1, family="poisson", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert _play(policy, ROWS, REWARDS) == []
    assert np.isfinite(policy.theta_).all()


def test_gloc_refuses_a_sample_that_would_overflow_its_online_step():
    policy = GLOC(1, family="poisson", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        refused = _play(policy, ROWS, REWARDS)
    assert len(refused) == 1 and "would overflow the policy's state" in refused[0]
    assert "theta_online_" in refused[0] and "norm 1000.0" in refused[0]
    assert policy.n_updates_ == len(ROWS) - 1


def test_ofuglb_refuses_a_round_whose_optimistic_values_overflow():
    policy = OFUGLB(1, family="poisson", seed=0)
    rows = [[1.0], [1.0], [1e8], [-1.0], [1.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        refused = _play(policy, rows, [1.0, 7.0, 0.0, 2.0, 1.0])
    assert refused, "a row of norm 1e8 under the Poisson link cannot be scored finitely"
    assert all("overflow" in message for message in refused)
    X = np.array([[0.5]])
    policy.select(X)  # still usable afterwards
    assert np.isfinite(policy.last_scores_.ucb).all()
