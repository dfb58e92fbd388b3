"""simulate: shapes, regret bookkeeping and bit-for-bit reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import LinUCB, RandomPolicy, SupCBGLM, SyntheticGLMEnv, UCBGLM, simulate


@pytest.mark.parametrize("make", [lambda s: UCBGLM(4, seed=s),
                                  lambda s: SupCBGLM(4, horizon=200, seed=s),
                                  lambda s: LinUCB(4, seed=s)])
def test_same_seed_gives_identical_trajectories(make):
    runs = [simulate(make(7), SyntheticGLMEnv(4, 8, seed=1), 200, seed=3) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].actions, runs[1].actions)
    np.testing.assert_array_equal(runs[0].rewards, runs[1].rewards)
    np.testing.assert_array_equal(runs[0].regret, runs[1].regret)
    different = simulate(make(8), SyntheticGLMEnv(4, 8, seed=1), 200, seed=4)
    assert not np.array_equal(different.actions, runs[0].actions)


def test_result_arrays_are_consistent():
    result = simulate(UCBGLM(3, seed=0), SyntheticGLMEnv(3, 5, seed=0), 150, seed=0)
    assert result.horizon == 150
    for array in (result.regret, result.actions, result.rewards, result.expected_rewards,
                  result.propensities):
        assert array.shape == (150,)
    assert np.all(result.regret >= 0)
    np.testing.assert_allclose(result.cumulative_regret, np.cumsum(result.regret))
    assert np.all((result.propensities > 0) & (result.propensities <= 1))
    assert result.seconds > 0 and result.rounds_per_second > 0
    assert set(np.unique(result.rewards)) <= {0.0, 1.0}


def test_bad_horizon():
    with pytest.raises(ValueError, match="simulate: horizon must be >= 1, got 0"):
        simulate(UCBGLM(3), SyntheticGLMEnv(3, 5), 0)


def _drifting_envs():
    from glmbandits.environments import PiecewiseStationaryGLMEnv, SmoothlyDriftingGLMEnv

    return {
        "flip": lambda s: PiecewiseStationaryGLMEnv(4, 6, breakpoints=[60], jump="flip", seed=s),
        "random jumps": lambda s: PiecewiseStationaryGLMEnv(4, (3, 7), breakpoints=3,
                                                            horizon=150, seed=s),
        "arc": lambda s: SmoothlyDriftingGLMEnv(4, 6, path_length=4.0, horizon=150, seed=s),
        "walk, fixed arms": lambda s: SmoothlyDriftingGLMEnv(
            4, 6, family="probit", path_length=2.0, horizon=150, path="walk",
            redraw_contexts=False, seed=s),
    }


@pytest.mark.parametrize("env_name", list(_drifting_envs()))
def test_simulate_records_the_dynamic_regret(env_name):
    """Each round's regret is max_a μ(x_{t,a}'θ*_t) - μ(x_{t,a_t}'θ*_t) with that round's θ*."""
    make_env = _drifting_envs()[env_name]
    result = simulate(UCBGLM(4, seed=0), make_env(3), 150, seed=3, record_contexts=True)
    assert result.info == {"dynamic_regret": True}
    env = make_env(3)
    env.reset(seed=3)
    family = env.family
    for t, contexts in enumerate(result.contexts):  # (a product's last bit may vary)
        means = family.mean(contexts @ env.theta_at(t))
        chosen = means[result.actions[t]]
        np.testing.assert_allclose(result.regret[t], means.max() - chosen, rtol=0, atol=1e-12)
        np.testing.assert_allclose(result.expected_rewards[t], chosen, rtol=1e-12)
    stationary = simulate(UCBGLM(4, seed=0), SyntheticGLMEnv(4, 6, seed=3), 20, seed=3)
    assert stationary.info == {}


def test_a_stationary_policy_pays_after_a_flip():
    """UCB-GLM learns θ*_0, then keeps playing its best actions when θ* flips: the
    dynamic regret per round after the flip is several times that before it."""
    from glmbandits.environments import PiecewiseStationaryGLMEnv

    regrets = [simulate(UCBGLM(3, seed=s), PiecewiseStationaryGLMEnv(
        3, 10, breakpoints=[400], jump="flip", seed=s), 800, seed=s).regret for s in range(3)]
    before = np.mean([r[200:400].mean() for r in regrets])
    after = np.mean([r[400:600].mean() for r in regrets])
    assert after > 3 * before


@pytest.mark.parametrize("env_name", list(_drifting_envs()))
@pytest.mark.parametrize("make, kernel", [
    (lambda s: LinUCB(4, seed=s), "LinUCBKernel"),
    (lambda s: UCBGLM(4, seed=s), "UCBGLMKernel"),
    (lambda s: RandomPolicy(4, seed=s), "SequentialKernel"),
], ids=["linucb", "ucb-glm", "random (fallback)"])
def test_simulate_batch_on_drifting_environments_equals_simulate(env_name, make, kernel):
    """Replicate r of simulate_batch is simulate(seed r), bit for bit, dynamic regret
    included: the drifting environments are stepped per replicate."""
    from glmbandits import simulate_batch

    make_env = _drifting_envs()[env_name]
    seeds = [0, 4, 9]
    batch = simulate_batch(make, make_env, 150, seeds)
    assert batch.kernel == kernel
    for r, seed in enumerate(seeds):
        sequential = simulate(make(seed), make_env(seed), 150, seed=seed)
        for name in ("actions", "rewards", "regret", "expected_rewards", "propensities"):
            np.testing.assert_array_equal(getattr(batch, name)[r], getattr(sequential, name),
                                          err_msg=name)
