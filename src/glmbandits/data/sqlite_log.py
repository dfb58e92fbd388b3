"""The one SQLite event log: its file, schema, migrations, writes and paged reads.

A policy's :class:`~glmbandits.data.EventLog` and the decision service's
:class:`~glmbandits.service.sqlite_store.SQLiteStore` are two faces of this one log
(:class:`SQLiteLog`): the same file format, opened, identified, created and migrated
here, written row by row with one ``INSERT`` inside transactions begun here
(``BEGIN IMMEDIATE``), read page by page here. What each face adds stays with it: the
policy's checked ``record_*`` writers and records (:mod:`.event_log_base`), the
service's snapshots, metadata, WAL checkpointer and ``serve`` lock
(:mod:`glmbandits.service.sqlite_store`).

The file (schema version 4, ``PRAGMA user_version``; ``PRAGMA application_id`` is
:data:`APPLICATION_ID`, "GLMB") holds one table ``events``, one row per event of any
kind of :data:`~glmbandits.data.vocabulary.EVENT_KINDS`, keyed by ``seq``; triggers
refuse ``UPDATE`` and ``DELETE``. A service adds its ``snapshots`` and ``meta`` tables
beside it. Version 4 added the last column, ``request`` (a named-feature request as
sent, or a catalogue change's action, as JSON text). Three older kinds of file open:

* a log of schema version 3 (either face's: no ``request`` column);
* a policy's event log of schema version 1 or 2 (``user_version``; key ``sequence``,
  a ``n_features`` column, no ``excluded``, ``older_than`` or ``tag``);
* a service's store of schema version 1 or 2 (``meta.schema_version``; no
  ``application_id``, no triggers).

Opened for writing, each is migrated in place in one transaction (a version-3 log and a
store gain their missing columns by ``ALTER TABLE ... ADD COLUMN``, a store also the
triggers and the version marks; a policy's log is copied into the new table, its
sequence numbers kept); opened with ``readonly=True`` it is read as it is (a column it
lacks reads as NULL). See ``docs/event-log.md``.

References
----------
Agarwal et al. (2016), "Making Contextual Decisions with Low Technical Debt",
arXiv:1606.03966 (the log, keyed by event id, is the source of truth).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .vocabulary import CATALOGUE, EVENT_KINDS

__all__ = ["SQLiteLog", "LogVersionError", "SCHEMA_VERSION", "APPLICATION_ID", "ROW_COLUMNS",
           "SYNCHRONOUS_LEVELS", "page_rows", "check_kinds"]

#: The schema version of the file this code writes (``PRAGMA user_version``); 1 and 2
#: are the policy logs' (and, in ``meta``, the service stores') older versions, 3 the one
#: log's before the ``request`` column.
SCHEMA_VERSION = 4
#: ``PRAGMA application_id`` of an event log ("GLMB"), so a foreign database is refused.
APPLICATION_ID = 0x474C4D42
#: SQLite's ``synchronous`` levels a log can run with (FULL survives a power loss).
SYNCHRONOUS_LEVELS = ("FULL", "NORMAL")

#: The stored columns of an event after ``seq``, in the order of a row's values.
ROW_COLUMNS = ("kind", "decision_id", "timestamp", "n_actions", "contexts", "excluded",
               "action", "probabilities", "propensity", "model_version", "reward", "status",
               "older_than", "policy_action", "tag", "request")
_INSERT = (f"INSERT INTO events ({', '.join(ROW_COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(ROW_COLUMNS))})")

_TABLE = """CREATE TABLE IF NOT EXISTS {name} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    decision_id TEXT,
    timestamp REAL NOT NULL,
    n_actions INTEGER,
    contexts BLOB,
    excluded TEXT,
    action INTEGER,
    probabilities BLOB,
    propensity REAL,
    model_version INTEGER,
    reward REAL,
    status TEXT,
    older_than REAL,
    policy_action INTEGER,
    tag INTEGER,
    request TEXT
);"""
_APPEND_ONLY = (
    "CREATE INDEX IF NOT EXISTS events_decision ON events (decision_id)",
    "CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events "
    "BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END",
    # the catalogue's, which a service reads at every start (the others' inserts skip it)
    f"CREATE INDEX IF NOT EXISTS events_catalogue ON events (seq) WHERE kind = '{CATALOGUE}'")
#: The columns a version-1/2 store or a version-3 log lacks, added (no row rewritten).
_ADDED_COLUMNS = (("policy_action", "INTEGER"), ("tag", "INTEGER"), ("request", "TEXT"))
#: The columns an older policy log has, copied into the new table by the migration.
_POLICY_COLUMNS = ("kind", "decision_id", "timestamp", "n_actions", "contexts", "action",
                   "probabilities", "propensity", "model_version", "reward", "status")

# the kinds of file :meth:`SQLiteLog._identify` tells apart
_EMPTY, _CURRENT, _V3, _POLICY, _STORE = "empty", "current", "v3", "policy", "store"


class LogVersionError(ValueError):
    """The file is an event log of a schema version this glmbandits does not read
    (``version``: the file's)."""

    def __init__(self, message: str, version: int) -> None:
        super().__init__(message)
        self.version = version


class SQLiteLog:
    """One SQLite event-log file: opened (created, migrated) and written as one log.

    Parameters
    ----------
    path : str or Path
        The database file (created with the schema if missing or empty, with its
        missing folders). An existing file is identified on a read-only connection
        first, so a foreign database (and its pending ``-wal`` file) is refused
        unchanged.
    synchronous : {"FULL", "NORMAL"}, default "FULL"
        SQLite's durability: FULL survives a power loss, NORMAL a process crash.
    readonly : bool, default False
        Open for reading only, never creating or migrating anything (an older file is
        read as it is). The file must exist.
    timeout : float, default 10.0
        Seconds to wait for another connection's write lock.
    owner : str, default "SQLiteLog"
        How the error messages name the log's user (e.g. ``EventLog('events.db')``).

    Raises
    ------
    ValueError
        The file is not an SQLite database, is another application's database, or is
        empty with ``readonly=True``; :class:`LogVersionError` if it holds an event
        log of a newer/unknown schema version. The file is not modified.
    FileNotFoundError
        With ``readonly=True``, if the file does not exist.
    OSError
        If a missing folder cannot be created or SQLite cannot open the file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> log = SQLiteLog(pathlib.Path(tempfile.mkdtemp()) / "events.db")
    >>> log.begin()
    >>> log.append(("reward", "a", 1.0) + (None,) * 7 + (1.0, "late", None, None, None, None))
    1
    >>> log.commit()
    >>> [row[:3] for row in log.rows(0, 10)], log.version
    ([(1, 'reward', 'a')], 4)
    >>> log.close()
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL", readonly: bool = False,
                 timeout: float = 10.0, owner: str = "SQLiteLog") -> None:
        if synchronous not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"{owner}: synchronous must be one of {list(SYNCHRONOUS_LEVELS)}, "
                             f"got {synchronous!r}")
        self.path = Path(path)
        self.synchronous = synchronous
        self.readonly = readonly
        self.timeout = timeout
        self.owner = owner
        #: the file's schema version (:data:`SCHEMA_VERSION` once opened for writing)
        self.version = SCHEMA_VERSION
        #: the key column, and the select list of ``seq`` and :data:`ROW_COLUMNS` (NULL
        #: for a column an older file read as it is lacks)
        self.key = "seq"
        self.present: frozenset[str] = frozenset(("seq",) + ROW_COLUMNS)
        if self.path.is_dir():
            raise ValueError(f"{owner}: path must be a file, got a directory")
        if readonly and not self.path.exists():
            raise FileNotFoundError(f"{owner}: no such file (readonly=True opens an existing "
                                    "event log)")
        if not readonly:
            if self.path.exists():
                # identity first, on a read-only connection: a foreign database is refused
                # before a writing connection could change it (closing the last writer of
                # a WAL database checkpoints its -wal file into it)
                self._connect("ro").close()
            else:
                self._make_folder()
        self.connection: sqlite3.Connection | None = self._connect(
            "ro" if readonly else "rwc")

    # -- opening --------------------------------------------------------------------
    def _make_folder(self) -> None:
        folder = self.path.resolve().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise type(error)(f"{self.owner}: cannot create the folder {str(folder)!r} for "
                              f"the log: {error.strerror or error}") from None

    def connect(self, mode: str = "rwc") -> sqlite3.Connection:
        """A new connection to the file (for another thread: a reader, a checkpointer)."""
        uri = f"{self.path.resolve().as_uri()}?mode={mode}"
        try:
            return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as error:
            raise OSError(f"{self.owner}: cannot open the file (SQLite says: {error}); check "
                          "that it and its folder can be read"
                          f"{'' if mode == 'ro' else ' and written'}") from None

    def _connect(self, mode: str) -> sqlite3.Connection:
        """A connection in ``mode`` ("ro" or "rwc") whose database passed :meth:`_open`."""
        connection = self.connect(mode)
        try:
            self._open(connection, writable=mode != "ro")
        except sqlite3.DatabaseError as error:
            connection.close()
            raise ValueError(f"{self.owner}: the file is not a glmbandits event log "
                             f"(SQLite says: {error})") from None
        except BaseException:
            connection.close()
            raise
        return connection

    def _identify(self, connection: sqlite3.Connection) -> tuple[str, int]:
        """What the file holds: (kind, schema version); refuses a foreign or newer file."""
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        if application_id == APPLICATION_ID:
            if version == SCHEMA_VERSION:
                return _CURRENT, version
            if version == 3:
                return _V3, version
            if version in (1, 2):
                return _POLICY, version
            raise LogVersionError(
                f"{self.owner}: the event log has schema version {version}; this glmbandits "
                f"reads versions 1 to {SCHEMA_VERSION} (a newer glmbandits wrote it?); it "
                "was not modified", version)
        if application_id == 0 and version == 0:
            if not tables - {"sqlite_sequence"}:
                return _EMPTY, 0
            if "events" in tables and "seq" in self._columns_of(connection):
                version = 1  # a service's store: its version is in meta
                if "meta" in tables:
                    row = connection.execute(
                        "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                    version = 1 if row is None else int(row[0])
                if version not in (1, 2):
                    raise LogVersionError(
                        f"{self.owner}: the event log has schema version {version}; this "
                        f"glmbandits reads versions 1 to {SCHEMA_VERSION} (a newer glmbandits "
                        "wrote it?); it was not modified", version)
                return _STORE, version
        raise ValueError(f"{self.owner}: the file is an SQLite database of another "
                         f"application (application_id {application_id:#x}), not a "
                         "glmbandits event log; it was not modified")

    @staticmethod
    def _columns_of(connection: sqlite3.Connection) -> set[str]:
        return {row[1] for row in connection.execute("PRAGMA table_info(events)")}

    def _open(self, connection: sqlite3.Connection, *, writable: bool) -> None:
        kind, version = self._identify(connection)
        if kind == _EMPTY and self.readonly:
            raise ValueError(f"{self.owner}: the file holds no event log (it is empty)")
        if not writable:
            if self.readonly:  # read as it is
                self.version = version
                present = self._columns_of(connection)
                self.key = "seq" if "seq" in present else "sequence"
                self.present = frozenset(present | {"seq"})
            return
        connection.execute(f"PRAGMA synchronous={self.synchronous}")
        connection.execute("PRAGMA journal_mode=WAL")
        if kind != _CURRENT:
            self._migrate(connection)

    def _migrate(self, connection: sqlite3.Connection) -> None:
        """Create the schema in an empty file, or bring an older file to
        :data:`SCHEMA_VERSION` in place, in one transaction (its events kept as they are:
        same sequence numbers, same bytes)."""
        try:
            connection.execute("BEGIN IMMEDIATE")
            kind, version = self._identify(connection)  # another process may have done it
            if kind == _POLICY:
                present = self._columns_of(connection)
                connection.execute(_TABLE.format(name="events_new"))
                copied = list(_POLICY_COLUMNS) + (["policy_action"] if "policy_action" in
                                                  present else [])
                connection.execute(
                    f"INSERT INTO events_new (seq, {', '.join(copied)}) "
                    f"SELECT sequence, {', '.join(copied)} FROM events ORDER BY sequence")
                connection.execute("DROP TABLE events")  # with its index and triggers
                connection.execute("ALTER TABLE events_new RENAME TO events")
            elif kind in (_STORE, _V3):
                present = self._columns_of(connection)
                for name, sql_type in _ADDED_COLUMNS:
                    if name not in present:
                        connection.execute(f"ALTER TABLE events ADD COLUMN {name} {sql_type}")
                if connection.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                      "AND name = 'meta'").fetchone()[0]:  # a service's
                    connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES "
                                       "('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif kind == _EMPTY:
                connection.execute(_TABLE.format(name="events"))
            if kind != _CURRENT:
                for statement in _APPEND_ONLY:
                    connection.execute(statement)
                connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    # -- writing (the caller serialises: one thread at a time) --------------------------
    def live(self) -> sqlite3.Connection:
        """The open connection (ValueError naming the log once it is closed)."""
        if self.connection is None:
            raise ValueError(f"{self.owner}: the event log {str(self.path)!r} is closed")
        return self.connection

    def begin(self) -> None:
        """Begin a write transaction (``BEGIN IMMEDIATE``: the file's write lock now)."""
        self.live().execute("BEGIN IMMEDIATE")

    def append(self, row: tuple[Any, ...]) -> int:
        """Insert one event (the values of :data:`ROW_COLUMNS`); its ``seq``. Outside a
        transaction it is committed (and synced as ``synchronous`` says) on return."""
        seq = self.live().execute(_INSERT, row).lastrowid
        assert seq is not None
        return seq

    def commit(self) -> None:
        """Commit the open transaction (rolled back, and the error raised, if that fails)."""
        connection = self.live()
        try:
            connection.execute("COMMIT")
        except BaseException:
            self.rollback()
            raise

    def rollback(self) -> None:
        """Forget the open transaction, if any (quietly: for error paths)."""
        connection = self.connection
        if connection is not None and connection.in_transaction:
            try:
                connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def remove_after(self, after: int) -> int:
        """Delete the events with ``seq > after``, inside the caller's open transaction:
        the recovery's set-aside (``glmbandits recover --apply``, after copying them out)
        is the one removal, so the delete trigger is dropped and made again around it.
        Sequence numbers are not reused. Returns the rows deleted."""
        connection = self.live()
        if not connection.in_transaction:
            raise RuntimeError(f"{self.owner}: remove_after runs inside a transaction")
        connection.execute("DROP TRIGGER IF EXISTS events_no_delete")
        deleted = connection.execute("DELETE FROM events WHERE seq > ?", (after,)).rowcount
        connection.execute(_APPEND_ONLY[2])
        return int(deleted)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    # -- reading ------------------------------------------------------------------------
    def column(self, name: str) -> str:
        """``name`` as the select list reads it (NULL where an older file lacks it)."""
        return name if name in self.present else "NULL"

    @property
    def select(self) -> str:
        """``seq`` and :data:`ROW_COLUMNS`, as a select list of this file."""
        return ", ".join([self.key] + [self.column(name) for name in ROW_COLUMNS])

    def query(self, kinds: Iterable[str] | None = None, select: str | None = None) -> str:
        """The page query of :meth:`rows` (parameters: ``after``, ``size``). The kinds are
        checked (:func:`check_kinds`) and written into it as literals, ``kind = '...'``,
        the form in which SQLite uses a partial index (the catalogue's)."""
        checked = check_kinds(kinds, self.owner) if kinds is not None else ()
        where = f"{self.key} > ?" + (
            " AND (" + " OR ".join(f"kind = '{kind}'" for kind in checked) + ")"
            if checked else "")
        return (f"SELECT {select or self.select} FROM events WHERE {where} "
                f"ORDER BY {self.key} LIMIT ?")

    def rows(self, after: int, size: int, *, kinds: Iterable[str] | None = None,
             connection: sqlite3.Connection | None = None,
             select: str | None = None) -> list[tuple[Any, ...]]:
        """One page: up to ``size`` rows ``(seq, *ROW_COLUMNS)`` (or ``select``) with
        ``seq > after``, in order, of the given ``kinds`` (default: all), read on
        ``connection`` (default: the log's own)."""
        return (connection or self.live()).execute(self.query(kinds, select),
                                                   (after, size)).fetchall()

    def counts(self, connection: sqlite3.Connection | None = None) -> list[tuple[str, Any, int]]:
        """``(kind, status, count)`` over the whole log."""
        return (connection or self.live()).execute(
            "SELECT kind, status, count(*) FROM events GROUP BY kind, status").fetchall()

    def last_seq(self, connection: sqlite3.Connection | None = None) -> int:
        """The sequence number of the last committed event (0 for an empty log)."""
        row = (connection or self.live()).execute(
            f"SELECT max({self.key}) FROM events").fetchone()
        return int(row[0] or 0)


def check_kinds(kinds: Iterable[str], owner: str) -> tuple[str, ...]:
    """``kinds`` as a tuple of event kinds (:data:`~glmbandits.data.vocabulary.EVENT_KINDS`),
    checked: TypeError for a single ``str`` or a non-iterable, ValueError for an unknown
    kind or none at all (``None``, not an empty list, reads every kind).

    Examples
    --------
    >>> check_kinds(["catalogue"], "f"), check_kinds({"retry": 1}, "f")
    (('catalogue',), ('retry',))
    """
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, Iterable):
        raise TypeError(f"{owner}: kinds must be an iterable of event kinds (e.g. "
                        f"('{CATALOGUE}',)) or None, got {type(kinds).__name__} {kinds!r}"[:200])
    checked = tuple(kinds)
    for kind in checked:
        if not isinstance(kind, str) or kind not in EVENT_KINDS:
            raise ValueError(f"{owner}: kinds must be event kinds, each one of "
                             f"{list(EVENT_KINDS)}, got {kind!r}"[:300])
    if not checked:
        raise ValueError(f"{owner}: kinds must name at least one event kind, got none "
                         "(None reads every kind)")
    return checked


def page_rows(fetch: Callable[[int, int], list[tuple[Any, ...]]], after: int,
              limit: int | None, page: int = 1000) -> Iterator[tuple[Any, ...]]:
    """Rows with ``seq > after`` (at most ``limit``), read page by page:
    ``fetch(last, size)`` returns up to ``size`` rows with ``seq > last`` in order, the
    ``seq`` first (events appended meanwhile are seen; a long log is never in memory)."""
    last, left = int(after), limit
    while left is None or left > 0:
        size = page if left is None else min(page, left)
        rows = fetch(last, size)
        yield from rows
        if len(rows) < size:
            return
        last = rows[-1][0]
        if left is not None:
            left -= len(rows)
