"""An append-only SQLite event log of decisions, rewards and expiries.

:class:`EventLog` is what a deployed policy writes to (``policy.event_log = log``;
it implements the ``EventSink`` protocol of :mod:`glmbandits.policies.decisions`
structurally, without importing it) and what offline evaluation reads
(:meth:`glmbandits.data.LoggedBanditData.from_event_log`). It is the "log is the
source of truth" of the Multiworld Testing Decision Service (Agarwal et al. 2016):
every decision is written with its id, its contexts and the full action
distribution before the policy answers, and every reward and expiry is written
with what the policy did with it.

Storage is one SQLite table (stdlib :mod:`sqlite3`, WAL journal), one row per
event, keyed by a strictly increasing sequence number; see ``docs/event-log.md``
for the schema, the durability modes and the joining rules.

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
from .event_records import (APPLICATION_ID, SCHEMA_VERSION, DecisionEvent, Event, ExpiryEvent,
                            RewardEvent)
from .vocabulary import EXPIRY_OUTCOMES, REWARD_STATUSES

__all__ = ["EventLog", "DecisionEvent", "RewardEvent", "ExpiryEvent", "Event",
           "SCHEMA_VERSION", "REWARD_STATUSES", "EXPIRY_OUTCOMES"]

DURABILITY_MODES = ("full", "normal")
_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    sequence      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind          TEXT NOT NULL CHECK (kind IN ('decision', 'reward', 'expiry')),
    decision_id   TEXT NOT NULL,
    timestamp     REAL NOT NULL,
    n_actions     INTEGER,
    n_features    INTEGER,
    contexts      BLOB,
    probabilities BLOB,
    action        INTEGER,
    propensity    REAL,
    model_version INTEGER,
    reward        REAL,
    status        TEXT,
    policy_action INTEGER
);
CREATE INDEX IF NOT EXISTS events_decision_id ON events (decision_id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"""
_COLUMNS = ("sequence, kind, decision_id, timestamp, n_actions, n_features, contexts, "
            "probabilities, action, propensity, model_version, reward, status, policy_action")
