"""The sliding-window estimate: a ring buffer of the last τ samples and the MLE over it."""

import numpy as np
import pytest
from scipy import optimize

from glmbandits.estimation.estimates import GLMEstimate
from glmbandits.estimation.windowed import SlidingWindow, WindowedGLMEstimate
from glmbandits.families import get_family


def _samples(family, n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    theta = np.linspace(1.0, -1.0, d)
    y = family.sample(family.mean(X @ theta), rng)
    return X, y


def _textbook_fit(X, y, family, l2):
    """The ridge MLE of exactly these samples, from scratch, by scipy's BFGS."""
    def objective(theta):
        eta = X @ theta
        value = np.sum(family.antiderivative(eta)) - y @ eta + 0.5 * l2 * theta @ theta
        return value, X.T @ (family.mean(eta) - y) + l2 * theta
    result = optimize.minimize(objective, np.zeros(X.shape[1]), jac=True, method="BFGS",
                               options={"gtol": 1e-11, "maxiter": 1000})
    return result.x


def test_the_ring_buffer_holds_exactly_the_last_samples_in_fixed_memory():
    window = SlidingWindow(2, 4)
    for t in range(11):
        evicted = window.append(np.array([t, -t], dtype=float), float(t))
        if t < 4:
            assert evicted is None
        else:
            np.testing.assert_array_equal(evicted[0], [t - 4, 4 - t])
            assert evicted[1] == t - 4
        X, y = window.ordered()
        expected = np.arange(max(0, t - 3), t + 1, dtype=float)
        np.testing.assert_array_equal(y, expected)
        np.testing.assert_array_equal(X[:, 0], expected)
        assert sorted(window.y.tolist()) == expected.tolist()
    assert window.X_.shape == (4, 2) and window.n_ == 4 and window.n_seen_ == 11


@pytest.mark.parametrize("family_name", ["logistic", "probit", "linear", "poisson"])
def test_the_windowed_mle_and_gram_equal_a_refit_from_scratch_on_the_last_tau_samples(
        family_name):
    family = get_family(family_name)
    d, tau, l2 = 3, 7, 0.5
    X, y = _samples(family, 40, d, seed=3)
    estimate = WindowedGLMEstimate(d, family, tau, l2)
    for t in range(40):
        estimate.add(X[t], float(y[t]))
        if t % 3 == 2 or t == 39:  # refits after one and after several new samples
            start = max(0, t + 1 - tau)
            Xw, yw = X[start:t + 1], y[start:t + 1]
            np.testing.assert_allclose(estimate.theta, _textbook_fit(Xw, yw, family, l2),
                                       atol=1e-6)
            np.testing.assert_allclose(estimate.V_inv_,
                                       np.linalg.inv(l2 * np.eye(d) + Xw.T @ Xw), atol=1e-12)
    assert estimate.n == tau and estimate.n_refreshes_ == 40 // tau - 1  # at n_seen = 14, 21, ...


def test_the_downdates_stay_exact_over_many_evictions():
    family = get_family("logistic")
    d, tau, l2 = 4, 25, 1.0
    X, y = _samples(family, 3000, d, seed=5)
    estimate = WindowedGLMEstimate(d, family, tau, l2)
    for t in range(3000):
        estimate.add(X[t], float(y[t]))
    Xw = X[-tau:]
    np.testing.assert_allclose(estimate.V_inv_, np.linalg.inv(l2 * np.eye(d) + Xw.T @ Xw),
                               rtol=1e-10, atol=1e-13)


def test_a_window_longer_than_the_data_is_ucb_glms_estimate():
    family = get_family("logistic")
    d, n, l2 = 3, 60, 1.0
    X, y = _samples(family, n, d, seed=8)
    windowed = WindowedGLMEstimate(d, family, n, l2)
    full = GLMEstimate(d, family, l2)
    for t in range(n):
        windowed.add(X[t], float(y[t]))
        full.add(X[t], float(y[t]))
        if t % 10 == 9:
            np.testing.assert_allclose(windowed.theta, full.theta, atol=1e-6)  # both solvers: tol
            np.testing.assert_array_equal(windowed.V_inv_, full.V_inv_)
