"""Solvers of eq. (3) on legal but hostile data: separable rewards without ridge,
runaway warm starts, huge Poisson counts, rank-deficient early designs.

Regression tests of issue 12, items 1-3 (each failed before its fix).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from glmbandits import ConvergenceWarning, fit_glm
from glmbandits.estimation import GLMEstimate, solve_estimating_equation
from glmbandits.estimation.certificate import certified_v_norm_error, certified_v_norm_errors
from glmbandits.estimation.convergence import STEP_TOL, are_roots, is_root
from glmbandits.estimation.gram import inverse_gram, solve_spd
from glmbandits.estimation.incremental import IncrementalMLE
from glmbandits.estimation.lazy import NewtonCache, _solve_rows, lazy_newton_refit
from glmbandits.families import get_family

LOGISTIC = get_family("logistic")
POISSON = get_family("poisson")


def _separable(n: int, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logistic rewards that a hyperplane separates: y = 1{x_0 > 0}."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    return X, (X[:, 0] > 0).astype(float)


def _overlapping(n: int, d: int = 3, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Logistic rewards from θ* = (2, -1, 0.5, ...): the MLE exists (n >> d)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    theta = np.resize([2.0, -1.0, 0.5], d)
    return X, (rng.random(n) < LOGISTIC.mean(X @ theta)).astype(float)


# -- item 2: one convergence rule ------------------------------------------------

def test_fit_glm_on_one_separable_large_sample_is_not_converged():
    # Before: converged=True (the step test was relative to θ, which moves by 1e-4 per
    # Newton step when x = 1e4, while x'θ moves by about 1 on the separating ray).
    with pytest.warns(ConvergenceWarning, match="not solved"):
        result = fit_glm([[1e4]], [0.0], "logistic")
    assert not result.converged
    assert np.all(np.isfinite(result.theta))


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e4])
def test_fit_glm_separable_is_not_converged_at_any_feature_scale(scale):
    X, y = _separable(30)
    with pytest.warns(ConvergenceWarning):
        assert not fit_glm(X * scale, y, "logistic").converged


def test_fit_glm_still_converges_where_the_mle_exists():
    X, y = _overlapping(400)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit_glm(X, y, "logistic")
        scaled = fit_glm(X * 1e4, y, "logistic")
    assert result.converged and scaled.converged
    np.testing.assert_allclose(scaled.theta * 1e4, result.theta, rtol=1e-6)


def test_incremental_solver_reports_separable_refits_as_not_converged():
    # Before: refits after the first one stopped on the small gradient at the runaway
    # iterate and said converged=True.
    X, y = _separable(40)
    solver = IncrementalMLE(3, LOGISTIC, l2=0.0)
    fits = [solver.refit(X[: n + 1], y[: n + 1]) for n in range(40)]
    assert not any(fit.converged for fit in fits)
    assert all(np.all(np.isfinite(fit.theta)) for fit in fits)


def test_lazy_solver_reports_separable_refits_as_not_converged():
    X, y = _separable(40)
    cache = NewtonCache.fresh(np.zeros((1, 3)), 0.0)
    for n in (10, 20, 40):
        fit = lazy_newton_refit(X[None, :n], y[None, :n], cache, LOGISTIC, 0.0)
        assert not fit.converged[0]
        assert np.all(np.isfinite(fit.theta))


def test_every_solver_path_agrees_where_the_mle_exists_without_ridge():
    X, y = _overlapping(300)
    reference = fit_glm(X, y, "logistic")
    solver = IncrementalMLE(3, LOGISTIC, l2=0.0)
    fits = [solver.refit(X[: n + 1], y[: n + 1]) for n in range(200, 300)]
    assert fits[-1].converged
    np.testing.assert_allclose(fits[-1].theta, reference.theta, atol=1e-6)
    cache = NewtonCache.fresh(np.zeros((1, 3)), 0.0)
    lazy = lazy_newton_refit(X[None], y[None], cache, LOGISTIC, 0.0)
    assert lazy.converged[0]
    np.testing.assert_allclose(lazy.theta[0], reference.theta, atol=1e-6)


def test_are_roots_is_is_root_row_by_row():
    rng = np.random.default_rng(3)
    norms = rng.choice([1e-10, 1e-3, np.nan, np.inf], size=64)
    thresholds = np.full(64, 1e-8)
    eta_max = rng.choice([0.5, 30.0, 50.0], size=64)
    steps = rng.choice([0.0, STEP_TOL / 10, 1.0], size=64)
    for l2 in (0.0, 1.0):
        rows = are_roots(norms, thresholds, l2, eta_max, lambda mask: steps[mask], 36.0)
        expected = [is_root(a, b, l2, c, e, 36.0)
                    for a, b, c, e in zip(norms, thresholds, eta_max, steps)]
        assert rows.tolist() == expected
    assert any(expected) and not all(expected)


# -- item 1: a runaway warm start is abandoned -----------------------------------

def _runaway_then_overlapping(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Six separable samples of norm ~0.1 (their last finite iterate θ has |θ| ~ 250,
    so |x'θ| passes the saturation bound on samples of norm ~1), then m overlapping ones."""
    X_sep, y_sep = _separable(6)
    X_sep = 0.1 * X_sep
    with pytest.warns(ConvergenceWarning):
        runaway = fit_glm(X_sep, y_sep, "logistic").theta
    X_more, y_more = _overlapping(m)
    return np.vstack([X_sep, X_more]), np.concatenate([y_sep, y_more]), runaway


