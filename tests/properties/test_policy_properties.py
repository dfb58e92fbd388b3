"""Invariants of every policy class under legal extremes and illegal input (hypothesis).

Legal extremes: context rows of norm 0 to 1 (tiny ones included), exact ties,
K = 1 and K changing every round, constant, separable and extreme rewards
(Poisson counts up to 1e6, linear rewards up to ±1e6), l2 = 0 where a policy
accepts it, delayed and repeated updates. Invariants:

* ``select`` returns a valid index with finite scores and a propensity in (0, 1];
  no NaN anywhere in the state; no warning other than the library's own;
* a call that is refused raises ``TypeError``/``ValueError`` and leaves the policy
  byte-for-byte as it was (pickle of the whole state, RNG included);
* the same seed and the same inputs give the same actions and the same state.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from property_helpers import (FAMILIES, POLICY_CLASSES, assert_finite_outputs,
                              assert_no_nan_in_state, differing_attributes, make_policy,
                              no_foreign_warnings, policy_bytes, takes_family)

ids = [cls.__name__ for cls in POLICY_CLASSES]


@dataclass(frozen=True)
class Script:
    """One generated run: problem sizes, the data's shape and how updates arrive."""

    family: str
    d: int
    n_rounds: int
    k_range: tuple[int, int]
    row_norm: float
    ties: bool
    rewards: str
    updates: str
    l2: float | None
    data_seed: int
    policy_seed: int


@st.composite
def scripts(draw: Any, cls: type) -> Script:
    family = draw(st.sampled_from(FAMILIES)) if takes_family(cls) else draw(
        st.sampled_from(("logistic", "linear")))
    k_low = draw(st.integers(1, 6))
    k_high = draw(st.sampled_from((k_low, 6)))
    return Script(
        family=family,
        d=draw(st.integers(1, 4)),
        n_rounds=draw(st.integers(1, 30)),
        k_range=(k_low, k_high),
        row_norm=draw(st.sampled_from((1.0, 0.5, 1e-3, 1e-9, 0.0))),
        ties=draw(st.booleans()),
        rewards=draw(st.sampled_from(("random", "constant", "separable", "extreme"))),
        updates=draw(st.sampled_from(("each", "each", "delayed", "repeated"))),
        l2=draw(st.sampled_from((None, None, 0.0, 1e-6))),
        data_seed=draw(st.integers(0, 2**16)),
        policy_seed=draw(st.integers(0, 2**16)),
    )


