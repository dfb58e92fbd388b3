"""SyntheticGLMEnv: contexts in the unit ball, θ*, rewards, regret, seeding."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import SyntheticGLMEnv
from glmbandits.families import get_family


@pytest.mark.parametrize("contexts", ["ball", "sphere", "gaussian"])
def test_contexts_lie_in_the_unit_ball_and_theta_has_its_norm(contexts):
    env = SyntheticGLMEnv(5, 7, theta_norm=2.5, contexts=contexts, seed=0)
    assert np.linalg.norm(env.theta_star) == pytest.approx(2.5)
    for _ in range(50):
        assert env.contexts.shape == (7, 5)
        assert np.all(np.linalg.norm(env.contexts, axis=1) <= 1.0 + 1e-12)
        env.step(0)


def test_ball_contexts_are_uniform_in_the_ball():
    env = SyntheticGLMEnv(3, 2000, seed=1)
    norms = np.linalg.norm(env.contexts, axis=1)
    # P(||x|| <= r) = r^3 for the uniform distribution in the 3-ball
    assert abs(np.mean(norms <= 0.5) - 0.125) < 0.03


def test_expected_rewards_and_regret_are_the_papers_pseudo_regret():
    env = SyntheticGLMEnv(4, 6, family="probit", seed=2)
    family = get_family("probit")
    np.testing.assert_allclose(env.expected_rewards, family.mean(env.contexts @ env.theta_star))
    expected = env.expected_rewards.copy()
    _, reward, info = env.step(3)
    assert info["optimal_action"] == int(np.argmax(expected))
    assert info["regret"] == pytest.approx(expected.max() - expected[3])
    assert info["regret"] >= 0 and reward in (0.0, 1.0)


def test_reset_with_a_seed_reproduces_the_instance_and_stream():
    env = SyntheticGLMEnv(3, 4, seed=3)
    first = env.reset(seed=10).copy()
    theta = env.theta_star.copy()
    stream = [env.step(1)[1] for _ in range(20)]
    again = env.reset(seed=10)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(theta, env.theta_star)
    assert stream == [env.step(1)[1] for _ in range(20)]


def test_fixed_theta_and_changing_number_of_actions():
    env = SyntheticGLMEnv(2, (1, 5), theta=[1.0, -1.0], seed=4)
    sizes = {env.step(0)[0].shape[0] for _ in range(200)}
    assert sizes == {1, 2, 3, 4, 5}
    np.testing.assert_array_equal(env.theta_star, [1.0, -1.0])


@pytest.mark.parametrize("family", ["linear", "poisson"])
def test_rewards_follow_the_family(family):
    env = SyntheticGLMEnv(3, 2, family=family, theta_norm=1.0, seed=5)
    rewards = [env.step(0)[1] for _ in range(300)]
    assert np.all(get_family(family).in_domain(np.array(rewards)))


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_actions must be >= 1, got 0"):
        SyntheticGLMEnv(2, 0)
    with pytest.raises(ValueError, match="contexts must be one of"):
        SyntheticGLMEnv(2, 3, contexts="cube")
    with pytest.raises(ValueError, match=r"theta must have shape \(2,\)"):
        SyntheticGLMEnv(2, 3, theta=[1.0])
    with pytest.raises(ValueError, match="theta_norm must be >= 0"):
        SyntheticGLMEnv(2, 3, theta_norm=-1.0)
    env = SyntheticGLMEnv(2, 3, seed=0)
    with pytest.raises(ValueError, match=r"action must lie in \[0, 2\], got 3"):
        env.step(3)
    with pytest.raises(TypeError, match="action must be an int"):
        env.step(1.0)
