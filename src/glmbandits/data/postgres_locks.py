"""PostgreSQL helpers shared by the PostgreSQL event log and the learner role.

* :func:`require_psycopg` imports psycopg 3 (the ``postgres`` extra) with a clear
  message when it is missing; nothing here imports it at module import.
* :func:`advisory_key` turns a name into the signed 64-bit key of an advisory lock.
* :func:`learner_lock` holds a session-level advisory lock for as long as a ``with``
  block runs: exactly one learner works on a database, a second one waits, and
  takes over when the first releases the lock or its connection dies (PostgreSQL
  drops a session's advisory locks when the session ends, ``kill -9`` of the
  process included).
* :func:`try_advisory_lock` takes a session-level lock (exclusive or shared) at once or
  not at all, and :func:`lock_holders` says which sessions hold one (the service's
  "one ``--role all`` per database" lock, whose refusal names the holder).
* :func:`connect` opens a connection the way every glmbandits component does, and
  :func:`apply_migrations` creates or migrates one component's tables with a recorded
  schema version (the event log of :mod:`.postgres_event_log` and the service's store
  of :mod:`glmbandits.service.postgres_store` both use them).

References
----------
PostgreSQL documentation, "Advisory Locks" (section 13.3.5) and "Advisory Lock
Functions" (section 9.27.10).
"""

from __future__ import annotations

import hashlib
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

from .._validation import check_positive

__all__ = ["require_psycopg", "advisory_key", "learner_lock", "AdvisoryLock",
           "LEARNER_LOCK_NAME", "redact_url", "connect", "apply_migrations",
           "try_advisory_lock", "lock_holders"]

#: The default name of the learner's lock (one learner per database).
LEARNER_LOCK_NAME = "glmbandits.learner"


def require_psycopg(owner: str) -> Any:
    """Import and return :mod:`psycopg` (3), or raise an ImportError that says how to get it."""
    try:
        import psycopg
    except ImportError:
        raise ImportError(f"{owner}: PostgreSQL support needs psycopg 3; install it with "
                          "pip install 'glmbandits[postgres]'") from None
    return psycopg


def advisory_key(name: int | str) -> int:
    """The signed 64-bit advisory-lock key of ``name`` (an int is checked and kept).

    A string is hashed (BLAKE2b, 8 bytes), so the same name gives the same key in
    every process and every Python version (unlike ``hash``).

    Examples
    --------
    >>> advisory_key(42)
    42
    >>> advisory_key("glmbandits.learner") == advisory_key("glmbandits.learner")
    True
    >>> -2**63 <= advisory_key("anything") < 2**63
    True
    """
    if isinstance(name, bool) or not isinstance(name, (int, str)):
        raise TypeError(f"advisory_key: name must be an int or a str, got {type(name).__name__}")
    if isinstance(name, int):
        if not -2**63 <= name < 2**63:
            raise ValueError(f"advisory_key: an int key must fit in a signed 64-bit integer, "
                             f"got {name}")
        return name
    if not name:
        raise ValueError("advisory_key: name must be a non-empty str, got ''")
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``, for messages and reprs.

    Examples
    --------
    >>> redact_url("postgresql://app:secret@db.example:5432/events")
    'postgresql://app:***@db.example:5432/events'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def connect(url: str, *, application_name: str, connect_timeout: float = 10.0,
            owner: str = "connect") -> Any:
    """An autocommit psycopg connection to ``url`` (``connect_timeout`` seconds, rounded up)."""
    psycopg = require_psycopg(owner)
    return psycopg.connect(url, autocommit=True,
                           connect_timeout=max(1, math.ceil(connect_timeout)),
                           application_name=application_name)


#: The advisory lock every schema creation or migration holds (all components share it).
_SCHEMA_LOCK = advisory_key("glmbandits.schema")


