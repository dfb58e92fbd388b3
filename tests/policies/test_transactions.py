"""Whole batches and every logged call are transactions.

Before: ``reward_batch`` with an id repeated in the batch under ``max_resolved=1`` learned
part of the batch and then raised a raw ``KeyError`` (the id had been forgotten in the
middle of the batch); a failing event-log write left the policy changed on a late reward
(the decision stayed closed), in ``expire`` (the decisions closed before the failure stayed
closed) and on eviction at ``max_pending`` (the oldest decision stayed closed, its default
reward learned). Now a batch is checked as a whole before anything is applied, and a call
that fails part-way (a log write, a numerical failure) is rolled back: the policy is
exactly as it was, generator included.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import policy_catalogue
from glmbandits import GLOC, LinUCB, UnknownDecisionError
from glmbandits.policies.base import Policy

D, K = 3, 4
POLICY_CLASSES, IDS = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


class FailingSink:
    """An event log whose ``fail_at``-th write of kind ``fail_kind`` raises ``OSError``."""

    def __init__(self, fail_kind: str = "", fail_at: int = 1) -> None:
        self.fail_kind, self.fail_at = fail_kind, fail_at
        self.seen = {"decision": 0, "reward": 0, "expiry": 0}
        self.events: list[tuple] = []

    def _write(self, kind: str, *event) -> None:
        self.seen[kind] += 1
        if kind == self.fail_kind and self.seen[kind] == self.fail_at:
            raise OSError(f"disk full at {kind} write {self.fail_at}")
        self.events.append((kind, *event))

    def record_decision(self, decision_id, timestamp, *args, **kwargs) -> None:
        self._write("decision", decision_id)

    def record_reward(self, decision_id, timestamp, reward, status) -> None:
        self._write("reward", decision_id, status)

    def record_expiry(self, decision_id, timestamp, outcome, reward) -> None:
        self._write("expiry", decision_id, outcome)


def _contexts(seed: int) -> np.ndarray:
    return policy_catalogue.unit_ball_contexts(np.random.default_rng(seed), K, D)


def _policy(cls: type, n_pending: int = 3, **options) -> Policy:
    """A warmed policy with ``n_pending`` decisions ``p0..`` made at t = 0, 1, ..."""
    kwargs = {"warmup_constant": 1.0} if cls.__name__ == "RSGLinCB" else {}
    policy = cls(n_features=D, seed=0, exploration_floor=0.1, **kwargs)
    rng = np.random.default_rng(5)
    for t in range(15):
        X = policy_catalogue.unit_ball_contexts(rng, K, D)
        a = policy.select(X)
        policy.update(X[a], float(rng.random() < 0.5))
    policy.configure_decisions(**options)
    for i in range(n_pending):
        policy.decide(_contexts(i), f"p{i}", now=float(i))
    return policy


def _assert_rolled_back(policy: Policy, call, match: str) -> None:
    """``call`` raises OSError(match) and leaves the policy exactly as it was."""
    before = pickle.dumps(policy)
    rng_state = policy.rng_.bit_generator.state
    statistics = policy.decision_statistics
    with pytest.raises(OSError, match=match):
        call()
    policy.event_log = None
    assert policy.decision_statistics == statistics
    assert pickle.dumps(policy) == before
    assert policy.rng_.bit_generator.state == rng_state


# -- reward_batch ------------------------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_repeated_id_in_a_batch_under_max_resolved_1_is_a_duplicate(cls):
    """The id closed by the batch's first reward is still known at its second."""
    policy = _policy(cls, max_resolved=1)
    statuses = policy.reward_batch(["p0", "p1", "p0"], [1.0, 0.0, 1.0], now=5.0)
    assert statuses == ["learned", "learned", "duplicate"]
    statistics = policy.decision_statistics
    assert (statistics["learned"], statistics["duplicate"], statistics["pending"]) == (2, 1, 1)
    assert list(policy.decisions_.resolved) == ["p1"]  # max_resolved holds after the batch
    with pytest.raises(UnknownDecisionError, match="'p0' is unknown"):
        policy.reward("p0", 1.0, now=6.0)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_batch_whose_log_write_fails_part_way_changes_nothing(cls):
    policy = _policy(cls, max_resolved=1)
    policy.event_log = FailingSink("reward", fail_at=3)
    _assert_rolled_back(policy, lambda: policy.reward_batch(
        ["p0", "p1", "p2"], [1.0, 0.0, 1.0], now=5.0), "reward write 3")
    # the same batch with a working log applies whole
    sink = policy.event_log = FailingSink()
    assert policy.reward_batch(["p0", "p1", "p2"], [1.0, 0.0, 1.0], now=5.0) == ["learned"] * 3
    assert sink.events == [("reward", f"p{i}", "learned") for i in range(3)]


