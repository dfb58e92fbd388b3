"""Policies on legal but hostile data (issue 12, items 1-3).

* the paper-exact mode (``l2=0``) no longer freezes after separable first rounds;
* huge Poisson counts and rank-deficient early designs do not crash an update
  or a select;
* an update that raises leaves the policy exactly as it was (injected failures).

Each test failed before its fix (the scenarios below are the ones that did).
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import glmbandits
import policy_catalogue
from glmbandits import OFUGLB, SupCBGLM, SyntheticGLMEnv, UCBGLM, fit_glm, simulate
from glmbandits.policies.base import Policy

POLICY_CLASSES = policy_catalogue.POLICY_CLASSES


# -- item 1: the paper-exact mode thaws -----------------------------------------

@pytest.mark.slow
def test_paper_exact_ucb_glm_converges_like_the_ridge_one():
    # UCB-GLM with l2=0 and tau=d: the first rounds are separable, the estimate runs
    # away; before the fix, once the data overlapped, every refit was warm-started at
    # the runaway iterate and rejected, and θ̂ stayed frozen. Measured on this very
    # configuration (d=5, K=10, T=2000, seeds 0-29): before, |θ̂ - MLE| > 1e-3 in 21
    # of 30 seeds (median 263, max 1545), total regret l2=0 / l2=1 = 27.5, worst
    # seed 89; after, max |θ̂ - MLE| = 5.3e-7, total regret ratio 1.10, worst seed
    # 1.57. Margins: distance 1e-3, total ratio 2, per seed 4x + 5. About 10-25 s.
    d, horizon = 5, 2000
    regret = {0.0: [], 1.0: []}
    for seed in range(30):
        for l2 in (0.0, 1.0):
            policy = UCBGLM(d, l2=l2, tau=d, seed=seed)
            env = SyntheticGLMEnv(d, 10, "logistic", seed=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # early separable fits are expected
                result = simulate(policy, env, horizon, seed=seed)
            regret[l2].append(result.cumulative_regret[-1])
            if l2 == 0.0:
                history = policy.estimate_.history
                mle = fit_glm(history.X, history.y, "logistic")
                assert mle.converged
                assert np.linalg.norm(policy.estimate_.theta - mle.theta) <= 1e-3
    exact, ridge = np.array(regret[0.0]), np.array(regret[1.0])
    assert exact.sum() <= 2.0 * ridge.sum()
    assert np.all(exact <= 4.0 * ridge + 5.0)


def test_paper_exact_supcb_glm_stage_estimates_are_the_mle():
    # Before: the stage estimates of SupCBGLM(l2=0) stayed at their runaway iterates
    # (|θ̂ - MLE| ~ 120-210 on every stage with 50+ samples).
    d, horizon = 5, 600
    policy = SupCBGLM(d, horizon=horizon, l2=0.0, tau=d, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        simulate(policy, SyntheticGLMEnv(d, 10, "logistic", seed=1), horizon, seed=1)
    checked = 0
    for estimate in policy.stage_estimates_:
        if estimate is None or estimate.n < 50:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mle = fit_glm(estimate.history.X, estimate.history.y, "logistic")
        if mle.converged:
            assert np.linalg.norm(estimate.theta - mle.theta) <= 1e-3
            checked += 1
    assert checked >= 2


# -- item 3: legal data never crash a policy --------------------------------------

def _play_counts(policy: Policy, seed: int, d: int, k: int, top: float, rounds: int) -> None:
    """Poisson counts 0, ``top`` or uniform below it, on unit-ball contexts."""
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        X = rng.normal(size=(k, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        a = policy.select(X)
        policy.update(X[a], float(rng.choice([0.0, top, float(rng.integers(0, top))])))


def _play_scales(policy: Policy, seed: int, d: int, k: int, rounds: int) -> None:
    """Features of scales 1e-8 to 1e4, the first three rounds along one axis only."""
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.uniform(-8, 4, size=d)
    for t in range(rounds):
        X = rng.normal(size=(k, d)) * scale
        if t < 3:
            X[:, 1:] = 0.0
        a = policy.select(X)
        policy.update(X[a], float(rng.normal()))


# (name, policy factory, player, seeds that raised before the fix)
CRASHES = [
    ("UCBGLM-lazy-poisson", lambda: UCBGLM(4, "poisson", refit="lazy", seed=0),
     lambda p, s: _play_counts(p, s, 4, 2, 1e3, 40), [5, 8, 14]),
    ("SupCBGLM-lazy-poisson", lambda: SupCBGLM(4, "poisson", refit="lazy", seed=0),
     lambda p, s: _play_counts(p, s, 4, 3, 1e5, 30), [1, 45]),
    ("UCBGLM-poisson-1e6", lambda: UCBGLM(4, "poisson", seed=0),
     lambda p, s: _play_counts(p, s, 4, 3, 1e6, 40), [2]),
    ("SupCBGLM-poisson-1e6", lambda: SupCBGLM(4, "poisson", seed=0),
     lambda p, s: _play_counts(p, s, 4, 3, 1e6, 40), [2]),
    ("OFUGLB-poisson", lambda: OFUGLB(2, "poisson", seed=0),
     lambda p, s: _play_counts(p, s, 2, 1, 1e5, 6), [50]),
    ("UCBGLM-l2=0-rank-deficient", lambda: UCBGLM(2, "linear", l2=0.0, tau=1, seed=0),
     lambda p, s: _play_scales(p, s, 2, 2, 30), [12]),
    ("UCBGLM-lazy-l2=0-rank-deficient",
     lambda: UCBGLM(3, "linear", l2=0.0, tau=1, seed=0, refit="lazy"),
     lambda p, s: _play_scales(p, s, 3, 3, 30), [8, 35]),
]


@pytest.mark.parametrize("make, play, seeds", [case[1:] for case in CRASHES],
                         ids=[case[0] for case in CRASHES])
def test_legal_data_do_not_crash_a_policy(make, play, seeds):
    # Before: LinAlgError "Singular matrix" (lazy Newton steps, OFUGLB's solves),
    # ValueError "math domain error" (log det V) or RuntimeWarning "overflow" (an
    # exact refit "certified" θ with |x'θ| ~ 1e303) on these seeds.
    for seed in seeds:
        policy = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", glmbandits.GLMBanditsWarning)
            play(policy, seed)
        theta = policy.theta_ if hasattr(policy, "theta_") else policy.initial_estimate_.theta
        assert np.all(np.isfinite(theta))


def test_exact_refits_on_large_poisson_counts_are_the_mle():
    # Before: the refit at n = 8 accepted θ with max|θ| = 3.7e5 (then 5e303).
    policy = UCBGLM(4, "poisson", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", glmbandits.GLMBanditsWarning)
        _play_counts(policy, 2, 4, 3, 1e6, 12)
        history = policy.estimate_.history
        # gradients of order 1e6 per sample: the 1e-8 tolerance is out of reach in
        # rounding, so compare with the plain solver's iterate, not its flag
        mle = fit_glm(history.X, history.y, "poisson", l2=1.0, max_iter=500)
    assert np.abs(mle.theta).max() < 100.0
    np.testing.assert_allclose(policy.estimate_.theta, mle.theta, atol=0.1)


# -- item 3: an update is a transaction -------------------------------------------

class _Injected(RuntimeError):
    pass


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=[c.__name__ for c in POLICY_CLASSES])
def test_a_failing_update_leaves_the_policy_exactly_as_before(cls, monkeypatch):
    # The failure is injected after the whole of ``_learn`` has run, so everything
    # an update mutates must be put back; the policy then plays on exactly as a
    # clone that never saw the failed call.
    rng = np.random.default_rng(3)
    policy = cls(n_features=3, seed=0)
    for _ in range(12):
        X = rng.normal(size=(4, 3)) / 2
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < 0.5))
    X = rng.normal(size=(4, 3)) / 2
    a = policy.select(X)
    before = pickle.dumps(policy)
    clone = pickle.loads(before)
    learn = cls._learn

    def failing(self, x, reward):
        learn(self, x, reward)
        raise _Injected("injected failure")

    monkeypatch.setattr(cls, "_learn", failing)
    with pytest.raises(_Injected):
        policy.update(X[a], 1.0)
    monkeypatch.setattr(cls, "_learn", learn)
    assert pickle.dumps(policy) == before
    for _ in range(15):
        policy.update(X[a], 1.0)
        clone.update(X[a], 1.0)
        X = rng.normal(size=(4, 3)) / 2
        a = policy.select(X)
        assert clone.select(X) == a


def test_a_failing_refit_inside_an_update_is_rolled_back(monkeypatch):
    # RS-GLinCB refits its warm-up estimate inside ``update``: a failure in the middle
    # of the solver (after it mutated its caches) must be undone as well.
    from glmbandits.estimation.incremental import IncrementalMLE

    policy = glmbandits.RSGLinCB(n_features=3, seed=0, warmup_constant=1e-3)  # long warm-up
    rng = np.random.default_rng(0)
    for _ in range(50):  # until a warm-up round (some ‖x‖²_{V⁻¹} above the threshold)
        X = rng.normal(size=(4, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        a = policy.select(X)
        if policy.last_warmup_ and policy.warm_.n >= 2:
            break
        policy.update(X[a], float(rng.random() < 0.5))
    assert policy.last_warmup_ and policy.warm_.n >= 2  # the next update refits
    before = pickle.dumps(policy)
    solve = IncrementalMLE._solve

    def failing(self, *args, **kwargs):
        solve(self, *args, **kwargs)
        raise _Injected("injected failure inside the solver")

    monkeypatch.setattr(IncrementalMLE, "_solve", failing)
    with pytest.raises(_Injected):
        policy.update(X[a], 1.0)
    assert pickle.dumps(policy) == before
