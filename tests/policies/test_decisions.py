"""``decide``/``reward`` (and the pending-decision store) over every policy class.

The reference is ``select``/``update``: with immediate, in-order rewards the two
interfaces must give the same actions, scores, probabilities and final state bit
for bit. Delayed, out-of-order, repeated, late and missing rewards are checked
against what each option documents; every rejected call must leave the policy
exactly as it was (its pickle unchanged).
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import policy_catalogue
from glmbandits import Decision, SupCBGLM, UCBGLM, UnknownDecisionError
from glmbandits.policies.base import Policy
from glmbandits.policies.decisions import PendingDecisions
from glmbandits.policies.supcb_glm import INITIAL

D, K = 3, 5
POLICY_CLASSES, IDS = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _make(cls: type, floor: float = 0.0, **kwargs) -> Policy:
    if cls.__name__ == "RSGLinCB":  # warm-up rounds happen only with a larger constant
        kwargs.setdefault("warmup_constant", 1.0)
    return cls(n_features=D, seed=0, exploration_floor=floor, **kwargs)


def _stream(seed: int, n: int, k: int = K) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    contexts = [policy_catalogue.unit_ball_contexts(rng, k, D) for _ in range(n)]
    return contexts, (rng.random(n) < 0.5).astype(float)  # 0/1: valid for every family


def _state(policy: Policy) -> bytes:
    return pickle.dumps(policy)


def _learned_state(policy: Policy) -> bytes:
    """The pickle of everything but the decision store (whose counts differ by design)."""
    state = policy.__getstate__()
    state.pop("decisions_")
    return pickle.dumps(state)


def _warm(policy: Policy, rounds: int = 20, seed: int = 99) -> Policy:
    contexts, rewards = _stream(seed, rounds)
    for X, r in zip(contexts, rewards):
        a = policy.select(X)
        policy.update(X[a], r)
    return policy


def _unchanged(policy: Policy, call, error: type, match: str) -> None:
    before = _state(policy)
    rng_state = policy.rng_.bit_generator.state
    with pytest.raises(error, match=match):
        call()
    assert _state(policy) == before
    assert policy.rng_.bit_generator.state == rng_state


# -- decide/reward equals select/update ------------------------------------------------
@pytest.mark.parametrize("floor", [0.0, 0.2])
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_immediate_rewards_match_select_update_bit_for_bit(cls, floor):
    contexts, rewards = _stream(1, 40)
    old, new = _make(cls, floor), _make(cls, floor)
    for t, (X, r) in enumerate(zip(contexts, rewards)):
        a = old.select(X)
        decision = new.decide(X, decision_id=f"d{t}", now=float(t))
        assert decision.action == a
        assert decision.model_version == t == new.model_version
        for name in ("ucb", "mean", "width"):
            np.testing.assert_array_equal(getattr(decision.scores, name),
                                          getattr(old.last_scores_, name))
            np.testing.assert_array_equal(getattr(new.last_scores_, name),
                                          getattr(old.last_scores_, name))
        assert decision.scores.scale == old.last_scores_.scale
        np.testing.assert_array_equal(decision.probabilities, old.last_probabilities_)
        assert decision.propensity == old.last_propensity_ == new.last_propensity_
        old.update(X[a], r)
        assert new.reward(f"d{t}", r, now=float(t)) == "learned"
    assert _learned_state(new) == _learned_state(old)
    assert new.rng_.bit_generator.state == old.rng_.bit_generator.state
    assert new.decision_statistics == {**PendingDecisions().statistics(), "decided": 40,
                                       "learned": 40}


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_decisions_interleave_with_select_update(cls):
    """A policy may mix the two interfaces; a decision's sample never needs the last select."""
    contexts, rewards = _stream(2, 30)
    old, new = _make(cls), _make(cls)
    for t, (X, r) in enumerate(zip(contexts, rewards)):
        a = old.select(X)
        old.update(X[a], r)
        if t % 2:
            assert new.decide(X, decision_id=f"d{t}").action == a
            new.reward(f"d{t}", r)
        else:
            assert new.select(X) == a
            new.update(X[a], r)
    assert _learned_state(new) == _learned_state(old)


# -- the Decision object ---------------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_decision_is_frozen_and_its_distribution_is_valid(cls):
    policy = _warm(_make(cls, 0.1))
    contexts, _ = _stream(3, 10, k=7)
    for t, X in enumerate(contexts):
        excluded = [t % 7, (3 * t + 1) % 7] if t % 3 else None
        decision = policy.decide(X, excluded=excluded)
        assert isinstance(decision, Decision)
        with pytest.raises(dataclasses.FrozenInstanceError):
            decision.action = 0  # type: ignore[misc]
        for array in (decision.probabilities, decision.candidates):
            assert not array.flags.writeable
            with pytest.raises(ValueError):
                array[0] = 1
        p = decision.probabilities
        assert p.shape == (7,) and np.all(p >= 0.0)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        assert decision.propensity == p[decision.action] > 0.0
        if excluded is None:
            np.testing.assert_array_equal(decision.candidates, np.arange(7))
        else:
            assert np.all(p[excluded] == 0.0)
            assert decision.action not in excluded
            np.testing.assert_array_equal(decision.candidates,
                                          np.setdiff1d(np.arange(7), excluded))
            # the floor is spread over the candidates only
            assert p[decision.candidates].min() >= 0.1 / decision.candidates.size - 1e-12
        assert decision.scores.ucb.shape == decision.candidates.shape
        assert isinstance(decision.decision_id, str) and len(decision.decision_id) == 36
        assert decision.model_version == policy.model_version
        assert "propensity" in repr(decision)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_excluded_rows_are_never_chosen(cls):
    policy = _make(cls, 0.5)
    contexts, rewards = _stream(4, 40)
    for t, (X, r) in enumerate(zip(contexts, rewards)):
        decision = policy.decide(X, decision_id=str(t), excluded=[0, 1, 2])
        assert decision.action in (3, 4)
        policy.reward(str(t), r)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_bad_excluded_is_refused_and_changes_nothing(cls):
    policy = _warm(_make(cls))
    X = _stream(5, 1)[0][0]
    _unchanged(policy, lambda: policy.decide(X, excluded=[5]), ValueError,
               r"decide: excluded indices must lie in \[0, 4\]")
    _unchanged(policy, lambda: policy.decide(X, excluded=[-1]), ValueError, "excluded")
    _unchanged(policy, lambda: policy.decide(X, excluded=[0, 1, 2, 3, 4, 0]), ValueError,
               "excluded must leave at least one")
    _unchanged(policy, lambda: policy.decide(X, excluded=[0.0, 1.0]), TypeError,
               "excluded must be a 1-d sequence of row indices")
    _unchanged(policy, lambda: policy.decide(X, excluded=[True, False]), TypeError, "excluded")
    _unchanged(policy, lambda: policy.decide(X, excluded=[[0]]), TypeError, "excluded")
    # an empty exclusion is no exclusion
    assert policy.decide(X, excluded=[]).candidates.size == K