def test_a_batch_that_overflows_part_way_changes_nothing():
    """A numerical refusal of the batch's last sample undoes the samples before it too
    (GLOC's online step overflows on a row of norm 1000 under the Poisson link)."""
    policy = GLOC(1, family="poisson", seed=0)
    for i, x in enumerate([1.0, 1.0, 1000.0]):
        policy.decide(np.array([[x]]), f"r{i}", now=0.0)
    before = pickle.dumps(policy)
    with pytest.raises(ValueError, match="would overflow the policy's state"):
        policy.reward_batch(["r0", "r1", "r2"], [1.0, 7.0, 0.0], now=1.0)
    assert pickle.dumps(policy) == before
    assert policy.reward_batch(["r0", "r1"], [1.0, 7.0], now=1.0) == ["learned"] * 2


# -- late rewards, expire, eviction --------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_late_reward_whose_log_write_fails_changes_nothing(cls):
    """A late reward first closes its decision (an expiry, learning the default reward),
    then logs itself as late; if that write fails, the closing is undone too."""
    policy = _policy(cls, reward_wait=2.0, default_reward=0.0)
    policy.event_log = FailingSink("reward")
    _assert_rolled_back(policy, lambda: policy.reward("p0", 1.0, now=10.0), "reward write 1")
    sink = policy.event_log = FailingSink()
    assert policy.reward("p0", 1.0, now=10.0) == "late"
    assert sink.events == [("expiry", "p0", "default"), ("reward", "p0", "late")]


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
@pytest.mark.parametrize("default", [None, 0.0])
def test_an_expire_whose_log_write_fails_part_way_changes_nothing(cls, default):
    policy = _policy(cls, default_reward=default)
    policy.event_log = FailingSink("expiry", fail_at=3)
    _assert_rolled_back(policy, lambda: policy.expire(now=10.0), "expiry write 3")
    sink = policy.event_log = FailingSink()
    outcome = "dropped" if default is None else "default"
    assert policy.expire(now=10.0)[outcome] == 3
    assert sink.events == [("expiry", f"p{i}", outcome) for i in range(3)]


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_decide_whose_eviction_write_fails_changes_nothing(cls):
    """At max_pending a decide evicts the oldest decision (an expiry, learning the default
    reward) after logging itself; if the expiry write fails, the whole decide is undone."""
    policy = _policy(cls, max_pending=3, default_reward=1.0)
    policy.event_log = FailingSink("expiry")
    _assert_rolled_back(policy, lambda: policy.decide(_contexts(9), "p3", now=3.0),
                        "expiry write 1")
    sink = policy.event_log = FailingSink()
    policy.decide(_contexts(9), "p3", now=3.0)
    assert sink.events == [("decision", "p3"), ("expiry", "p0", "default")]
    assert list(policy.decisions_.pending) == ["p1", "p2", "p3"]


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_registered_decision_whose_eviction_write_fails_changes_nothing(cls):
    policy = _policy(cls, max_pending=3, default_reward=1.0)
    policy.event_log = FailingSink("expiry")
    X = _contexts(9)
    register = (lambda: policy.register_decision("p3", X, 0, [0.25] * K, model_version=0,
                                                 timestamp=3.0))
    _assert_rolled_back(policy, register, "expiry write 1")


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_after_a_rolled_back_call_the_policy_continues_as_its_twin(cls):
    """The undone calls leave no trace: the pending order, the closed ids and the counts
    are those of a twin that never tried, and both then decide and learn alike."""
    policy = _policy(cls, max_pending=3, default_reward=1.0, max_resolved=2)
    twin = _policy(cls, max_pending=3, default_reward=1.0, max_resolved=2)
    policy.reward("p1", 1.0, now=3.0)
    twin.reward("p1", 1.0, now=3.0)
    policy.event_log = FailingSink("reward", fail_at=2)
    with pytest.raises(OSError):
        policy.reward_batch(["p2", "p0"], [0.0, 1.0], now=4.0)
    policy.event_log = FailingSink("expiry", fail_at=2)
    with pytest.raises(OSError):
        policy.expire(now=10.0)
    policy.event_log = None
    assert list(policy.decisions_.pending) == list(twin.decisions_.pending) == ["p0", "p2"]
    assert pickle.dumps(policy) == pickle.dumps(twin)
    for t in range(10):
        X = _contexts(100 + t)
        first, second = policy.decide(X, f"n{t}", now=20.0 + t), twin.decide(X, f"n{t}",
                                                                              now=20.0 + t)
        assert first.action == second.action
        assert policy.reward(f"n{t}", 1.0, now=21.0 + t) == twin.reward(f"n{t}", 1.0,
                                                                        now=21.0 + t)
    assert pickle.dumps(policy) == pickle.dumps(twin)


