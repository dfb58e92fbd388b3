"""fit_glm's sample weights: against statsmodels, repeated rows, dropped rows and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import fit_glm
from glmbandits.estimation import solve_estimating_equation
from glmbandits.families import get_family

sm = pytest.importorskip("statsmodels.api")

FAMILIES = ["logistic", "probit", "linear", "poisson"]


def _data(name: str, seed: int, n: int = 300, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    family = get_family(name)
    y = family.sample(family.mean(X @ rng.normal(size=d)), rng)
    return X, y, rng


STATSMODELS = {
    "logistic": lambda: sm.families.Binomial(),
    "poisson": lambda: sm.families.Poisson(),
    "linear": lambda: sm.families.Gaussian(),
}


@pytest.mark.parametrize("name", list(STATSMODELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_mle_agrees_with_statsmodels_var_weights(name, seed):
    # statsmodels' var_weights multiply each observation's log-likelihood: for the
    # canonical links its score is Σ w_i (y_i - μ_i) x_i, our weighted equation.
    X, y, rng = _data(name, seed)
    w = rng.uniform(0.05, 2.0, size=y.shape[0])
    ours = fit_glm(X, y, name, sample_weight=w)
    reference = sm.GLM(y, X, family=STATSMODELS[name](), var_weights=w).fit(tol=1e-13,
                                                                            maxiter=200)
    assert ours.converged
    np.testing.assert_allclose(ours.theta, reference.params, atol=1e-6)


@pytest.mark.parametrize("name", FAMILIES)
def test_integer_weights_equal_repeated_rows(name):
    X, y, rng = _data(name, 2, n=60)
    counts = rng.integers(0, 4, size=60)
    counts[0] = 1
    weighted = fit_glm(X, y, name, l2=0.5, sample_weight=counts, tol=1e-12)
    rows = np.repeat(np.arange(60), counts)
    repeated = fit_glm(X[rows], y[rows], name, l2=0.5, tol=1e-12)
    np.testing.assert_allclose(weighted.theta, repeated.theta, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", FAMILIES)
def test_weights_solve_the_weighted_equation_and_match_finite_differences(name):
    """At the root, Σ w (μ(x'θ) - y) x + λθ vanishes, and it is the gradient of the
    weighted objective (checked by central differences at a point off the root)."""
    X, y, rng = _data(name, 3, n=80)
    family = get_family(name)
    w = 0.97 ** np.arange(79, -1, -1.0)  # discount weights γ^{t-s}
    l2 = 0.3
    fit = fit_glm(X, y, name, l2=l2, sample_weight=w, tol=1e-12)
    residual = X.T @ (w * (family.mean(X @ fit.theta) - y)) + l2 * fit.theta
    assert fit.converged and np.max(np.abs(residual)) < 1e-9

    def objective(theta):
        eta = X @ theta
        return w @ (family.antiderivative(eta) - y * eta) + 0.5 * l2 * theta @ theta

    point = fit.theta + rng.normal(size=3) * 0.3
    gradient = X.T @ (w * (family.mean(X @ point) - y)) + l2 * point
    h = 1e-6
    numeric = [(objective(point + h * e) - objective(point - h * e)) / (2 * h)
               for e in np.eye(3)]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6)


def test_zero_weights_drop_their_rows():
    X, y, _ = _data("logistic", 4, n=100)
    w = np.ones(100)
    w[::3] = 0.0
    kept = w > 0
    np.testing.assert_allclose(fit_glm(X, y, "logistic", sample_weight=w).theta,
                               fit_glm(X[kept], y[kept], "logistic").theta, atol=1e-9)


def test_unit_weights_equal_the_unweighted_fit_and_none_is_the_old_path():
    X, y, _ = _data("poisson", 5)
    plain = fit_glm(X, y, "poisson")
    np.testing.assert_allclose(fit_glm(X, y, "poisson", sample_weight=np.ones(300)).theta,
                               plain.theta, rtol=0, atol=1e-10)
    direct = solve_estimating_equation(X, y, get_family("poisson"))
    assert np.array_equal(direct.theta, plain.theta)  # None: the unweighted code path


@pytest.mark.parametrize("weights, message", [
    ([1.0, -1.0, 1.0], "fit_glm: sample_weight must be non-negative, got -1.0"),
    ([1.0, 1.0], r"fit_glm: sample_weight must have shape \(3,\), got \(2,\)"),
    ([0.0, 0.0, 0.0], "fit_glm: sample_weight must not be all zero, got 3 zero weights"),
    ([1.0, np.nan, 1.0], "fit_glm: sample_weight"),
    ([[1.0, 1.0, 1.0]], r"fit_glm: sample_weight must have shape \(3,\), got \(1, 3\)"),
])
def test_bad_weights_are_refused_with_named_messages(weights, message):
    X = np.eye(3)
    with pytest.raises(ValueError, match=message):
        fit_glm(X, [0.0, 1.0, 1.0], "logistic", sample_weight=weights)
