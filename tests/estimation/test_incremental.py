"""The fast exact refit solves eq. (3) to the same tolerance as the plain Newton solver."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from glmbandits.estimation.incremental import IncrementalMLE
from glmbandits.environments.synthetic import sample_unit_ball
from glmbandits.estimation import solve_estimating_equation
from glmbandits.families import get_family
from glmbandits.estimation.estimates import GLMEstimate


def _stream(family_name: str, n: int, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    family = get_family(family_name)
    X = sample_unit_ball(rng, (n,), d)
    theta = rng.normal(size=d)
    theta *= 2.0 / np.linalg.norm(theta)
    y = family.sample(family.mean(X @ theta), rng)
    return family, X, y


def _gradient(X, y, family, l2, theta):
    return X.T @ (family.mean(X @ theta) - y) + l2 * theta


@pytest.mark.parametrize("family_name", ["logistic", "probit", "poisson", "linear"])
def test_incremental_refits_solve_eq3_and_match_plain_newton(family_name):
    family, X, y = _stream(family_name, 400)
    solver = IncrementalMLE(X.shape[1], family, l2=1.0)
    for n in range(1, 401):
        fit = solver.refit(X[:n], y[:n])
        assert fit.converged
        # the returned estimate solves eq. (3) to the solver's tolerance, exactly recomputed
        assert np.max(np.abs(_gradient(X[:n], y[:n], family, 1.0, fit.theta))) <= 1e-8 * n * 1.0001
        if n % 40 == 0:  # and it is the plain Newton root (strongly convex: unique), up to
            # the distance the tolerance allows: |Δθ| <= |g|/λ_min(H) <= 1e-8 n / (λ_min/n)·...
            plain = solve_estimating_equation(X[:n], y[:n], family, 1.0, None, 1e-12, 100)
            np.testing.assert_allclose(fit.theta, plain.theta, atol=1e-5)
    # after one new sample, few passes over the data: <= 3 per refit on average
    assert solver.n_passes_ <= 3 * 400
    assert solver.n_fallbacks_ <= 20


def test_many_new_samples_at_once_as_in_lazy_refits():
    family, X, y = _stream("logistic", 600, seed=1)
    solver = IncrementalMLE(X.shape[1], family, l2=1.0)
    for n in (10, 11, 50, 51, 200, 600):
        fit = solver.refit(X[:n], y[:n])
        plain = solve_estimating_equation(X[:n], y[:n], family, 1.0, None, 1e-12, 100)
        assert fit.converged
        np.testing.assert_allclose(fit.theta, plain.theta, atol=1e-5)


def test_separable_data_falls_back_to_the_robust_solver():
    family = get_family("logistic")
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.5, 0.1]])
    y = np.array([1.0, 0.0, 1.0])
    solver = IncrementalMLE(2, family, l2=0.0)
    fit = solver.refit(X, y)
    robust = solve_estimating_equation(X, y, family, 0.0, None, 1e-8, 50)
    assert not fit.converged and solver.n_fallbacks_ == 1
    assert np.all(np.isfinite(fit.theta))
    np.testing.assert_array_equal(fit.theta, robust.theta)


def test_glm_estimate_keeps_its_api_and_copies_and_pickles_the_solver():
    family, X, y = _stream("logistic", 120, seed=2)
    estimate = GLMEstimate(X.shape[1], family, 1.0)
    for x, reward in zip(X[:100], y[:100]):
        estimate.add(x, reward)
        estimate.theta
    assert estimate.n == 100 and estimate.n_fits_ == 100 and estimate.n_failed_fits_ == 0
    V = np.eye(X.shape[1]) + X[:100].T @ X[:100]
    np.testing.assert_allclose(estimate.V_inv, np.linalg.inv(V), atol=1e-10)
    assert estimate.log_det_V == pytest.approx(np.linalg.slogdet(V)[1], abs=1e-9)
    clone, restored = estimate.copy(), pickle.loads(pickle.dumps(estimate))
    for x, reward in zip(X[100:], y[100:]):
        for e in (estimate, clone, restored):
            e.add(x, reward)
    np.testing.assert_array_equal(clone.theta, estimate.theta)
    np.testing.assert_array_equal(restored.theta, estimate.theta)
    # theta_ set from outside: the next refit starts from it and still solves eq. (3)
    estimate.theta_ = np.zeros(X.shape[1])
    estimate.add(X[0], y[0])
    Xa = np.vstack([X, X[:1]])
    ya = np.append(y, y[:1])
    assert np.max(np.abs(_gradient(Xa, ya, family, 1.0, estimate.theta))) <= 1e-8 * 121 * 1.0001
