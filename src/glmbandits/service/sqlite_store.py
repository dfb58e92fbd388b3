"""The SQLite store: the event log, snapshots and metadata in one WAL-mode file.

The event log is :class:`glmbandits.data.sqlite_log.SQLiteLog`, the one SQLite log a
policy's :class:`~glmbandits.data.EventLog` writes too (its file format, migrations,
writes and reads); this module adds what only the service needs: the ``snapshots``
and ``meta`` tables, the WAL checkpointer, the ``serve`` lock and the recovery's
set-aside. The event table is append-only; a commit (``synchronous=FULL`` by default)
makes every event appended since the last one durable, so a batch of
concurrent requests shares one fsync. Snapshots are rows written in one
transaction with a SHA-256 of their bytes, so a crash mid-write leaves the
previous snapshot, never a torn one.

WAL checkpoints (copying the write-ahead log back into the database file, and
fsyncing it) are off the commit path: the writer connection runs with
``wal_autocheckpoint=0`` and a daemon thread with its own connection runs
``PRAGMA wal_checkpoint(PASSIVE)`` every ``checkpoint_interval`` seconds after
commits, while the writer goes on (sqlite3 releases the GIL meanwhile). A passive
checkpoint never blocks the writer, but the WAL is only reused from its start by a
transaction that begins when it is checkpointed to its end, which under sustained
writes a concurrent checkpoint rarely achieves. So when the WAL has ``wal_limit``
pages or more after a passive pass, the checkpointer waits for the writer's current transaction to end and checkpoints
the rest (what was appended during the passive pass) before the next one begins: the
writer waits for that remainder only, and the WAL stays near ``wal_limit`` pages
plus one interval's writes. Durability is SQLite's
own: a checkpoint only copies committed frames and syncs like the writer
(``synchronous``), so a crash at any point loses no committed event.

One process serves a log: :meth:`SQLiteStore.claim_topology` takes the log's lock
(:class:`~glmbandits.service.log_lock.FileLogLock`, ``<db>.lock``) until
:meth:`SQLiteStore.close`; a store opened only to read takes none.
:meth:`SQLiteStore.set_aside` is the recovery's move of a log's untrusted tail into a
file beside it (``glmbandits recover``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from typing import Iterable, Iterator

from ..data.sqlite_log import SCHEMA_VERSION, LogVersionError, SQLiteLog, check_kinds
from .events import Event, event_row, page_events, total_keys
from .log_lock import FileLogLock

__all__ = ["SQLiteStore", "SCHEMA_VERSION"]

#: what the service keeps beside the event log (its ``meta`` also records the schema
#: version, so that a glmbandits from before the one log refuses the file)
_SERVICE_TABLES = """
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    seq INTEGER NOT NULL,
    created REAL NOT NULL,
    sha256 TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
#: snapshots kept (older ones are deleted when a new one is written)
_KEEP_SNAPSHOTS = 2
#: how long :meth:`SQLiteStore.close` waits for the checkpointer thread to finish (s)
_CHECKPOINTER_JOIN_S = 10.0
#: seconds a connection waits for another one's write lock
_TIMEOUT_S = 30.0

logger = logging.getLogger("glmbandits.service")


