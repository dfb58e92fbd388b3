"""An append-only PostgreSQL event log with the interface of the SQLite :class:`EventLog`.

:class:`PostgresEventLog` is what several service processes on several machines
write to and what the one learner reads (the scale-out topology): the same
``record_decision``/``record_reward``/``record_expiry`` (the ``EventSink``
protocol of :mod:`glmbandits.policies.decisions`, implemented structurally),
``events(after=...)``, ``decisions()``/``rewards()``/``expiries()``, ``counts()``,
``len()``, ``last_sequence``, ``batch()`` and ``close()``, and the same event
records and input checks (:mod:`.event_records`), so a reader cannot tell the two
apart except by where they live.

Schema (created and migrated by the code, one transaction under an advisory lock,
so two processes starting at once do not race):

* ``glmbandits_schema_version (component text primary key, version integer,
  migrated_at timestamptz)``: the row ``('event_log', N)`` records the version;
  a database with a newer version is refused, never modified.
* ``glmbandits_events``: one row per event (version 2 added ``policy_action``, set
  on shadow decisions, whose ``propensity`` is null; version 3 the one log's shape;
  version 4 the ``request`` column, JSON text, by ``ADD COLUMN``: no row rewritten),
  ``seq bigserial primary key``, the columns of the SQLite log (``contexts`` and
  ``probabilities`` as float64 ``bytea``), an index on ``decision_id``, triggers that
  refuse UPDATE, DELETE and TRUNCATE.

**Sequence order is commit order.** The table has the one PostgreSQL log's shape and
is appended to as :mod:`.postgres_log` says (every append holds the log's advisory lock
until its commit: writers queue, readers are not blocked, and a tailing reader that asks
for ``events(after=last)`` never misses an event); :meth:`batch` groups many events
into one commit. Version 3 gave the table that shape (key ``seq``, the service's
columns): a version-2 table is migrated in place, its rows kept as they are.

Durability: each ``record_*`` commits before it returns; whether a commit is
fsynced is the server's ``synchronous_commit``/``fsync`` setting (on by default).
A connection that was cut (server restart) is reopened by the next call; when the
cut shows before the event was sent (at BEGIN), the call simply retries once on the
new connection. A call that loses its connection after sending the event raises
``psycopg.OperationalError``, and its event may or may not be in the log (look it
up by decision id).

References
----------
Agarwal et al. (2016), "Making Contextual Decisions with Low Technical Debt",
arXiv:1606.03966 (the log is the source of truth). PostgreSQL documentation,
"Explicit Locking" (section 13.3) and "Sequence Manipulation Functions"
(sequences are non-transactional).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .._validation import check_real
from .event_log_base import EventLogBase
from .postgres_locks import (advisory_key, apply_migrations, connect, redact_url,
                             require_psycopg)
from .postgres_log import PostgresLog, policy_table_upgrade

__all__ = ["PostgresEventLog", "POSTGRES_SCHEMA_VERSION", "MIGRATIONS"]

#: The schema steps, in order: applying ``MIGRATIONS[:n]`` gives schema version n.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # version 1
        """CREATE TABLE glmbandits_events (
            sequence      bigserial PRIMARY KEY,
            kind          text NOT NULL CHECK (kind IN ('decision', 'reward', 'expiry')),
            decision_id   text NOT NULL,
            timestamp     double precision NOT NULL,
            n_actions     integer,
            n_features    integer,
            contexts      bytea,
            probabilities bytea,
            action        integer,
            propensity    double precision,
            model_version bigint,
            reward        double precision,
            status        text)""",
        "CREATE INDEX glmbandits_events_decision_id ON glmbandits_events (decision_id)",
        """CREATE FUNCTION glmbandits_events_append_only() RETURNS trigger
           LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'the event log is append-only'; END $$""",
        """CREATE TRIGGER glmbandits_events_no_change BEFORE UPDATE OR DELETE
           ON glmbandits_events FOR EACH ROW EXECUTE FUNCTION glmbandits_events_append_only()""",
        """CREATE TRIGGER glmbandits_events_no_truncate BEFORE TRUNCATE
           ON glmbandits_events FOR EACH STATEMENT
           EXECUTE FUNCTION glmbandits_events_append_only()""",
    ),
    (  # version 2: shadow mode (the propensity of a shadow decision is null)
        "ALTER TABLE glmbandits_events ADD COLUMN policy_action integer",
    ),
    # version 3: the one PostgreSQL log's shape (key seq, the service's columns)
    policy_table_upgrade("glmbandits_events"),
    # version 4: a named-feature request as sent (JSON text; null before)
    ("ALTER TABLE glmbandits_events ADD COLUMN IF NOT EXISTS request text",),
)
POSTGRES_SCHEMA_VERSION = len(MIGRATIONS)
COMPONENT = "event_log"
def migrate(connection: Any, owner: str) -> int:
    """Create or migrate the event-log schema on an autocommit ``connection``; its version.

    :func:`~glmbandits.data.postgres_locks.apply_migrations` with :data:`MIGRATIONS`
    (one transaction under an advisory lock; a newer or foreign schema is refused
    with ValueError and left unchanged).
    """
    return apply_migrations(connection, owner, COMPONENT, MIGRATIONS, "glmbandits_events",
                            what="event log")


class PostgresEventLog(EventLogBase):
    """An append-only event log in a PostgreSQL database (see the module docstring).

    Parameters
    ----------
    url : str
        ``postgresql://user[:password]@host[:port]/database`` (a libpq URL; its
        password never appears in messages or the repr).
    connect_timeout : float, default 10.0
        Seconds to wait for the server when connecting.

    Raises
    ------
    ValueError
        On a URL that is not ``postgresql://`` or ``postgres://``, or a database
        holding a newer schema or a foreign ``glmbandits_events`` table.
    ImportError
        Without psycopg 3 (``pip install 'glmbandits[postgres]'``).
    psycopg.OperationalError
        When the server cannot be reached.
    """

    _table = "glmbandits_events"
    _param = "%s"
    _key = "seq"
    _reopen_hint = "reopen the log by its URL"

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        owner = type(self).__name__
        if not isinstance(url, str):
            raise TypeError(f"{owner}: url must be a str, got {type(url).__name__}")
        if not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{owner}: url must start with postgresql:// (or postgres://), "
                             f"got {redact_url(url)!r}")
        self.connect_timeout = check_real(connect_timeout, owner, "connect_timeout")
        if self.connect_timeout <= 0:
            raise ValueError(f"{owner}: connect_timeout must be > 0, got {connect_timeout!r}")
        self._psycopg = require_psycopg(owner)
        self._url = url
        self.url = redact_url(url)
        self._owner = f"{owner}({self.url!r})"
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._closed = False
        self._transaction: Any = None
        self._connection: Any = None
        self._connection = self._connect()
        try:
            self.schema_version = migrate(self._connection, self._owner)
            schema = self._connection.execute("SELECT current_schema()").fetchone()[0]
        except BaseException:
            self._connection.close()
            raise
        self._log = PostgresLog(self._table,
                                advisory_key(f"glmbandits.event_log.append:{schema}"))
        self._columns = self._log.select

    def _connect(self) -> Any:
        return connect(self._url, application_name="glmbandits-event-log",
                       connect_timeout=self.connect_timeout, owner=self._owner)

    # -- lifecycle ---------------------------------------------------------------
    def _live(self, owner: str) -> Any:
        """The open connection, reopened if the server cut it (not inside a batch)."""
        if self._closed:
            raise ValueError(f"{owner}: the event log {self.url!r} is closed")
        if self._connection.closed or self._connection.broken:
            if self._batch_depth:
                raise self._psycopg.OperationalError(
                    f"{owner}: the connection was lost inside batch(); its events were not "
                    "committed")
            self._connection.close()
            self._connection = self._connect()
        return self._connection

    def close(self) -> None:
        """Close the connection (idempotent); later calls raise ValueError."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return f"PostgresEventLog({self.url!r}{', closed' if self._closed else ''})"

    # -- writing -------------------------------------------------------------------
    def _append(self, owner: str, values: tuple[Any, ...]) -> None:
        with self._lock:
            if self._batch_depth:
                self._log.insert(self._live(owner), [values])
                return
            for attempt in (1, 2):
                connection = self._live(owner)
                sent = False
                try:
                    with connection.transaction():  # committed when the block exits
                        self._log.lock(connection)
                        sent = True
                        self._log.insert(connection, [values])
                    return
                except self._psycopg.OperationalError:
                    # a connection the server cut while idle (a restart) fails at BEGIN or
                    # LOCK, before the row was sent: reconnecting and trying once more
                    # cannot write it twice. After the INSERT was sent, the outcome is
                    # unknown: the caller hears of it.
                    if sent or attempt == 2 or not connection.broken:
                        raise

    def _read(self, owner: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple]:
        """Rows of a query, retried once on a new connection if the old one was cut."""
        with self._lock:
            for attempt in (1, 2):
                connection = self._live(owner)
                try:
                    rows: list[tuple[Any, ...]] = connection.execute(sql, params).fetchall()
                    return rows
                except self._psycopg.OperationalError:
                    if attempt == 2 or not connection.broken or self._batch_depth:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def batch(self) -> Iterator["PostgresEventLog"]:
        """Group the writes inside the ``with`` block into one transaction (one commit).

        As :meth:`glmbandits.data.EventLog.batch`: the events become durable and
        visible when the block exits, and are committed even if the block raises;
        nested blocks join the outer one. Other writers wait for the block.
        """
        owner = f"{type(self).__name__}.batch"
        with self._lock:
            connection = self._live(owner)
            if self._batch_depth == 0:
                transaction = connection.transaction()
                transaction.__enter__()
                self._transaction = transaction
                self._log.lock(connection)
            self._batch_depth += 1
        try:
            yield self
        finally:
            with self._lock:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    transaction, self._transaction = self._transaction, None
                    transaction.__exit__(None, None, None)  # commit what was written
