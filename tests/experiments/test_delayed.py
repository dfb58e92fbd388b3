"""The delayed-reward study (glmbandits.experiments.delayed)."""

from __future__ import annotations

import numpy as np
import pytest

import glmbandits
from glmbandits.experiments.delayed import delayed_reward_regret, run_delayed


def test_batch_size_one_is_the_select_update_loop():
    seed = np.random.SeedSequence(7, spawn_key=(0,))
    regret = run_delayed("UCBGLM", 1, 80, 3, 5, "logistic", 3.0, seed)
    env_seed, policy_seed = (np.random.SeedSequence(7, spawn_key=(0, k)) for k in range(2))
    policy = glmbandits.UCBGLM(n_features=3, family="logistic",
                               seed=np.random.default_rng(policy_seed))
    env = glmbandits.SyntheticGLMEnv(3, 5, "logistic", 3.0, seed=np.random.default_rng(env_seed))
    contexts, expected = env.contexts, 0.0
    for _ in range(80):
        a = policy.select(contexts)
        x = contexts[a].copy()
        contexts, reward, info = env.step(a)
        policy.update(x, reward)
        expected += info["regret"]
    assert regret == expected
    # the seed is not consumed: the same call gives the same run
    assert run_delayed("UCBGLM", 1, 80, 3, 5, "logistic", 3.0, seed) == regret


def test_a_batch_larger_than_the_horizon_never_learns():
    seed = np.random.SeedSequence(3)
    never = run_delayed("LinUCB", 1000, 60, 3, 4, "logistic", 3.0, seed)
    table = delayed_reward_regret(["LinUCB"], [1000], horizon=60, n_features=3, n_actions=4,
                                  n_seeds=1, seed=3)
    assert [row.batch_size for row in table.rows] == [1, 1000]  # b = 1 is added
    assert never > 0 and table.rows[1].ratio == pytest.approx(
        table.rows[1].mean / table.rows[0].mean)
    assert "| LinUCB |" in table.to_markdown()
    with pytest.raises(KeyError):
        table.row("LinUCB", 10)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="policies must name policy classes"):
        delayed_reward_regret(["NoSuchPolicy"], [1], horizon=5, n_seeds=1)
    with pytest.raises(ValueError, match="horizon"):
        delayed_reward_regret(["LinUCB"], [1], horizon=0)
    with pytest.raises(ValueError, match="batch_sizes"):
        delayed_reward_regret(["LinUCB"], [0], horizon=5)


@pytest.mark.slow
def test_regret_grows_gracefully_with_the_delay():
    """Rewards every 100 rounds (T=1200, d=10, K=20, 3 seeds): no policy's regret more than
    2.5 times its no-delay regret (measured 1.1-1.6 at T=1500-5000), and none clearly
    *better* with the delay (ratio >= 0.75; CRN-paired seeds). Whether Thompson sampling
    degrades less than UCB is not asserted: with contexts redrawn every round it does
    not hold reliably (see docs/delayed-rewards.md)."""
    table = delayed_reward_regret(batch_sizes=(1, 100), horizon=1200, n_seeds=3, seed=0)
    for name in ("UCBGLM", "LinUCB", "LaplaceTS", "GLMTSL"):
        no_delay, delayed = table.row(name, 1), table.row(name, 100)
        assert no_delay.mean > 0
        assert 0.75 <= delayed.ratio <= 2.5, (name, delayed.ratio)
        assert np.all(np.isfinite(delayed.regrets))
