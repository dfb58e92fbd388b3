"""Issue 13, items 2-3: every policy exposes its full action distribution for the round
(``last_probabilities_``) and accepts an ``exploration_floor`` ε that mixes ε uniformly."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import policy_catalogue
from glmbandits import GLMTSL, LaplaceTS, RandomPolicy, UCBGLM
from glmbandits.policies.base import Policy
from glmbandits.policies.registry import ProblemSpec, make_policy, policy_names

D = 3
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _contexts(rng: np.random.Generator, k: int) -> np.ndarray:
    return policy_catalogue.unit_ball_contexts(rng, k, D)


def _play(policy: Policy, rounds: int, seed: int, k: int = 5) -> list[tuple[int, np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        X = _contexts(rng, k)
        a = policy.select(X)
        out.append((a, policy.last_probabilities_.copy(), policy.last_propensity_))
        policy.update(X[a], float(rng.random() < 0.5))
    return out


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_last_probabilities_is_a_distribution_consistent_with_the_propensity(cls):
    policy = cls(n_features=D, seed=0)
    assert policy.last_probabilities_ is None
    for a, probabilities, propensity in _play(policy, 40, seed=3, k=6):
        assert probabilities.shape == (6,)
        assert np.all(probabilities >= 0.0)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
        assert probabilities[a] == propensity
        assert probabilities[a] > 0.0


def test_random_policy_distribution_is_uniform():
    policy = RandomPolicy(n_features=D, seed=0)
    policy.select(np.zeros((4, D)))
    np.testing.assert_array_equal(policy.last_probabilities_, np.full(4, 0.25))


def test_ucb_ties_give_the_exact_uniform_over_ties_distribution():
    policy = UCBGLM(n_features=D, seed=0, tau=0)
    X = np.array([[0.5, 0, 0], [0.5, 0, 0], [0, 0, 0.1], [0.5, 0, 0]])
    a = policy.select(X)
    np.testing.assert_array_equal(policy.last_probabilities_, [1 / 3, 1 / 3, 0.0, 1 / 3])
    assert a in (0, 1, 3)


@pytest.mark.parametrize("cls, samples", [(LaplaceTS, 32), (GLMTSL, 16)])
def test_thompson_distribution_is_monte_carlo_over_the_documented_draws(cls, samples):
    policy = cls(n_features=D, seed=0, n_propensity_samples=samples)
    for _, probabilities, _ in _play(policy, 30, seed=4)[10:]:
        counts = probabilities * (samples + 1)
        np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)


# -- exploration floor -----------------------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_exploration_floor_is_accepted_stored_and_validated(cls):
    assert cls(n_features=D, seed=0).exploration_floor == 0.0
    assert cls(n_features=D, seed=0, exploration_floor=0.25).exploration_floor == 0.25
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match=f"{cls.__name__}: exploration_floor must"):
            cls(n_features=D, exploration_floor=bad)
    with pytest.raises(TypeError, match="exploration_floor"):
        cls(n_features=D, exploration_floor="0.1")


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_exploration_floor_mixes_epsilon_uniformly(cls):
    eps, K = 0.2, 5
    floored = _play(cls(n_features=D, seed=0, exploration_floor=eps), 40, seed=5, k=K)
    for a, probabilities, propensity in floored:
        assert np.all(probabilities >= eps / K - 1e-15)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
        assert probabilities[a] == propensity


def test_exploration_floor_of_one_is_uniform_and_plays_every_action():
    policy = UCBGLM(n_features=D, seed=0, tau=0, exploration_floor=1.0)
    played = _play(policy, 200, seed=6, k=4)
    assert {a for a, _, _ in played} == {0, 1, 2, 3}
    for _, probabilities, propensity in played:
        np.testing.assert_allclose(probabilities, 0.25)


def test_exploration_floor_distribution_is_the_mixture_of_the_rule():
    eps = 0.1
    plain = UCBGLM(n_features=D, seed=0, tau=0)
    floored = UCBGLM(n_features=D, seed=0, tau=0, exploration_floor=eps)
    X = np.array([[0.5, 0, 0], [0.1, 0, 0], [0, 0, 0.1]])
    plain.select(X)
    floored.select(X)
    np.testing.assert_allclose(floored.last_probabilities_,
                               (1 - eps) * plain.last_probabilities_ + eps / 3)


def test_exploration_floor_explores_at_rate_epsilon():
    policy = UCBGLM(n_features=D, seed=0, tau=0, exploration_floor=0.3)
    X = np.array([[0.5, 0, 0], [0.1, 0, 0], [0, 0, 0.1]])
    actions = np.array([policy.select(X) for _ in range(3000)])  # frozen: greedy is action 0
    assert np.mean(actions != 0) == pytest.approx(0.3 * 2 / 3, abs=0.03)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_exploration_floor_survives_pickle(cls):
    policy = cls(n_features=D, seed=0, exploration_floor=0.1)
    _play(policy, 20, seed=7)
    clone = pickle.loads(pickle.dumps(policy))
    assert clone.exploration_floor == 0.1
    assert [a for a, _, _ in _play(policy, 20, seed=8)] == [a for a, _, _ in _play(clone, 20, seed=8)]


@pytest.mark.parametrize("name", policy_names())
def test_registry_passes_the_exploration_floor(name):
    policy = make_policy(name, ProblemSpec(D, 4, "logistic", 100), seed=0, exploration_floor=0.05)
    assert policy.exploration_floor == 0.05


def test_batch_runs_with_a_floor_match_sequential_runs():
    from glmbandits import SyntheticGLMEnv, simulate, simulate_batch

    def make(seed):
        return UCBGLM(n_features=D, seed=seed, exploration_floor=0.2)

    batch = simulate_batch(make, lambda seed: SyntheticGLMEnv(D, n_actions=4, seed=seed), 60,
                           seeds=[0, 1])
    for r in range(2):
        single = simulate(make(r), SyntheticGLMEnv(D, n_actions=4, seed=r), 60, seed=r)
        np.testing.assert_array_equal(batch.actions[r], single.actions)
        np.testing.assert_array_equal(batch.propensities[r], single.propensities)


def test_batch_kernels_write_back_the_same_distribution_as_sequential_runs():
    from glmbandits import LinUCB, SyntheticGLMEnv, simulate, simulate_batch

    for cls in (UCBGLM, LinUCB):
        batch_policies = {}

        def make(seed, cls=cls):
            batch_policies[seed] = cls(n_features=D, seed=seed)
            return batch_policies[seed]

        simulate_batch(make, lambda seed: SyntheticGLMEnv(D, n_actions=4, seed=seed), 30,
                       seeds=[0, 1])
        for r in (0, 1):
            single = cls(n_features=D, seed=r)
            simulate(single, SyntheticGLMEnv(D, n_actions=4, seed=r), 30, seed=r)
            np.testing.assert_array_equal(batch_policies[r].last_probabilities_,
                                          single.last_probabilities_)
