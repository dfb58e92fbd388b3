"""Save/load with pending decisions: a restored policy resumes them exactly (issue 14)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import glmbandits
import policy_catalogue

POLICY_CLASSES, ids = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _contexts(rng: np.random.Generator) -> np.ndarray:
    return policy_catalogue.unit_ball_contexts(rng, 5, 3)


@pytest.mark.parametrize("duplicate_rewards", ["ignore", "sum"])
@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=ids)
def test_pending_decisions_resume_bit_for_bit(cls, duplicate_rewards, tmp_path):
    policy = cls(n_features=3, seed=0).configure_decisions(
        default_reward=0.0, duplicate_rewards=duplicate_rewards, reward_wait=40.0)
    rng = np.random.default_rng(1)
    pending: list[str] = []
    for t in range(60):
        excluded = [0] if t % 7 == 0 else None
        decision = policy.decide(_contexts(rng), f"id{t}", excluded, now=float(t))
        pending.append(decision.decision_id)
        if t % 3 == 0:
            policy.reward(pending.pop(0), float(rng.random() < 0.5), now=t + 0.5)
    assert policy.decision_statistics["pending"] > 10
    restored = glmbandits.load(glmbandits.save(policy, tmp_path / "policy.glmb"))
    assert restored.decision_statistics == policy.decision_statistics
    for decision_id in policy.decisions_.pending:  # every pending decision comes back whole
        a, b = policy.pending_decision(decision_id), restored.pending_decision(decision_id)
        assert (a.action, a.propensity, a.model_version, a.timestamp) == (
            b.action, b.propensity, b.model_version, b.timestamp)
        assert np.array_equal(a.probabilities, b.probabilities)
        assert np.array_equal(a.candidates, b.candidates)
        for name in ("ucb", "mean", "width"):
            assert np.array_equal(getattr(a.scores, name), getattr(b.scores, name))
    for t in range(60, 120):
        X = _contexts(rng)
        first = policy.decide(X, f"id{t}", now=float(t))
        second = restored.decide(X, f"id{t}", now=float(t))
        assert first.action == second.action
        assert np.array_equal(first.probabilities, second.probabilities)
        pending.append(first.decision_id)
        reward, chosen = float(rng.random() < 0.5), pending.pop(int(rng.integers(len(pending))))
        assert policy.reward(chosen, reward, now=t + 0.1) == restored.reward(chosen, reward,
                                                                             now=t + 0.1)
    assert policy.expire(0.0, now=1e9) == restored.expire(0.0, now=1e9)
    assert policy.decision_statistics == restored.decision_statistics
    assert pickle.dumps(policy) == pickle.dumps(restored)


def test_a_retry_after_load_returns_the_saved_decision(tmp_path):
    policy = glmbandits.UCBGLM(n_features=3, seed=0)
    X = _contexts(np.random.default_rng(0))
    decision = policy.decide(X, "retry-me", now=5.0)
    restored = glmbandits.load(glmbandits.save(policy, tmp_path / "p.glmb"))
    state = restored.rng_.bit_generator.state
    again = restored.decide(X, "retry-me", now=6.0)
    assert again.action == decision.action and again.timestamp == 5.0
    assert restored.rng_.bit_generator.state == state


def test_an_attached_event_log_is_not_saved(tmp_path):
    class Sink:
        def record_decision(self, *args, **kwargs): pass
    policy = glmbandits.LinUCB(n_features=3, seed=0)
    policy.event_log = Sink()
    policy.decide(_contexts(np.random.default_rng(0)), "a", now=0.0)
    restored = glmbandits.load(glmbandits.save(policy, tmp_path / "p.glmb"))
    assert restored.event_log is None and policy.event_log is not None