#: What each older schema version lacks, added by :meth:`EventLog._migrate` (version 1:
#: no ``policy_action``; its propensity column was already nullable).
_MIGRATIONS = {1: ("ALTER TABLE events ADD COLUMN policy_action INTEGER",)}


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
        if self.path.is_dir():
            raise ValueError(f"{self._owner}: path must be a file, got a directory")
        if readonly and not self.path.exists():
            raise FileNotFoundError(f"{self._owner}: no such file (readonly=True opens an "
                                    "existing event log)")
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._columns = _COLUMNS
        if not readonly:
            if self.path.exists():
                # Identity first, on a read-only connection: a foreign database is refused
                # before a writing connection could change it (closing the last writer of a
                # WAL database checkpoints its -wal file into it).
                self._connect("ro", timeout).close()
            else:
                self._make_folder()
        self._connection: sqlite3.Connection | None = self._connect(
            "ro" if readonly else "rwc", timeout)

    def _make_folder(self) -> None:
        """Create the missing folders of a new log's path, as ``glmbandits serve`` does for
        its store (an OSError naming the folder when that fails)."""
        folder = self.path.resolve().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise type(error)(f"{self._owner}: cannot create the folder {str(folder)!r} for "
                              f"the log: {error.strerror or error}") from None

    def _connect(self, mode: str, timeout: float) -> sqlite3.Connection:
        """A connection in ``mode`` ("ro" or "rwc") whose database passed :meth:`_open`."""
        uri = f"{self.path.resolve().as_uri()}?mode={mode}"
        try:
            connection = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as error:
            raise OSError(f"{self._owner}: cannot open the file (SQLite says: {error}); check "
                          "that it and its folder can be read"
                          f"{'' if mode == 'ro' else ' and written'}") from None
        try:
            self._open(connection, writable=mode != "ro")
        except sqlite3.DatabaseError as error:
            connection.close()
            raise ValueError(f"{self._owner}: the file is not a glmbandits event log "
                             f"(SQLite says: {error})") from None
        except BaseException:
            connection.close()
            raise
        return connection

    def _open(self, connection: sqlite3.Connection, *, writable: bool) -> None:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id == 0 and version == 0 and tables == 0:
            if self.readonly:
                raise ValueError(f"{self._owner}: the file holds no event log (it is empty)")
            if not writable:  # the identity probe: an empty file becomes a log
                return
            connection.execute(f"PRAGMA synchronous={_SYNCHRONOUS[self.durability]}")
            connection.execute("PRAGMA journal_mode=WAL")
            try:  # one transaction; IF NOT EXISTS: two processes may create it at once
                connection.executescript(
                    "BEGIN IMMEDIATE;" + _SCHEMA +
                    f"PRAGMA application_id={APPLICATION_ID};"
                    f"PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            return
        if application_id != APPLICATION_ID:
            raise ValueError(f"{self._owner}: the file is an SQLite database of another "
                             f"application (application_id {application_id:#x}), not a "
                             "glmbandits event log; it was not modified")
        if not 1 <= version <= SCHEMA_VERSION:
            raise ValueError(f"{self._owner}: the event log has schema version {version}; this "
                             f"glmbandits reads versions 1 to {SCHEMA_VERSION} (a newer "
                             "glmbandits wrote it?); it was not modified")
        if not writable:
            if self.readonly and version < SCHEMA_VERSION:
                # read as it is: the missing column reads as NULL
                self._columns = _COLUMNS.replace(", policy_action", ", NULL")
            return
        connection.execute(f"PRAGMA synchronous={_SYNCHRONOUS[self.durability]}")
        if version < SCHEMA_VERSION:
            self._migrate(connection, version)
        connection.execute("PRAGMA journal_mode=WAL")

    def _migrate(self, connection: sqlite3.Connection, version: int) -> None:
        """Bring a log of an older schema version to :data:`SCHEMA_VERSION` in place, in one
        transaction (its events are kept as they are)."""
        try:
            connection.execute("BEGIN IMMEDIATE")
            current = connection.execute("PRAGMA user_version").fetchone()[0]
            for step in range(current, SCHEMA_VERSION):  # another process may have done it
                for statement in _MIGRATIONS[step]:
                    connection.execute(statement)
            connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    # -- lifecycle ---------------------------------------------------------------
    def _live(self, owner: str) -> sqlite3.Connection:
        if self._connection is None:
            raise ValueError(f"{owner}: the event log {str(self.path)!r} is closed")
        return self._connection

    def _writable(self, owner: str) -> sqlite3.Connection:
        connection = self._live(owner)
        if self.readonly:
            raise ValueError(f"{owner}: the event log {str(self.path)!r} was opened with "
                             "readonly=True")
        return connection

    def close(self) -> None:
        """Close the connection (idempotent); later writes raise ValueError."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    @property
    def closed(self) -> bool:
        return self._connection is None

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"durability={self.durability!r}"
        return f"EventLog({str(self.path)!r}, {state})"

    # -- writing -------------------------------------------------------------------
    def _append(self, owner: str, values: tuple[Any, ...]) -> None:
        with self._lock:
            connection = self._writable(owner)
            # outside a batch the INSERT is its own transaction: committed (and, with
            # durability="full", fsynced) when execute returns
            connection.execute(
                "INSERT INTO events (kind, decision_id, timestamp, n_actions, n_features, "
                "contexts, probabilities, action, propensity, model_version, reward, status, "
                "policy_action) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)

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
            connection = self._writable(owner)
            if self._batch_depth == 0:
                connection.execute("BEGIN IMMEDIATE")
            self._batch_depth += 1
        try:
            yield self
        finally:
            with self._lock:
                self._batch_depth -= 1
                if self._batch_depth == 0 and self._connection is not None:
                    try:
                        self._connection.execute("COMMIT")
                    except BaseException:
                        if self._connection.in_transaction:
                            self._connection.execute("ROLLBACK")
                        raise

    # -- reading (the readers are EventLogBase's) ---------------------------------------
    def _read(self, owner: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple]:
        with self._lock:
            return self._live(owner).execute(sql, params).fetchall()