class SQLiteStore:
    """A :class:`~glmbandits.service.store.Store` in one SQLite file.

    Parameters
    ----------
    path : str
        The database file (created with its tables if missing).
    url : str, optional
        The URL it was opened from (reported by the service).
    synchronous : {"FULL", "NORMAL"}
        SQLite's durability: FULL survives a power loss, NORMAL a process crash.
    checkpoint_interval : float or None
        Seconds between the background checkpointer's passes (a pass runs only if
        something was committed since the last one). ``None``: no thread, SQLite's
        automatic checkpoint inside the commit that crosses 1,000 pages of WAL.
    wal_limit : int
        Pages of WAL from which the checkpointer, after a passive pass, waits for the
        writer's transaction to end and checkpoints the rest (see the module docstring).

    Examples
    --------
    >>> import os, tempfile
    >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "log.db"))
    >>> store.append(Event("reward", "a", 1.0, reward=1.0, status="late"))
    >>> store.commit()
    1
    >>> [event.kind for event in store.events()]
    ['reward']
    >>> store.close()
    """

    def __init__(self, path: str, *, url: str | None = None, synchronous: str = "FULL",
                 checkpoint_interval: float | None = 0.05, wal_limit: int = 1000) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"SQLiteStore: synchronous must be 'FULL' or 'NORMAL', "
                             f"got {synchronous!r}")
        if checkpoint_interval is not None and not checkpoint_interval > 0:
            raise ValueError(f"SQLiteStore: checkpoint_interval must be positive or None, "
                             f"got {checkpoint_interval!r}")
        if wal_limit < 1:
            raise ValueError(f"SQLiteStore: wal_limit must be at least 1, got {wal_limit!r}")
        self.path = path
        self.url = url or f"sqlite:///{path}"
        self._synchronous = synchronous
        self._log = self._open_log(path)
        self._db = self._log.live()
        self._in_transaction = False
        # the seq of the last event committed through this store (None until its first
        # commit of events: :meth:`last_seq` asks the file) and of the last one appended in
        # the open transaction (from the INSERT's rowid; dropped by a rollback), so a
        # commit needs no ``SELECT MAX(seq)``: this store is the file's only writer
        self._last_seq: int | None = None
        self._appended_seq: int | None = None
        self._local = threading.local()
        # an append transaction is open (BEGIN to COMMIT/ROLLBACK) / the checkpointer is
        # catching up with the end of the WAL, or waits to: no transaction begins until
        # it is done (so the writer, which begins the next one at once, cannot starve it)
        self._turn = threading.Condition(threading.Lock())
        self._writing = False
        self._catching_up = False
        self._commits = 0  # append transactions committed
        self._checkpointed = 0  # commits the last complete checkpoint covered
        self._checkpoint_interval = checkpoint_interval
        self._wal_limit = wal_limit
        self._stop = threading.Event()
        self._lock_file: FileLogLock | None = None
        self._checkpointer: threading.Thread | None = None
        if checkpoint_interval is not None:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = threading.Thread(
                target=self._checkpoint_loop, name="glmbandits-sqlite-checkpoint", daemon=True)
            self._checkpointer.start()

    def _open_log(self, path: str) -> SQLiteLog:
        """The event log (created or migrated to :data:`SCHEMA_VERSION` in place), with
        the service's tables beside it; a file from a newer version is refused."""
        try:
            log = SQLiteLog(path, synchronous=self._synchronous, timeout=_TIMEOUT_S,
                            owner=f"SQLiteStore({path!r})")
        except LogVersionError as error:
            raise RuntimeError(f"{self.url}: the event log has schema version "
                               f"{error.version}, newer than this glmbandits reads "
                               f"({SCHEMA_VERSION}); upgrade glmbandits") from None
        try:
            connection = log.live()
            connection.executescript(_SERVICE_TABLES)
            if connection.execute("SELECT value FROM meta WHERE key = 'schema_version'"
                                  ).fetchone() != (str(SCHEMA_VERSION),):
                connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                                   "('schema_version', ?)", (str(SCHEMA_VERSION),))
        except BaseException:
            log.close()
            raise
        return log

    def schema_version(self) -> int:
        """The schema version of the file (:data:`SCHEMA_VERSION` once opened)."""
        return int(self._reader().execute("PRAGMA user_version").fetchone()[0])

    # -- the checkpointer (its own thread and connection) -------------------------------
    def _checkpoint_loop(self) -> None:
        """Checkpoint every ``checkpoint_interval`` seconds after commits, until
        :meth:`close`; an error is logged and the next pass tries again."""
        assert self._checkpoint_interval is not None
        connection = self._log.connect()
        try:
            connection.execute(f"PRAGMA synchronous={self._synchronous}")
            while not self._stop.wait(self._checkpoint_interval):
                if self._commits == self._checkpointed:
                    continue
                try:
                    self._checkpoint_once(connection)
                except sqlite3.Error as error:
                    logger.warning("glmbandits: WAL checkpoint of %s failed (%s); retrying in "
                                   "%g s", self.path, error, self._checkpoint_interval)
        finally:
            connection.close()

    def _checkpoint_once(self, connection: sqlite3.Connection) -> None:
        """One pass: a passive checkpoint beside the writer; if the WAL has ``wal_limit``
        pages or more, a second one while no append transaction is open, so that the WAL
        is checkpointed to its end when the writer's next transaction starts it over (a
        checkpoint that catches up while the writer is inside a transaction does not let
        that happen)."""
        commits = self._commits
        busy, log, done = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if not busy and done == log:
            self._checkpointed = commits
        if log < self._wal_limit:
            return
        with self._turn:
            self._catching_up = True
            while self._writing:
                self._turn.wait()
        try:  # the writer is between transactions until the end of this
            commits = self._commits
            busy, log, done = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            if not busy and done == log:
                self._checkpointed = commits
        finally:
            self._end_turn("_catching_up")

    def _end_turn(self, flag: str) -> None:
        """Clear ``flag`` (``"_writing"`` or ``"_catching_up"``) and wake the other."""
        with self._turn:
            setattr(self, flag, False)
            self._turn.notify_all()

    # -- writing (one thread) --------------------------------------------------------
    def append(self, event: Event) -> None:
        if not self._in_transaction:
            with self._turn:
                while self._catching_up:
                    self._turn.wait()
                self._writing = True
            try:
                self._log.begin()
            except BaseException:
                self._end_turn("_writing")
                raise
            self._in_transaction = True
        self._appended_seq = self._log.append(event_row(event))

    def commit(self) -> int:
        if self._in_transaction:
            self._in_transaction = False
            appended, self._appended_seq = self._appended_seq, None
            try:
                self._log.commit()  # rolled back if it fails
                self._commits += 1
            finally:
                self._end_turn("_writing")
            if appended is not None:  # seqs only grow (AUTOINCREMENT), and the transaction
                self._last_seq = appended  # (BEGIN IMMEDIATE) had the file to itself
        return self.last_seq()

    def rollback(self) -> None:
        if self._in_transaction:
            self._in_transaction = False
            self._appended_seq = None
            try:
                self._log.rollback()
            finally:
                self._end_turn("_writing")

    def last_seq(self) -> int:
        seq = self._last_seq
        if seq is not None:  # known from this store's last commit of events
            return seq
        return self._log.last_seq()

    def write_snapshot(self, seq: int, data: bytes) -> None:
        digest = hashlib.sha256(data).hexdigest()
        import time

        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT INTO snapshots (seq, created, sha256, data) "
                             "VALUES (?, ?, ?, ?)", (seq, time.time(), digest, data))
            self._db.execute("DELETE FROM snapshots WHERE id NOT IN (SELECT id FROM snapshots "
                             f"ORDER BY id DESC LIMIT {_KEEP_SNAPSHOTS})")

    def set_meta(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                             (key, value))

    # -- one service per log ------------------------------------------------------------
    def claim_topology(self, topology: str, holder: str | None = None) -> None:
        """Hold the log for this process until :meth:`close` (``topology`` must be
        ``"single"``: a SQLite log is served by one process, ``--role all``).

        Raises :class:`~glmbandits.service.log_lock.LogInUseError`, naming the log and
        the holder's pid and host, if another process (or another store of this one)
        holds it; ``holder`` is the command the lock file names (default ``serve``).
        """
        if topology != "single":
            raise ValueError(f"{self.url}: a SQLite event log is served by one process "
                             f"(topology 'single', --role all), got {topology!r}")
        if self._lock_file is None:
            self._lock_file = FileLogLock(self.path, log=self.url).acquire(
                f"glmbandits {holder or 'serve'}")

    def set_aside(self, after: int, label: str) -> tuple[int, str]:
        """Move the events with ``seq > after`` and every snapshot into a new SQLite file
        beside the log, ``<db>.set-aside-<label>.db`` (same tables; its meta says where
        they came from); returns (how many events were moved, that file).

        Copied and committed first, then deleted from this log in one transaction: a
        crash in between leaves them in both, never in neither. Sequence numbers are
        not reused: the next event gets the number after the largest one ever given.
        Call it holding the log (:meth:`claim_topology`).
        """
        if self._lock_file is None:
            raise RuntimeError(f"{self.url}: set_aside needs the log held (claim_topology)")
        destination = f"{self.path}.set-aside-{label}.db"
        if os.path.exists(destination):
            raise FileExistsError(f"set_aside: {destination} exists; choose another label")
        aside_log = SQLiteLog(destination, synchronous=self._synchronous, timeout=_TIMEOUT_S,
                              owner=f"SQLiteStore.set_aside({destination!r})")
        aside = aside_log.live()
        try:
            aside.executescript(_SERVICE_TABLES)
            aside.execute("ATTACH DATABASE ? AS log", (self.path,))
            with aside:
                aside.execute("BEGIN IMMEDIATE")
                columns = self._log.select
                moved = aside.execute(f"INSERT INTO main.events ({columns}) SELECT {columns} "
                                      "FROM log.events WHERE seq > ?", (after,)).rowcount
                aside.execute("INSERT INTO main.snapshots (seq, created, sha256, data) "
                              "SELECT seq, created, sha256, data FROM log.snapshots")
                aside.execute("INSERT OR REPLACE INTO main.meta SELECT key, value FROM log.meta")
                aside.execute("INSERT OR REPLACE INTO main.meta (key, value) VALUES "
                              "('set_aside_from', ?)",
                              (json.dumps({"log": self.url, "after_seq": after}),))
            aside.execute("DETACH DATABASE log")
        finally:
            aside_log.close()
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._log.remove_after(after)
            self._db.execute("DELETE FROM snapshots")
        self._last_seq = None
        return int(moved), destination

    # -- reading (any thread) -----------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        reader = getattr(self._local, "reader", None)
        if reader is None:
            reader = self._log.connect()
            self._local.reader = reader
        return reader

    def get_meta(self, key: str) -> str | None:
        row = self._reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def events(self, after: int = 0, limit: int | None = None, *,
               kinds: Iterable[str] | None = None) -> Iterator[Event]:
        """Committed events with ``seq > after`` in order (at most ``limit``), page by page;
        only those of ``kinds`` when given (the catalogue's by its index)."""
        if kinds is not None:
            kinds = check_kinds(kinds, "SQLiteStore.events")
        return self._events(after, limit, kinds)

    def _events(self, after: int, limit: int | None,
                kinds: Iterable[str] | None) -> Iterator[Event]:
        # check_same_thread=False: a streamed response (GET /v1/events) resumes this
        # generator on whichever thread of the pool is free; the connection is only
        # ever used by one of them at a time
        reader = self._log.connect()
        try:
            yield from page_events(lambda last, size: self._log.rows(
                last, size, kinds=kinds, connection=reader), after, limit)
        finally:
            reader.close()

    def totals(self) -> dict[str, int]:
        out = {"decisions": 0, "retries": 0, "rewards": 0}
        for kind, status, count in self._log.counts(self._reader()):
            for key in total_keys(kind, status):
                out[key] = out.get(key, 0) + count
        return out

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        rows = self._reader().execute(
            "SELECT seq, sha256, data FROM snapshots ORDER BY id DESC").fetchall()
        for seq, digest, data in rows:
            if hashlib.sha256(data).hexdigest() == digest:
                return int(seq), bytes(data)
        return None

    def close(self) -> None:
        self._stop.set()
        if self._checkpointer is not None:
            self._checkpointer.join(_CHECKPOINTER_JOIN_S)
        self.rollback()
        self._log.close()
        reader = getattr(self._local, "reader", None)
        if reader is not None:
            reader.close()
            self._local.reader = None
        if self._lock_file is not None:  # last: the log is complete before another takes it
            self._lock_file.release()
            self._lock_file = None
