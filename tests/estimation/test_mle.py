"""fit_glm against statsmodels, its edge cases, and the rank-one inverse updates."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from glmbandits import ConvergenceWarning, fit_glm
from glmbandits.estimation import inverse_gram, sherman_morrison_update
from glmbandits.families import get_family

sm = pytest.importorskip("statsmodels.api")


def _data(family_name: str, seed: int, n: int = 400, d: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    theta = rng.normal(size=d)
    family = get_family(family_name)
    y = family.sample(family.mean(X @ theta), rng)
    return X, y


STATSMODELS_FAMILIES = {
    "logistic": lambda: sm.families.Binomial(),
    "poisson": lambda: sm.families.Poisson(),
    "linear": lambda: sm.families.Gaussian(),
}


@pytest.mark.parametrize("name", list(STATSMODELS_FAMILIES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mle_agrees_with_statsmodels(name, seed):
    X, y = _data(name, seed)
    ours = fit_glm(X, y, name)
    reference = sm.GLM(y, X, family=STATSMODELS_FAMILIES[name]()).fit(tol=1e-13, maxiter=200)
    assert ours.converged
    np.testing.assert_allclose(ours.theta, reference.params, atol=1e-6)


def test_ridge_solution_zeroes_the_penalised_equation():
    X, y = _data("logistic", 3)
    family = get_family("logistic")
    result = fit_glm(X, y, family, l2=2.5)
    residual = X.T @ (y - family.mean(X @ result.theta)) - 2.5 * result.theta
    assert result.converged
    assert np.max(np.abs(residual)) < 1e-6


def test_probit_solves_the_papers_quasi_likelihood_equation():
    X, y = _data("probit", 4)
    family = get_family("probit")
    result = fit_glm(X, y, "probit")
    residual = X.T @ (y - family.mean(X @ result.theta))
    assert result.converged
    assert np.max(np.abs(residual)) < 1e-6
    # ... which is not the probit likelihood's score: the two estimates differ.
    likelihood = sm.GLM(y, X, family=sm.families.Binomial(sm.families.links.Probit())).fit()
    assert np.max(np.abs(likelihood.params - result.theta)) > 1e-4


def test_warm_start_at_the_solution_takes_no_iteration():
    X, y = _data("logistic", 5)
    first = fit_glm(X, y, "logistic")
    again = fit_glm(X, y, "logistic", theta0=first.theta)
    assert again.n_iter == 0 and again.converged
    np.testing.assert_array_equal(again.theta, first.theta)


@pytest.mark.parametrize("name", ["logistic", "probit"])
def test_separable_data_give_a_finite_estimate_and_a_warning(name):
    X = np.array([[1.0, 0.5], [0.8, -0.2], [-1.0, 0.3], [-0.7, -0.4]])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    with pytest.warns(ConvergenceWarning, match="not solved"):
        result = fit_glm(X, y, name)
    assert not result.converged
    assert np.all(np.isfinite(result.theta))
    assert np.linalg.norm(result.theta) > 1.0  # it did head off along the separating direction


def test_all_zero_poisson_counts_give_a_finite_estimate():
    X = np.abs(np.random.default_rng(0).normal(size=(20, 2)))
    with pytest.warns(ConvergenceWarning):
        result = fit_glm(X, np.zeros(20), "poisson")
    assert np.all(np.isfinite(result.theta)) and not result.converged


def test_ridge_makes_separable_data_converge_without_warning():
    X = np.array([[1.0, 0.5], [0.8, -0.2], [-1.0, 0.3], [-0.7, -0.4]])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit_glm(X, y, "logistic", l2=1.0)
    assert result.converged and np.all(np.isfinite(result.theta))


def test_rank_deficient_linear_design_still_finite():
    X = np.ones((5, 3))
    result = fit_glm(X, np.arange(5.0), "linear")
    assert np.all(np.isfinite(result.theta))
    np.testing.assert_allclose(X @ result.theta, np.full(5, 2.0), atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"X": [[np.nan, 1.0]], "y": [1.0]}, ValueError, "fit_glm: X must be finite"),
        ({"X": [[1.0, 1.0]], "y": [1.0, 0.0]}, ValueError, r"y must have shape \(1,\)"),
        ({"X": [[1.0]], "y": [2.0]}, ValueError, r"y must lie in the logistic reward domain"),
        ({"X": [[1.0]], "y": [-1.0], "family": "poisson"}, ValueError, "poisson reward domain"),
        ({"X": [[1.0]], "y": [1.0], "l2": -1.0}, ValueError, "l2 must be >= 0, got -1.0"),
        ({"X": [[1.0]], "y": [1.0], "family": "cauchit"}, ValueError, "family must be one of"),
        ({"X": [[1.0]], "y": [1.0], "theta0": [0.0, 0.0]}, ValueError,
         r"theta0 must have shape \(1,\), got \(2,\)"),
        ({"X": [1.0, 2.0], "y": [1.0, 0.0]}, ValueError, r"X must have shape \(n, d\)"),
        ({"X": "abc", "y": [1.0]}, TypeError, "X must be a numeric array"),
        ({"X": [[1.0]], "y": [1.0], "max_iter": 0}, ValueError, "max_iter must be >= 1"),
    ],
)
def test_bad_input_is_rejected(kwargs, error, message):
    arguments = {"family": "logistic", **kwargs}
    X, y, family = arguments.pop("X"), arguments.pop("y"), arguments.pop("family")
    with pytest.raises(error, match=message):
        fit_glm(X, y, family, **arguments)


def test_sherman_morrison_matches_direct_inverse_after_many_updates():
    rng = np.random.default_rng(7)
    d = 6
    V_inv = np.eye(d) / 0.5
    V = 0.5 * np.eye(d)
    for _ in range(2000):
        x = rng.normal(size=d) / np.sqrt(d)
        weight = float(rng.uniform(0.1, 2.0))
        quadratic = sherman_morrison_update(V_inv, x, weight)
        assert quadratic == pytest.approx(x @ np.linalg.solve(V, x), rel=1e-8)
        V += weight * np.outer(x, x)
    np.testing.assert_allclose(V_inv, np.linalg.inv(V), rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(V_inv, V_inv.T)


def test_inverse_gram_of_a_singular_matrix_is_finite():
    X = np.array([[1.0, 0.0], [2.0, 0.0]])
    inverse = inverse_gram(X, 0.0)
    assert np.all(np.isfinite(inverse))
    assert inverse[0, 0] == pytest.approx(0.2)
    np.testing.assert_allclose(inverse_gram(X, 1.0), np.linalg.inv(X.T @ X + np.eye(2)))
