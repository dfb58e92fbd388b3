"""Loaders of bundled real data: shapes, finiteness, ‖x‖ <= 1, reward tables; obp skips cleanly."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from glmbandits import UCBGLM, simulate
from glmbandits.environments.full_information import ClassificationBanditEnv, block_encode
from glmbandits.evaluation import collect_log

HAS_OBP = importlib.util.find_spec("obp") is not None


@pytest.mark.parametrize("name, n, K, p", [("iris", 150, 3, 5), ("wine", 178, 3, 14),
                                           ("breast-cancer", 569, 2, 31), ("digits", 1797, 10, 65)])
def test_classification_bandits_have_block_contexts_and_one_hot_rewards(name, n, K, p) -> None:
    pytest.importorskip("sklearn")
    from glmbandits.environments.datasets import load_classification_bandit

    env = load_classification_bandit(name, seed=0)
    assert (env.n_samples, env.n_actions, env.n_features) == (n, K, K * p)
    assert env.reward_table.shape == (n, K)
    np.testing.assert_array_equal(env.reward_table.sum(axis=1), np.ones(n))
    norms = np.linalg.norm(env.features, axis=1)
    assert np.all(np.isfinite(env.features)) and norms.max() == pytest.approx(1.0)
    X = env.contexts
    assert X.shape == (K, K * p)
    for a in range(K):  # only block a of row a is non-zero
        mask = np.zeros(K * p, dtype=bool)
        mask[a * p:(a + 1) * p] = True
        assert np.all(X[a, ~mask] == 0.0)
        np.testing.assert_array_equal(X[a, mask], env.features[env.sample_])
    label = env.labels[env.sample_]
    assert env.step(int(label))[1] == 1.0


def test_classification_env_visits_every_sample_once_per_epoch() -> None:
    env = ClassificationBanditEnv(np.eye(4) * 0.5, np.array([0, 1, 2, 0]), seed=3)
    seen = [env.sample_]
    for _ in range(3):
        _, reward, info = env.step(0)
        seen.append(env.sample_)
        assert info["regret"] == 1.0 - reward
    assert sorted(seen) == [0, 1, 2, 3]
    assert block_encode(np.array([1.0]), 3).tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="labels must be"):
        ClassificationBanditEnv(np.eye(2), np.array([0.5, 1.0]))


def test_ucb_glm_learns_iris_online_and_a_uniform_log_keeps_the_truth() -> None:
    pytest.importorskip("sklearn")
    from glmbandits.environments.datasets import load_classification_bandit

    env = load_classification_bandit("iris", seed=0)
    result = simulate(UCBGLM(env.n_features, seed=0), env, horizon=300, seed=1)
    assert result.rewards[150:].mean() > 0.75  # random: 1/3
    log = collect_log(env, 150, seed=2)
    assert log.is_uniform() and log.n_features == 15
    rows = np.arange(150)
    np.testing.assert_array_equal(log.rewards, log.reward_table[rows, log.actions])


def test_modechoice_bandit_has_per_mode_features() -> None:
    pytest.importorskip("statsmodels")
    pytest.importorskip("pandas")
    from glmbandits.environments.datasets import load_modechoice_bandit

    env = load_modechoice_bandit(seed=0)
    assert (env.n_samples, env.n_actions, env.n_features) == (210, 4, 11)
    assert env.features.shape == (210, 4, 11)
    assert np.all(np.isfinite(env.features))
    assert np.linalg.norm(env.features, axis=2).max() <= 1.0 + 1e-12
    np.testing.assert_array_equal(env.reward_table.sum(axis=1), np.ones(210))
    # per-action features differ between modes of the same traveller (not only the block)
    assert np.ptp(env.features[:, :, 4:7], axis=1).max() > 0.1
    np.testing.assert_array_equal(env.reward_table.sum(axis=0), [58, 63, 30, 59])  # Greene


@pytest.mark.skipif(not HAS_OBP, reason="obp is not installed (pip install --no-deps obp==0.4.1)")
def test_open_bandit_loader_reads_the_bundled_sample_without_importing_obp() -> None:
    pytest.importorskip("pandas")
    code = (
        "import sys, numpy as np\n"
        "from glmbandits.environments.open_bandit import load_open_bandit\n"
        "log = load_open_bandit('random')\n"
        "assert 'obp' not in sys.modules\n"
        "X = np.stack([log.contexts[t] for t in range(0, log.n_rounds, 97)])\n"
        "print(log.n_rounds, int(log.n_actions.max()), log.n_features, log.is_uniform(),"
        " bool(np.isfinite(X).all()), float(np.linalg.norm(X, axis=2).max()) <= 1.0,"
        " int(log.rewards.sum()))\n"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert output[:6] == ["10000", "80", "66", "True", "True", "True"]
    assert 10 < int(output[6]) < 100  # the sample's clicks (a 0.38 % click rate)


@pytest.mark.skipif(not HAS_OBP, reason="obp is not installed (pip install --no-deps obp==0.4.1)")
def test_open_bandit_bts_campaign_is_not_uniform_and_max_rounds_cuts() -> None:
    pytest.importorskip("pandas")
    from glmbandits.environments.open_bandit import load_open_bandit, open_bandit_path

    log = load_open_bandit("bts", "men", max_rounds=500)
    assert log.n_rounds == 500 and not log.is_uniform()
    assert np.all((log.propensities > 0) & (log.propensities <= 1))
    chosen = log.chosen_contexts()
    assert chosen.shape == (500, log.n_features) and np.all(np.isfinite(chosen))
    with pytest.raises(ValueError, match="campaign must be one of"):
        open_bandit_path("nope")


def test_open_bandit_loader_fails_clearly_without_obp(monkeypatch) -> None:
    from glmbandits.environments import open_bandit

    monkeypatch.setattr(open_bandit.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps obp==0.4.1"):
        open_bandit.load_open_bandit()