# -- retries ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_retry_returns_the_same_decision_and_draws_nothing(cls):
    policy = _warm(_make(cls, 0.2))
    X = _stream(6, 1)[0][0]
    first = policy.decide(X, decision_id="req", excluded=[1], now=5.0)
    before = _state(policy)
    rng_state = policy.rng_.bit_generator.state
    again = policy.decide(X.copy(), decision_id="req", excluded=np.array([1]), now=9.0)
    assert again is first
    assert policy.rng_.bit_generator.state == rng_state
    stats = policy.decision_statistics
    assert stats["retried"] == 1 and stats["decided"] == 1 and stats["pending"] == 1
    # only the retry counter moved
    policy.decisions_.counts["retried"] -= 1
    assert _state(policy) == before
    # the same id for another request is refused
    _unchanged(policy, lambda: policy.decide(X + 0.01, decision_id="req", excluded=[1]),
               ValueError, "pending for a request with other contexts")
    _unchanged(policy, lambda: policy.decide(X, decision_id="req"), ValueError,
               "other contexts or exclusions")
    # once rewarded, the id cannot decide again
    assert policy.reward("req", 1.0) == "learned"
    _unchanged(policy, lambda: policy.decide(X, decision_id="req", excluded=[1]), ValueError,
               "already closed")


def test_retry_survives_a_pickle_round_trip():
    policy = _warm(_make(UCBGLM))
    X = _stream(7, 1)[0][0]
    decision = policy.decide(X, decision_id="req", excluded=[0], now=1.0)
    clone = pickle.loads(pickle.dumps(policy))
    again = clone.decide(X, decision_id="req", excluded=[0])
    assert again.action == decision.action and again.timestamp == 1.0
    np.testing.assert_array_equal(again.probabilities, decision.probabilities)
    np.testing.assert_array_equal(again.scores.ucb, decision.scores.ucb)
    assert clone.decision_statistics["retried"] == 1
    clone.reward("req", 0.0)
    policy.reward("req", 0.0)
    # (a pickle round trip does not keep buffer capacities: compare behaviour)
    assert _next_actions(clone) == _next_actions(policy)


# -- delayed and out-of-order rewards --------------------------------------------------
def _delayed_run(cls: type, order: str, n: int = 50, floor: float = 0.0) -> Policy:
    """Warm up, decide ``n`` times with no reward, then reward in ``order``."""
    policy = _warm(_make(cls, floor))
    contexts, rewards = _stream(8, n)
    ids = [f"late-{t}" for t in range(n)]
    for t, X in enumerate(contexts):
        decision = policy.decide(X, decision_id=ids[t], now=float(t))
        assert decision.model_version == 20
    assert policy.decision_statistics["pending"] == n
    sequence = range(n) if order == "forward" else (
        range(n - 1, -1, -1) if order == "reverse" else np.random.default_rng(0).permutation(n))
    for t in sequence:
        assert policy.reward(ids[t], rewards[t], now=1000.0 + t) == "learned"
    return policy


@pytest.mark.parametrize("order", ["reverse", "shuffled"])
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_rewards_in_any_order_long_after(cls, order):
    policy = _delayed_run(cls, order)
    assert policy.model_version == 70
    stats = policy.decision_statistics
    assert stats["pending"] == 0 and stats["learned"] == 50 and stats["decided"] == 50
    # the learned state is finite and the policy keeps deciding
    X = _stream(9, 1)[0][0]
    decision = policy.decide(X)
    assert np.isfinite(decision.scores.ucb).all() and decision.model_version == 70


@pytest.mark.parametrize("cls", [c for c in POLICY_CLASSES
                                 if c.__name__ not in ("SupCBGLM", "RSGLinCB")],
                         ids=[i for i in IDS if i not in ("SupCBGLM", "RSGLinCB")])
def test_stateless_learning_does_not_depend_on_which_decision_a_reward_joins(cls):
    """For policies that learn a sample the same whatever decided it, rewards given in
    decision order long after equal update() calls of the same rows in that order."""
    policy = _delayed_run(cls, "forward")
    reference = _warm(_make(cls))
    contexts, rewards = _stream(8, 50)
    for t, X in enumerate(contexts):
        reference.select(X)
    for t, X in enumerate(contexts):
        reference.update(X[policy_actions(cls)[t]], rewards[t])
    assert _learned_state(policy) == _learned_state(reference)


def policy_actions(cls: type) -> list[int]:
    policy = _warm(_make(cls))
    return [policy.decide(X).action for X in _stream(8, 50)[0]]


