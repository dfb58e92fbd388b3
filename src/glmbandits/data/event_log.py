"""An append-only SQLite event log of decisions, rewards and expiries.

:class:`EventLog` is what a deployed policy writes to (``policy.event_log = log``;
it implements the ``EventSink`` protocol of :mod:`glmbandits.policies.decisions`
structurally, without importing it) and what offline evaluation reads
(:meth:`glmbandits.data.LoggedBanditData.from_event_log`). It is the "log is the
source of truth" of the Multiworld Testing Decision Service (Agarwal et al. 2016):
every decision is written with its id, its contexts and the full action
distribution before the policy answers, and every reward and expiry is written
with what the policy did with it.

Storage is the one SQLite event log of :mod:`.sqlite_log` (stdlib :mod:`sqlite3`, WAL
journal), the file format the decision service's store writes too: one row per event,
keyed by a strictly increasing sequence number; see ``docs/event-log.md`` for the
schema, the durability modes and the joining rules.

References
----------
Agarwal et al. (2016), "Making Contextual Decisions with Low Technical Debt",
arXiv:1606.03966 (explore, log by event id, join rewards, learn, evaluate offline).
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .._validation import check_real
from .event_log_base import EventLogBase
from .event_records import Event
from .sqlite_log import SCHEMA_VERSION, SQLiteLog
from .vocabulary import EXPIRY_OUTCOMES, REWARD_STATUSES

__all__ = ["EventLog", "Event", "SCHEMA_VERSION", "REWARD_STATUSES", "EXPIRY_OUTCOMES"]

DURABILITY_MODES = ("full", "normal")
_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}

#: The record kinds a policy's log reads (a service's ``retry`` and ``expire`` rows are
#: left out: their closings are ``expiry`` rows), as an SQL condition.
_RECORD_KINDS_SQL = " AND kind IN ('decision', 'reward', 'expiry')"


class EventLog(EventLogBase):
    """An append-only SQLite log of a policy's decisions, rewards and expiries.

    Attach it to a policy (``policy.event_log = log``): every ``decide`` writes
    a decision (contexts, full distribution, action, propensity, model version)
    before it returns, every ``reward`` the received reward with its status, every
    expiry its outcome. Each write is committed before the call returns, so what
    the policy answered is in the log (see ``durability``). There is no update or
    delete: the table refuses them (SQLite triggers).

    Parameters
    ----------
    path : str or Path
        The database file (created with the schema if missing or empty, with its
        missing folders, as ``glmbandits serve`` creates its store's). An existing
        file is identified on a read-only connection first, so a foreign database
        (and its pending ``-wal`` file) is refused unchanged.
    durability : {"full", "normal"}, default "full"
        ``"full"``: ``PRAGMA synchronous=FULL``, every commit is fsynced and
        survives a power loss or OS crash. ``"normal"``: ``synchronous=NORMAL``,
        a commit survives a crash of the process (it is in the WAL file), but the
        last commits may be lost on a power loss; several times faster.
    readonly : bool, default False
        Open for reading only (e.g. while a service writes it: WAL lets readers
        and one writer work at once). The file must exist.
    timeout : float, default 10.0
        Seconds to wait for another connection's write lock.

    Raises
    ------
    ValueError
        If the file is not an SQLite database, is another application's database,
        or holds an event log of a newer/unknown schema version (the message names
        the file); or on a bad ``durability``.
    FileNotFoundError
        With ``readonly=True``, if the file does not exist.
    OSError
        If a missing folder cannot be created or SQLite cannot open the file (the
        message names the path).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from glmbandits import UCBGLM
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     with EventLog(pathlib.Path(folder) / "events.sqlite") as log:
    ...         policy = UCBGLM(n_features=2, seed=0)
    ...         policy.event_log = log
    ...         decision = policy.decide(np.eye(2), decision_id="req-1", now=10.0)
    ...         policy.reward("req-1", 1.0, now=11.0)
    ...         [event.kind for event in log.events()], len(log), log.last_sequence
    'learned'
    (['decision', 'reward'], 2, 2)
    """

    _table = "events"
    _param = "?"
    _kinds_sql = _RECORD_KINDS_SQL
    _reopen_hint = "reopen the log by its path"

    def __init__(self, path: str | Path, *, durability: str = "full", readonly: bool = False,
                 timeout: float = 10.0) -> None:
        owner = type(self).__name__
        if not isinstance(path, (str, Path)):
            raise TypeError(f"{owner}: path must be a str or Path, got {type(path).__name__}")
        if durability not in DURABILITY_MODES:
            raise ValueError(f"{owner}: durability must be one of {list(DURABILITY_MODES)}, "
                             f"got {durability!r}")
        if not isinstance(readonly, bool):
            raise TypeError(f"{owner}: readonly must be a bool, got {type(readonly).__name__}")
        timeout = check_real(timeout, owner, "timeout")
        self.path = Path(path)
        self.durability = durability
        self.readonly = readonly
        self._owner = f"{owner}({str(self.path)!r})"
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._log = SQLiteLog(self.path, synchronous=_SYNCHRONOUS[durability],
                              readonly=readonly, timeout=timeout, owner=self._owner)
        self._key = self._log.key
        self._columns = self._log.select  # an older file read as it is: NULL where it lacks

    # -- lifecycle ---------------------------------------------------------------
    def _live(self, owner: str) -> sqlite3.Connection:
        if self._log.connection is None:
            raise ValueError(f"{owner}: the event log {str(self.path)!r} is closed")
        return self._log.connection

    def _writable(self, owner: str) -> sqlite3.Connection:
        connection = self._live(owner)
        if self.readonly:
            raise ValueError(f"{owner}: the event log {str(self.path)!r} was opened with "
                             "readonly=True")
        return connection

    def close(self) -> None:
        """Close the connection (idempotent); later writes raise ValueError."""
        with self._lock:
            self._log.close()

    @property
    def closed(self) -> bool:
        return self._log.connection is None

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"durability={self.durability!r}"
        return f"EventLog({str(self.path)!r}, {state})"

    # -- writing -------------------------------------------------------------------
    def _append(self, owner: str, values: tuple[Any, ...]) -> None:
        with self._lock:
            self._writable(owner)
            # outside a batch the INSERT is its own transaction: committed (and, with
            # durability="full", fsynced) when it returns
            self._log.append(values)

    @contextmanager
    def batch(self) -> Iterator["EventLog"]:
        """Group the writes inside the ``with`` block into one transaction.

        For simulations: one commit (one fsync) per block instead of per event.
        The writes become durable, and visible to readers, when the block exits;
        a crash inside the block loses all of them, although the policy's calls
        had returned, so do not use it where each answer must be on disk. If the
        block raises, what was written is still committed (each record stands for
        a policy call that completed). Nested blocks join the outer one.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> import numpy as np
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with EventLog(pathlib.Path(folder) / "sim.db", durability="normal") as log:
        ...         with log.batch():
        ...             for i in range(3):
        ...                 log.record_decision(f"d{i}", float(i), np.eye(2), [0.5, 0.5], 0, 0.5, 0)
        ...         len(log)
        3
        """
        owner = f"{type(self).__name__}.batch"
        with self._lock:
            self._writable(owner)
            if self._batch_depth == 0:
                self._log.begin()
            self._batch_depth += 1
        try:
            yield self
        finally:
            with self._lock:
                self._batch_depth -= 1
                if self._batch_depth == 0 and self._log.connection is not None:
                    self._log.commit()

    # -- reading (the readers are EventLogBase's) ---------------------------------------
    def _read(self, owner: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple]:
        with self._lock:
            return self._live(owner).execute(sql, params).fetchall()
