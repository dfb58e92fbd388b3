"""Checks run over every policy class exported in ``glmbandits.__all__``.

Each class must be constructible as ``cls(n_features=3, seed=0)``; then:
seeding is reproducible, bad input raises and changes nothing, inputs are not
mutated, a policy survives a pickle round-trip and a save/load round-trip (bit for
bit), K may change between rounds.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import policy_catalogue
from glmbandits.policies.base import Policy

D = 3
POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _contexts(rng: np.random.Generator, k: int) -> np.ndarray:
    return policy_catalogue.unit_ball_contexts(rng, k, D)


def _play(policy: Policy, rounds: int, seed: int, k: int | tuple[int, int] = 5) -> list[int]:
    """Play a fixed stream of contexts/rewards; rewards are 0/1 (valid for every family)."""
    rng = np.random.default_rng(seed)
    actions = []
    for _ in range(rounds):
        n = k if isinstance(k, int) else int(rng.integers(k[0], k[1] + 1))
        X = _contexts(rng, n)
        a = policy.select(X)
        assert isinstance(a, int) and 0 <= a < n
        policy.update(X[a], float(rng.random() < 0.5))
        actions.append(a)
    return actions


def _state(policy: Policy) -> bytes:
    return pickle.dumps(policy)


def test_every_policy_class_is_found():
    names = set(ids)
    assert {"UCBGLM", "SupCBGLM", "LinUCB", "RandomPolicy"} <= names


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_same_seed_gives_identical_actions(cls):
    first = _play(cls(n_features=D, seed=0), 60, seed=1)
    second = _play(cls(n_features=D, seed=0), 60, seed=1)
    assert first == second


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_seed_accepts_int_generator_and_none(cls):
    cls(n_features=D, seed=None)
    a = _play(cls(n_features=D, seed=np.random.default_rng(4)), 30, seed=2)
    b = _play(cls(n_features=D, seed=np.random.default_rng(4)), 30, seed=2)
    assert a == b
    with pytest.raises(TypeError, match="seed must be an int"):
        cls(n_features=D, seed="zero")
    with pytest.raises(TypeError, match="seed"):
        cls(n_features=D, seed=1.5)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_changing_number_of_actions(cls):
    policy = cls(n_features=D, seed=0)
    _play(policy, 40, seed=3, k=(1, 8))


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_bad_contexts_raise_and_leave_the_policy_unchanged(cls):
    policy = cls(n_features=D, seed=0)
    _play(policy, 25, seed=5)
    before = _state(policy)
    name = cls.__name__
    good = _contexts(np.random.default_rng(0), 4)
    with_nan = good.copy()
    with_nan[1, 2] = np.nan
    with_inf = good.copy()
    with_inf[0, 0] = np.inf
    cases = [
        (with_nan, ValueError, f"{name}.select: contexts must be finite"),
        (with_inf, ValueError, "contexts must be finite"),
        (np.zeros((4, D + 1)), ValueError,
         rf"{name}.select: contexts must have shape \(K, {D}\), got \(4, {D + 1}\)"),
        (np.zeros(D), ValueError, r"contexts must have shape \(K, 3\), got \(3,\)"),
        (np.zeros((0, D)), ValueError, "at least one action"),
        ([["a", "b", "c"]], TypeError, "contexts must be a numeric array"),
    ]
    for contexts, error, message in cases:
        with pytest.raises(error, match=message):
            policy.select(contexts)
        assert _state(policy) == before


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_bad_updates_raise_and_leave_the_policy_unchanged(cls):
    policy = cls(n_features=D, seed=0)
    _play(policy, 25, seed=6)
    X = _contexts(np.random.default_rng(1), 4)
    a = policy.select(X)
    before = _state(policy)
    name = cls.__name__
    cases = [
        ((np.zeros(D + 1), 1.0), ValueError, rf"{name}.update: x must have shape \(3,\)"),
        ((np.full(D, np.nan), 1.0), ValueError, "x must be finite"),
        ((X[a], np.nan), ValueError, "reward must be finite"),
        ((X[a], np.inf), ValueError, "reward must be finite"),
        ((X[a], [1.0, 0.0]), ValueError, "reward must be a scalar"),
        ((X[a], "one"), TypeError, "reward must be a numeric"),
    ]
    family = getattr(policy, "family", None)
    if family is not None and not family.in_domain(2.0):
        cases.append(((X[a], 2.0), ValueError, "reward must lie in the"))
    if family is not None and not family.in_domain(-1.0):
        cases.append(((X[a], -1.0), ValueError, "reward must lie in the"))
    for (x, reward), error, message in cases:
        with pytest.raises(error, match=message):
            policy.update(x, reward)
        assert _state(policy) == before
    policy.update(X[a], 1.0)  # a good update still works afterwards
    assert policy.n_updates_ == 26


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_inputs_are_not_mutated(cls):
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(8)
    for _ in range(30):
        X = _contexts(rng, 5)
        X_copy = X.copy()
        a = policy.select(X)
        x = X[a].copy()
        x_copy = x.copy()
        policy.update(x, 1.0)
        np.testing.assert_array_equal(X, X_copy)
        np.testing.assert_array_equal(x, x_copy)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_pickle_round_trip_continues_identically(cls):
    policy = cls(n_features=D, seed=0)
    _play(policy, 40, seed=9)
    clone = pickle.loads(pickle.dumps(policy))
    assert _play(policy, 40, seed=10) == _play(clone, 40, seed=10)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_save_load_round_trip_continues_identically(cls, tmp_path):
    policy = cls(n_features=D, seed=0)
    _play(policy, 40, seed=9)
    clone = cls.load(policy.save(tmp_path / "policy.glmb"))
    assert type(clone) is cls and _state(clone) == _state(policy)
    assert _play(policy, 40, seed=10) == _play(clone, 40, seed=10)
    assert _state(clone) == _state(policy)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_scores_and_propensity_are_exposed_and_finite(cls):
    policy = cls(n_features=D, seed=0)
    rng = np.random.default_rng(11)
    for _ in range(30):
        X = _contexts(rng, 6)
        a = policy.select(X)
        scores = policy.last_scores_
        for array in (scores.ucb, scores.mean, scores.width):
            assert array.shape == (6,)
            assert not np.any(np.isnan(array))
        assert 0.0 < policy.last_propensity_ <= 1.0
        policy.update(X[a], 0.0)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_bad_hyperparameters_are_rejected(cls):
    parameters = inspect.signature(cls).parameters
    with pytest.raises(ValueError, match="n_features must be >= 1, got 0"):
        cls(n_features=0)
    with pytest.raises(TypeError, match="n_features must be an int"):
        cls(n_features=2.5)
    if "alpha" in parameters:
        for bad in (0.0, -1.0):
            with pytest.raises(ValueError, match=f"{cls.__name__}: alpha must be > 0"):
                cls(n_features=D, alpha=bad)
        with pytest.raises(ValueError, match="alpha must be finite"):
            cls(n_features=D, alpha=np.nan)
    if "tau" in parameters:
        with pytest.raises(ValueError, match="tau must be >= 0, got -1"):
            cls(n_features=D, tau=-1)
    if "l2" in parameters:
        with pytest.raises(ValueError, match="l2 must be"):
            cls(n_features=D, l2=-1.0)
    if "family" in parameters:
        with pytest.raises(ValueError, match="family must be one of"):
            cls(n_features=D, family="cauchit")


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_a_reward_outside_the_family_domain_is_refused_by_every_door(cls):
    """Every policy takes a ``family`` and refuses, in update, update_batch, reward,
    reward_batch and default_reward, a reward outside its reward domain, naming
    ``reward``, the domain and the value, and changing nothing. (LinUCB and RandomPolicy
    took no family: a LinUCB service with a logistic family learned rewards of 2, -1 and
    1e6.)"""
    assert "family" in inspect.signature(cls).parameters
    policy = cls(n_features=D, seed=0, family="logistic")
    _play(policy, 25, seed=12)
    X = _contexts(np.random.default_rng(13), 4)
    policy.decide(X, "pending", now=0.0)
    a = policy.select(X)
    name = cls.__name__
    for bad in (2.0, -1.0, 1e6, 2):
        doors = {
            "update": lambda: policy.update(X[a], bad),
            "update_batch": lambda: policy.update_batch(X[:2], [0.0, bad]),
            "reward": lambda: policy.reward("pending", bad, now=1.0),
            "reward_batch": lambda: policy.reward_batch(["pending"], [bad], now=1.0),
            "configure_decisions": lambda: policy.configure_decisions(default_reward=bad),
        }
        for door, call in doors.items():
            before = _state(policy)
            with pytest.raises(ValueError, match=rf"{name}\.{door}: reward must lie in the "
                                                 rf"logistic reward domain \[0, 1\], got "
                                                 rf"{float(bad)!r}"):
                call()
            assert _state(policy) == before, door
    assert policy.reward("pending", 1.0, now=1.0) == "learned"  # the domain's own values pass
    policy.update(X[a], 0.0)
