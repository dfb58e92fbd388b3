"""Overflow and infinities (issue 12, item 5).

Inputs that would overflow a policy's state are refused up front, with the object
unchanged; accepted extremes give finite scores and no RuntimeWarning (the suite turns
RuntimeWarning into an error, so any leak fails these tests).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import policy_catalogue
from glmbandits import RSGLinCB, fit_glm
from glmbandits._validation import MAX_MAGNITUDE
from glmbandits.policies.base import Policy

D = 3
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _finite_scores(policy: Policy) -> None:
    scores = policy.last_scores_
    for field in ("ucb", "mean", "width"):
        assert np.all(np.isfinite(getattr(scores, field))), (field, getattr(scores, field))


def _play(policy: Policy, rounds: int, rng: np.random.Generator) -> None:
    for _ in range(rounds):
        X = rng.normal(size=(4, D)) / 2.0
        a = policy.select(X)
        _finite_scores(policy)
        policy.update(X[a], float(rng.random() < 0.5))


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_row_of_norm_1e155_is_refused_and_changes_nothing(cls):
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(0)
    _play(policy, 10, rng)
    X = rng.normal(size=(4, D)) / 2.0
    a = policy.select(X)
    before = pickle.dumps(policy)
    huge = np.array([1e155, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=rf"{cls.__name__}.update: x must have entries of "
                                             r"magnitude <= 1e\+50 .* got 1e\+155 at index \(0,\)"):
            policy.update(huge, 1.0)
        assert pickle.dumps(policy) == before
        with pytest.raises(ValueError, match=rf"{cls.__name__}.select: contexts must have "
                                             r"entries of magnitude <= 1e\+50 .* got -1e\+155 "
                                             r"at index \(1, 2\)"):
            policy.select(np.vstack([X[:1], [[0.0, 0.0, -1e155]]]))
        assert pickle.dumps(policy) == before
        with pytest.raises(ValueError, match=rf"{cls.__name__}.update: reward must have entries "
                                             r"of magnitude <= 1e\+50"):
            policy.update(X[a], 1e155)
        assert pickle.dumps(policy) == before
    policy.update(X[a], 1.0)  # the pending round is still valid
    _play(policy, 5, rng)  # and every later select works


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_largest_accepted_entries_give_finite_scores_without_warnings(cls):
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(1)
    _play(policy, 30, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sign in (1.0, -1.0):
            X = rng.normal(size=(4, D)) / 2.0
            X[0] = sign * MAX_MAGNITUDE * np.array([1.0, -1.0, 1.0])
            policy.select(X)  # scores a huge row against a normal state
            _finite_scores(policy)
        X = rng.normal(size=(4, D)) / 2.0
        X[0, 0] = MAX_MAGNITUDE
        a = policy.select(X)
        policy.update(X[a], 1.0)  # one huge sample, whichever row was chosen
        _play(policy, 10, rng)


def test_rs_glincb_gamma_zero_scores_are_finite():
    """gamma=0 eliminates every action but the greedy one: scored below it, never -inf."""
    policy = RSGLinCB(n_features=D, gamma=0.0, seed=0,
                      warmup_constant=RSGLinCB.THEORY_WARMUP_CONSTANT)  # warm-up, then rounds
    rng = np.random.default_rng(2)
    eliminated = 0
    for _ in range(200):
        X = rng.normal(size=(5, D)) / 2.0
        a = policy.select(X)
        ucb = policy.last_scores_.ucb
        assert np.all(np.isfinite(ucb))
        assert a in np.flatnonzero(ucb == ucb.max())
        eliminated += int(np.sum(ucb < ucb.max()))
        policy.update(X[a], float(rng.random() < 0.5))
    assert eliminated > 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(kappa=0.5), r"RSGLinCB: kappa must be >= 1 \(1/κ of Assumption 1\), got 0.5"),
    (dict(radius=1e40), r"RSGLinCB: radius must leave the logistic link a curvature"),
])
def test_rs_glincb_parameters_in_their_legal_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RSGLinCB(n_features=D, **kwargs)


def _logistic_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 2))
    y = (rng.random(200) < 1.0 / (1.0 + np.exp(-X @ [1.0, -0.5]))).astype(float)
    return X, y


@pytest.mark.parametrize("theta0", [[1e6, -1e6], [1e40, 0.0], [-300.0, 300.0]])
def test_fit_glm_far_warm_start_converges_to_the_mle(theta0):
    X, y = _logistic_data()
    reference = fit_glm(X, y, "logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no ConvergenceWarning
        result = fit_glm(X, y, "logistic", theta0=theta0)
    assert result.converged
    np.testing.assert_allclose(result.theta, reference.theta, atol=1e-6)


def test_fit_glm_gradient_norm_is_finite_when_the_start_overflows():
    # Poisson means at the start are e^800 ~ inf times features 1e10: the gradient overflowed.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit_glm([[1e10], [1e10]], [1.0, 2.0], "poisson", theta0=[8e-8])
    assert np.isfinite(result.gradient_norm) and result.converged
    np.testing.assert_allclose(result.theta, [np.log(1.5) / 1e10], rtol=1e-8)