def test_supcbglm_learns_each_sample_in_the_stage_its_decision_recorded():
    policy = _warm(SupCBGLM(n_features=D, seed=0), rounds=40)
    assert policy.initial_estimate_.n == policy.tau  # past the initial rounds
    contexts, rewards = _stream(10, 50)
    ids = [f"s{t}" for t in range(50)]
    tags = []
    for t, X in enumerate(contexts):
        policy.decide(X, decision_id=ids[t])
        tags.append(policy.decisions_.pending[ids[t]].tag)
        assert tags[-1] == policy.last_stage_
    assert len(set(tags)) >= 2, tags  # the check below means something
    psi = [list(s) for s in policy.psi_]
    initial_rounds = list(policy.initial_rounds_)
    sizes = [None if e is None else e.n for e in policy.stage_estimates_]
    landed = {}
    for t in range(49, -1, -1):
        landed[t] = policy.n_updates_
        policy.reward(ids[t], rewards[t])
    assert policy.initial_rounds_ == initial_rounds
    for stage in range(len(psi)):
        expected = psi[stage] + [landed[t] for t in range(49, -1, -1) if tags[t] == stage]
        assert policy.psi_[stage] == expected, stage
        if stage >= 1 and policy.stage_estimates_[stage] is not None:
            before = sizes[stage] if sizes[stage] is not None else policy.tau
            assert policy.stage_estimates_[stage].n == before + tags.count(stage)
    assert policy.decision_statistics["learned"] == 50


def test_supcbglm_initial_samples_arriving_late_join_every_formed_stage_estimate():
    policy = SupCBGLM(n_features=D, seed=0, tau=4)
    contexts, rewards = _stream(11, 30)
    # 4 initial decisions, only 3 rewarded at once; the 4th comes after stages formed
    for t in range(4):
        late = policy.decide(contexts[t], decision_id=f"i{t}")
        assert policy.decisions_.pending[f"i{t}"].tag == INITIAL
    for t in range(3):
        policy.reward(f"i{t}", rewards[t])
    # still initial: 3 < tau
    policy.decide(contexts[4], decision_id="i4")
    assert policy.decisions_.pending["i4"].tag == INITIAL
    policy.reward("i4", rewards[4])
    for t in range(5, 20):
        policy.decide(contexts[t], decision_id=f"s{t}")
        policy.reward(f"s{t}", rewards[t])
    formed = [s for s, e in enumerate(policy.stage_estimates_) if e is not None]
    assert formed
    sizes = {s: policy.stage_estimates_[s].n for s in formed}
    n_initial = policy.initial_estimate_.n
    policy.reward("i3", rewards[3])
    assert policy.initial_estimate_.n == n_initial + 1 == 5
    assert len(policy.initial_rounds_) == 5
    for s in formed:
        assert policy.stage_estimates_[s].n == sizes[s] + 1
        np.testing.assert_array_equal(policy.stage_estimates_[s].history.X[-1],
                                      contexts[3][late.action])


def test_supcbglm_stage_survives_pickle_with_pending_decisions():
    policy = _warm(SupCBGLM(n_features=D, seed=0), rounds=40)
    contexts, rewards = _stream(12, 20)
    for t, X in enumerate(contexts):
        policy.decide(X, decision_id=f"p{t}")
    clone = pickle.loads(pickle.dumps(policy))
    assert [e.tag for e in clone.decisions_.pending.values()] == [
        e.tag for e in policy.decisions_.pending.values()]
    for t in range(19, -1, -1):
        policy.reward(f"p{t}", rewards[t])
        clone.reward(f"p{t}", rewards[t])
    assert clone.psi_ == policy.psi_
    assert _next_actions(clone) == _next_actions(policy)


def test_rsglincb_warmup_flag_follows_the_decision():
    policy = _make(policy_catalogue.POLICY_CLASSES[IDS.index("RSGLinCB")])
    contexts, rewards = _stream(13, 60)
    for t, X in enumerate(contexts):
        policy.decide(X, decision_id=f"r{t}")
    tags = [policy.decisions_.pending[f"r{t}"].tag for t in range(60)]
    assert set(tags) == {1}  # nothing learned yet: every round is a warm-up round
    assert policy.last_warmup_ is False  # the update path's flag was cleared
    for t in range(59, -1, -1):
        policy.reward(f"r{t}", rewards[t])
    assert policy.n_warmup_ == 60 and policy.warm_.n == 60 and policy.all_.n == 60
    # now a mix: decide with warm-up and regular rounds pending, reward in reverse
    contexts, rewards = _stream(14, 200)
    for t, X in enumerate(contexts):
        policy.decide(X, decision_id=f"m{t}")
    tags = [policy.decisions_.pending[f"m{t}"].tag for t in range(200)]
    warm_before = policy.n_warmup_
    for t in range(199, -1, -1):
        policy.reward(f"m{t}", rewards[t])
    assert policy.n_warmup_ - warm_before == sum(tags)


# -- unknown, duplicate, held, late, expired -----------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_unknown_id_raises_a_key_error_and_changes_nothing(cls):
    policy = _warm(_make(cls))
    policy.decide(_stream(15, 1)[0][0], decision_id="known")
    _unchanged(policy, lambda: policy.reward("never", 1.0), UnknownDecisionError,
               "decision_id 'never' is unknown")
    try:
        policy.reward("never", 1.0)
    except KeyError as error:  # a KeyError whose message reads well
        assert isinstance(error, UnknownDecisionError)
        assert str(error).startswith(f"{cls.__name__}.reward: decision_id 'never'")
    _unchanged(policy, lambda: policy.reward_batch(["known", "never"], [1.0, 0.0]),
               UnknownDecisionError, "'never'")
    _unchanged(policy, lambda: policy.pending_decision("never"), KeyError, "never")
    assert policy.pending_decision("known").decision_id == "known"


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_duplicate_rewards_are_ignored_and_counted(cls):
    policy = _warm(_make(cls))
    policy.decide(_stream(16, 1)[0][0], decision_id="a")
    assert policy.reward("a", 1.0) == "learned"
    before = _learned_state(policy)
    assert policy.reward("a", 0.0) == "duplicate"
    assert policy.reward_batch(["a", "a"], [1.0, 1.0]) == ["duplicate", "duplicate"]
    assert _learned_state(policy) == before
    stats = policy.decision_statistics
    assert stats["duplicate"] == 3 and stats["learned"] == 1 and policy.model_version == 21


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_summed_rewards_are_held_and_learned_as_their_sum_at_expiry(cls):
    summed = _warm(_make(cls)).configure_decisions(duplicate_rewards="sum")
    reference = _warm(_make(cls))
    X = _stream(17, 1)[0][0]
    decision = summed.decide(X, decision_id="s", now=0.0)
    assert reference.select(X) == decision.action
    assert summed.reward("s", 0.25, now=1.0) == "held"
    assert summed.reward_batch(["s", "s"], [0.25, 0.25], now=2.0) == ["held", "held"]
    assert summed.model_version == 20
    # a sum that would leave the family's domain (every family but the linear caps at 1)
    if summed.family is not None and not summed.family.in_domain(1.75):
        _unchanged(summed, lambda: summed.reward("s", 1.0), ValueError, "would sum to 1.75")
        _unchanged(summed, lambda: summed.reward_batch(["s", "s"], [0.5, 0.5]), ValueError,
                   "would sum to 1.75")
    assert summed.expire(older_than=10.0, now=5.0) == {"dropped": 0, "default": 0, "learned": 0}
    assert summed.expire(older_than=10.0, now=10.0) == {"dropped": 0, "default": 0, "learned": 1}
    reference.update(X[decision.action], 0.75)
    assert _learned_state(summed) == _learned_state(reference)
    assert summed.reward("s", 0.1, now=11.0) == "late"
    stats = summed.decision_statistics
    assert (stats["held"], stats["expired_learned"], stats["late"], stats["pending"]) == (
        3, 1, 1, 0)