def apply_migrations(connection: Any, owner: str, component: str,
                     migrations: Sequence[Sequence[str]], guard_table: str, *,
                     what: str | None = None) -> int:
    """Create or migrate ``component``'s tables on an autocommit ``connection``; its version.

    ``migrations[v - 1]`` holds the statements that take the schema from version
    ``v - 1`` to ``v``; the reached version is recorded in the row ``component`` of
    ``glmbandits_schema_version (component, version, migrated_at)``. One transaction
    under a transaction-level advisory lock: concurrent callers wait for each other and
    the second finds the work done. A database whose recorded version is newer than
    ``len(migrations)``, or that holds ``guard_table`` without a recorded version, is
    refused (ValueError) and left unchanged; ``what`` names the component in the
    messages (default: ``component``).
    """
    target = len(migrations)
    what = what or component
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        connection.execute("CREATE TABLE IF NOT EXISTS glmbandits_schema_version ("
                           "component text PRIMARY KEY, version integer NOT NULL, "
                           "migrated_at timestamptz NOT NULL DEFAULT now())")
        row = connection.execute("SELECT version FROM glmbandits_schema_version "
                                 "WHERE component = %s", (component,)).fetchone()
        current = 0 if row is None else int(row[0])
        if current > target:
            raise ValueError(f"{owner}: the {what} has schema version {current}; this "
                             f"glmbandits knows versions up to {target} (a newer glmbandits "
                             "wrote it?); it was not modified")
        if current == 0 and connection.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (guard_table,)).fetchone()[0]:
            raise ValueError(f"{owner}: the database has a {guard_table} table but no recorded "
                             f"schema version: it is not a glmbandits {what}; it was not "
                             "modified")
        for version in range(current + 1, target + 1):
            for statement in migrations[version - 1]:
                connection.execute(statement)
        if current < target:
            connection.execute(
                "INSERT INTO glmbandits_schema_version (component, version) VALUES (%s, %s) "
                "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, "
                "migrated_at = now()", (component, target))
    return target


@dataclass
class AdvisoryLock:
    """A held session-level advisory lock (yielded by :func:`learner_lock`).

    Attributes
    ----------
    key : int
        The 64-bit key.
    name : int or str
        What the key was made from.
    waited : float
        Seconds spent waiting for the lock.
    """

    key: int
    name: int | str
    waited: float
    connection: Any

    def held(self) -> bool:
        """Whether this connection still holds the lock (False once its session is gone).

        A learner checks it before publishing: a connection that was cut (network,
        ``pg_terminate_backend``) lost the lock, and another learner may hold it now.
        """
        psycopg = require_psycopg("AdvisoryLock.held")
        try:
            row = self.connection.execute(
                f"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE {_LOCK_ROW} "
                "AND pid = pg_backend_pid())", _lock_row_params(self.key)).fetchone()
        except psycopg.OperationalError:
            return False
        return bool(row[0])


#: The rows of ``pg_locks`` granted for one bigint advisory key in this database.
_LOCK_ROW = ("locktype = 'advisory' AND granted AND classid = %s::oid AND objid = %s::oid "
             "AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE "
             "datname = current_database())")