@pytest.mark.parametrize("m", [5, 20])
def test_a_runaway_warm_start_restarts_from_zero(m):
    # Before: the first Newton step from the runaway iterate left the saturation
    # bound, so the solver returned the warm start itself, not converged.
    X, y, runaway = _runaway_then_overlapping(m)
    fit = solve_estimating_equation(X, y, LOGISTIC, 0.0, runaway)
    reference = solve_estimating_equation(X, y, LOGISTIC, 0.0)
    assert fit.converged and reference.converged
    np.testing.assert_allclose(fit.theta, reference.theta, atol=1e-8)


def test_incremental_solver_thaws_once_the_data_stop_being_separable():
    X_sep, y_sep = _separable(6)
    X_sep = 0.1 * X_sep
    X_more, y_more = _overlapping(400)
    X, y = np.vstack([X_sep, X_more]), np.concatenate([y_sep, y_more])
    solver = IncrementalMLE(3, LOGISTIC, l2=0.0, column_copy=True)
    fits = [solver.refit(X[: n + 1], y[: n + 1]) for n in range(X.shape[0])]
    assert not fits[5].converged  # separable at first
    assert all(fit.converged for fit in fits[-100:])
    reference = fit_glm(X, y, "logistic")
    np.testing.assert_allclose(fits[-1].theta, reference.theta, atol=1e-6)


# -- item 3: numerically singular systems and overflow --------------------------

def test_an_overflowed_certificate_certifies_nothing():
    # g'V⁻¹g overflows to -inf or NaN when g ~ 1e250 (Poisson weights e^η of a far
    # iterate); before, max(-inf, 0) = 0 certified an error of 0.
    gradient = np.array([-5.4e248, 3.4e249, 1.0e250, 1.5e249])
    V_inv = np.array([[2.0, -1.9, 0.0, 0.0], [-1.9, 2.0, 0.0, 0.0],
                      [0.0, 0.0, 1.0, 0.99], [0.0, 0.0, 0.99, 1.0]])
    with np.errstate(over="ignore", invalid="ignore"):
        quadratic = float(gradient @ (V_inv @ gradient))
    assert not math.isfinite(quadratic)
    assert certified_v_norm_error(gradient, 1.0, V_inv, POISSON, 1.0, None, 0.03) == math.inf
    rows = certified_v_norm_errors(gradient[None], np.array([1.0]), V_inv[None], POISSON, 1.0,
                                   np.array([0.03]))
    assert rows[0] == math.inf


def test_an_overflowed_certificate_from_a_real_refit_certifies_nothing():
    # The gradient and V⁻¹ of an exact UCBGLM("poisson") refit on counts up to 1e6
    # (eight samples): g'V⁻¹g overflows to -inf, and before the fix the certificate
    # returned 0.0, so the solver accepted θ with max|x'θ| ~ 3e5 as "converged".
    gradient = np.array([2.25770990e+303, 6.09940084e+303, 1.83532045e+304, 1.08597924e+304])
    V_inv = np.array([[0.54883188, -0.04688967, -0.15297098, 0.00961558],
                      [-0.04688967, 0.45249068, 0.02058465, -0.02608163],
                      [-0.15297098, 0.02058465, 0.26626991, 0.03727286],
                      [0.00961558, -0.02608163, 0.03727286, 0.35983249]])
    error = certified_v_norm_error(gradient, 340594.78651153, V_inv, POISSON, 1.0, {}, 0.03)
    assert error == math.inf


