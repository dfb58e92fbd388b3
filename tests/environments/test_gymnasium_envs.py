"""The Gymnasium environments: registered ids, spaces, check_env, the library's numbers bit for
bit, and a policy of the library played through FromGymnasium by simulate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from glmbandits import LinUCB, SyntheticGLMEnv, UCBGLM, simulate  # noqa: E402
from glmbandits.environments import (ClassificationBanditEnv,  # noqa: E402
                                     PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv)
from glmbandits.environments.gymnasium_envs import (ENV_IDS, FromGymnasium,  # noqa: E402
                                                    GymnasiumBanditEnv)

RNG = np.random.default_rng(0)
FEATURES = RNG.uniform(-0.5, 0.5, size=(30, 3))
LABELS = np.arange(30) % 4

#: id -> (keywords for gymnasium.make, the library environment built the same way with a seed)
CASES = {
    "glmbandits/SyntheticGLM-v0": (
        {"n_features": 4, "n_actions": 5},
        lambda seed: SyntheticGLMEnv(n_features=4, n_actions=5, family="logistic",
                                     theta_norm=3.0, seed=seed)),
    "glmbandits/PiecewiseStationaryGLM-v0": (
        {"n_features": 4, "n_actions": 5, "breakpoints": 2, "horizon": 30},
        lambda seed: PiecewiseStationaryGLMEnv(4, 5, breakpoints=2, horizon=30, seed=seed)),
    "glmbandits/SmoothlyDriftingGLM-v0": (
        {"n_features": 4, "n_actions": 5, "path_length": 2.0, "horizon": 30, "family": "probit"},
        lambda seed: SmoothlyDriftingGLMEnv(4, 5, "probit", path_length=2.0, horizon=30,
                                            seed=seed)),
    "glmbandits/ClassificationBandit-v0": (
        {"features": FEATURES, "labels": LABELS},
        lambda seed: ClassificationBanditEnv(FEATURES, LABELS, seed=seed)),
}


def test_every_id_of_the_module_is_registered_and_tested():
    assert set(ENV_IDS) == set(CASES)
    assert set(ENV_IDS) <= set(gymnasium.registry)


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_check_env_passes(env_id):
    keywords, _ = CASES[env_id]
    env = gymnasium.make(env_id, **keywords)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check_env's warnings are failures here
        check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_spaces_are_the_documented_ones(env_id):
    keywords, library = CASES[env_id]
    env = gymnasium.make(env_id, **keywords)
    reference = library(0)
    K, d = reference.contexts.shape
    assert env.action_space == gymnasium.spaces.Discrete(K)
    space = env.observation_space
    assert isinstance(space, gymnasium.spaces.Box)
    assert space.shape == (K, d) and space.dtype == np.float64
    if env_id == "glmbandits/ClassificationBandit-v0":
        assert space.low.min() == min(0.0, FEATURES.min())
        assert space.high.max() == max(0.0, FEATURES.max())
    else:
        assert (space.low == -1).all() and (space.high == 1).all()


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_same_numbers_as_the_library_environment_with_the_same_seed(env_id):
    """reset(seed=s) and the steps after it give the library environment's rounds (seed s),
    bit for bit, with the played round's expected rewards and regret in info."""
    keywords, library = CASES[env_id]
    env = gymnasium.make(env_id, **keywords)
    for seed in (3, 11):
        reference = library(seed)
        observation, info = env.reset(seed=seed)
        assert info == {}
        np.testing.assert_array_equal(observation, reference.contexts)
        for t in range(40):  # past the drifting ones' breakpoints and a classification epoch
            action = (7 * t + seed) % reference.contexts.shape[0]
            means = reference.expected_rewards.copy()
            ref_contexts, ref_reward, ref_info = reference.step(action)
            observation, reward, terminated, truncated, info = env.step(action)
            assert (terminated, truncated) == (False, False)
            np.testing.assert_array_equal(observation, ref_contexts)
            assert reward == ref_reward
            np.testing.assert_array_equal(info.pop("expected_rewards"), means)
            assert info.keys() == ref_info.keys()
            for key, value in ref_info.items():
                np.testing.assert_array_equal(info[key], value)
            assert info["regret"] == means.max() - means[action]


