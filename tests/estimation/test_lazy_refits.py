"""refit="lazy": scores from the snapshot (θ̂_τ, V_τ⁻¹), few refits, regret close to exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glmbandits import SupCBGLM, SyntheticGLMEnv, UCBGLM, fit_glm, simulate
from glmbandits.simulation import play


def _play(policy, env, rounds, seed=0):
    return play(policy, env, rounds, seed=seed)


@pytest.mark.parametrize("refit_tol", [0.0, 0.03])
def test_lazy_scores_equal_a_direct_computation_from_the_snapshot(refit_tol):
    policy = UCBGLM(4, alpha=0.7, l2=1.0, seed=3, refit="lazy", refit_growth=1.5,
                    refit_tol=refit_tol)
    env = SyntheticGLMEnv(4, 6, seed=3)
    contexts = _play(policy, env, 150, seed=3)
    policy.select(contexts)
    snapshot, X_all, y_all = policy.snapshot_, policy.estimate_.history.X, policy.estimate_.history.y
    m = snapshot.n_samples_
    assert 0 < m < policy.estimate_.n  # the snapshot is older than the history: lazy
    X, y = X_all[:m], y_all[:m]
    theta = fit_glm(X, y, "logistic", l2=1.0, tol=1e-12).theta
    V_inv = np.linalg.inv(np.eye(4) + X.T @ X)
    mean = contexts @ theta
    width = 0.7 * np.sqrt(np.einsum("kd,de,ke->k", contexts, V_inv, contexts))
    scores = policy.last_scores_
    np.testing.assert_allclose(scores.width, width, rtol=1e-9)
    if refit_tol == 0.0:  # the strict solve: the exact MLE's scores
        np.testing.assert_allclose(scores.mean, mean, atol=1e-6)
        np.testing.assert_allclose(scores.ucb, mean + width, atol=1e-6)
        assert policy.select(contexts) == int(np.argmax(mean + width))
    else:  # the certificate: every mean within refit_tol of its own width (and not exact)
        error = np.abs(scores.mean - mean)
        assert np.all(error <= refit_tol * width * (1 + 1e-9))
        assert error.max() > 1e-9
        np.testing.assert_allclose(scores.ucb, scores.mean + width, rtol=1e-12)


def test_lazy_refits_only_when_det_v_grows_by_the_factor():
    growth = 2.0
    policy = UCBGLM(5, seed=0, refit="lazy", refit_growth=growth)
    _play(policy, SyntheticGLMEnv(5, 10, seed=0), 2000)
    estimate = policy.estimate_
    bound = (estimate.log_det_V - 5 * math.log(1.0)) / math.log(growth) + 1
    assert 5 <= policy.snapshot_.n_refits_ <= bound
    assert estimate.n_fits_ == policy.snapshot_.n_refits_  # the MLE is refitted only then
    assert policy.snapshot_.log_det_ <= estimate.log_det_V <= policy.snapshot_.log_det_ + math.log(growth)
    exact = UCBGLM(5, seed=0)
    _play(exact, SyntheticGLMEnv(5, 10, seed=0), 300)
    assert exact.estimate_.n_fits_ == 300 - exact.tau


def test_supcb_glm_lazy_runs_and_refits_less():
    lazy = SupCBGLM(4, horizon=400, seed=1, refit="lazy")
    exact = SupCBGLM(4, horizon=400, seed=1)
    for policy in (lazy, exact):
        _play(policy, SyntheticGLMEnv(4, 8, seed=1), 400)
    fits = [sum(e.n_fits_ for e in p.stage_estimates_ if e is not None) for p in (lazy, exact)]
    assert fits[0] < fits[1]
    assert sum(s.n_refits_ for s in lazy.snapshots_ if s is not None) == fits[0]


@pytest.mark.parametrize("cls", [UCBGLM, SupCBGLM])
@pytest.mark.parametrize("kwargs, message", [
    ({"refit": "sometimes"}, "refit must be one of"),
    ({"refit": "lazy", "refit_growth": 1.0}, "refit_growth must be > 1"),
])
def test_bad_refit_arguments_raise(cls, kwargs, message):
    with pytest.raises(ValueError, match=f"{cls.__name__}: {message}"):
        cls(3, **kwargs)


@pytest.mark.slow
def test_lazy_regret_within_target_of_exact_refits():
    """Issue 6 target: lazy regret <= 1.25 x exact UCB-GLM at T=3000 (mean of 10 seeds).

    Measured means are within a few percent of each other, so the test has a wide margin.
    """
    regrets = {}
    for mode in ("every_round", "lazy"):
        regrets[mode] = np.mean([
            simulate(UCBGLM(10, seed=s, refit=mode), SyntheticGLMEnv(10, 20, seed=s), 3000,
                     seed=s).cumulative_regret[-1] for s in range(10)])
    assert regrets["lazy"] <= 1.25 * regrets["every_round"]


def test_the_phases_of_a_lazy_refit_do_what_their_steps_say():
    """Step 1 folds samples into the cache at θ̂ (exact where A is re-formed, extended where
    kept); steps 2-4 leave roots in the cache; the fallback refits from θ̂ and resets the cache."""
    import glmbandits.estimation.lazy as lazy
    from glmbandits.families import get_family

    logistic = get_family("logistic")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2, 120, 3)) / 2
    y = (rng.random((2, 120)) < 0.4).astype(float)
    n = np.array([120, 120])

    def exact(theta, m):  # eq. (3)'s gradient and Hessian of row r on its first m samples
        weights = logistic.dmean(X[:, :m] @ theta[:, :, None])
        gradient = np.einsum("rn,rnd->rd", logistic.mean((X[:, :m] @ theta[:, :, None])[:, :, 0])
                             - y[:, :m], X[:, :m]) + theta
        return gradient, np.einsum("rn,rnd,rne->rde", weights[:, :, 0], X[:, :m], X[:, :m])

    cache = lazy.NewtonCache.fresh(rng.normal(size=(2, 3)), 1.0)
    reform = lazy._fold_new_samples(X[:, :80], lazy._Link(logistic, y[:, :80]), cache,
                                    np.array([80, 80]), 1.0)
    gradient, hessian = exact(cache.theta, 80)
    assert reform.all() and cache.n_seen.tolist() == [80, 80] == cache.hessian_n.tolist()
    np.testing.assert_allclose(cache.gradient, gradient, atol=1e-10)
    np.testing.assert_allclose(cache.hessian, hessian + np.eye(3), atol=1e-10)
    reform = lazy._fold_new_samples(X, lazy._Link(logistic, y), cache, n, 1.0)  # A kept
    assert not reform.any() and cache.hessian_n.tolist() == [80, 80]
    np.testing.assert_allclose(cache.gradient, exact(cache.theta, 120)[0], atol=1e-10)

    threshold = 1e-8 * n
    converged, n_steps, failed = lazy._newton_steps(
        X, lazy._Link(logistic, y), cache, reform, n, threshold, 1.0, logistic, 20, None,
        np.zeros(2), None, None)
    assert converged.all() and (n_steps > 0).all() and not failed.any()
    assert np.abs(exact(cache.theta, 120)[0]).max() <= threshold.max()

    start = cache.theta.copy() + 1.0
    cache.theta[:] = start
    failed, converged = np.array([True, False]), np.array([False, True])
    lazy._fall_back(X, y, cache, n, failed, converged, logistic, 1.0, 1e-8, 50)
    assert converged.all() and cache.n_seen.tolist() == [0, 120]
    np.testing.assert_array_equal(cache.theta[1], start[1])  # only the failed row refits
    assert np.abs(exact(cache.theta, 120)[0][0]).max() <= 1e-8 * 120