def test_duplicate_mode_cannot_change_while_decisions_are_pending():
    policy = _make(UCBGLM)
    policy.decide(np.eye(D), decision_id="x")
    _unchanged(policy, lambda: policy.configure_decisions(duplicate_rewards="sum"),
               ValueError, "cannot change while 1 decisions are pending")
    policy.reward("x", 1.0)
    policy.configure_decisions(duplicate_rewards="sum")
    assert policy.decisions_.duplicate_rewards == "sum"


@pytest.mark.parametrize("default", [None, 0.0])
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_max_pending_expires_the_oldest(cls, default):
    policy = _warm(_make(cls)).configure_decisions(max_pending=3, default_reward=default)
    contexts, rewards = _stream(18, 6)
    decisions = []
    for t, X in enumerate(contexts):
        decisions.append(policy.decide(X, decision_id=f"q{t}", now=float(t)))
        assert list(policy.decisions_.pending) == [f"q{i}" for i in range(max(0, t - 2), t + 1)]
        # the oldest expired once this decision was made
        assert decisions[-1].model_version == 20 + (0 if default is None else max(0, t - 3))
    stats = policy.decision_statistics
    key = "expired_dropped" if default is None else "expired_default"
    assert stats[key] == 3 and stats["pending"] == 3
    assert policy.model_version == (20 if default is None else 23)
    assert policy.reward("q0", 1.0) == "late"
    assert policy.decision_statistics["late"] == 1
    for t in range(3, 6):
        assert policy.reward(f"q{t}", rewards[t]) == "learned"
    if cls.__name__ in ("SupCBGLM", "RSGLinCB"):  # update() cannot say which stage/round
        return
    # the reference: the same decisions through select/update, the evicted rows
    # learned with the default reward right after the decision that evicted them
    reference = _warm(_make(cls))
    for t, X in enumerate(contexts):
        assert reference.select(X) == decisions[t].action
        if t >= 3 and default is not None:
            reference.update(contexts[t - 3][decisions[t - 3].action], default)
    for t in range(3, 6):
        reference.update(contexts[t][decisions[t].action], rewards[t])
    assert _learned_state(policy) == _learned_state(reference)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_expire_with_default_reward_or_drop(cls):
    for default in (None, 1.0):
        policy = _warm(_make(cls)).configure_decisions(default_reward=default)
        contexts, _ = _stream(19, 5)
        for t, X in enumerate(contexts):
            policy.decide(X, decision_id=f"e{t}", now=10.0 * t)
        # decisions made at or before now - older_than = 25: e0, e1, e2
        outcome = policy.expire(older_than=15.0, now=40.0)
        closed = "dropped" if default is None else "default"
        assert outcome[closed] == 3 and sum(outcome.values()) == 3
        assert list(policy.decisions_.pending) == ["e3", "e4"]
        assert policy.model_version == (20 if default is None else 23)
        assert policy.reward("e1", 0.0) == "late"
        assert policy.reward("e3", 0.0) == "learned"
        assert policy.expire(now=40.0)[closed] == 1  # older_than=0: everything up to now
        stats = policy.decision_statistics
        assert stats[f"expired_{'dropped' if default is None else 'default'}"] == 4
        assert stats["late"] == 1 and stats["learned"] == 1 and stats["pending"] == 0


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_reward_wait_makes_late_rewards(cls):
    policy = _warm(_make(cls)).configure_decisions(reward_wait=5.0, default_reward=0.0)
    X = _stream(20, 1)[0][0]
    policy.decide(X, decision_id="w1", now=100.0)
    policy.decide(X, decision_id="w2", now=100.0)
    assert policy.reward("w1", 1.0, now=105.0) == "learned"  # exactly at the window's end
    # late: the window closes the decision (its default reward is learned), then it is late
    assert policy.reward("w2", 1.0, now=105.5) == "late"
    assert policy.reward("w2", 1.0, now=106.0) == "late"
    stats = policy.decision_statistics
    assert (stats["learned"], stats["late"], stats["expired_default"]) == (1, 2, 1)
    assert policy.model_version == 22


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_counts_add_up_and_model_version_counts_absorbed_rewards(cls):
    policy = _warm(_make(cls, 0.1)).configure_decisions(max_pending=8, default_reward=0.0,
                                                        reward_wait=30.0)
    rng = np.random.default_rng(21)
    contexts, rewards = _stream(21, 60)
    absorbed = 20
    for t, X in enumerate(contexts):
        version = policy.model_version
        decision = policy.decide(X, decision_id=f"c{t}", now=float(t))
        assert decision.model_version == version  # (evictions come after the decision)
        if t == 0:
            policy.decide(X, decision_id="c0", now=float(t))  # a retry
        for old in rng.choice(t + 1, size=2):
            policy.reward(f"c{old}", rewards[old], now=float(t))
        if t % 20 == 19:
            policy.expire(older_than=10.0, now=float(t))
    stats = policy.decision_statistics
    assert stats["decided"] == 60 and stats["retried"] == 1
    closed = (stats["learned"] + stats["expired_dropped"] + stats["expired_default"]
              + stats["expired_learned"])
    assert closed + stats["pending"] == stats["decided"]
    assert stats["learned"] + stats["duplicate"] + stats["late"] + stats["held"] == 120
    absorbed += stats["learned"] + stats["expired_default"] + stats["expired_learned"]
    assert policy.model_version == absorbed == policy.n_updates_
    assert stats["duplicate"] > 0 and stats["late"] > 0 and stats["expired_default"] > 0


