"""LoggedBanditData: malformed logs are rejected, varying K, round trips, propensities."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits import RandomPolicy, SyntheticGLMEnv, UCBGLM, simulate
from glmbandits.evaluation import (
    FactoredContexts,
    LoggedBanditData,
    doubly_robust,
    ips,
    replay,
    snips,
)


def _columns(T: int = 6, K: int = 3, d: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"contexts": rng.random((T, K, d)), "action": rng.integers(K, size=T),
            "reward": rng.integers(2, size=T).astype(float), "propensity": np.full(T, 1 / K)}


def test_valid_columns_build_a_log() -> None:
    log = LoggedBanditData.from_columns(_columns())
    assert (log.n_rounds, log.n_features) == (6, 2)
    assert log.is_uniform()


@pytest.mark.parametrize("column", ["contexts", "action", "reward"])
def test_missing_column_is_rejected(column: str) -> None:
    columns = _columns()
    del columns[column]
    with pytest.raises(ValueError, match=rf"missing required column\(s\) \['{column}'\]"):
        LoggedBanditData.from_columns(columns)


@pytest.mark.parametrize("value", [0.0, -0.2, 1.5])
def test_propensity_outside_unit_interval_is_rejected(value: float) -> None:
    columns = _columns()
    columns["propensity"][3] = value
    with pytest.raises(ValueError, match=r"propensity must lie in \(0, 1\].*round 3"):
        LoggedBanditData.from_columns(columns)


def test_propensity_one_is_accepted() -> None:
    columns = _columns()
    columns["propensity"][:] = 1.0
    assert LoggedBanditData.from_columns(columns).propensities.max() == 1.0


@pytest.mark.parametrize("column", ["reward", "propensity", "action"])
def test_nan_in_a_column_is_rejected(column: str) -> None:
    columns = _columns()
    columns[column] = columns[column].astype(float)
    columns[column][2] = np.nan
    with pytest.raises(ValueError, match=f"{column} must be finite"):
        LoggedBanditData.from_columns(columns)


def test_nan_in_contexts_is_rejected_but_padding_is_ignored() -> None:
    columns = _columns()
    columns["contexts"][1, 0, 1] = np.nan
    with pytest.raises(ValueError, match="contexts must be finite"):
        LoggedBanditData.from_columns(columns)
    columns = _columns()
    columns["contexts"][:, 2] = np.nan  # padding: rounds offer only 2 actions
    columns["action"] = columns["action"] % 2
    columns["n_actions"] = np.full(6, 2)
    assert LoggedBanditData.from_columns(columns).n_actions.tolist() == [2] * 6


@pytest.mark.parametrize("action", [3, -1])
def test_action_outside_the_action_set_is_rejected(action: int) -> None:
    columns = _columns()
    columns["action"][4] = action
    with pytest.raises(ValueError, match="action must lie in the round's action set.*round 4"):
        LoggedBanditData.from_columns(columns)


def test_action_outside_a_short_round_is_rejected() -> None:
    contexts = [np.zeros((4, 2)), np.zeros((2, 2))]
    with pytest.raises(ValueError, match="round 1 has K_t = 2, got action 3"):
        LoggedBanditData(contexts, [3, 3], [0.0, 1.0])


def test_non_integer_action_and_length_mismatch_are_rejected() -> None:
    columns = _columns()
    columns["action"] = columns["action"] + 0.5
    with pytest.raises(ValueError, match="action must hold integers"):
        LoggedBanditData.from_columns(columns)
    columns = _columns()
    columns["reward"] = columns["reward"][:-1]
    with pytest.raises(ValueError, match=r"reward must have shape \(6,\)"):
        LoggedBanditData.from_columns(columns)


def test_from_columns_rejects_a_non_mapping() -> None:
    with pytest.raises(TypeError, match="table must be a mapping"):
        LoggedBanditData.from_columns([1, 2, 3])


def test_estimators_refuse_a_log_without_propensities() -> None:
    columns = _columns()
    del columns["propensity"]
    log = LoggedBanditData.from_columns(columns)
    policy = RandomPolicy(2, seed=1)
    for estimator in (ips, snips, doubly_robust):
        with pytest.raises(ValueError, match="log must have propensities"):
            estimator(policy, log)
    assert policy.last_propensity_ is None  # nothing was evaluated


def test_varying_action_sets_pad_and_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(1)
    contexts = [rng.random((k, 3)) for k in (2, 5, 3)]
    log = LoggedBanditData(contexts, [1, 4, 0], [1.0, 0.0, 1.0], [0.5, 0.2, 1 / 3])
    assert log.n_actions.tolist() == [2, 5, 3]
    assert log.is_uniform()
    np.testing.assert_array_equal(log.contexts[1], contexts[1])
    np.testing.assert_array_equal(log.chosen_contexts(), [contexts[0][1], contexts[1][4],
                                                          contexts[2][0]])
    loaded = LoggedBanditData.load(log.save(tmp_path / "log.npz"))
    assert loaded.n_actions.tolist() == [2, 5, 3]
    np.testing.assert_array_equal(loaded.contexts[2], contexts[2])
    np.testing.assert_array_equal(loaded.propensities, log.propensities)
    first, rest = log.split(0.4)
    assert (first.n_rounds, rest.n_rounds) == (1, 2)
    np.testing.assert_array_equal(rest.contexts[0], contexts[1])


def test_factored_contexts_match_their_blocks() -> None:
    rng = np.random.default_rng(2)
    items, users, pairs = rng.random((4, 2)), rng.random((5, 3)), rng.random((5, 4, 1))
    store = FactoredContexts(items, users, pairs)
    assert store.n_features == 6
    for t in range(5):
        expected = np.hstack([items, np.tile(users[t], (4, 1)), pairs[t]])
        np.testing.assert_array_equal(store[t], expected)
    actions = rng.integers(4, size=5)
    np.testing.assert_array_equal(store.chosen(actions),
                                  np.stack([store[t][actions[t]] for t in range(5)]))
    with pytest.raises(ValueError, match="pair_features must have shape"):
        FactoredContexts(items, users, rng.random((5, 3, 1)))


def test_random_and_tied_ucb_propensities() -> None:
    contexts = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.2, 0.2]])
    random_policy = RandomPolicy(2, seed=0)
    random_policy.select(contexts)
    assert random_policy.last_propensity_ == 0.25
    policy = UCBGLM(2, tau=0, seed=0)
    for _ in range(5):  # fit on data favouring the first coordinate
        policy.update(np.array([1.0, 0.0]), 1.0)
        policy.update(np.array([0.0, 1.0]), 0.0)
    chosen = {policy.select(contexts) for _ in range(40)}
    assert chosen == {0, 2}  # rows 0 and 2 are identical and best: a uniform tie
    assert policy.last_propensity_ == 0.5
    policy.select(contexts[[0, 1, 3]])
    assert policy.last_propensity_ == 1.0


def test_simulate_records_contexts_and_propensities_for_a_log() -> None:
    env = SyntheticGLMEnv(3, n_actions=(2, 6), seed=0)
    result = simulate(UCBGLM(3, tau=4, seed=0), env, horizon=30, seed=0, record_contexts=True)
    assert simulate(UCBGLM(3, seed=0), env, horizon=3, seed=0).contexts is None
    log = LoggedBanditData.from_simulation(result)
    K = np.array([c.shape[0] for c in result.contexts])
    np.testing.assert_array_equal(log.n_actions, K)
    assert K.min() < K.max()
    np.testing.assert_allclose(log.propensities[:4], 1 / K[:4])  # tau uniform rounds
    assert np.all(log.propensities[4:] == 1.0)  # continuous contexts: no ties afterwards
    np.testing.assert_array_equal(log.actions, result.actions)
    with pytest.raises(ValueError, match="record_contexts=True"):
        LoggedBanditData.from_simulation(simulate(RandomPolicy(3, seed=0), env, 3, seed=0))
    with pytest.warns(Warning, match="not uniform"):
        replay(RandomPolicy(3, seed=1), log)
