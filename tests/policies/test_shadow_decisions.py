"""Shadow mode at the library level: ``decide(..., default_action=a)`` for every policy class.

The policy still chooses (its generator advances as in live mode), the decision shows the
caller's default (``action``), keeps the policy's choice (``policy_action``) and its own
distribution, has no propensity, and the reward is learned for the default's row.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import policy_catalogue
from glmbandits import UCBGLM
from glmbandits.policies.base import Policy
from glmbandits.policies.decisions import PendingDecisions
from glmbandits.policies.fingerprints import request_digest

D, K = 3, 5
POLICY_CLASSES, IDS = policy_catalogue.POLICY_CLASSES, policy_catalogue.POLICY_IDS


def _make(cls: type, **kwargs) -> Policy:
    if cls.__name__ == "RSGLinCB":  # warm-up rounds happen only with a larger constant
        kwargs.setdefault("warmup_constant", 1.0)
    return cls(n_features=D, seed=0, **kwargs)


def _stream(seed: int, n: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    contexts = [policy_catalogue.unit_ball_contexts(rng, K, D) for _ in range(n)]
    return contexts, (rng.random(n) < 0.5).astype(float), rng.integers(0, K, size=n)


class _Sink:
    def __init__(self) -> None:
        self.decisions: list[dict] = []

    def record_decision(self, decision_id, timestamp, contexts, probabilities, action,
                        propensity, model_version, *, tag=None, policy_action=None) -> None:
        self.decisions.append({"id": decision_id, "action": action, "propensity": propensity,
                               "policy_action": policy_action, "tag": tag})

    def record_reward(self, *args) -> None:
        pass

    def record_expiry(self, *args) -> None:
        pass


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_a_shadow_decision_shows_the_default_and_keeps_the_policys_choice(cls):
    contexts, rewards, defaults = _stream(1, 12)
    live, shadow = _make(cls), _make(cls)
    for t, (X, r, default) in enumerate(zip(contexts, rewards, defaults)):
        mine = live.decide(X, f"d{t}", now=float(t))
        theirs = shadow.decide(X, f"d{t}", default_action=int(default), now=float(t))
        assert theirs.action == default and theirs.propensity is None and theirs.shadow
        assert theirs.policy_action is not None and 0 <= theirs.policy_action < K
        assert mine.policy_action is None and not mine.shadow
        if t == 0:  # same state so far: the same draw and distribution as the live policy
            assert theirs.policy_action == mine.action
            np.testing.assert_array_equal(theirs.probabilities, mine.probabilities)
            assert live.rng_.bit_generator.state == shadow.rng_.bit_generator.state
        assert theirs.probabilities[theirs.policy_action] > 0
        live.reward(f"d{t}", r, now=t + 0.5)
        shadow.reward(f"d{t}", r, now=t + 0.5)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
def test_shadow_learns_from_the_default_row_as_select_update_would(cls):
    """decide(default_action)/reward equals select, then update with the default's row,
    bit for bit: the policy learns from the action that was actually shown."""
    contexts, rewards, defaults = _stream(2, 25)
    shadow, reference = _make(cls), _make(cls)
    for t, (X, r, default) in enumerate(zip(contexts, rewards, defaults)):
        decision = shadow.decide(X, f"s{t}", default_action=int(default), now=float(t))
        chosen = reference.select(X)
        assert decision.policy_action == chosen
        if cls.__name__ == "SupCBGLM":
            # update() checks that x is the row select() chose; the shadow sample is the
            # default's row, learned at the stage of the policy's own choice
            reference._pending = (reference._pending[0], X[default].copy())
        reference.update(X[default], r)
        assert shadow.reward(f"s{t}", r, now=t + 0.5) == "learned"
    ours, theirs = shadow.__getstate__(), reference.__getstate__()
    ours.pop("decisions_"), theirs.pop("decisions_")
    assert pickle.dumps(ours) == pickle.dumps(theirs)


@pytest.mark.parametrize("cls", POLICY_CLASSES, ids=IDS)
@pytest.mark.parametrize("bad, error, match", [
    (K, ValueError, r"default_action must lie in \[0, 4\] \(K = 5\), got 5"),
    (-1, ValueError, "default_action must lie in"),
    (1.0, TypeError, "default_action must be an int .* got float"),
    (True, TypeError, "default_action must be an int .* got bool"),
    ("2", TypeError, "default_action must be an int .* got str"),
    (2, ValueError, "default_action 2 is excluded"),
])
def test_a_bad_default_action_is_refused_and_changes_nothing(cls, bad, error, match):
    policy = _make(cls)
    X = _stream(3, 1)[0][0]
    before = pickle.dumps(policy)
    with pytest.raises(error, match=match):
        policy.decide(X, "x", excluded=[2], default_action=bad)
    assert pickle.dumps(policy) == before
    assert "x" not in policy.decisions_.pending


def test_a_retry_must_repeat_the_default_action():
    policy = UCBGLM(n_features=D, seed=0)
    X = _stream(4, 1)[0][0]
    decision = policy.decide(X, "r", default_action=1, now=0.0)
    assert policy.decide(X, "r", default_action=1) is decision
    assert policy.decision_statistics["retried"] == 1
    for other in (2, None):
        with pytest.raises(ValueError, match="a retry must repeat the request exactly"):
            policy.decide(X, "r", default_action=other)
    live = policy.decide(X, "l", now=1.0)
    with pytest.raises(ValueError, match="a retry must repeat"):
        policy.decide(X, "l", default_action=live.action)


def test_a_live_request_hashes_as_before_shadow_mode():
    X = np.arange(6.0).reshape(3, 2)
    assert request_digest(X, None) == request_digest(X, None, None)
    assert request_digest(X, None, 0) != request_digest(X, None)
    assert request_digest(X, None, 0) != request_digest(X, None, 1)


def test_the_sink_gets_the_policy_action_and_no_propensity():
    policy = UCBGLM(n_features=D, seed=0)
    policy.event_log = sink = _Sink()
    contexts, _, _ = _stream(5, 2)
    shadow = policy.decide(contexts[0], "s", default_action=4, now=0.0)
    live = policy.decide(contexts[1], "l", now=1.0)
    assert sink.decisions == [
        {"id": "s", "action": 4, "propensity": None, "policy_action": shadow.policy_action,
         "tag": None},
        {"id": "l", "action": live.action, "propensity": live.propensity,
         "policy_action": None, "tag": None}]


def test_pending_shadow_decisions_survive_save_and_load(tmp_path):
    policy = UCBGLM(n_features=D, seed=0)
    contexts, _, _ = _stream(6, 2)
    shadow = policy.decide(contexts[0], "s", default_action=3, now=0.0)
    live = policy.decide(contexts[1], "l", now=1.0)
    policy.save(tmp_path / "model")
    loaded = UCBGLM.load(tmp_path / "model")
    again = loaded.pending_decision("s")
    assert again.action == 3 and again.propensity is None
    assert again.policy_action == shadow.policy_action
    assert loaded.pending_decision("l").policy_action is None
    assert loaded.pending_decision("l").propensity == live.propensity
    assert loaded.decide(contexts[0], "s", default_action=3) is again  # a retry still matches
    clone = pickle.loads(pickle.dumps(policy))
    assert clone.pending_decision("s").policy_action == shadow.policy_action


def test_a_state_saved_before_shadow_mode_loads_with_policy_action_none():
    policy = UCBGLM(n_features=D, seed=0)
    decision = policy.decide(_stream(7, 1)[0][0], "old", now=0.0)
    state = policy.decisions_.__getstate__()
    del state["policy_actions"]  # what a file written before shadow mode holds
    restored = PendingDecisions.__new__(PendingDecisions)
    restored.__setstate__(state)
    old = restored.pending["old"].decision
    assert old.policy_action is None and old.propensity == decision.propensity
