"""``last_scores_`` on the reward scale: μ(x'θ̂) and μ of the upper index, for every policy class.

The classes are enumerated as in ``tests/test_common.py``; each is also tried with every
family it accepts, so that the identity (linear), the bounded links (logistic, probit)
and the half-bounded one (Poisson) are all covered.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import policy_catalogue
from glmbandits.families import FAMILY_NAMES, get_family
from glmbandits.policies.base import ActionScores, Policy

D = 3
K = 6
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _contexts(rng: np.random.Generator, k: int) -> np.ndarray:
    return policy_catalogue.unit_ball_contexts(rng, k, D)


def _variants(cls: type) -> list[Policy]:
    """The class with its default family, then with every other family it accepts."""
    policies = [cls(n_features=D, seed=0)]
    if "family" in inspect.signature(cls).parameters:
        for name in FAMILY_NAMES:
            try:
                policies.append(cls(n_features=D, family=name, seed=0))
            except ValueError:  # a policy written for bounded rewards only
                continue
    return policies


def _check_round(policy: Policy, scores: ActionScores) -> None:
    family = policy.family
    reward_mean, reward_ucb = scores.reward_mean, scores.reward_ucb
    for array in (reward_mean, reward_ucb):
        assert array.shape == (K,)
        assert np.all(np.isfinite(array))
    if family is None:  # LinUCB, Random: μ is the identity
        np.testing.assert_array_equal(reward_mean, scores.mean)
        np.testing.assert_allclose(reward_ucb, scores.ucb, rtol=1e-12, atol=1e-12)
        return
    assert scores.family is family
    low, high = family.mean_range
    for array in (reward_mean, reward_ucb):
        assert np.all((array >= low) & (array <= high))
    np.testing.assert_array_equal(reward_mean, family.mean(scores.mean))
    if scores.scale == "reward":  # GLM-UCB, ECOLog: the bonus is added to μ(x'θ̂)
        np.testing.assert_allclose(reward_ucb, np.clip(scores.ucb, low, high),
                                   rtol=1e-12, atol=1e-12)
        assert np.all(reward_ucb >= reward_mean)
    else:
        assert scores.scale == "linear"
        np.testing.assert_array_equal(reward_ucb, family.mean(scores.mean + scores.width))
        # μ of the UCB wherever the index is mean + width: everywhere except RS-GLinCB's
        # eliminated actions (ucb = -inf) and its warm-up rounds (ucb = ‖x‖).
        regular = np.isclose(scores.ucb, scores.mean + scores.width, rtol=1e-12, atol=1e-12)
        if type(policy).__name__ != "RSGLinCB":
            assert np.all(regular)
        np.testing.assert_allclose(reward_ucb[regular], family.mean(scores.ucb[regular]),
                                   rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_reward_scale_scores_are_mu_of_mean_and_of_the_upper_index(cls):
    for policy in _variants(cls):
        rng = np.random.default_rng(21)
        for _ in range(40):
            X = _contexts(rng, K)
            a = policy.select(X)
            _check_round(policy, policy.last_scores_)
            policy.update(X[a], float(rng.random() < 0.5))


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_reading_the_reward_scale_scores_changes_nothing(cls):
    """They are computed on access: a pickled policy is the same before and after reading."""
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(22)
    for _ in range(10):
        X = _contexts(rng, K)
        policy.update(X[policy.select(X)], 1.0)
    policy.select(_contexts(rng, K))
    before = pickle.dumps(policy)
    policy.last_scores_.reward_mean, policy.last_scores_.reward_ucb
    assert pickle.dumps(policy) == before
    clone = pickle.loads(before)
    np.testing.assert_array_equal(clone.last_scores_.reward_ucb, policy.last_scores_.reward_ucb)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_extreme_predictors_stay_finite_and_in_range(family, recwarn):
    fam = get_family(family)
    mean = np.array([-1e6, -50.0, 0.0, 50.0, 1e6])
    width = np.array([0.0, 1.0, 2.0, 1e6, 1e6])
    for scale in ("linear", "reward"):
        scores = ActionScores(ucb=mean + width, mean=mean, width=width, scale=scale, family=fam)
        for array in (scores.reward_mean, scores.reward_ucb):
            assert np.all(np.isfinite(array)) or family == "linear"
            low, high = fam.mean_range
            assert np.all((array >= low) & (array <= high))
        assert np.all(scores.reward_ucb >= scores.reward_mean)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_batch_kernels_attach_the_family():
    from glmbandits.batch import simulate_batch
    from glmbandits.environments import SyntheticGLMEnv
    from glmbandits.policies import UCBGLM

    policies: list[UCBGLM] = []

    def factory(seed):
        policies.append(UCBGLM(n_features=D, seed=seed))
        return policies[-1]

    simulate_batch(factory, lambda seed: SyntheticGLMEnv(D, K, seed=seed), 30, [0, 1])
    assert len(policies) == 2
    for policy in policies:
        scores = policy.last_scores_
        assert scores.family is policy.family
        np.testing.assert_array_equal(scores.reward_mean, policy.family.mean(scores.mean))