def _poisson_counts(n: int, d: int = 4, seed: int = 33) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = rng.choice([0.0, 1e3, 1e6], size=n) + rng.integers(0, 1000, size=n)
    return X, y


def test_lazy_refit_on_large_poisson_counts_is_a_root_or_a_fallback():
    # Before: one Newton step from 0 overshot to x'θ ~ 500, was "certified", and the
    # next refit raised LinAlgError: Singular matrix.
    X, y = _poisson_counts(40)
    cache = NewtonCache.fresh(np.zeros((1, 4)), 1.0)
    kappa_cache: dict = {}
    for n in (8, 12, 20, 40):
        V_inv = inverse_gram(X[:n], 1.0)
        fit = lazy_newton_refit(X[None, :n], y[None, :n], cache, POISSON, 1.0, V_inv=V_inv[None],
                                v_norm_tol=0.03, kappa_cache=kappa_cache)
        reference = fit_glm(X[:n], y[:n], "poisson", l2=1.0)
        assert fit.converged[0] and reference.converged
        np.testing.assert_allclose(fit.theta[0], reference.theta, atol=0.1)


def test_stacked_solve_marks_singular_rows_and_keeps_the_others_bitwise():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    regular = A @ A.T + np.eye(3)
    hessians = np.stack([regular, np.zeros((3, 3)), regular])
    gradients = rng.normal(size=(3, 3))
    solved = _solve_rows(hessians, gradients)
    assert np.isnan(solved[1]).all()
    alone = _solve_rows(hessians[[0, 2]], gradients[[0, 2]])
    assert np.array_equal(solved[[0, 2]], alone)


def test_solve_spd_never_raises_on_singular_or_huge_systems():
    huge = np.full((2, 2), 1e300)  # rank one, ridge lost in rounding
    for matrix in (np.zeros((2, 2)), huge, np.array([[1.0, 1.0], [1.0, 1.0]])):
        assert np.all(np.isfinite(solve_spd(matrix, np.array([1.0, -1.0]))))
    regular = np.array([[2.0, 0.5], [0.5, 1.0]])
    b = np.array([1.0, 2.0])
    assert np.array_equal(solve_spd(regular, b), np.linalg.solve(regular, b))


@pytest.mark.parametrize("seed", [8, 105, 141, 150])
def test_rank_deficient_start_without_ridge_keeps_log_det_finite(seed):
    # V⁻¹ formed from one direction (a floored pseudo-inverse), then rank-one steps
    # on features of very different scales: before, x'V⁻¹x < -1 made log1p raise
    # "math domain error" (these seeds did, at rounds 22, 7, 5 and 4).
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-8, 4, size=2)
    estimate = GLMEstimate(2, get_family("linear"), 0.0)
    for t in range(30):
        x = rng.normal(size=2) * scale
        if t < 3:
            x[1:] = 0.0
        estimate.add(x, 0.0)
        assert math.isfinite(estimate.log_det_V)
    assert np.all(np.isfinite(estimate.V_inv))


@pytest.mark.parametrize("n", [8, 12, 20, 40])
@pytest.mark.parametrize("relative", [1e-11, 1e-9])
def test_a_warm_start_next_to_a_poisson_root_with_huge_counts_finishes_in_a_few_steps(n, relative):
    # Counts of 1e6 make the objective's terms ~1e7: next to the root the decrease a
    # Newton step promises (~1e-18) is far below the objective's rounding (~1e-9), so
    # Armijo's test passed or failed at random and the backtracking stalled for 100
    # iterations (on one BLAS kernel at some n, on another at other n). A full step that
    # leaves the objective within its rounding and shrinks the gradient is taken.
    X, y = _poisson_counts(40)
    root = fit_glm(X[:n], y[:n], "poisson", l2=1.0)
    assert root.converged
    fit = fit_glm(X[:n], y[:n], "poisson", l2=1.0, theta0=root.theta * (1.0 + relative))
    assert fit.converged and fit.n_iter <= 5, fit
    np.testing.assert_allclose(fit.theta, root.theta, rtol=1e-9)
