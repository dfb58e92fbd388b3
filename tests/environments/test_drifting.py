"""Drifting synthetic environments: breakpoints, paths, dynamic regret, seeding, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import SyntheticGLMEnv
from glmbandits.environments import (PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv,
                                     make_synthetic_env)
from glmbandits.environments.drifting import drift_keywords
from glmbandits.families import FAMILY_NAMES, get_family


def _play(env, rounds, action=0):
    infos = []
    for _ in range(rounds):
        _, _, info = env.step(action)
        infos.append(info)
    return infos


def test_evenly_spaced_breakpoints_and_theta_per_segment():
    env = PiecewiseStationaryGLMEnv(3, 5, breakpoints=3, horizon=400, seed=1)
    assert env.breakpoints_.tolist() == [100, 200, 300]
    assert env.thetas_.shape == (4, 3)
    np.testing.assert_allclose(np.linalg.norm(env.thetas_, axis=1), 3.0)
    assert len({tuple(row) for row in env.thetas_}) == 4  # every jump moves θ*
    for t, segment in ((0, 0), (99, 0), (100, 1), (299, 2), (300, 3), (10_000, 3)):
        np.testing.assert_array_equal(env.theta_at(t), env.thetas_[segment])


def test_rewards_and_regret_follow_the_current_theta():
    """info['regret'] is the dynamic regret: against the best action under θ*_t."""
    family = get_family("logistic")
    env = PiecewiseStationaryGLMEnv(2, 6, breakpoints=[3, 5], jump="flip", seed=0)
    for t in range(8):
        theta = env.theta_at(t)
        np.testing.assert_array_equal(env.theta_star, theta)
        means = family.mean(env.contexts @ theta)  # (a product's last bit may differ)
        np.testing.assert_allclose(env.expected_rewards, means, rtol=1e-12)
        _, _, info = env.step(1)
        assert info["regret"] == pytest.approx(means.max() - means[1], rel=0, abs=1e-12)
        assert info["optimal_action"] == int(np.argmax(means))
        np.testing.assert_array_equal(info["theta_star"], theta)
        assert info["segment"] == (0 if t < 3 else 1 if t < 5 else 2)
    np.testing.assert_allclose(env.theta_at(3), -env.theta_at(0))
    np.testing.assert_allclose(env.theta_at(5), env.theta_at(0))


def test_a_flip_changes_the_best_action_and_a_stationary_policy_pays_for_it():
    """After the flip, playing the action that was best is (nearly) the worst."""
    env = PiecewiseStationaryGLMEnv(2, 10, breakpoints=[50], jump="flip", seed=3)
    before = np.array([info["regret"] for info in _play_best(env, 50, env.thetas_[0])])
    after = np.array([info["regret"] for info in _play_best(env, 50, env.thetas_[0])])
    assert before.max() == 0.0
    assert after.mean() > 0.3


def _play_best(env, rounds, theta):
    infos = []
    for _ in range(rounds):
        _, _, info = env.step(int(np.argmax(env.contexts @ theta)))
        infos.append(info)
    return infos


def test_given_thetas_are_used_in_order():
    thetas = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    env = PiecewiseStationaryGLMEnv(2, 4, breakpoints=[2, 4], thetas=thetas, seed=0)
    np.testing.assert_array_equal(env.thetas_, thetas)
    seen = [info["theta_star"].tolist() for info in _play(env, 6)]
    assert seen == [[1.0, 0.0]] * 2 + [[0.0, 1.0]] * 2 + [[-1.0, 0.0]] * 2
    assert env.variation(6) == pytest.approx(2 * np.sqrt(2))
    thetas[0, 0] = 9.0  # the environment kept its own copy
    assert env.thetas_[0, 0] == 1.0


@pytest.mark.parametrize("path", ["arc", "walk"])
@pytest.mark.parametrize("budget", [0.5, 2.0, 40.0])
def test_smooth_path_has_the_given_length(path, budget):
    env = SmoothlyDriftingGLMEnv(4, 3, path_length=budget, horizon=500, path=path, seed=2)
    assert env.variation(500) == pytest.approx(budget, rel=1e-9)
    if path == "arc":  # ‖θ*‖ constant, equal steps
        norms = np.linalg.norm([env.theta_at(t) for t in range(0, 2000, 37)], axis=1)
        np.testing.assert_allclose(norms, 3.0)
        steps = np.linalg.norm(np.diff([env.theta_at(t) for t in range(10)], axis=0), axis=1)
        np.testing.assert_allclose(steps, budget / 499)
    else:  # the walk stops at the horizon
        np.testing.assert_array_equal(env.theta_at(499), env.theta_at(5000))


def test_smooth_drift_moves_theta_every_round_and_info_carries_it():
    env = SmoothlyDriftingGLMEnv(3, 4, path_length=3.0, horizon=50, seed=0)
    thetas = np.array([info["theta_star"] for info in _play(env, 50)])
    assert np.all(np.linalg.norm(np.diff(thetas, axis=0), axis=1) > 0)
    np.testing.assert_allclose(thetas, [env.theta_at(t) for t in range(50)])


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("make", [
    lambda family, seed: PiecewiseStationaryGLMEnv(3, 5, family, 1.0, breakpoints=2,
                                                   horizon=30, seed=seed),
    lambda family, seed: SmoothlyDriftingGLMEnv(3, 5, family, 1.0, path_length=1.0,
                                                horizon=30, path="walk", seed=seed),
], ids=["piecewise", "smooth"])
def test_every_family_and_the_same_seed_gives_the_same_run(family, make):
    runs = []
    for _ in range(2):
        env = make(family, 7)
        runs.append([(reward, info["regret"]) for _, reward, info in
                     (env.step(t % 5) for t in range(30))])
    assert runs[0] == runs[1]
    assert all(regret >= 0 for _, regret in runs[0])
    other = make(family, 8)
    assert not np.array_equal(other.theta_at(0), make(family, 7).theta_at(0))


@pytest.mark.parametrize("make", [
    lambda seed: PiecewiseStationaryGLMEnv(3, 5, breakpoints=0, seed=seed),
    lambda seed: PiecewiseStationaryGLMEnv(3, 5, breakpoints=2, horizon=40, jump="flip",
                                           seed=seed),
    lambda seed: SmoothlyDriftingGLMEnv(3, 5, path_length=0.0, horizon=40, seed=seed),
], ids=["no-breakpoint", "flip", "no-drift"])
def test_without_random_jumps_the_stream_is_the_stationary_one(make):
    """No extra draws: same θ*_0, contexts, and rewards while θ* is θ*_0, as
    SyntheticGLMEnv with the seed (common random numbers for the benchmark)."""
    env, stationary = make(4), SyntheticGLMEnv(3, 5, seed=4)
    np.testing.assert_array_equal(env.theta_at(0), stationary.theta_star)
    for t in range(40):
        np.testing.assert_array_equal(env.contexts, stationary.contexts)
        _, reward, _ = env.step(t % 5)
        _, reward_stationary, _ = stationary.step(t % 5)
        if t < 13:  # the flip's first breakpoint
            assert reward == reward_stationary


def test_reset_with_a_seed_redraws_the_path_and_without_keeps_it():
    env = PiecewiseStationaryGLMEnv(3, 5, breakpoints=2, horizon=30, seed=0)
    first = env.thetas_.copy()
    _play(env, 20)
    env.reset()
    assert env.t == 0 and env.segment_ == 0
    np.testing.assert_array_equal(env.thetas_, first)
    env.reset(seed=1)
    assert not np.array_equal(env.thetas_, first)
    env.reset(seed=0)
    np.testing.assert_array_equal(env.thetas_, first)


def test_fixed_arms_are_rescored_under_the_new_theta():
    env = PiecewiseStationaryGLMEnv(2, 4, breakpoints=[2], jump="flip",
                                    redraw_contexts=False, seed=0)
    arms = env.contexts.copy()
    regrets = [info["regret"] for info in _play(env, 4, action=int(np.argmax(
        env.expected_rewards)))]
    np.testing.assert_array_equal(env.contexts, arms)
    assert regrets[:2] == [0.0, 0.0] and min(regrets[2:]) > 0


def test_the_state_is_read_only():
    env = PiecewiseStationaryGLMEnv(2, 4, breakpoints=[2], seed=0)
    with pytest.raises(ValueError):
        env.thetas_[0, 0] = 1.0
    env.theta_star[0] = 7.0  # the round's copy: the path is unchanged
    assert env.thetas_[0, 0] != 7.0


def test_make_synthetic_env_and_keywords():
    assert type(make_synthetic_env(n_features=2, horizon=5, seed=0)) is SyntheticGLMEnv
    env = make_synthetic_env("smooth", n_features=2, path_length=1.0, horizon=10, seed=0)
    assert isinstance(env, SmoothlyDriftingGLMEnv) and env.horizon == 10
    assert "breakpoints" in drift_keywords("piecewise") and "drift" in drift_keywords("smooth")
    assert "drift" not in drift_keywords() and "horizon" not in drift_keywords("smooth")
    with pytest.raises(ValueError, match=r"make_synthetic_env: drift must be None or one of "
                                         r"\['piecewise', 'smooth'\], got 'sudden'"):
        make_synthetic_env("sudden", n_features=2)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(breakpoints=2), ValueError,
     "PiecewiseStationaryGLMEnv: horizon must be given when breakpoints is a count"),
    (dict(breakpoints=10, horizon=10), ValueError,
     r"PiecewiseStationaryGLMEnv: breakpoints must be < horizon = 10 .*got 10"),
    (dict(breakpoints=-1), ValueError, "PiecewiseStationaryGLMEnv: breakpoints must be >= 0"),
    (dict(breakpoints=[5, 5]), ValueError,
     r"breakpoints must be strictly increasing rounds, got \[5, 5\]"),
    (dict(breakpoints=[0]), ValueError, r"breakpoints\[0\] must be >= 1, got 0"),
    (dict(breakpoints=[3, 20], horizon=20), ValueError,
     "breakpoints must be rounds < horizon = 20, got 20"),
    (dict(breakpoints="3"), TypeError, "breakpoints must be an int or a sequence of rounds"),
    (dict(breakpoints=[2.5]), TypeError, r"breakpoints\[0\] must be an int, got float"),
    (dict(jump="swap", horizon=5), ValueError,
     r"jump must be one of \['random', 'flip'\], got 'swap'"),
    (dict(breakpoints=[2], thetas=[[1.0, 0.0]]), ValueError,
     r"thetas must have shape \(2, 2\) .*got \(1, 2\)"),
    (dict(breakpoints=[2], thetas=[[1.0, 0.0], [np.nan, 0.0]]), ValueError,
     "thetas must be finite"),
    (dict(breakpoints=[2], thetas=[[1.0, 0.0], [0.0, 1.0]], theta=[1.0, 0.0]), ValueError,
     "theta and thetas are exclusive"),
    (dict(horizon=0), ValueError, "PiecewiseStationaryGLMEnv: horizon must be >= 1, got 0"),
])
def test_piecewise_refusals_name_the_parameter(kwargs, error, message):
    with pytest.raises(error, match=message):
        PiecewiseStationaryGLMEnv(2, 4, **kwargs)


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((2,), dict(), ValueError, "SmoothlyDriftingGLMEnv: horizon must be given"),
    ((2,), dict(horizon=10, path_length=-1.0), ValueError, "path_length must be >= 0, got -1"),
    ((2,), dict(horizon=10, path="line"), ValueError,
     r"path must be one of \['arc', 'walk'\], got 'line'"),
    ((1,), dict(horizon=10), ValueError, "n_features must be >= 2 for an arc, got 1"),
    ((2, 4, "logistic", 0.0), dict(horizon=10), ValueError,
     "‖θ\\*‖ must be > 0 for an arc of length > 0"),
    ((2,), dict(horizon=10, path_length=55.0), ValueError,
     r"path_length must be <= 2‖θ\*‖\(horizon - 1\) = 54(\.0)? .*got 55"),
    ((2,), dict(horizon=1), ValueError,
     r"horizon must be >= 2 for a path_length > 0 \(.*\), got 1"),
    ((2,), dict(horizon=10, theta=[1.0]), ValueError, r"theta must have shape \(2,\)"),
    ((2,), dict(horizon=10.0), TypeError, "horizon must be an int, got float"),
])
def test_smooth_refusals_name_the_parameter(args, kwargs, error, message):
    with pytest.raises(error, match=f"SmoothlyDriftingGLMEnv: .*{message}|{message}"):
        SmoothlyDriftingGLMEnv(*args, **kwargs)


def test_a_refused_step_changes_nothing():
    env = SmoothlyDriftingGLMEnv(2, 3, path_length=1.0, horizon=10, seed=0)
    before = (env.t, env.contexts.copy(), env.theta_star.copy())
    with pytest.raises(ValueError, match=r"SmoothlyDriftingGLMEnv.step: action must lie in"):
        env.step(3)
    assert env.t == before[0]
    np.testing.assert_array_equal(env.contexts, before[1])
    np.testing.assert_array_equal(env.theta_star, before[2])