# -- any call that fails part-way, in any state of the store --------------------------------
_OPERATIONS = st.one_of(
    st.tuples(st.just("decide"), st.integers(0, 7)),
    st.tuples(st.just("reward"), st.integers(0, 7), st.sampled_from([0.0, 1.0])),
    st.tuples(st.just("batch"), st.lists(st.integers(0, 7), min_size=1, max_size=4),
              st.sampled_from([0.0, 1.0])),
    st.tuples(st.just("expire"), st.sampled_from([0.0, 1.5, 3.0])),
)


@settings(max_examples=150, deadline=None)
@given(options=st.fixed_dictionaries({
           "max_pending": st.integers(1, 4), "max_resolved": st.integers(1, 3),
           "default_reward": st.sampled_from([None, 0.5]),
           "reward_wait": st.sampled_from([None, 2.0]),
           "duplicate_rewards": st.sampled_from(["ignore", "sum"])}),
       steps=st.lists(st.tuples(_OPERATIONS, st.sampled_from(["", "decision", "reward", "expiry"]),
                                st.integers(1, 3)), min_size=1, max_size=25))
def test_a_call_that_fails_part_way_leaves_the_policy_as_it_was(options, steps):
    """Random calls on a small store (evictions, late rewards, held sums, forgotten ids),
    each with an event log that may fail at its n-th write of one kind: a call either
    completes or changes nothing, the order of the pending and closed ids included."""
    policy = LinUCB(n_features=D, seed=0, exploration_floor=0.2).configure_decisions(**options)
    for t, (operation, fail_kind, fail_at) in enumerate(steps):
        now = float(t)
        policy.event_log = FailingSink(fail_kind, fail_at)
        before = pickle.dumps(policy)
        rng_state = policy.rng_.bit_generator.state
        kind = operation[0]
        try:
            if kind == "decide":
                policy.decide(_contexts(t), f"d{operation[1]}", now=now)
            elif kind == "reward":
                policy.reward(f"d{operation[1]}", operation[2], now=now)
            elif kind == "batch":
                policy.reward_batch([f"d{i}" for i in operation[1]],
                                    [operation[2]] * len(operation[1]), now=now)
            else:
                policy.expire(operation[1], now=now)
        except (OSError, ValueError, KeyError):
            policy.event_log = None
            assert pickle.dumps(policy) == before, (kind, fail_kind, fail_at)
            assert policy.rng_.bit_generator.state == rng_state
        store = policy.decisions_
        assert len(store.pending) <= store.max_pending
        assert len(store.resolved) <= store.max_resolved
        assert store._undo is None  # no transaction left open
