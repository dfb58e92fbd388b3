"""The events of the service's log, and the sink that writes a policy's events to a store.

The kinds, statuses and outcomes are the event vocabulary's
(:mod:`glmbandits.data.vocabulary`): ``decision`` (here also with the request's
excluded rows and the policy's tag for the decision: SupCB-GLM's stage, what a
learner that did not make the decision needs to learn from it; a shadow ``retry``
also carries the default ``action`` and ``policy_action``), ``retry``, ``reward``,
``expiry`` and ``expire``.

Every event has a sequence number (``seq``, from 1, increasing in commit order)
and a timestamp in seconds. On SQLite the committed sequence has no gaps; on
PostgreSQL a rolled-back batch leaves a gap that is never filled (sequences are
not transactional), so nothing may count events by subtracting sequence numbers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..data.event_records import DecisionEvent, ExpiryEvent, RewardEvent
from ..data.sqlite_log import ROW_COLUMNS, page_rows
from ..data.vocabulary import DECISION, EVENT_KINDS, EXPIRY, REWARD, total_keys

__all__ = ["Event", "LogSink", "EVENT_KINDS", "ROW_COLUMNS", "event_row", "event_from_row",
           "total_keys", "page_events"]


@dataclass(frozen=True)
class Event:
    """One row of the event log (fields that do not apply to a kind are None)."""

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
        return out

    def record(self) -> DecisionEvent | RewardEvent | ExpiryEvent | None:
        """This event as the event log's record, what the decision-reward join reads (None
        for ``retry`` and ``expire``: a repeated answer and a sweep, whose closings are
        ``expiry`` rows, carry nothing the join needs)."""
        if self.kind == DECISION:
            return DecisionEvent(self.seq, self.decision_id, self.timestamp,  # type: ignore[arg-type]
                                 self.contexts, self.probabilities,  # type: ignore[arg-type]
                                 self.action, self.propensity,  # type: ignore[arg-type]
                                 self.model_version,  # type: ignore[arg-type]
                                 policy_action=self.policy_action)
        if self.kind == REWARD:
            return RewardEvent(self.seq, self.decision_id, self.timestamp,  # type: ignore[arg-type]
                               self.reward, self.status)  # type: ignore[arg-type]
        if self.kind == EXPIRY:
            return ExpiryEvent(self.seq, self.decision_id, self.timestamp,  # type: ignore[arg-type]
                               self.status, self.reward)  # type: ignore[arg-type]
        return None

    @staticmethod
    def encode_excluded(excluded: tuple[int, ...] | None) -> str | None:
        """The excluded rows as stored (JSON text, or None)."""
        return None if excluded is None else json.dumps(list(excluded))

    @staticmethod
    def decode_excluded(text: str | None) -> tuple[int, ...] | None:
        """Inverse of :meth:`encode_excluded`."""
        return None if text is None else tuple(int(i) for i in json.loads(text))


def event_row(event: Event) -> tuple:
    """The values of :data:`ROW_COLUMNS` (the log's columns after ``seq``, declared with
    the one SQLite log, :mod:`glmbandits.data.sqlite_log`) for ``event`` (arrays as
    float64 bytes)."""
    X = event.contexts
    return (event.kind, event.decision_id, event.timestamp,
            None if X is None else X.shape[0],
            None if X is None else np.ascontiguousarray(X, dtype=np.float64).tobytes(),
            Event.encode_excluded(event.excluded), event.action,
            None if event.probabilities is None else
            np.ascontiguousarray(event.probabilities, dtype=np.float64).tobytes(),
            event.propensity, event.model_version, event.reward, event.status,
            event.older_than, event.policy_action, event.tag)


def event_from_row(row: tuple) -> Event:
    """Inverse of :func:`event_row`, for a stored row ``(seq, *ROW_COLUMNS)``."""
    (seq, kind, decision_id, timestamp, n_actions, contexts, excluded, action,
     probabilities, propensity, model_version, reward, status, older_than, policy_action,
     tag) = row
    X = None
    if contexts is not None:
        X = np.frombuffer(contexts, dtype=np.float64).reshape(n_actions, -1).copy()
    p = None if probabilities is None else np.frombuffer(probabilities, dtype=np.float64).copy()
    return Event(kind, decision_id, timestamp, seq=seq, contexts=X,
                 excluded=Event.decode_excluded(excluded), action=action, probabilities=p,
                 propensity=propensity, model_version=model_version, reward=reward,
                 status=status, older_than=older_than, policy_action=policy_action, tag=tag)


def page_events(fetch: Callable[[int, int], list[tuple]], after: int, limit: int | None,
                page: int = 1000) -> Iterator[Event]:
    """Events with ``seq > after`` (at most ``limit``), read page by page:
    ``fetch(last, size)`` returns up to ``size`` stored rows with ``seq > last`` in order."""
    for row in page_rows(fetch, after, limit, page):
        yield event_from_row(row)


class LogSink:
    """The ``event_log`` of a served policy: turns its events into :class:`Event` rows.

    ``append`` is the store's (it writes inside the open transaction); the
    request's excluded rows are set by the service before each ``decide``,
    since the policy's sink protocol does not carry them.
    """

    def __init__(self, append: Callable[[Event], None]) -> None:
        self.append = append
        self.excluded: tuple[int, ...] | None = None

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
                          policy_action=None if policy_action is None else int(policy_action)))

    def record_reward(self, decision_id: str, timestamp: float, reward: float,
                      status: str) -> None:
        self.append(Event("reward", decision_id, timestamp, reward=float(reward),
                          status=status))

    def record_expiry(self, decision_id: str, timestamp: float, outcome: str,
                      reward: float | None) -> None:
        value = None if reward is None or not math.isfinite(reward) else float(reward)
        self.append(Event("expiry", decision_id, timestamp, reward=value, status=outcome))
