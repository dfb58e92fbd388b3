"""PostgreSQL helpers shared by the PostgreSQL event log and the learner role.

* :func:`require_psycopg` imports psycopg 3 (the ``postgres`` extra) with a clear
  message when it is missing; nothing here imports it at module import.
* :func:`advisory_key` turns a name into the signed 64-bit key of an advisory lock.
* :func:`learner_lock` holds a session-level advisory lock for as long as a ``with``
  block runs: exactly one learner works on a database, a second one waits, and
  takes over when the first releases the lock or its connection dies (PostgreSQL
  drops a session's advisory locks when the session ends, ``kill -9`` of the
  process included).

References
----------
PostgreSQL documentation, "Advisory Locks" (section 13.3.5) and "Advisory Lock
Functions" (section 9.27.10).
"""

from __future__ import annotations

import hashlib
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

from .._validation import check_positive

__all__ = ["require_psycopg", "advisory_key", "learner_lock", "AdvisoryLock",
           "LEARNER_LOCK_NAME", "redact_url"]

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
        unsigned = self.key & 0xFFFF_FFFF_FFFF_FFFF
        try:
            row = self.connection.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid() AND granted AND classid = %s::oid "
                "AND objid = %s::oid AND objsubid = 1)",
                (unsigned >> 32, unsigned & 0xFFFF_FFFF)).fetchone()
        except psycopg.OperationalError:
            return False
        return bool(row[0])


@contextmanager
def learner_lock(connection: Any, name: int | str = LEARNER_LOCK_NAME, *,
                 timeout: float | None = None, poll_interval: float = 0.2
                 ) -> Iterator[AdvisoryLock]:
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
    while not connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
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