def test_a_changing_number_of_actions_or_another_object_is_refused():
    with pytest.raises(ValueError, match=r"GymnasiumBanditEnv: bandit.n_actions must be a "
                                         r"fixed int K .* got the range \(2, 5\)"):
        GymnasiumBanditEnv(SyntheticGLMEnv(3, (2, 5), seed=0))
    with pytest.raises(TypeError, match="bandit must be a SyntheticGLMEnv .* got dict"):
        GymnasiumBanditEnv({})
    env = gymnasium.make("glmbandits/SyntheticGLM-v0", n_features=2, n_actions=3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must lie in \[0, 2\], got 3"):
        env.unwrapped.step(3)


def test_classification_entry_point_needs_one_source():
    with pytest.raises(ValueError, match="give either dataset .* or features and labels"):
        gymnasium.make("glmbandits/ClassificationBandit-v0")
    with pytest.raises(ValueError, match="features need labels"):
        gymnasium.make("glmbandits/ClassificationBandit-v0", features=FEATURES)


def test_a_dataset_by_name_is_the_loaders_environment():
    pytest.importorskip("sklearn")
    from glmbandits.environments.datasets import load_classification_bandit

    env = gymnasium.make("glmbandits/ClassificationBandit-v0", dataset="iris")
    reference = load_classification_bandit("iris", seed=5)
    observation, _ = env.reset(seed=5)
    assert env.observation_space.shape == (3, 15)
    np.testing.assert_array_equal(observation, reference.contexts)
    check_env(env.unwrapped)


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_a_policy_plays_through_the_adapter_as_on_the_library_environment(env_id):
    """simulate(policy, FromGymnasium(env)) is simulate(policy, library env), bit for bit."""
    keywords, library = CASES[env_id]
    d = library(0).n_features
    through_gym = simulate(UCBGLM(n_features=d, seed=1),
                           FromGymnasium(gymnasium.make(env_id, **keywords)), 60, seed=4)
    direct = simulate(UCBGLM(n_features=d, seed=1), library(None), 60, seed=4)
    np.testing.assert_array_equal(through_gym.actions, direct.actions)
    np.testing.assert_array_equal(through_gym.rewards, direct.rewards)
    np.testing.assert_array_equal(through_gym.regret, direct.regret)
    assert through_gym.info == direct.info  # dynamic regret on the drifting ones


def test_the_adapter_starts_a_new_episode_when_one_ends():
    env = gymnasium.make("glmbandits/SyntheticGLM-v0", n_features=3, n_actions=4,
                         max_episode_steps=10)
    adapter = FromGymnasium(env)
    result = simulate(LinUCB(n_features=3, seed=0), adapter, 25, seed=0)
    assert result.horizon == 25 and adapter.episodes_ == 3
    assert np.isfinite(result.regret).all() and (result.regret >= 0).all()


def test_the_adapter_refuses_what_simulate_cannot_use():
    with pytest.raises(TypeError, match="env must be a gymnasium.Env, got SyntheticGLMEnv"):
        FromGymnasium(SyntheticGLMEnv(2, 3, seed=0))
    adapter = FromGymnasium(gymnasium.make("glmbandits/SyntheticGLM-v0", n_features=2))
    with pytest.raises(TypeError, match="seed must be an int or None .* got Generator"):
        adapter.reset(np.random.default_rng(0))
    cartpole = FromGymnasium(gymnasium.make("CartPole-v1"))
    with pytest.raises(ValueError, match=r"observation must be the \(K, d\) contexts, got "
                                         r"shape \(4,\)"):
        cartpole.reset(seed=0)

    class NoTruth(gymnasium.Wrapper):
        def step(self, action):
            observation, reward, terminated, truncated, _ = self.env.step(action)
            return observation, reward, terminated, truncated, {}

    blind = FromGymnasium(NoTruth(gymnasium.make("glmbandits/SyntheticGLM-v0", n_features=2)))
    blind.reset(seed=0)
    with pytest.raises(ValueError, match="info must hold 'regret' and 'expected_reward'"):
        blind.step(0)
