"""The event records of :class:`glmbandits.data.EventLog`: their types, checks and decoding.

Kept apart from the log itself so that the join and the Parquet export
(:mod:`.event_export`) read the same types without importing the database code. The
vocabulary they use (kinds, statuses, the decision-id rule) is :mod:`.vocabulary`'s;
its names are passed on here for the readers that import them from this module.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from .._validation import check_finite, check_real, format_value
from .vocabulary import (DECISION_ID_PATTERN, DECISION_ID_RULE, EXPIRY_OUTCOMES, MAX_ID_LENGTH,
                         REWARD_STATUSES, check_decision_id)

__all__ = ["DecisionEvent", "RewardEvent", "ExpiryEvent", "Event", "SCHEMA_VERSION",
           "REWARD_STATUSES", "EXPIRY_OUTCOMES", "MAX_ID_LENGTH",
           "DECISION_ID_RULE", "DECISION_ID_PATTERN", "check_decision_id",
           "check_timestamp", "check_count", "check_decision", "check_reward", "check_expiry",
           "decode"]

#: The version of the records (and of the Parquet export's ``schema_version``): version 2
#: (shadow mode) adds ``policy_action`` and lets a shadow decision's propensity be null.
#: The SQLite file's own version is :data:`glmbandits.data.sqlite_log.SCHEMA_VERSION`.
SCHEMA_VERSION = 2


@dataclass(frozen=True, eq=False)
class DecisionEvent:
    """A logged decision: the contexts, the full distribution and the chosen action.

    A shadow decision (``policy_action`` not None) shows the caller's default
    ``action``: its ``propensity`` is None (unknown: the caller chose) and
    ``probabilities`` is the policy's own distribution, from which it drew
    ``policy_action``.
    """

    sequence: int
    decision_id: str
    timestamp: float
    contexts: np.ndarray        # (K, d) float64
    probabilities: np.ndarray   # (K,) float64
    action: int
    propensity: float | None
    model_version: int
    policy_action: int | None = None
    kind: str = "decision"

    @property
    def shadow(self) -> bool:
        """Whether the caller's default action was shown (shadow mode)."""
        return self.policy_action is not None


@dataclass(frozen=True)
class RewardEvent:
    """A received reward and what the policy did with it (``status``: :data:`REWARD_STATUSES`)."""

    sequence: int
    decision_id: str
    timestamp: float
    reward: float
    status: str
    kind: str = "reward"


@dataclass(frozen=True)
class ExpiryEvent:
    """A decision closed by expiry (``outcome``: :data:`EXPIRY_OUTCOMES`) and the reward learned."""

    sequence: int
    decision_id: str
    timestamp: float
    outcome: str
    reward: float | None
    kind: str = "expiry"


Event = Union[DecisionEvent, RewardEvent, ExpiryEvent]


# -- input checks (they mirror the policy's, so the log never holds what a policy could not
# -- have written; they run before anything is written) ----------------------------------
def check_timestamp(value: Any, owner: str) -> float:
    return check_real(value, owner, "timestamp")


