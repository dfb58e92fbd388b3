"""The events of the service's log, and the sink that writes a policy's events to a store.

The event type, :class:`~glmbandits.data.event_records.Event`, is the one every log
reads and writes (a policy's too); it and its row encoding are passed on here.

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

import math
from typing import Callable, Iterator

import numpy as np

from ..data.event_records import Event, event_from_row, event_row
from ..data.sqlite_log import ROW_COLUMNS, page_rows
from ..data.vocabulary import EVENT_KINDS, total_keys

__all__ = ["Event", "LogSink", "EVENT_KINDS", "ROW_COLUMNS", "event_row", "event_from_row",
           "total_keys", "page_events"]


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
