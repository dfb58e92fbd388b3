"""The one event type of the logs, :class:`Event`: its fields, checks, stored row and decoding.

Every log reads and writes it: a policy's :class:`~glmbandits.data.EventLog` and
:class:`~glmbandits.data.PostgresEventLog`, the decision service's stores, the
decision-reward join and the Parquet export (:mod:`.event_join`, :mod:`.event_export`),
which read it without importing any database code. The vocabulary it uses (kinds,
statuses, the decision-id rule) is :mod:`.vocabulary`'s; its names are passed on here for
the readers that import them from this module.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._validation import check_finite, check_real, format_value
from .sqlite_log import ROW_COLUMNS
from .vocabulary import (DECISION_ID_PATTERN, DECISION_ID_RULE, EXPIRY_OUTCOMES, MAX_ID_LENGTH,
                         REWARD_STATUSES, check_decision_id)

__all__ = ["Event", "SCHEMA_VERSION", "ROW_COLUMNS", "REWARD_STATUSES", "EXPIRY_OUTCOMES",
           "MAX_ID_LENGTH", "DECISION_ID_RULE", "DECISION_ID_PATTERN", "check_decision_id",
           "check_timestamp", "check_count", "check_decision", "check_reward", "check_expiry",
           "event_row", "event_from_row", "LogSink"]

#: The version of the records (and of the Parquet export's ``schema_version``): version 2
#: (shadow mode) adds ``policy_action`` and lets a shadow decision's propensity be null;
#: version 3 adds ``request`` (a named-feature request as sent; the joined export's
#: nullable ``request`` column). Readers read every version up to this one; a column a
#: file of an older version lacks reads as null. The SQLite file's own version is
#: :data:`glmbandits.data.sqlite_log.SCHEMA_VERSION`.
SCHEMA_VERSION = 3


@dataclass(frozen=True)
class Event:
    """One event of a log (fields that do not apply to a kind are None).

    ``kind`` is one of :data:`~glmbandits.data.vocabulary.EVENT_KINDS`: a policy writes
    ``decision`` (the contexts, the full distribution, the chosen ``action``, its
    ``propensity``, the ``model_version``; a shadow decision shows the caller's default
    ``action``, has ``propensity`` None and the policy's own choice in
    ``policy_action``), ``reward`` (``reward`` and what the policy did with it,
    ``status``: :data:`REWARD_STATUSES`) and ``expiry`` (a decision closed without
    rewards: ``status`` is the outcome, :data:`EXPIRY_OUTCOMES`, ``reward`` the value
    learned or None); the service also writes ``retry`` (a repeated decide) and
    ``expire`` (a sweep, ``older_than``), ``catalogue`` (an action put or deleted:
    ``status``, the action in ``request``), the request's ``excluded`` rows, a
    named-feature request as sent (``request``) and the policy's ``tag``. ``seq`` (alias ``sequence``) increases in commit order.

    Examples
    --------
    >>> event = Event("expiry", "a", 3.0, seq=7, status="default", reward=0.0)
    >>> event.sequence, event.outcome, event.to_json()["status"]
    (7, 'default', 'default')
    """

    kind: str
    decision_id: str | None
    timestamp: float
    seq: int = 0
    contexts: np.ndarray | None = None
    excluded: tuple[int, ...] | None = None
    action: int | None = None
    probabilities: np.ndarray | None = None
    propensity: float | None = None
    model_version: int | None = None
    reward: float | None = None
    status: str | None = None
    older_than: float | None = None
    policy_action: int | None = None
    tag: int | None = None
    #: JSON text: a named-feature decide's request as sent (``context``, ``actions`` or
    #: ``action_ids``, ``excluded_ids``), or a ``catalogue`` event's action (``id``,
    #: ``features``); None otherwise. See :attr:`request_json`.
    request: str | None = None

    @property
    def request_json(self) -> Any:
        """:attr:`request` decoded (None when there is none)."""
        return None if self.request is None else json.loads(self.request)

    @property
    def sequence(self) -> int:
        """The sequence number (``seq``), as a policy's log names it."""
        return self.seq

    @property
    def outcome(self) -> str | None:
        """An expiry's outcome (its ``status``: :data:`EXPIRY_OUTCOMES`)."""
        return self.status

    @property
    def shadow(self) -> bool:
        """Whether the caller's default action was shown (shadow mode)."""
        return self.policy_action is not None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with the fields that apply (floats round-trip exactly)."""
        out: dict[str, Any] = {"seq": self.seq, "kind": self.kind,
                               "decision_id": self.decision_id, "timestamp": self.timestamp}
        if self.contexts is not None:
            out["contexts"] = self.contexts.tolist()
        for name in ("excluded", "action", "policy_action", "propensity", "model_version",
                     "tag", "status", "older_than"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if name == "excluded" else value
        if self.probabilities is not None:
            out["probabilities"] = self.probabilities.tolist()
        if self.reward is not None or self.kind == "reward":
            out["reward"] = self.reward
        if self.request is not None:
            out["request"] = self.request_json
        return out

    @staticmethod
    def encode_excluded(excluded: tuple[int, ...] | None) -> str | None:
        """The excluded rows as stored (JSON text, or None)."""
        return None if excluded is None else json.dumps(list(excluded))

    @staticmethod
    def decode_excluded(text: str | None) -> tuple[int, ...] | None:
        """Inverse of :meth:`encode_excluded`."""
        return None if text is None else tuple(int(i) for i in json.loads(text))


def event_row(event: Event) -> tuple[Any, ...]:
    """The values of :data:`ROW_COLUMNS` (the log's columns after ``seq``) for ``event``
    (arrays as float64 bytes)."""
    X = event.contexts
    return (event.kind, event.decision_id, event.timestamp,
            None if X is None else X.shape[0],
            None if X is None else np.ascontiguousarray(X, dtype=np.float64).tobytes(),
            Event.encode_excluded(event.excluded), event.action,
            None if event.probabilities is None else
            np.ascontiguousarray(event.probabilities, dtype=np.float64).tobytes(),
            event.propensity, event.model_version, event.reward, event.status,
            event.older_than, event.policy_action, event.tag, event.request)


def event_from_row(row: tuple[Any, ...]) -> Event:
    """Inverse of :func:`event_row`, for a stored row ``(seq, *ROW_COLUMNS)`` (``request``
    NULL where a version-3 file read as it is lacks the column)."""
    (seq, kind, decision_id, timestamp, n_actions, contexts, excluded, action,
     probabilities, propensity, model_version, reward, status, older_than, policy_action,
     tag, request) = row
    X = None
    if contexts is not None:
        X = np.frombuffer(contexts, dtype=np.float64).reshape(n_actions, -1).copy()
    p = None if probabilities is None else np.frombuffer(probabilities, dtype=np.float64).copy()
    return Event(kind, decision_id, timestamp, seq=seq, contexts=X,
                 excluded=Event.decode_excluded(excluded), action=action, probabilities=p,
                 propensity=propensity, model_version=model_version, reward=reward,
                 status=status, older_than=older_than, policy_action=policy_action, tag=tag,
                 request=request)


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
    """The checked row (the values of :data:`ROW_COLUMNS`) of a decision. A live
    decision has ``propensity`` = ``probabilities[action]``; a shadow decision has
    ``policy_action`` (a row with positive probability) and ``propensity`` None."""
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
    return ("decision", decision_id, timestamp, K, X.tobytes(), None, action, p.tobytes(),
            propensity, model_version, None, None, None, policy_action, None, None)


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
            reward, status, None, None, None, None)


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
            reward, outcome, None, None, None, None)


class LogSink:
    """The ``event_log`` of a served policy: turns its events into :class:`Event` rows.

    ``append`` is the store's (it writes inside the open transaction); the
    request's excluded rows are set by the service before each ``decide``,
    since the policy's sink protocol does not carry them.
    """

    def __init__(self, append: Callable[[Event], None]) -> None:
        self.append = append
        self.excluded: tuple[int, ...] | None = None
        #: a named-feature decide's request as sent (JSON text), set around its decide
        self.request: str | None = None

    def record_decision(self, decision_id: str, timestamp: float, contexts: np.ndarray,
                        probabilities: np.ndarray, action: int, propensity: float | None,
                        model_version: int, *, tag: int | None = None,
                        policy_action: int | None = None) -> None:
        """A ``decision`` event (shadow mode: propensity None, ``policy_action`` set)."""
        # no copy: the store writes the bytes at once, and the policy passes its checked
        # float64 contexts, which nothing changes afterwards (np.array copied 40 KB per
        # K=100, d=50 decision for nothing)
        self.append(Event("decision", decision_id, timestamp,
                          contexts=np.asarray(contexts, dtype=np.float64),
                          excluded=self.excluded, action=int(action),
                          probabilities=np.array(probabilities, dtype=np.float64),
                          propensity=None if propensity is None else float(propensity),
                          model_version=int(model_version),
                          tag=None if tag is None else int(tag),
                          policy_action=None if policy_action is None else int(policy_action),
                          request=self.request))

    def record_reward(self, decision_id: str, timestamp: float, reward: float,
                      status: str) -> None:
        self.append(Event("reward", decision_id, timestamp, reward=float(reward),
                          status=status))

    def record_expiry(self, decision_id: str, timestamp: float, outcome: str,
                      reward: float | None) -> None:
        value = None if reward is None or not math.isfinite(reward) else float(reward)
        self.append(Event("expiry", decision_id, timestamp, reward=value, status=outcome))