# -- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_bad_input_names_the_parameter_and_changes_nothing(cls):
    policy = _warm(_make(cls))
    X = _stream(22, 1)[0][0]
    policy.decide(X, decision_id="ok", now=0.0)
    name = cls.__name__
    cases = [
        (lambda: policy.decide(X, decision_id=7), TypeError, f"{name}.decide: decision_id must "
                                                              "be a str, got int"),
        (lambda: policy.decide(X, decision_id=b"x"), TypeError, "decision_id must be a str"),
        (lambda: policy.decide(X, decision_id=""), ValueError, "decision_id must be 1 to 256"),
        (lambda: policy.decide(X, decision_id="x" * 257), ValueError, "got 257"),
        (lambda: policy.decide(X, now=float("nan")), ValueError, "decide: now must be finite"),
        (lambda: policy.decide(X, now="0"), TypeError, "now must be a real number"),
        (lambda: policy.decide(X[:, :2]), ValueError, r"contexts must have shape \(K, 3\)"),
        (lambda: policy.decide(np.full((2, D), np.nan)), ValueError, "contexts"),
        (lambda: policy.reward(7, 1.0), TypeError, "reward: decision_id must be a str"),
        (lambda: policy.reward("", 1.0), ValueError, "decision_id must be 1 to 256"),
        (lambda: policy.reward("ok", float("nan")), ValueError, "reward"),
        (lambda: policy.reward("ok", np.ones(2)), ValueError, "reward must be a scalar"),
        (lambda: policy.reward("ok", "1"), TypeError, "reward"),
        (lambda: policy.reward("ok", 1.0, now=float("inf")), ValueError, "now must be finite"),
        (lambda: policy.reward_batch("ok", [1.0]), TypeError, "decision_ids must be a sequence"),
        (lambda: policy.reward_batch(["ok"], [1.0, 0.0]), ValueError,
         r"rewards must have shape \(1,\)"),
        (lambda: policy.reward_batch(["ok", 3], [1.0, 0.0]), TypeError, "decision_id"),
        (lambda: policy.reward_batch(["ok"], [float("nan")]), ValueError, "reward"),
        (lambda: policy.reward_batch(["ok"], [1.0], now=float("nan")), ValueError, "now"),
        (lambda: policy.expire(older_than=-1.0), ValueError, "expire: older_than must be >= 0"),
        (lambda: policy.expire(older_than=float("nan")), ValueError, "older_than"),
        (lambda: policy.expire(now=float("nan")), ValueError, "now must be finite"),
        (lambda: policy.configure_decisions(max_pending=0), ValueError, "max_pending"),
        (lambda: policy.configure_decisions(max_pending=2, duplicate_rewards="mean"),
         ValueError, "duplicate_rewards must be one of"),
        (lambda: policy.configure_decisions(reward_wait=-1.0), ValueError, "reward_wait"),
        (lambda: policy.configure_decisions(default_reward=float("nan")), ValueError,
         "reward"),
        (lambda: policy.configure_decisions(wait=1.0), TypeError, "unknown option 'wait'"),
    ]
    if policy.family is not None and not policy.family.in_domain(-1.0):
        cases += [
            (lambda: policy.reward("ok", -1.0), ValueError, "reward"),
            (lambda: policy.reward_batch(["ok"], [-1.0]), ValueError, "reward"),
            (lambda: policy.configure_decisions(default_reward=-1.0), ValueError, "reward"),
        ]
    for call, error, match in cases:
        _unchanged(policy, call, error, match)
    assert policy.reward("ok", 1.0) == "learned"


# -- batches ----------------------------------------------------------------------------------
BATCH_CLASSES = [cls for cls in POLICY_CLASSES if cls.__name__ != "SupCBGLM"]
BATCH_IDS = [cls.__name__ for cls in BATCH_CLASSES]