def check_count(value: Any, owner: str, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, got {type(value).__name__}")
    return int(value)


def float_array(value: Any, owner: str, name: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise TypeError(f"{owner}: {name} must be an array of real numbers, got dtype "
                        f"{array.dtype}")
    return np.ascontiguousarray(array, dtype="<f8")


def check_decision(owner: str, decision_id: Any, timestamp: Any, contexts: Any,
                    probabilities: Any, action: Any, propensity: Any, model_version: Any,
                    policy_action: Any = None) -> tuple[Any, ...]:
    """The checked row values of a decision. A live decision has ``propensity`` =
    ``probabilities[action]``; a shadow decision has ``policy_action`` (a row with
    positive probability) and ``propensity`` None."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    X = float_array(contexts, owner, "contexts")
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{owner}: contexts must be a 2-d array of shape (K, d) with K, d >= 1, "
                         f"got shape {X.shape}")
    # the readers' rule (finite, |x| <= MAX_MAGNITUDE), so that no accepted decision makes
    # the log unreadable for LoggedBanditData or a policy rebuilt from it
    check_finite(X, owner, "contexts")
    K = X.shape[0]
    p = float_array(probabilities, owner, "probabilities")
    if p.shape != (K,):
        raise ValueError(f"{owner}: probabilities must have shape ({K},) (one per row of "
                         f"contexts), got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0.0) or np.any(p > 1.0):
        raise ValueError(f"{owner}: probabilities must be finite and lie in [0, 1], got "
                         f"{p.tolist() if K <= 8 else 'a value outside'}")
    total = float(p.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"{owner}: probabilities must sum to 1, got a sum of {total!r}")
    action = check_count(action, owner, "action")
    if not 0 <= action < K:
        raise ValueError(f"{owner}: action must lie in [0, {K - 1}], got {action}")
    if policy_action is not None:
        policy_action = check_count(policy_action, owner, "policy_action")
        if not 0 <= policy_action < K or not p[policy_action] > 0.0:
            raise ValueError(f"{owner}: policy_action must be a row in [0, {K - 1}] with "
                             f"positive probability, got {policy_action}")
        if propensity is not None:
            raise ValueError(f"{owner}: a shadow decision (policy_action given) has "
                             f"propensity None (the caller chose action), got "
                             f"{format_value(propensity)}")
    elif propensity is None:
        raise ValueError(f"{owner}: propensity must be a number (probabilities[action]); "
                         "it is None only for a shadow decision, which gives policy_action")
    else:
        propensity = check_real(propensity, owner, "propensity")
        if not 0.0 < propensity <= 1.0 or abs(propensity - float(p[action])) > 1e-9:
            raise ValueError(f"{owner}: propensity must equal probabilities[action] = "
                             f"{format_value(float(p[action]))} and lie in (0, 1], got "
                             f"{format_value(propensity)}")
    model_version = check_count(model_version, owner, "model_version")
    if model_version < 0:
        raise ValueError(f"{owner}: model_version must be >= 0, got {model_version}")
    return ("decision", decision_id, timestamp, K, X.shape[1], X.tobytes(), p.tobytes(),
            action, propensity, model_version, None, None, policy_action)


def decode(row: tuple[Any, ...]) -> Event:
    (sequence, kind, decision_id, timestamp, K, d, contexts, probabilities, action,
     propensity, model_version, reward, status, policy_action) = row
    if kind == "decision":
        X = np.frombuffer(contexts, dtype="<f8").reshape(K, d).astype(np.float64)
        p = np.frombuffer(probabilities, dtype="<f8").astype(np.float64)
        return DecisionEvent(sequence, decision_id, timestamp, X, p, action, propensity,
                             model_version, policy_action)
    if kind == "reward":
        return RewardEvent(sequence, decision_id, timestamp, reward, status)
    return ExpiryEvent(sequence, decision_id, timestamp, status, reward)


def check_reward(owner: str, decision_id: Any, timestamp: Any, reward: Any,
                 status: Any) -> tuple[Any, ...]:
    """The checked row values of a reward event (status one of :data:`REWARD_STATUSES`)."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    reward = check_real(reward, owner, "reward")
    if status not in REWARD_STATUSES:
        raise ValueError(f"{owner}: status must be one of {list(REWARD_STATUSES)}, "
                         f"got {status!r}")
    return ("reward", decision_id, timestamp, None, None, None, None, None, None, None,
            reward, status, None)


def check_expiry(owner: str, decision_id: Any, timestamp: Any, outcome: Any,
                 reward: Any) -> tuple[Any, ...]:
    """The checked row values of an expiry event (outcome one of :data:`EXPIRY_OUTCOMES`;
    ``reward`` None exactly when the outcome is ``"dropped"``)."""
    decision_id = check_decision_id(decision_id, owner)
    timestamp = check_timestamp(timestamp, owner)
    if outcome not in EXPIRY_OUTCOMES:
        raise ValueError(f"{owner}: outcome must be one of {list(EXPIRY_OUTCOMES)}, "
                         f"got {outcome!r}")
    if outcome == "dropped":
        if reward is not None:
            raise ValueError(f"{owner}: reward must be None when outcome is 'dropped', "
                             f"got {format_value(reward)}")
    else:
        reward = check_real(reward, owner, "reward")
    return ("expiry", decision_id, timestamp, None, None, None, None, None, None, None,
            reward, outcome, None)
