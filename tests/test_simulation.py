"""simulate: shapes, regret bookkeeping and bit-for-bit reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import LinUCB, SupCBGLM, SyntheticGLMEnv, UCBGLM, simulate


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