def _batch(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (policy_catalogue.unit_ball_contexts(rng, n, D),
            (rng.random(n) < 0.5).astype(float))


def _next_actions(policy: Policy, n: int = 20) -> list[int]:
    contexts, rewards = _stream(23, n)
    actions = []
    for X, r in zip(contexts, rewards):
        actions.append(policy.select(X))
        policy.update(X[actions[-1]], r)
    return actions


@pytest.mark.parametrize("cls", BATCH_CLASSES, ids=BATCH_IDS)
def test_update_batch_equals_sequential_updates(cls):
    X, rewards = _batch(24, 60)
    batch, loop = _warm(_make(cls, 0.1)), _warm(_make(cls, 0.1))
    batch.update_batch(X, rewards)
    for x, r in zip(X, rewards):
        loop.update(x, r)
    assert _state(batch) == _state(loop)
    assert batch.model_version == 80
    assert _next_actions(batch) == _next_actions(loop)
    assert _state(batch) == _state(loop)
    # lists and an empty batch work too
    batch.update_batch(X[:2].tolist(), rewards[:2].tolist())
    loop.update(X[0], rewards[0])
    loop.update(X[1], rewards[1])
    batch.update_batch(np.zeros((0, D)), [])
    assert _state(batch) == _state(loop)


def test_supcbglm_refuses_update_batch():
    policy = _warm(SupCBGLM(n_features=D, seed=0), rounds=30)
    X, rewards = _batch(25, 5)
    _unchanged(policy, lambda: policy.update_batch(X, rewards), ValueError,
               "SupCBGLM.update_batch: SupCBGLM learns a sample into the stage")


@pytest.mark.parametrize("cls", BATCH_CLASSES, ids=BATCH_IDS)
def test_a_bad_row_or_reward_anywhere_in_a_batch_changes_nothing(cls):
    policy = _warm(_make(cls))
    X, rewards = _batch(26, 30)
    bad_X = X.copy()
    bad_X[17, 1] = np.nan
    bad_rewards = rewards.copy()
    bad_rewards[29] = np.nan
    name = cls.__name__
    _unchanged(policy, lambda: policy.update_batch(bad_X, rewards), ValueError,
               f"{name}.update_batch: X")
    _unchanged(policy, lambda: policy.update_batch(X, bad_rewards), ValueError,
               f"{name}.update_batch: reward")
    _unchanged(policy, lambda: policy.update_batch(X, rewards[:-1]), ValueError,
               r"rewards must have shape \(30,\)")
    _unchanged(policy, lambda: policy.update_batch(X[:, :2], rewards), ValueError,
               r"X must have shape")
    if policy.family is not None and not policy.family.in_domain(-1.0):
        out = rewards.copy()
        out[0] = -1.0
        _unchanged(policy, lambda: policy.update_batch(X, out), ValueError, "reward")


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_reward_batch_equals_sequential_rewards(cls):
    batch, loop = _warm(_make(cls, 0.1)), _warm(_make(cls, 0.1))
    contexts, rewards = _stream(27, 40)
    ids = [f"b{t}" for t in range(40)]
    for t, X in enumerate(contexts):
        assert batch.decide(X, decision_id=ids[t], now=0.0).action == loop.decide(
            X, decision_id=ids[t], now=0.0).action
    order = list(np.random.default_rng(1).permutation(40)) + [3, 3]  # with two duplicates
    statuses = batch.reward_batch([ids[i] for i in order], rewards[order], now=1.0)
    assert statuses == [loop.reward(ids[i], rewards[i], now=1.0) for i in order]
    assert statuses.count("duplicate") == 2
    assert _state(batch) == _state(loop)
    assert _next_actions(batch) == _next_actions(loop)
    # a bad entry anywhere: nothing is applied
    for t, X in enumerate(contexts[:5]):
        batch.decide(X, decision_id=f"n{t}")
    before = _state(batch)
    for bad_ids, bad_rewards in ((["n0", "n1", "zz"], [1.0, 1.0, 1.0]),
                                 (["n0", "n1", "n2"], [1.0, 1.0, float("inf")]),
                                 (["n0", "n1", ""], [1.0, 1.0, 1.0])):
        with pytest.raises((KeyError, ValueError)):
            batch.reward_batch(bad_ids, bad_rewards)
        assert _state(batch) == before
    assert batch.reward_batch([], []) == []


EXACT_REFIT = [cls for cls in POLICY_CLASSES
               if cls.__name__ in ("UCBGLM", "GLMUCB", "GLMTSL", "EpsilonGreedy", "OFUGLB")]


@pytest.mark.parametrize("cls", EXACT_REFIT, ids=[c.__name__ for c in EXACT_REFIT])
def test_a_batch_costs_one_refit(cls):
    policy = _warm(_make(cls), rounds=30)
    X, rewards = _batch(28, 200)
    policy.select(X[:K])
    fits = policy.estimate_.n_fits_
    policy.update_batch(X, rewards)
    assert policy.estimate_.n_fits_ == fits  # refits are lazy
    policy.select(X[:K])
    assert policy.estimate_.n_fits_ == fits + 1
    # the same through reward_batch
    contexts, rewards = _stream(29, 30)
    for t, C in enumerate(contexts):
        policy.decide(C, decision_id=f"f{t}")
    fits = policy.estimate_.n_fits_
    policy.reward_batch([f"f{t}" for t in range(30)], rewards)
    policy.select(X[:K])
    assert policy.estimate_.n_fits_ == fits + 1


# -- regressions: bugs found while writing these tests -------------------------------------
def test_a_late_reward_in_sum_mode_is_late_not_refused():
    """Before the fix the held-sum check ran before the wait window was applied, so a
    late reward that would overflow the sum raised ValueError instead of being late."""
    policy = _make(UCBGLM).configure_decisions(duplicate_rewards="sum", reward_wait=5.0)
    policy.decide(np.eye(D), decision_id="a", now=0.0)
    policy.decide(np.eye(D), decision_id="b", now=0.0)
    assert policy.reward("a", 1.0, now=1.0) == "held"
    assert policy.reward_batch(["b"], [1.0], now=1.0) == ["held"]
    assert policy.reward("a", 1.0, now=10.0) == "late"  # closes "a": its sum 1.0 is learned
    assert policy.reward_batch(["b", "b"], [1.0, 1.0], now=10.0) == ["late", "late"]
    stats = policy.decision_statistics
    assert (stats["expired_learned"], stats["late"], policy.model_version) == (2, 3, 2)
    # within the window the sum is still refused
    policy.decide(np.eye(D), decision_id="c", now=20.0)
    policy.reward("c", 1.0, now=21.0)
    _unchanged(policy, lambda: policy.reward("c", 1.0, now=22.0), ValueError, "would sum to 2")


def test_reward_batch_takes_a_numpy_array_of_ids():
    """Before the fix a 1-d array of ids (a column read with numpy or pandas) was refused."""
    policy = _make(UCBGLM)
    for name in ("x", "y"):
        policy.decide(np.eye(D), decision_id=name)
    assert policy.reward_batch(np.array(["x", "y"]), np.array([1.0, 0.0])) == ["learned"] * 2
    _unchanged(policy, lambda: policy.reward_batch(np.array([["x"]]), [1.0]), TypeError,
               "decision_ids must be a sequence of str")


class _Sink:
    """An event sink that fails on demand."""

    def __init__(self, fail: str = "") -> None:
        self.fail, self.events = fail, []

    def record_decision(self, decision_id, *args, **kwargs) -> None:
        if self.fail == "decision":
            raise OSError("disk full")
        self.events.append(("decision", decision_id))

    def record_reward(self, decision_id, timestamp, reward, status) -> None:
        if self.fail == "reward":
            raise OSError("disk full")
        self.events.append(("reward", decision_id, status))

    def record_expiry(self, decision_id, timestamp, outcome, reward) -> None:
        self.events.append(("expiry", decision_id, outcome))


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_failing_event_log_leaves_the_policy_as_it_was(cls):
    """Before the fix a decision whose log write failed kept what _choose had changed
    (SupCB-GLM's stage record, refits, RS-GLinCB's switch) and had already evicted
    (and learned) the oldest pending decision when the store was full."""
    policy = _warm(_make(cls, 0.1)).configure_decisions(max_pending=2, default_reward=1.0)
    contexts, _ = _stream(30, 3)
    policy.decide(contexts[0], decision_id="p0", now=0.0)
    policy.decide(contexts[1], decision_id="p1", now=1.0)
    before = _state(policy)
    rng_state = policy.rng_.bit_generator.state
    policy.event_log = _Sink("decision")
    with pytest.raises(OSError, match="disk full"):
        policy.decide(contexts[2], decision_id="p2", now=2.0)
    policy.event_log = None
    assert _state(policy) == before and policy.rng_.bit_generator.state == rng_state
    policy.event_log = _Sink("reward")
    with pytest.raises(OSError, match="disk full"):
        policy.reward("p1", 0.0)
    policy.event_log = None
    assert _state(policy) == before
    # and with a working log every event is written
    sink = policy.event_log = _Sink()
    policy.decide(contexts[2], decision_id="p2", now=2.0)
    policy.reward("p1", 0.0)
    assert sink.events == [("decision", "p2"), ("expiry", "p0", "default"),
                           ("reward", "p1", "learned")]


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_after_a_failed_logged_decision_the_policy_continues_as_its_twin(cls):
    """A decide whose log write fails is undone completely, solver caches included: the
    policy then plays exactly as a twin that never tried. OFU-GLB's select is itself a
    transaction, so its estimate's copy-on-write records nest inside decide's."""
    policy, twin = _warm(_make(cls, 0.1)), _warm(_make(cls, 0.1))
    contexts, rewards = _stream(31, 40)
    policy.event_log = _Sink("decision")
    with pytest.raises(OSError, match="disk full"):
        policy.decide(contexts[0], decision_id="fails", now=0.0)
    policy.event_log = None
    for t, (X, r) in enumerate(zip(contexts, rewards)):
        first = policy.decide(X, decision_id=f"d{t}", now=float(t))
        second = twin.decide(X, decision_id=f"d{t}", now=float(t))
        assert first.action == second.action
        assert np.array_equal(first.probabilities, second.probabilities)
        assert np.array_equal(first.scores.ucb, second.scores.ucb)
        policy.reward(f"d{t}", r, now=t + 0.5)
        twin.reward(f"d{t}", r, now=t + 0.5)
    assert _learned_state(policy) == _learned_state(twin)


def test_request_digest_is_tagged_sha256_and_legacy_digests_still_match_retries():
    """The fingerprint is SHA-256 now; a pending decision saved with the earlier
    (untagged BLAKE2b) digest still recognises its exact retry and refuses others."""
    import hashlib

    from glmbandits import LinUCB
    from glmbandits.policies.fingerprints import digest_matches, request_digest

    X = np.arange(12.0).reshape(4, 3) / 10
    digest = request_digest(X, None)
    assert digest.startswith("s256:") and len(digest) == 5 + 32
    assert request_digest(X, np.array([0, 2])) != digest
    assert request_digest(X.reshape(3, 4), None) != digest
    legacy = hashlib.blake2b(digest_size=16)
    legacy.update(np.asarray(X.shape, dtype=np.int64).tobytes())
    legacy.update(X.tobytes())
    legacy = legacy.hexdigest()
    assert digest_matches(legacy, X, None) and not digest_matches(legacy, X + 1.0, None)
    policy = LinUCB(n_features=3, seed=0)
    decision = policy.decide(X, decision_id="old", now=0.0)
    policy.decisions_.pending["old"].digest = legacy  # as saved by an earlier version
    assert policy.decide(X, decision_id="old", now=1.0) is decision
    with pytest.raises(ValueError, match="retry must repeat the request exactly"):
        policy.decide(X + 1.0, decision_id="old", now=2.0)


# -- deciding without keeping, and learning logged decisions (the scale-out roles) -------
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_registered_logged_decision_is_kept_as_if_decided_here(cls):
    """decide(keep_pending=False) chooses as decide() does and keeps nothing; a policy that
    registers the logged decision holds the pending entry decide() would have held."""
    keeping = _warm(_make(cls))
    only_logging = pickle.loads(pickle.dumps(keeping))
    learner = pickle.loads(pickle.dumps(keeping))
    contexts, rewards = _stream(12, 6)
    for t, X in enumerate(contexts):
        kept = keeping.decide(X, decision_id=f"r{t}", excluded=[0], now=float(t))
        made = only_logging.decide(X, decision_id=f"r{t}", excluded=[0], now=float(t),
                                   keep_pending=False)
        assert made.action == kept.action and made.probabilities.tolist() == \
            kept.probabilities.tolist()
        entry = keeping.decisions_.pending[f"r{t}"]
        learner.register_decision(f"r{t}", X, made.action, made.probabilities,
                                  model_version=made.model_version, timestamp=float(t),
                                  propensity=made.propensity, tag=entry.tag, excluded=[0])
        registered = learner.decisions_.pending[f"r{t}"]
        assert registered.x.tobytes() == entry.x.tobytes() and registered.tag == entry.tag
        assert registered.digest == entry.digest  # a retry of it would be recognised
        assert registered.decision.candidates.tolist() == entry.decision.candidates.tolist()
    assert only_logging.decision_statistics["pending"] == 0
    assert only_logging.decision_statistics["decided"] == 0
    before = learner.model_version
    statuses = [learner.reward(f"r{t}", rewards[t], now=10.0) for t in range(6)]
    assert statuses == ["learned"] * 6 and learner.model_version == before + 6
    assert learner.reward("r0", 1.0, now=11.0) == "duplicate"


def test_register_decision_obeys_max_pending_and_refuses_a_known_id():
    policy = UCBGLM(n_features=D, seed=0).configure_decisions(max_pending=3)
    contexts, _ = _stream(13, 5)
    for t, X in enumerate(contexts):
        policy.register_decision(f"r{t}", X, 1, np.full(K, 1.0 / K), model_version=0,
                                 timestamp=float(t))
    stats = policy.decision_statistics
    assert stats["pending"] == 3 and stats["expired_dropped"] == 2
    assert list(policy.decisions_.pending) == ["r2", "r3", "r4"]
    with pytest.raises(ValueError, match="'r0' is already closed"):
        policy.register_decision("r0", contexts[0], 1, np.full(K, 1.0 / K), model_version=0,
                                 timestamp=9.0)
    with pytest.raises(ValueError, match=r"action must be a row index in \[0, "):
        policy.register_decision("x", contexts[0], K, np.full(K, 1.0 / K), model_version=0,
                                 timestamp=9.0)
    with pytest.raises(ValueError, match="probabilities must have shape"):
        policy.register_decision("x", contexts[0], 0, np.ones(K + 1), model_version=0,
                                 timestamp=9.0)


def test_reseed_gives_copies_their_own_draws():
    policy = UCBGLM(n_features=D, seed=0)
    a = pickle.loads(pickle.dumps(policy)).reseed(1)
    b = pickle.loads(pickle.dumps(policy)).reseed(2)
    assert a.rng_.random() != b.rng_.random()
    assert pickle.loads(pickle.dumps(policy)).reseed(1).rng_.random() == \
        pickle.loads(pickle.dumps(policy)).reseed(1).rng_.random()



# -- the protocol's one home: PendingDecisions' rules, typed refusals, the host Protocol ----
def test_pending_decisions_owns_retries_statuses_expiry_and_eviction():
    from glmbandits.estimation.checkpoint import checkpoint
    from glmbandits.policies.decisions import (DUPLICATE, LATE, REWARDED, DecisionConflict,
                                               reward_status)

    policy = UCBGLM(n_features=2, seed=0).configure_decisions(max_pending=2, reward_wait=5.0,
                                                              default_reward=0.0)
    store = policy.decisions_
    X = np.eye(2)
    first = policy.decide(X, "a", now=0.0)
    assert store.lookup("a").decision is first and store.lookup("zz") is None
    assert store.n_pending == 1 and store.overflow() == []
    assert store.find_retry("a", X, None, None) is first            # a retry, counted
    assert store.counts["retried"] == 1 and store.find_retry("new", X, None, None) is None
    with pytest.raises(DecisionConflict) as other:                 # another request
        store.find_retry("a", X + 0.5, None, None)
    assert (other.value.decision_id, other.value.closed_as, other.value.field) == \
        ("a", None, "decision_id") and isinstance(other.value, ValueError)
    assert store.status_of_reward("a", 4.0) is None and store.status_of_reward("a", 6.0) == LATE
    policy.decide(X, "b", now=1.0)
    assert store.overflow() == ["a"]                               # full: "a" goes first
    assert store.expiry_of("a")[1:] == ("default", 0.0)
    assert store.has_expired(0.0) and not store.has_expired(-1.0)
    assert policy.reward("b", 1.0, now=2.0) == "learned"
    assert store.closed_as("b") == REWARDED and store.status_of_reward("b", 3.0) == DUPLICATE
    with pytest.raises(DecisionConflict) as closed:
        store.find_retry("b", X, None, None)
    assert closed.value.closed_as == REWARDED
    assert reward_status("default", 0.0, 1.0, None) == LATE
    assert reward_status(None, 0.0, 1.0, None) is None
    # every change made through the store's methods is undone with the policy's checkpoint
    before = pickle.dumps(store)
    record = checkpoint(policy)
    store.close_expired("a", "default")
    store.find_retry("zz", X, None, None)
    record.restore()
    assert pickle.dumps(store) == before


def test_refusals_are_typed_and_name_their_field():
    from glmbandits.policies.decisions import (DecisionConflict, FieldError, InvalidType,
                                               InvalidValue)

    policy = UCBGLM(n_features=2, seed=0)
    X = np.eye(2)
    policy.decide(X, "a", now=0.0)
    cases = [  # a decision_id that mentions another field's name: the type names the field
        (lambda: policy.decide(X, "x" * 300 + "contexts"), InvalidValue, "decision_id"),
        (lambda: policy.decide(X, "n", excluded=[0, 1]), InvalidValue, "excluded"),
        (lambda: policy.decide(X, "n", excluded=["contexts"]), InvalidType, "excluded"),
        (lambda: policy.decide(X, "n", default_action=5), InvalidValue, "default_action"),
        (lambda: policy.decide(np.ones((2, 3)), "n"), InvalidValue, "contexts"),
        (lambda: policy.reward("a", 2.5), InvalidValue, "reward"),
        (lambda: policy.expire(-1.0), InvalidValue, "older_than"),
        (lambda: policy.decide(X + 0.1, "a"), DecisionConflict, "decision_id"),
        (lambda: policy.reward("never", 1.0), UnknownDecisionError, "decision_id"),
    ]
    for call, kind, field in cases:
        with pytest.raises(kind) as refused:
            call()
        assert refused.value.field == field, (kind, field, str(refused.value))
        assert isinstance(refused.value, (FieldError, DecisionConflict, UnknownDecisionError))
        assert pickle.loads(pickle.dumps(refused.value)).field == field


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_every_policy_is_a_decision_host(cls):
    from glmbandits.policies.decision_api import DecisionHost

    assert isinstance(_make(cls), DecisionHost)