def _contexts(rng: np.random.Generator, script: Script) -> np.ndarray:
    k = int(rng.integers(script.k_range[0], script.k_range[1] + 1))
    X = rng.normal(size=(k, script.d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)
    X *= script.row_norm * rng.uniform(0.5, 1.0, size=(k, 1))
    if script.ties and k > 1:
        X[1:] = X[0]
    return X


def _reward(rng: np.random.Generator, script: Script, x: np.ndarray) -> float:
    positive = bool(x[0] > 0)
    family, kind = script.family, script.rewards
    if family in ("logistic", "probit"):
        if kind == "constant":
            return 1.0
        if kind == "separable":
            return float(positive)
        return float(rng.random() < 0.5)
    if family == "linear":
        if kind == "constant":
            return 0.25
        if kind == "separable":
            return 1.0 if positive else -1.0
        return float(rng.normal() * (1e6 if kind == "extreme" else 1.0))
    if kind == "constant":
        return 0.0
    if kind == "separable":
        return 1e6 if positive else 0.0
    return float(rng.poisson(1e5 if kind == "extreme" else 2.0))


def _build(cls: type, script: Script) -> Any:
    extra = {} if script.l2 is None else {"l2": script.l2}
    try:
        return make_policy(cls, script.d, script.family, script.policy_seed, **extra)
    except ValueError:
        assume(False)  # this class refuses that l2: a legal refusal, nothing to play


def _refused_or_done(policy: Any, call: Any) -> bool:
    """Run ``call``; if refused, the state must be unchanged. True when it went through."""
    before = policy_bytes(policy)
    try:
        call()
    except (TypeError, ValueError):
        assert policy_bytes(policy) == before, "refused call changed the state"
        return False
    return True


def play(cls: type, script: Script) -> tuple[list[int], bytes]:
    policy = _build(cls, script)
    rng = np.random.default_rng(script.data_seed)
    actions: list[int] = []
    pending: list[tuple[np.ndarray, float]] = []
    with no_foreign_warnings():
        for _ in range(script.n_rounds):
            X = _contexts(rng, script)
            before_select = policy_bytes(policy)
            try:
                action = policy.select(X)
            except (TypeError, ValueError) as error:  # legal input: never refused
                assert policy_bytes(policy) == before_select
                raise AssertionError(f"legal contexts refused: {error}") from error
            assert_finite_outputs(policy, action, X.shape[0])
            actions.append(action)
            x, reward = X[action].copy(), _reward(rng, script, X[action])
            if script.updates == "delayed":
                pending.append((x, reward))
                if len(pending) == 2:
                    old_x, old_reward = pending.pop(0)
                    _refused_or_done(policy, lambda: policy.update(old_x, old_reward))
                continue
            policy.update(x, reward)
            if script.updates == "repeated":
                _refused_or_done(policy, lambda: policy.update(x, reward))
        assert_no_nan_in_state(policy)
    return actions, policy_bytes(policy)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@given(data=st.data())
def test_legal_extremes_keep_every_output_finite(cls: type, data: Any) -> None:
    play(cls, data.draw(scripts(cls)))


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@given(data=st.data())
def test_same_seed_same_actions_and_state(cls: type, data: Any) -> None:
    script = data.draw(scripts(cls))
    assert play(cls, script) == play(cls, script)


_BAD_CONTEXTS = {
    "nan": (ValueError, lambda d: np.full((3, d), np.nan)),
    "inf": (ValueError, lambda d: np.full((2, d), np.inf)),
    "wrong d": (ValueError, lambda d: np.zeros((3, d + 1))),
    "no actions": (ValueError, lambda d: np.zeros((0, d))),
    "3-d": (ValueError, lambda d: np.zeros((2, 2, d))),
    "strings": (TypeError, lambda d: np.array([["a"] * d, ["b"] * d])),
    "complex": (TypeError, lambda d: np.ones((2, d), dtype=complex)),
    "objects": (TypeError, lambda d: np.array([[object()] * d], dtype=object)),
    "datetimes": (TypeError, lambda d: np.array([[datetime.datetime(2026, 1, 1)] * d])),
    "a string": (TypeError, lambda d: "contexts"),
    "None": (TypeError, lambda d: None),
}
_BAD_REWARDS = {
    "nan": (ValueError, float("nan")),
    "inf": (ValueError, float("inf")),
    "string": (TypeError, "1.0"),
    "complex": (TypeError, 1 + 1j),
    "datetime": (TypeError, datetime.datetime(2026, 1, 1)),
    "array": (ValueError, np.array([1.0, 0.0])),
    "None": (TypeError, None),
}


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@given(data=st.data())
def test_illegal_input_is_refused_and_changes_nothing(cls: type, data: Any) -> None:
    script = data.draw(scripts(cls))
    policy = _build(cls, script)
    rng = np.random.default_rng(script.data_seed)
    with no_foreign_warnings():
        for _ in range(data.draw(st.integers(0, 8))):
            X = _contexts(rng, script)
            action = policy.select(X)
            policy.update(X[action], _reward(rng, script, X[action]))
        name = data.draw(st.sampled_from(sorted(_BAD_CONTEXTS)))
        expected, make = _BAD_CONTEXTS[name]
        before = policy_bytes(policy)
        with pytest.raises(expected):
            policy.select(make(script.d))
        assert policy_bytes(policy) == before, differing_attributes(policy, policy)
        X = _contexts(rng, script)
        action = policy.select(X)
        name = data.draw(st.sampled_from(sorted(_BAD_REWARDS)))
        expected, reward = _BAD_REWARDS[name]
        before = policy_bytes(policy)
        with pytest.raises(expected):
            policy.update(X[action], reward)
        assert policy_bytes(policy) == before
        with pytest.raises((TypeError, ValueError)):
            policy.update(np.append(X[action], 0.0), 1.0)  # x of the wrong length
        assert policy_bytes(policy) == before
        policy.update(X[action], _reward(rng, script, X[action]))  # still usable


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
@given(data=st.data())
def test_huge_rows_are_refused_or_harmless(cls: type, data: Any) -> None:
    """A row of norm up to 1e155 is refused up front or handled; later rounds still work."""
    script = data.draw(scripts(cls))
    policy = _build(cls, script)
    rng = np.random.default_rng(script.data_seed)
    norm = data.draw(st.sampled_from((1e3, 1e8, 1e155, 1e300)))
    with no_foreign_warnings():
        for round_index in range(6):
            X = _contexts(rng, script)
            if round_index == 2:
                X[0] = norm / np.sqrt(script.d)
            chosen: list[int] = []
            if not _refused_or_done(policy, lambda: chosen.append(policy.select(X))):
                continue
            assert_finite_outputs(policy, chosen[0], X.shape[0])
            x = X[chosen[0]]
            _refused_or_done(policy, lambda: policy.update(x, _reward(rng, script, x)))
        X = _contexts(rng, script)
        assert_finite_outputs(policy, policy.select(X), X.shape[0])
        assert_no_nan_in_state(policy)


def test_booleans_are_rewards_only_where_zero_one_is_in_the_domain() -> None:
    import glmbandits

    logistic = glmbandits.UCBGLM(2, "logistic", seed=0)
    X = np.eye(2)
    logistic.update(X[logistic.select(X)], True)
    assert logistic.n_updates_ == 1
    for family in ("linear", "poisson", "probit"):
        policy = glmbandits.UCBGLM(2, family, seed=0)
        policy.update(X[policy.select(X)], np.bool_(False))
        assert policy.n_updates_ == 1
