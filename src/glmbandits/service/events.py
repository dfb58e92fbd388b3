"""The events of the service's log, and the sink that writes a policy's events to a store.

The sink, :class:`~glmbandits.data.event_records.LogSink`, lives beside the event type
(a policy's events become :class:`Event` rows there); it is passed on here.

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

from typing import Callable, Iterator

from ..data.event_records import Event, LogSink, event_from_row, event_row
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
