"""The discounted estimates against textbook O(t) weighted sums and scipy.optimize."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from glmbandits import fit_glm
from glmbandits.estimation.discounted import (DiscountedGLMEstimate, DiscountedGram,
                                              DiscountedRidgeEstimate, discount_memory)
from glmbandits.estimation.estimates import RidgeEstimate
from glmbandits.families import get_family

FAMILIES = ["logistic", "probit", "linear", "poisson"]


def _samples(seed: int, n: int, d: int, family: str = "linear"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    fam = get_family(family)
    y = fam.sample(fam.mean(X @ rng.normal(size=d)), rng)
    return X, y


def _textbook_grams(X, gamma, l2):
    """Σ_s γ^{t-s} x x' + λI and Σ_s γ^{2(t-s)} x x' + λI by direct O(t) sums."""
    t, d = X.shape
    w = gamma ** np.arange(t - 1, -1, -1.0)
    V = (X.T * w) @ X + l2 * np.eye(d)
    V_tilde = (X.T * w**2) @ X + l2 * np.eye(d)
    return V, V_tilde, w


def _textbook_mle(X, y, family, gamma, penalty):
    """The root of Σ γ^{t-s}(μ(x'θ) - y)x + penalty·θ = 0 by scipy (BFGS on the objective)."""
    fam = get_family(family)
    w = gamma ** np.arange(X.shape[0] - 1, -1, -1.0)

    def objective(theta):
        eta = X @ theta
        value = w @ (fam.antiderivative(eta) - y * eta) + 0.5 * penalty * theta @ theta
        return value, X.T @ (w * (fam.mean(eta) - y)) + penalty * theta

    result = optimize.minimize(objective, np.zeros(X.shape[1]), jac=True, method="BFGS",
                               options={"gtol": 1e-11, "maxiter": 1000})
    return result.x


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.999])
def test_gram_matrices_equal_the_direct_sums_and_the_papers_recursion(gamma):
    X, _ = _samples(0, 60, 3)
    gram = DiscountedGram(3, gamma, 0.7)
    V_rec, Vt_rec = 0.7 * np.eye(3), 0.7 * np.eye(3)  # Algorithm 1, literally
    for x in X:
        gram.add(x)
        V_rec = gamma * V_rec + np.outer(x, x) + (1 - gamma) * 0.7 * np.eye(3)
        Vt_rec = gamma**2 * Vt_rec + np.outer(x, x) + (1 - gamma**2) * 0.7 * np.eye(3)
    V, V_tilde, _ = _textbook_grams(X, gamma, 0.7)
    np.testing.assert_allclose(gram.V, V, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram.V_tilde, V_tilde, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram.V, V_rec, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram.V_tilde, Vt_rec, rtol=1e-12, atol=1e-12)
    V_inv = np.linalg.inv(V)
    np.testing.assert_allclose(gram.V_inv_, V_inv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gram.width_matrix_, V_inv @ V_tilde @ V_inv, rtol=1e-10,
                               atol=1e-12)
    assert gram.n_ == 60


