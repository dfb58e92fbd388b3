"""Lazy refits (``glmbandits.estimation.lazy``) and the refit waves of the lockstep UCB-GLM kernel.

A sequential lazy UCB-GLM and the batch kernel call the same solver,
``lazy_newton_refit``, with one row or with a whole refit wave; these tests
check that every root it returns solves eq. (3) of Li, Lu & Zhou (2017) to the
strict tolerance or within its certified V-norm bound, that a row's result does
not depend on the rows stacked with it (nor on zero padding), that the robust
fallback takes over when the Newton steps cannot, and that batch trajectories
stay identical to sequential runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import glmbandits.estimation.lazy as lazy_refit
import glmbandits.estimation.estimates as estimators
from glmbandits import SyntheticGLMEnv, UCBGLM, simulate, simulate_batch
from glmbandits.estimation.lazy import NewtonCache, lazy_newton_refit, stopping_threshold
from glmbandits.estimation import solve_estimating_equation
from glmbandits.families import get_family

from batch_helpers import assert_same_trajectory

LOGISTIC = get_family("logistic")
D = 4


def _gradient(X: np.ndarray, y: np.ndarray, theta: np.ndarray, l2: float) -> np.ndarray:
    """Eq. (3)'s residual, computed directly: Σ (μ(x'θ) - y) x + λθ."""
    return X.T @ (LOGISTIC.mean(X @ theta) - y) + l2 * theta


def _problem(r: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(r, n, D)) / np.sqrt(D)
    theta = rng.normal(size=(r, D))
    y = (rng.random((r, n)) < LOGISTIC.mean(np.einsum("rnd,rd->rn", X, theta))).astype(float)
    return X, y


def _exact_root(X: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    return solve_estimating_equation(X, y, LOGISTIC, l2, tol=1e-13, max_iter=200).theta


def _recording(monkeypatch: pytest.MonkeyPatch) -> list:
    """Record every call of the lazy solver made through the estimates' module.

    The batch kernel asks its stacked estimates (``StackedGLMEstimates.refit_shared``)
    for a refit wave; during ``simulate_batch`` these are all the calls there are.
    """
    calls: list = []

    def record(X, y, cache, family, l2, tol, **kwargs):
        fit = lazy_newton_refit(X, y, cache, family, l2, tol, **kwargs)
        n = kwargs.get("n_samples")
        calls.append((np.array(X), np.array(y), l2, tol, fit,
                      np.full(X.shape[0], X.shape[1]) if n is None else np.array(n),
                      kwargs.get("V_inv"), kwargs.get("v_norm_tol")))
        return fit

    monkeypatch.setattr(estimators, "lazy_newton_refit", record)
    return calls


def _lazy(seed, refit_tol=0.03):
    return UCBGLM(D, seed=seed, refit="lazy", refit_growth=1.5, refit_tol=refit_tol)


@pytest.mark.parametrize("n_actions", [8, (2, 9)])
def test_refit_waves_keep_trajectories_identical(monkeypatch, n_actions):
    calls = _recording(monkeypatch)
    env_factory = lambda s: SyntheticGLMEnv(D, n_actions, seed=s)  # noqa: E731
    seeds = [2, 3, 7, 13, 21, 34]
    horizon = 300
    batch = simulate_batch(_lazy, env_factory, horizon, seeds)
    assert sum(call[0].shape[0] for call in calls) > 10 * len(seeds)
    assert max(call[0].shape[0] for call in calls) == len(seeds)  # whole waves
    assert horizon <= batch.n_steps < 2 * horizon
    for r, seed in enumerate(seeds):
        sequential = simulate(_lazy(seed), env_factory(seed), horizon, seed=seed)
        assert_same_trajectory(batch, r, sequential)


@pytest.mark.parametrize("refit_tol", [0.0, 0.03])
def test_every_wave_root_is_strict_or_certified(monkeypatch, refit_tol):
    calls = _recording(monkeypatch)
    simulate_batch(lambda s: _lazy(s, refit_tol), lambda s: SyntheticGLMEnv(D, 6, seed=s),
                   250, [0, 1, 4, 9])
    assert calls
    certified = 0
    for X, y, l2, tol, fit, n, V_inv, v_norm_tol in calls:
        assert fit.converged.all() and not fit.fell_back.any()
        for r in range(X.shape[0]):
            m = int(n[r])
            assert not X[r, m:].any() and not y[r, m:].any()  # zero padding
            gradient = _gradient(X[r, :m], y[r, :m], fit.theta[r], l2)
            exact = _exact_root(X[r, :m], y[r, :m], l2)
            if np.max(np.abs(gradient)) <= stopping_threshold(tol, m) * (1 + 1e-9):
                np.testing.assert_allclose(fit.theta[r], exact, atol=1e-6)
            else:  # accepted on the certificate: ‖θ - θ̂‖_V within refit_tol·α
                assert refit_tol > 0
                certified += 1
                delta = fit.theta[r] - exact
                V = np.linalg.inv(V_inv[r])
                np.testing.assert_allclose(V, l2 * np.eye(D) + X[r, :m].T @ X[r, :m], atol=1e-8)
                assert np.sqrt(delta @ V @ delta) <= v_norm_tol[r] * (1 + 1e-9)
    assert (certified > 0) == (refit_tol > 0)


def test_a_row_refits_alike_alone_or_stacked_and_padded():
    X, y = _problem(3, 400, seed=5)
    l2 = 1.0
    n = np.array([400, 260, 333])
    for r in range(3):
        X[r, n[r]:], y[r, n[r]:] = 0.0, 0.0
    tolerances = np.array([0.03, 0.0, 0.05])
    stacked = NewtonCache.fresh(np.zeros((3, D)), l2)
    alone = [NewtonCache.fresh(np.zeros((1, D)), l2) for _ in range(3)]
    for stop in (0.5, 0.8, 1.0):  # three successive refits on growing histories
        m = np.minimum(n, (stop * n).astype(int))
        Xs, ys = X.copy(), y.copy()
        for r in range(3):
            Xs[r, m[r]:], ys[r, m[r]:] = 0.0, 0.0
        Vs = np.stack([np.linalg.inv(l2 * np.eye(D) + Xs[r].T @ Xs[r]) for r in range(3)])
        fit = lazy_newton_refit(Xs, ys, stacked, LOGISTIC, l2, V_inv=Vs, v_norm_tol=tolerances,
                                n_samples=m)
        for r in range(3):
            one = lazy_newton_refit(Xs[r: r + 1, : m[r]], ys[r: r + 1, : m[r]], alone[r], LOGISTIC,
                                    l2, V_inv=Vs[r: r + 1], v_norm_tol=tolerances[r])
            np.testing.assert_allclose(fit.theta[r], one.theta[0], rtol=0, atol=1e-13)
            assert fit.n_steps[r] == one.n_steps[0]
    assert stacked.n_seen.tolist() == n.tolist()


def test_rows_the_newton_steps_cannot_solve_fall_back_to_the_robust_solver():
    X, y = _problem(2, 200, seed=1)
    cache = NewtonCache.fresh(np.zeros((2, D)), 1.0)
    fit = lazy_newton_refit(X, y, cache, LOGISTIC, 1.0, max_iter=0)
    assert fit.fell_back.all() and fit.converged.all() and (fit.n_steps == 0).all()
    for r in range(2):
        expected = solve_estimating_equation(X[r], y[r], LOGISTIC, 1.0, np.zeros(D))
        np.testing.assert_array_equal(fit.theta[r], expected.theta)
    assert (cache.n_seen == 0).all() and (cache.hessian_n == 0).all()  # caches reset
    np.testing.assert_array_equal(cache.theta, fit.theta)


def test_fallbacks_keep_batch_and_sequential_runs_identical(monkeypatch):
    def newton_never_suffices(X, y, cache, family, l2, tol=1e-8, **kwargs):
        kwargs["max_iter"] = 0
        return lazy_newton_refit(X, y, cache, family, l2, tol, **kwargs)

    monkeypatch.setattr(estimators, "lazy_newton_refit", newton_never_suffices)
    made = []

    def keep(seed):
        made.append(_lazy(seed))
        return made[-1]

    env_factory = lambda s: SyntheticGLMEnv(D, 5, seed=s)  # noqa: E731
    batch = simulate_batch(keep, env_factory, 150, [3, 4])
    for r, (policy, seed) in enumerate(zip(made, [3, 4])):
        reference = _lazy(seed)
        sequential = simulate(reference, env_factory(seed), 150, seed=seed)
        assert_same_trajectory(batch, r, sequential)
        assert policy.estimate_.n_fits_ == reference.estimate_.n_fits_ > 5
        np.testing.assert_array_equal(policy.theta_, reference.theta_)


def test_the_cache_round_trips_through_copy_and_pickle():
    import pickle

    X, y = _problem(1, 120, seed=3)
    cache = NewtonCache.fresh(np.zeros((1, D)), 1.0)
    lazy_newton_refit(X[:, :80], y[:, :80], cache, LOGISTIC, 1.0)
    for clone in (cache.copy(), pickle.loads(pickle.dumps(cache))):
        a = lazy_newton_refit(X, y, clone, LOGISTIC, 1.0)
        b = lazy_newton_refit(X, y, cache.copy(), LOGISTIC, 1.0)
        np.testing.assert_array_equal(a.theta, b.theta)
    assert lazy_refit.REFORM_EVERY >= 1