def _lock_row_params(key: int) -> tuple[int, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


def try_advisory_lock(connection: Any, name: int | str, *,
                      shared: bool = False) -> AdvisoryLock | None:
    """Take the session-level advisory lock ``name`` on ``connection`` now, or return None.

    ``shared``: any number of sessions hold it together, and none while one holds it
    exclusively (``pg_try_advisory_lock_shared``). The lock lasts until
    ``pg_advisory_unlock`` or the end of the session (the process killed, the connection
    cut, or closed), so a crashed holder never blocks the next one. ``connection`` must
    be in autocommit mode (see :func:`learner_lock`).
    """
    if not connection.autocommit:
        raise ValueError("try_advisory_lock: connection must be in autocommit mode "
                         "(psycopg.connect(url, autocommit=True)), got autocommit=False")
    key = advisory_key(name)
    function = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
    if not connection.execute(f"SELECT {function}(%s)", (key,)).fetchone()[0]:
        return None
    return AdvisoryLock(key, name, 0.0, connection)


def lock_holders(connection: Any, name: int | str) -> list[dict[str, Any]]:
    """The sessions of this database that hold the advisory lock ``name``, oldest first:
    ``pid`` (the server's backend), ``application_name``, ``client_addr`` (None over a
    local socket), ``backend_start`` and ``mode`` (``ExclusiveLock`` or ``ShareLock``).

    The sessions of other users show with ``application_name`` empty unless this user
    may read all statistics (``pg_read_all_stats``).
    """
    rows = connection.execute(
        "SELECT l.pid, a.application_name, host(a.client_addr), a.backend_start, l.mode "
        f"FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE {_LOCK_ROW} "
        "ORDER BY a.backend_start", _lock_row_params(advisory_key(name))).fetchall()
    return [{"pid": pid, "application_name": application or "", "client_addr": address,
             "backend_start": start, "mode": mode}
            for pid, application, address, start, mode in rows]


@contextmanager
def learner_lock(connection: Any, name: int | str = LEARNER_LOCK_NAME, *,
                 timeout: float | None = None, poll_interval: float = 0.2,
                 on_wait: Callable[[int], None] | None = None) -> Iterator[AdvisoryLock]:
    """Hold the advisory lock ``name`` on ``connection`` for the ``with`` block.

    Waits by polling ``pg_try_advisory_lock`` every ``poll_interval`` seconds
    (each try returns at once, so the wait can be interrupted and is bounded by
    ``timeout``). The lock is session-level: it is released by
    ``pg_advisory_unlock`` when the block exits, and by the server when the
    session ends for any reason (the process killed, the connection cut), so a
    waiting learner takes over from a dead one.

    Parameters
    ----------
    connection : psycopg.Connection
        An open connection in autocommit mode, used for nothing that could end
        its session while the lock must be held.
    name : int or str, default ``"glmbandits.learner"``
        The lock's name (see :func:`advisory_key`).
    timeout : float or None, default None
        Give up after this many seconds (``None``: wait as long as it takes).
    poll_interval : float, default 0.2
        Seconds between two tries.
    on_wait : callable, optional
        Called once, with the key, when the first try finds the lock held (a
        learner logs that it waits).

    Yields
    ------
    AdvisoryLock

    Raises
    ------
    TimeoutError
        When the lock was not obtained within ``timeout`` seconds.
    ValueError
        When ``connection`` is closed or not in autocommit mode (a session lock
        taken inside a transaction would leave it open for the whole block).

    Examples
    --------
    The learner's loop (``url`` a PostgreSQL URL)::

        with psycopg.connect(url, autocommit=True) as connection:
            with learner_lock(connection) as lock:
                while lock.held():
                    consume_the_log_and_publish()
    """
    owner = "learner_lock"
    psycopg = require_psycopg(owner)
    key = advisory_key(name)
    if timeout is not None:
        timeout = check_positive(timeout, owner, "timeout")
    poll_interval = check_positive(poll_interval, owner, "poll_interval")
    if getattr(connection, "closed", True):
        raise ValueError(f"{owner}: connection must be an open psycopg connection, got "
                         f"{type(connection).__name__}{' (closed)' if hasattr(connection, 'closed') else ''}")
    if not connection.autocommit:
        raise ValueError(f"{owner}: connection must be in autocommit mode "
                         "(psycopg.connect(url, autocommit=True)), got autocommit=False")
    start = time.monotonic()
    told = False
    while not connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        if on_wait is not None and not told:
            told = True
            on_wait(key)
        waited = time.monotonic() - start
        if timeout is not None and waited >= timeout:
            raise TimeoutError(f"{owner}: the advisory lock {name!r} (key {key}) is held by "
                               f"another session; gave up after {waited:.1f} s (timeout "
                               f"{timeout:g} s)")
        time.sleep(poll_interval if timeout is None else
                   max(0.0, min(poll_interval, timeout - waited)))
    lock = AdvisoryLock(key, name, time.monotonic() - start, connection)
    try:
        yield lock
    finally:
        if not connection.closed and not connection.broken:
            try:
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except psycopg.OperationalError:
                pass  # the session is gone, and the server dropped its locks with it
