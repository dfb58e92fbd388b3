"""What the SQLite and PostgreSQL event logs share: the writers' checks and the readers.

:class:`EventLogBase` holds everything of :class:`~glmbandits.data.EventLog` and
:class:`~glmbandits.data.postgres_event_log.PostgresEventLog` that does not depend
on the database: the three ``record_*`` methods of the ``EventSink`` protocol
(each checked by :mod:`.event_records` before anything is written), the paged
reader :meth:`~EventLogBase.events` (of :class:`~glmbandits.data.event_records.Event`,
the one event type) and the counts. A backend gives its table, its
parameter marker and columns, and three hooks: ``_live`` (the open connection, or
ValueError once closed), ``_append`` (write one checked row, committed outside a
batch) and ``_read`` (the rows of a query).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np

from .event_records import (Event, check_count, check_decision, check_expiry, check_reward,
                            event_from_row)
from .vocabulary import EXPIRY_OUTCOMES, RECORD_KINDS, REWARD_STATUSES

__all__ = ["EventLogBase"]

#: rows read per query by :meth:`EventLogBase.events`
PAGE = 1024


class EventLogBase:
    """The database-independent half of an event log (see the module docstring)."""

    #: the events table, the query parameter marker, and the columns ``event_from_row``
    #: reads (``seq`` and :data:`~glmbandits.data.sqlite_log.ROW_COLUMNS`)
    _table = "events"
    _param = "?"
    _columns = ""
    #: the sequence column, and an SQL condition keeping the record kinds (a table that
    #: holds other kinds too: the SQLite log a service writes)
    _key = "sequence"
    _kinds_sql = ""
    #: how to get the log back after it was closed (for the pickling refusal)
    _reopen_hint = "reopen the log"

    # -- what a backend implements ------------------------------------------------------
    def _live(self, owner: str) -> Any:
        """The open connection (ValueError naming ``owner`` once the log is closed)."""
        raise NotImplementedError

    def _append(self, owner: str, values: tuple[Any, ...]) -> None:
        """Write one checked row (the values of ``ROW_COLUMNS``; committed when this
        returns, outside a batch)."""
        raise NotImplementedError

    def _read(self, owner: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple]:
        """The rows of one query."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- context manager and pickling ---------------------------------------------------
    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError(f"{type(self).__name__}: an open database connection cannot be "
                        f"pickled; {self._reopen_hint}")

    # -- writing ------------------------------------------------------------------------
    def record_decision(self, decision_id: str, timestamp: float, contexts: np.ndarray,
                        probabilities: np.ndarray, action: int, propensity: float | None,
                        model_version: int, *, tag: int | None = None,
                        policy_action: int | None = None) -> None:
        """Append one decision; committed when this returns (outside ``batch()``).

        ``contexts`` (K, d) and ``probabilities`` (K,) are stored as float64
        bytes, so they read back bit for bit. Every argument is checked first
        (``propensity`` must equal ``probabilities[action]``; a shadow decision
        gives ``policy_action``, the policy's own choice, and ``propensity`` None);
        a bad one raises TypeError/ValueError naming it, and nothing is written.
        ``tag`` is not stored (the service's log keeps it).
        """
        owner = f"{type(self).__name__}.record_decision"
        self._live(owner)
        self._append(owner, check_decision(owner, decision_id, timestamp, contexts,
                                           probabilities, action, propensity, model_version,
                                           policy_action))

    def record_reward(self, decision_id: str, timestamp: float, reward: float,
                      status: str) -> None:
        """Append one received reward with its status (one of :data:`REWARD_STATUSES`)."""
        owner = f"{type(self).__name__}.record_reward"
        self._live(owner)
        self._append(owner, check_reward(owner, decision_id, timestamp, reward, status))

    def record_expiry(self, decision_id: str, timestamp: float, outcome: str,
                      reward: float | None) -> None:
        """Append the closing of a decision by expiry (:data:`EXPIRY_OUTCOMES`).

        ``reward`` is None for ``"dropped"`` and the learned value (the default
        reward, or the held sum) for ``"default"`` and ``"learned"``.
        """
        owner = f"{type(self).__name__}.record_expiry"
        self._live(owner)
        self._append(owner, check_expiry(owner, decision_id, timestamp, outcome, reward))

    # -- reading ------------------------------------------------------------------------
    def events(self, after: int = 0, limit: int | None = None, *,
               kind: str | None = None) -> Iterator[Event]:
        """The events with sequence number > ``after``, in sequence order.

        Yields :class:`~glmbandits.data.event_records.Event` of the kinds a policy
        writes (arrays decoded from the stored bytes). Reads page by page, so a
        long log is never held in memory, and events appended while iterating are
        seen. ``kind`` keeps one kind ("decision", "reward" or "expiry").
        """
        owner = f"{type(self).__name__}.events"
        after = check_count(after, owner, "after")
        if limit is not None:
            limit = check_count(limit, owner, "limit")
            if limit < 0:
                raise ValueError(f"{owner}: limit must be >= 0 or None, got {limit}")
        if kind is not None and kind not in RECORD_KINDS:
            raise ValueError(f"{owner}: kind must be 'decision', 'reward', 'expiry' or None, "
                             f"got {kind!r}")
        self._live(owner)
        marker, key = self._param, self._key
        where = f"{key} > {marker}" + (self._kinds_sql if kind is None else
                                       f" AND kind = {marker}")
        remaining = math.inf if limit is None else limit
        last = after
        while remaining > 0:
            page = int(min(PAGE, remaining))
            params: tuple[Any, ...] = (last,) if kind is None else (last, kind)
            rows = self._read(owner, f"SELECT {self._columns} FROM {self._table} WHERE {where} "
                              f"ORDER BY {key} LIMIT {marker}", (*params, page))
            for row in rows:
                yield event_from_row(row)
            if len(rows) < page:
                return
            last = rows[-1][0]
            remaining -= len(rows)

    def decisions(self, after: int = 0) -> Iterator[Event]:
        """The decision events, in sequence order."""
        return self.events(after, kind="decision")

    def rewards(self, after: int = 0) -> Iterator[Event]:
        """The reward events (every status), in sequence order."""
        return self.events(after, kind="reward")

    def expiries(self, after: int = 0) -> Iterator[Event]:
        """The expiry events, in sequence order."""
        return self.events(after, kind="expiry")

    def _scalar(self, owner: str, sql: str) -> Any:
        return self._read(owner, sql)[0][0]

    def __len__(self) -> int:
        return int(self._scalar(f"{type(self).__name__}.__len__",
                                f"SELECT count(*) FROM {self._table} WHERE TRUE{self._kinds_sql}"))

    @property
    def last_sequence(self) -> int:
        """The sequence number of the last committed event (0 for an empty log)."""
        return int(self._scalar(f"{type(self).__name__}.last_sequence",
                                f"SELECT coalesce(max({self._key}), 0) FROM {self._table}"))

    def counts(self) -> dict[str, Any]:
        """How many events of each kind, and by status (rewards) or outcome (expiries).

        Returns
        -------
        dict
            ``{"decision": n, "reward": {status: n, ...}, "expiry": {outcome: n, ...}}``,
            every status and outcome present (0 when none); totals over every process
            that writes to the database.
        """
        rows = self._read(f"{type(self).__name__}.counts",
                          f"SELECT kind, status, count(*) FROM {self._table} "
                          f"WHERE TRUE{self._kinds_sql} GROUP BY kind, status")
        result: dict[str, Any] = {"decision": 0,
                                  "reward": dict.fromkeys(REWARD_STATUSES, 0),
                                  "expiry": dict.fromkeys(EXPIRY_OUTCOMES, 0)}
        for kind, status, n in rows:
            if kind == "decision":
                result["decision"] += int(n)
            else:
                result[kind][status] = int(n)
        return result
