"""Batched lazy refits of the lockstep UCB-GLM kernel (issue 6, target 3).

The replicates whose det V trigger fires in a round are refitted together by
``glmbandits._batch_refit.batched_newton_refit``; these tests check that every
batched estimate solves eq. (3) of Li, Lu & Zhou (2017) to the sequential
solvers' tolerance, that the cached start and the fallback to the sequential
solver give the same roots, and that trajectories stay identical to sequential
``simulate`` runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import glmbandits.policies.batch_kernels as batch_kernels
from glmbandits import SyntheticGLMEnv, UCBGLM, simulate, simulate_batch
from glmbandits._array_backend import get_backend
from glmbandits._batch_refit import BatchedFit, batched_newton_refit, stopping_threshold
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


def _recording(monkeypatch: pytest.MonkeyPatch) -> list:
    """Record every batched refit's inputs and result (the kernel's calls)."""
    calls: list = []

    def record(backend, X, y, theta0, family, l2, tol, **kwargs):
        fit = batched_newton_refit(backend, X, y, theta0, family, l2, tol, **kwargs)
        calls.append((np.array(X), np.array(y), l2, tol, fit))
        return fit

    monkeypatch.setattr(batch_kernels, "batched_newton_refit", record)
    return calls


def _lazy(seed):
    return UCBGLM(D, seed=seed, refit="lazy", refit_growth=1.5)


@pytest.mark.parametrize("n_actions", [8, (2, 9)])
def test_batched_refits_keep_trajectories_identical(monkeypatch, n_actions):
    calls = _recording(monkeypatch)
    env_factory = lambda s: SyntheticGLMEnv(D, n_actions, seed=s)  # noqa: E731
    seeds = [2, 3, 7, 13, 21, 34]
    horizon = 300
    batch = simulate_batch(_lazy, env_factory, horizon, seeds)
    assert sum(int(call[4].converged.sum()) for call in calls) > 10 * len(seeds)
    assert max(call[0].shape[0] for call in calls) > 1  # some refits really were stacked
    for r, seed in enumerate(seeds):
        sequential = simulate(_lazy(seed), env_factory(seed), horizon, seed=seed)
        assert_same_trajectory(batch, r, sequential)


def test_every_batched_refit_solves_eq3_to_tolerance(monkeypatch):
    calls = _recording(monkeypatch)
    simulate_batch(_lazy, lambda s: SyntheticGLMEnv(D, 6, seed=s), 250, [0, 1, 4, 9])
    assert calls
    for X, y, l2, tol, fit in calls:
        n = X.shape[1]
        assert fit.converged.all()
        for r in range(X.shape[0]):
            gradient = _gradient(X[r], y[r], fit.theta[r], l2)
            assert np.max(np.abs(gradient)) <= stopping_threshold(tol, n) * (1 + 1e-6)
            plain = solve_estimating_equation(X[r], y[r], LOGISTIC, l2, tol=1e-12)
            np.testing.assert_allclose(fit.theta[r], plain.theta, atol=1e-6)
            np.testing.assert_allclose(fit.gradient[r], gradient, atol=1e-9)


def test_cached_start_with_different_ages_gives_the_same_roots():
    X, y = _problem(3, 300, seed=5)
    backend, l2 = get_backend(), 1.0
    seen = np.array([120, 250, 299])
    parts = [batched_newton_refit(backend, X[r: r + 1, :m], y[r: r + 1, :m], np.zeros((1, D)),
                                  LOGISTIC, l2) for r, m in enumerate(seen)]
    theta0 = np.concatenate([part.theta for part in parts])
    cache = (np.concatenate([part.gradient for part in parts]),
             np.concatenate([part.hessian for part in parts]), seen)
    cached = batched_newton_refit(backend, X, y, theta0, LOGISTIC, l2, cache=cache)
    fresh = batched_newton_refit(backend, X, y, theta0, LOGISTIC, l2)
    assert cached.converged.all() and fresh.converged.all()
    for r in range(3):
        assert np.max(np.abs(_gradient(X[r], y[r], cached.theta[r], l2))) <= 1e-8 * 300
    np.testing.assert_allclose(cached.theta, fresh.theta, atol=1e-7)


def test_rows_that_cannot_converge_are_reported_and_left_at_their_start():
    X, y = _problem(2, 200, seed=1)
    theta0 = np.zeros((2, D))
    fit = batched_newton_refit(get_backend(), X, y, theta0, LOGISTIC, 1.0, max_iter=0)
    assert isinstance(fit, BatchedFit)
    assert not fit.converged.any() and (fit.n_iter == 0).all()
    np.testing.assert_array_equal(fit.theta, theta0)


def test_failed_batched_refits_fall_back_to_the_sequential_solver(monkeypatch):
    def never_converges(backend, X, y, theta0, family, l2, tol, **kwargs):
        fit = batched_newton_refit(backend, X, y, theta0, family, l2, tol, max_iter=0)
        return fit

    monkeypatch.setattr(batch_kernels, "batched_newton_refit", never_converges)
    made = []

    def keep(seed):
        made.append(_lazy(seed))
        return made[-1]

    env_factory = lambda s: SyntheticGLMEnv(D, 5, seed=s)  # noqa: E731
    batch = simulate_batch(keep, env_factory, 150, [3, 4])
    for r, (policy, seed) in enumerate(zip(made, [3, 4])):
        reference = _lazy(seed)
        sequential = simulate(reference, env_factory(seed), 150, seed=seed)
        np.testing.assert_array_equal(batch.actions[r], sequential.actions)
        assert policy.estimate_.n_fits_ == reference.estimate_.n_fits_
        # the sequential solver did every refit: the same numbers bit for bit
        np.testing.assert_array_equal(policy.theta_, reference.theta_)