@pytest.mark.parametrize("gamma", [0.8, 0.97])
def test_discounted_least_squares_equals_the_papers_weighted_form(gamma):
    """θ̂ = argmin Σ γ^{-s}(r_s - x_s'θ)² + γ^{-t}λ‖θ‖² (Russac et al. 2019, eq. of θ̂_t)."""
    X, y = _samples(1, 40, 3)
    estimate = DiscountedRidgeEstimate(3, gamma, 0.5)
    for x, r in zip(X, y):
        estimate.add(x, r)
    t = X.shape[0]
    w = gamma ** -np.arange(1.0, t + 1)  # the paper's growing weights (no overflow at t = 40)
    A = (X.T * w) @ X + gamma**-t * 0.5 * np.eye(3)
    theta = np.linalg.solve(A, (X.T * w) @ y)
    np.testing.assert_allclose(estimate.theta_, theta, rtol=1e-9, atol=1e-12)
    V, _, w_norm = _textbook_grams(X, gamma, 0.5)
    np.testing.assert_allclose(estimate.b_, (X.T * w_norm) @ y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(estimate.theta_, np.linalg.solve(V, estimate.b_), rtol=1e-10)


def test_gamma_one_is_linucbs_ridge_regression():
    X, y = _samples(2, 50, 4)
    discounted, ridge = DiscountedRidgeEstimate(4, 1.0, 1.0), RidgeEstimate(4, 1.0)
    for x, r in zip(X, y):
        discounted.add(x, r)
        ridge.add(x, r)
    np.testing.assert_allclose(discounted.theta_, ridge.theta_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(discounted.gram_.V_inv_, ridge.V_inv_, rtol=1e-10, atol=1e-13)
    # Ṽ = V at γ = 1: the width matrix V⁻¹ṼV⁻¹ is V⁻¹, LinUCB's
    np.testing.assert_allclose(discounted.gram_.width_matrix_, ridge.V_inv_, rtol=1e-9,
                               atol=1e-13)


def test_a_long_horizon_stays_finite_where_the_papers_weights_overflow():
    """γ^{-t} overflows float64 after 709/(-log γ) rounds (6 700 at γ = 0.9); the normalised
    form does not, and still equals the direct sum over the samples that matter."""
    gamma, t = 0.9, 8000
    with np.errstate(over="ignore"):
        assert np.isinf(np.power(gamma, -float(t)))  # the paper's weight γ^{-t}
    X, y = _samples(3, t, 2)
    estimate = DiscountedRidgeEstimate(2, gamma, 1.0)
    for x, r in zip(X, y):
        estimate.add(x, r)
    recent = X[-500:], y[-500:]  # γ^500 ≈ 1e-23: the older samples are below rounding
    V, _, w = _textbook_grams(recent[0], gamma, 1.0)
    assert np.all(np.isfinite(estimate.gram_.M_)) and np.all(np.isfinite(estimate.theta_))
    np.testing.assert_allclose(estimate.theta_, np.linalg.solve(V, (recent[0].T * w) @ recent[1]),
                               rtol=1e-9, atol=1e-12)


def test_discount_memory_drops_at_most_the_stated_fraction_of_weight():
    for gamma in (0.5, 0.9, 0.99, 0.999):
        for eps in (1e-3, 1e-12):
            W = discount_memory(gamma, eps)
            # the samples older than W rounds weigh γ^W/(1-γ): a fraction γ^W <= ε of 1/(1-γ)
            assert gamma**W <= eps * (1 + 1e-12) and (W == 1 or gamma ** (W - 1) > eps)
    assert discount_memory(0.99) == 2750


@pytest.mark.parametrize("family", FAMILIES)
def test_discounted_mle_equals_scipy_on_the_weighted_objective(family):
    X, y = _samples(4, 120, 3, family)
    gamma, l2, penalty = 0.95, 1.0, 0.3
    estimate = DiscountedGLMEstimate(3, get_family(family), gamma, l2, penalty,
                                     memory=discount_memory(gamma), tol=1e-11)
    for x, r in zip(X, y):
        estimate.add(x, r)
    assert estimate.n == 120  # W = 539 > t: every sample is in the equation
    reference = _textbook_mle(X, y, family, gamma, penalty)
    np.testing.assert_allclose(estimate.theta, reference, rtol=0, atol=1e-6)
    V, V_tilde, _ = _textbook_grams(X, gamma, l2)
    np.testing.assert_allclose(estimate.gram_.V_inv_, np.linalg.inv(V), rtol=1e-10)


@pytest.mark.parametrize("family", ["logistic", "poisson"])
def test_a_full_ring_buffer_weights_the_right_samples(family):
    """After the buffer wraps, the slot-order weights are γ^{age} of the samples held:
    the root equals the textbook one over the last W samples exactly as weighted."""
    X, y = _samples(5, 170, 2, family)
    gamma, W = 0.9, 64
    estimate = DiscountedGLMEstimate(2, get_family(family), gamma, 1.0, 0.2, memory=W,
                                     tol=1e-11)
    for t, (x, r) in enumerate(zip(X, y), start=1):
        estimate.add(x, r)
        if t in (30, 64, 65, 170):
            last = slice(max(0, t - W), t)
            np.testing.assert_allclose(estimate.theta,
                                       _textbook_mle(X[last], y[last], family, gamma, 0.2),
                                       rtol=0, atol=1e-6)
    assert estimate.n == W and estimate.window_.n_seen_ == 170


def test_truncation_moves_the_root_by_less_than_its_bound():
    """Dropping samples older than W = discount_memory(γ, ε) moves the root of the
    λc-strongly monotone equation by at most ε R/((1-γ)·penalty), R = max|μ - y|·‖x‖."""
    X, y = _samples(6, 400, 2, "logistic")
    gamma, eps, penalty = 0.9, 1e-4, 0.2
    W = discount_memory(gamma, eps)
    estimate = DiscountedGLMEstimate(2, get_family("logistic"), gamma, 1.0, penalty, memory=W,
                                     tol=1e-12)
    for x, r in zip(X, y):
        estimate.add(x, r)
    full = _textbook_mle(X, y, "logistic", gamma, penalty)
    bound = eps * 1.0 / ((1 - gamma) * penalty)  # |μ - y| <= 1 and ‖x‖ <= 1
    gap = float(np.linalg.norm(estimate.theta - full))
    assert W == 88 and gap <= bound, (gap, bound)


def test_gamma_one_with_all_samples_is_the_stationary_ridge_mle():
    X, y = _samples(7, 80, 3, "logistic")
    estimate = DiscountedGLMEstimate(3, get_family("logistic"), 1.0, 1.0, 0.5, memory=100,
                                     tol=1e-12)
    for x, r in zip(X, y):
        estimate.add(x, r)
    np.testing.assert_allclose(estimate.theta, fit_glm(X, y, "logistic", l2=0.5, tol=1e-12).theta,
                               rtol=0, atol=1e-9)
    assert np.array_equal(estimate.weights(), np.ones(80))


def test_refits_are_lazy_and_counted():
    X, y = _samples(8, 10, 2, "logistic")
    estimate = DiscountedGLMEstimate(2, get_family("logistic"), 0.9, 1.0, 0.2, memory=50)
    for x, r in zip(X, y):
        estimate.add(x, r)
    first = estimate.theta.copy()
    assert estimate.theta is estimate.theta_ and estimate.n_fits_ == 1  # no second refit
    estimate.add(X[0], y[0])
    assert not np.array_equal(estimate.theta, first) and estimate.n_fits_ == 2
