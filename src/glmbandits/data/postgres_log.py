"""The one PostgreSQL event log: its table's shape, its append transaction, its paged reads.

A policy's :class:`~glmbandits.data.PostgresEventLog` (table ``glmbandits_events``) and
the decision service's :class:`~glmbandits.service.postgres_store.PostgresStore` (table
``glmbandits_service_events``) write their logs through :class:`PostgresLog`: the same
columns (``seq bigserial`` and :data:`~glmbandits.data.sqlite_log.ROW_COLUMNS`, the
SQLite log's), one append (under the log's advisory lock, held to the commit, so that
sequence order is commit order), one paged reader of
:class:`~glmbandits.data.event_records.Event` rows. What each adds stays with it: the
policy's checked writers and its ``batch()``; the service's counters, model versions,
metadata, serve lock and one-decision-per-id index.

**Sequence order is commit order.** A ``bigserial`` value is drawn when a row is
inserted, not when it commits, so with concurrent writers event 7 could commit before
event 6, and a reader that had read up to 7 would never see 6. Every append therefore
takes ``pg_advisory_xact_lock`` on the log's append key first: appends queue until the
commit (readers are not blocked), so ``seq > last`` never misses an event. A
rolled-back append leaves a gap that is never filled.

A policy's table of schema version 2 (key ``sequence``, a ``n_features`` column, no
``excluded``, ``older_than`` or ``tag``, ``kind`` limited to a policy's kinds) is
brought to this shape in place by :func:`policy_table_upgrade` (its rows kept as they
are: same sequence numbers, same bytes).

References
----------
PostgreSQL documentation, "Advisory Locks" (13.3.5) and "Sequence Manipulation
Functions" (sequences are non-transactional).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from .sqlite_log import ROW_COLUMNS

__all__ = ["PostgresLog", "policy_table_upgrade"]


def policy_table_upgrade(table: str) -> tuple[str, ...]:
    """The statements that bring a policy's log table of schema version 2 to the one
    shape (metadata changes only: no row is rewritten)."""
    return (f"ALTER TABLE {table} RENAME COLUMN sequence TO seq",
            f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_kind_check",
            f"ALTER TABLE {table} ALTER COLUMN decision_id DROP NOT NULL",
            f"ALTER TABLE {table} DROP COLUMN n_features",
            f"ALTER TABLE {table} ADD COLUMN excluded text",
            f"ALTER TABLE {table} ADD COLUMN older_than double precision",
            f"ALTER TABLE {table} ADD COLUMN tag integer")


class PostgresLog:
    """The SQL of one event-log table (``table``) and its append lock (``append_key``).

    Connections and transactions stay with the caller (the policy's log retries a
    cut connection, the service's store stages a batch): :meth:`append` runs inside
    the caller's transaction.

    Examples
    --------
    >>> log = PostgresLog("glmbandits_events", 42)
    >>> log.query(kinds=("decision",)).split(" WHERE ")[1]
    'seq > %s AND kind IN (%s) ORDER BY seq LIMIT %s'
    """

    def __init__(self, table: str, append_key: int) -> None:
        self.table = table
        self.append_key = append_key
        #: ``seq`` and :data:`ROW_COLUMNS`, what ``event_from_row`` decodes
        self.select = "seq, " + ", ".join(ROW_COLUMNS)
        self._insert = (f"INSERT INTO {table} ({', '.join(ROW_COLUMNS)}) VALUES "
                        f"({', '.join(['%s'] * len(ROW_COLUMNS))}) RETURNING seq")

    def lock(self, connection: Any) -> None:
        """Take the append lock in ``connection``'s open transaction (to its end)."""
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (self.append_key,))

    def insert(self, connection: Any, rows: list[tuple[Any, ...]]) -> int:
        """Insert event rows (the values of :data:`ROW_COLUMNS`) in the open transaction,
        which holds the append lock; the largest ``seq`` given (0 for none)."""
        if not rows:
            return 0
        cursor = connection.cursor()
        cursor.executemany(self._insert, rows, returning=True)
        last = 0
        while True:
            last = max(last, int(cursor.fetchone()[0]))
            if not cursor.nextset():
                return last

    def append(self, connection: Any, rows: list[tuple[Any, ...]]) -> int:
        """:meth:`lock`, then :meth:`insert`, in the open transaction; the last ``seq``."""
        self.lock(connection)
        return self.insert(connection, rows)

    def query(self, *, kinds: Iterable[str] = ()) -> str:
        """The page query: rows ``(seq, *ROW_COLUMNS)`` with ``seq > %s`` of ``kinds``
        (default: all), in order, ``LIMIT %s``."""
        kinds = tuple(kinds)
        where = "seq > %s" + (f" AND kind IN ({', '.join(['%s'] * len(kinds))})"
                              if kinds else "")
        return f"SELECT {self.select} FROM {self.table} WHERE {where} ORDER BY seq LIMIT %s"

    def rows(self, read: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
             after: int, size: int, *, kinds: Iterable[str] = ()) -> list[tuple[Any, ...]]:
        """One page (see :meth:`query`), read with ``read(sql, params)``."""
        kinds = tuple(kinds)
        return read(self.query(kinds=kinds), (after, *kinds, size))

    @property
    def last_seq_query(self) -> str:
        """The query of the last committed ``seq`` (0 for an empty log)."""
        return f"SELECT coalesce(max(seq), 0) FROM {self.table}"

    @property
    def counts_query(self) -> str:
        """The query of ``(kind, status, count)`` over the whole log."""
        return f"SELECT kind, status, count(*) FROM {self.table} GROUP BY kind, status"
