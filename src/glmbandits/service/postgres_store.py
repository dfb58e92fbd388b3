"""The PostgreSQL store: the service's event log, model versions and metadata in one database.

:class:`PostgresStore` implements :class:`~glmbandits.service.store.Store` (what
``glmbandits serve --role all`` needs, exactly as :class:`SQLiteStore` does) plus
what the scale-out roles need: looking a decision up by id across processes,
publishing immutable model versions (the learner) and reading the newest one (the
API processes). Its tables, created and migrated by the service itself
(:func:`~glmbandits.data.postgres_locks.apply_migrations`, component
``service_store``, recorded in ``glmbandits_schema_version``):

* ``glmbandits_service_events``: the one PostgreSQL event log's table, written and read
  through :class:`~glmbandits.data.postgres_log.PostgresLog` as a policy's
  ``PostgresEventLog`` is (``seq bigserial`` and the SQLite log's columns; version 2
  added the last, ``request``); a unique index on the decision id of ``decision`` events
  (one per id, across every API process); append-only (triggers refuse UPDATE, DELETE,
  TRUNCATE).
* ``glmbandits_service_counters``: the totals of :meth:`totals`, updated in the
  transaction that appends the events they count (exact across processes).
* ``glmbandits_model_versions``: snapshots, one immutable row each (``id``,
  ``model_version`` = rewards absorbed, the ``seq`` it includes, ``sha256``,
  ``created``, the learner's ``pending`` count and decision ``statistics``, the
  bytes); UPDATE is refused, only rows older than the newest
  :data:`KEEP_VERSIONS` are deleted.
* ``glmbandits_service_meta``: key/value (the config fingerprint, the topology).

**One ``--role all`` per database.** :meth:`PostgresStore.claim_topology` takes the
store's serve lock on its writer's session before anything is written: exclusive for a
``--role all`` process, shared for API processes and the learner. A second process
that cannot have it is refused with :class:`~glmbandits.service.log_lock.LogInUseError`,
naming the sessions that hold it (their ``application_name`` carries the holder's pid
and host). The server releases the lock with the session, so a killed holder blocks
nobody; a writer that reconnects takes it again before writing, or refuses to write.

**Commit order.** ``bigserial`` values are drawn at INSERT, not at COMMIT. Every
append transaction therefore takes ``pg_advisory_xact_lock`` on the store's append
key before inserting: appends are serialised until their commit, so sequence order
is commit order, and a reader asking for ``seq > last`` never skips an event that
commits later. A rolled-back batch leaves a gap that is never filled: sequence
numbers are increasing, **not gap-free**, on PostgreSQL.

References
----------
PostgreSQL documentation, "Advisory Locks" (13.3.5), "Sequence Manipulation
Functions" (sequences are non-transactional), "LISTEN"/"NOTIFY".
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from typing import Any, Iterable, Iterator

from ..data.postgres_locks import (advisory_key, apply_migrations, connect, lock_holders,
                                   redact_url, require_psycopg, try_advisory_lock)
from ..data.postgres_log import PostgresLog
from ..data.sqlite_log import check_kinds
from .events import Event, event_from_row, event_row, page_events, total_keys
from .log_lock import LogInUseError

__all__ = ["PostgresStore", "ModelVersion", "MIGRATIONS", "SCHEMA_VERSION", "KEEP_VERSIONS",
           "CHANNEL"]

_EVENTS = "glmbandits_service_events"
_VERSIONS = "glmbandits_model_versions"
#: The schema steps: applying ``MIGRATIONS[:n]`` gives schema version n.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # version 1
        f"""CREATE TABLE {_EVENTS} (
            seq bigserial PRIMARY KEY, kind text NOT NULL, decision_id text,
            timestamp double precision NOT NULL, n_actions integer, contexts bytea,
            excluded text, action integer, probabilities bytea, propensity double precision,
            model_version bigint, reward double precision, status text,
            older_than double precision, policy_action integer, tag integer)""",
        f"CREATE UNIQUE INDEX {_EVENTS}_one_decision ON {_EVENTS} (decision_id) "
        "WHERE kind = 'decision'",
        f"CREATE INDEX {_EVENTS}_rewards ON {_EVENTS} (decision_id) WHERE kind = 'reward'",
        f"CREATE INDEX {_EVENTS}_sweeps ON {_EVENTS} (seq) WHERE kind = 'expire'",
        """CREATE TABLE glmbandits_service_counters (
            name text PRIMARY KEY, value bigint NOT NULL)""",
        f"""CREATE TABLE {_VERSIONS} (
            id bigserial PRIMARY KEY, model_version bigint, seq bigint NOT NULL,
            sha256 text NOT NULL, created timestamptz NOT NULL DEFAULT now(),
            pending bigint, statistics text, data bytea NOT NULL)""",
        """CREATE TABLE glmbandits_service_meta (key text PRIMARY KEY, value text NOT NULL)""",
        """CREATE FUNCTION glmbandits_service_refuse_change() RETURNS trigger
           LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$""",
        f"""CREATE TRIGGER {_EVENTS}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE
            ON {_EVENTS} FOR EACH STATEMENT
            EXECUTE FUNCTION glmbandits_service_refuse_change()""",
        f"""CREATE TRIGGER {_VERSIONS}_immutable BEFORE UPDATE ON {_VERSIONS}
            FOR EACH STATEMENT EXECUTE FUNCTION glmbandits_service_refuse_change()""",
    ),
    # version 2: the request column (JSON text; null before: no row rewritten), and the
    (f"ALTER TABLE {_EVENTS} ADD COLUMN IF NOT EXISTS request text",  # catalogue's index
     f"CREATE INDEX IF NOT EXISTS {_EVENTS}_catalogue ON {_EVENTS} (seq) "
     "WHERE kind = 'catalogue'"),
)
SCHEMA_VERSION = len(MIGRATIONS)
COMPONENT = "service_store"
#: Model versions kept: older rows are deleted when a new one is written.
KEEP_VERSIONS = 5
#: The NOTIFY channel of new model versions (the payload is the row id).
CHANNEL = "glmbandits_model_versions"
_COUNT = ("INSERT INTO glmbandits_service_counters (name, value) VALUES (%s, %s) "
          "ON CONFLICT (name) DO UPDATE SET value = glmbandits_service_counters.value + "
          "EXCLUDED.value")
_PAGE = 1000


class ModelVersion:
    """One row of ``glmbandits_model_versions`` (without its bytes unless loaded)."""

    __slots__ = ("id", "model_version", "seq", "sha256", "pending", "statistics", "data")

    def __init__(self, row: tuple, data: bytes | None = None) -> None:
        self.id, self.model_version, self.seq, self.sha256, pending, statistics = row
        self.pending = None if pending is None else int(pending)
        self.statistics: dict[str, int] = {} if statistics is None else json.loads(statistics)
        self.data = data

    def __repr__(self) -> str:
        return (f"ModelVersion(id={self.id}, model_version={self.model_version}, "
                f"seq={self.seq})")


class PostgresStore:
    """A :class:`~glmbandits.service.store.Store` in a PostgreSQL database (module docstring).

    Parameters
    ----------
    url : str
        ``postgresql://user[:password]@host[:port]/database[?options=...]``; the
        tables are created in the connection's schema (its ``search_path``).
    connect_timeout : float, default 10.0
        Seconds to wait for the server.

    Raises
    ------
    ValueError
        On a URL that is not ``postgresql://``/``postgres://``, or a database holding a
        newer schema of these tables.
    ImportError
        Without psycopg 3.
    """

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        owner = type(self).__name__
        if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{owner}: url must be a postgresql:// URL, got "
                             f"{redact_url(url) if isinstance(url, str) else type(url).__name__!r}")
        self._psycopg = require_psycopg(owner)
        self._url = url
        self.url = redact_url(url)
        self._owner = f"{owner}({self.url!r})"
        self._timeout = connect_timeout
        self._writer = self.connect("glmbandits-service")
        try:
            self.schema_version = apply_migrations(self._writer, self._owner, COMPONENT,
                                                   MIGRATIONS, _EVENTS, what="service store")
            schema = self._writer.execute("SELECT current_schema()").fetchone()[0]
        except BaseException:
            self._writer.close()
            raise
        #: the schema the tables live in; lock keys are per schema
        self.schema = str(schema)
        self.append_key = advisory_key(f"glmbandits.service.append:{self.schema}")
        #: the event log (the one PostgreSQL log's table, appends and reads)
        self._log = PostgresLog(_EVENTS, self.append_key)
        #: held by every serving process: exclusively by --role all, shared by the others
        self.serve_key = advisory_key(f"glmbandits.service.serve:{self.schema}")
        self._claimed: str | None = None
        self._holder: str | None = None
        self._known_seq = 0  # --role all: the log's last seq as this process last saw it
        self._reader = self.connect("glmbandits-service-reader")
        self._reader_lock = threading.Lock()
        self._pending: list[Event] = []

    def connect(self, application_name: str) -> Any:
        """A new autocommit connection to this store's database (the caller closes it)."""
        return connect(self._url, application_name=application_name,
                       connect_timeout=self._timeout, owner=self._owner)

    # -- writing (one thread) --------------------------------------------------------
    def append(self, event: Event) -> None:
        """Stage an event; :meth:`commit` writes the staged events in one transaction."""
        self._pending.append(event)

    def staged(self) -> list[Event]:
        """The events appended since the last commit (not yet in the log)."""
        return list(self._pending)

    def commit(self) -> int:
        """Write the staged events and their counts in one transaction under the append
        lock; returns the last sequence number written (or the log's last)."""
        events, self._pending = self._pending, []
        if not events:
            return self.last_seq()
        counts: dict[str, int] = {}
        for event in events:
            for key in total_keys(event.kind, event.status):
                counts[key] = counts.get(key, 0) + 1
        connection = self._live_writer()
        with connection.transaction():
            last = self._log.append(connection, [event_row(event) for event in events])
            if counts:
                connection.cursor().executemany(_COUNT, sorted(counts.items()))
        self._known_seq = last
        return last

    def rollback(self) -> None:
        """Forget the staged events."""
        self._pending = []

    def _live_writer(self) -> Any:
        if self._writer.closed or self._writer.broken:
            self._writer.close()
            writer = self.connect("glmbandits-service")
            if self._claimed is not None:  # the lock went with the old session
                try:
                    self._take_serve_lock(writer, self._claimed)
                except BaseException:
                    writer.close()
                    raise
            self._writer = writer
            if self._claimed == "single":
                self._check_unchanged(writer)
        return self._writer

    def _check_unchanged(self, writer: Any) -> None:
        """After the lock was taken again: refuse (RuntimeError) to write if another process
        wrote to the log meanwhile, so that the service rebuilds its policy from the log
        (as after any failed commit) before it writes again."""
        last = int(writer.execute(self._log.last_seq_query).fetchone()[0])
        if last != self._known_seq:
            known, self._known_seq = self._known_seq, last
            raise RuntimeError(f"{self.url}: the connection was cut and another process wrote "
                               f"to the log meanwhile (seq {known} -> {last}); this process "
                               "rebuilds its state from the log before writing again")

    def write_snapshot(self, seq: int, data: bytes) -> None:
        """A snapshot of role ``all`` (no model version recorded, nobody notified)."""
        self.publish(seq, data, model_version=None, pending=None, statistics=None, notify=False)

    def publish(self, seq: int, data: bytes, *, model_version: int | None,
                pending: int | None, statistics: dict[str, int] | None,
                notify: bool = True) -> int:
        """Insert an immutable model version (and ``NOTIFY`` :data:`CHANNEL`); its row id.

        The rows older than the newest :data:`KEEP_VERSIONS` are deleted in the same
        transaction; a row is never updated.
        """
        digest = hashlib.sha256(data).hexdigest()
        connection = self._live_writer()
        with connection.transaction():
            row_id = connection.execute(
                f"INSERT INTO {_VERSIONS} (model_version, seq, sha256, pending, statistics, "
                "data) VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
                (model_version, seq, digest, pending,
                 None if statistics is None else json.dumps(statistics), data)).fetchone()[0]
            connection.execute(f"DELETE FROM {_VERSIONS} WHERE id <= %s",
                               (row_id - KEEP_VERSIONS,))
            if notify:
                connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, str(row_id)))
        return int(row_id)

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value (committed at once)."""
        self._live_writer().execute(
            "INSERT INTO glmbandits_service_meta (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (key, value))

    def claim_topology(self, topology: str, holder: str | None = None) -> None:
        """Record how this log is served (``"single"``: ``--role all``; ``"scale-out"``: API
        processes and a learner), or refuse with ValueError if it was served the other way:
        a ``--role all`` service replays decisions by deciding again, a learner registers
        them, and the two logs are not interchangeable.

        First the serve lock is taken on the writer's session, for as long as it lives
        (see the module docstring): a ``"single"`` claim while any process serves the
        database, or a ``"scale-out"`` one while a ``--role all`` process does, raises
        :class:`~glmbandits.service.log_lock.LogInUseError` naming the holders; ``holder``
        is what this session's ``application_name`` calls it (default: ``all`` or
        ``scale-out``), with its pid and host.
        """
        if topology not in ("single", "scale-out"):
            raise ValueError(f"{self.url}: topology must be 'single' or 'scale-out', got "
                             f"{topology!r}")
        if self._claimed != topology:
            self._holder = holder
            self._take_serve_lock(self._live_writer(), topology)
            self._claimed = topology
            self._known_seq = self.last_seq()
        self._live_writer().execute(
            "INSERT INTO glmbandits_service_meta (key, value) VALUES ('topology', %s) "
            "ON CONFLICT (key) DO NOTHING", (topology,))
        stored = self.get_meta("topology")
        if stored != topology:
            raise ValueError(f"{self.url}: this event log is served as {stored!r} (the role "
                             f"{'all' if stored == 'single' else 'api/learner'}); it cannot be "
                             f"served as {topology!r}. Use another database or schema.")

    def set_aside(self, after: int, label: str) -> tuple[int, str]:
        """Move the events with ``seq > after`` and every model version into new tables of
        this schema, ``glmbandits_set_aside_<label>_events`` and ``..._versions``, and
        recount the counters; returns (how many events were moved, the events table).

        One transaction (the append-only trigger is disabled inside it only, which needs
        the tables' owner): the events are in one table or the other, never in neither.
        Call it holding the log (:meth:`claim_topology` ``"single"``).
        """
        sql = self._psycopg.sql
        if self._claimed != "single":
            raise RuntimeError(f"{self.url}: set_aside needs the log held (claim_topology)")
        if not label.replace("_", "").isalnum() or not label.isascii():
            raise ValueError(f"set_aside: label must be letters, digits and _, got {label!r}")
        prefix = f"glmbandits_set_aside_{label.lower()}"
        events, versions = sql.Identifier(f"{prefix}_events"), sql.Identifier(f"{prefix}_versions")
        connection = self._live_writer()
        with connection.transaction():
            self._log.lock(connection)
            moved = connection.execute(sql.SQL(
                f"CREATE TABLE {{}} AS SELECT * FROM {_EVENTS} WHERE seq > %s ORDER BY seq"
            ).format(events), (after,)).rowcount
            connection.execute(sql.SQL(f"CREATE TABLE {{}} AS SELECT * FROM {_VERSIONS}")
                               .format(versions))
            connection.execute(f"ALTER TABLE {_EVENTS} DISABLE TRIGGER {_EVENTS}_append_only")
            connection.execute(f"DELETE FROM {_EVENTS} WHERE seq > %s", (after,))
            connection.execute(f"ALTER TABLE {_EVENTS} ENABLE TRIGGER {_EVENTS}_append_only")
            connection.execute(f"DELETE FROM {_VERSIONS}")
            counts: dict[str, int] = {}
            for kind, status, count in connection.execute(self._log.counts_query):
                for key in total_keys(kind, status):
                    counts[key] = counts.get(key, 0) + int(count)
            connection.execute("DELETE FROM glmbandits_service_counters")
            if counts:
                connection.cursor().executemany(_COUNT, sorted(counts.items()))
        self._known_seq = self.last_seq()
        return int(moved), f"{prefix}_events"

    def _take_serve_lock(self, connection: Any, topology: str) -> None:
        """The serve lock on ``connection`` (exclusive for ``"single"``), or LogInUseError."""
        role = self._holder or ("all" if topology == "single" else "scale-out")
        name = f"glmbandits {role} pid={os.getpid()} host={socket.gethostname()}"
        connection.execute("SELECT set_config('application_name', %s, false)", (name[:63],))
        if try_advisory_lock(connection, self.serve_key, shared=topology != "single"):
            return
        holders = "; ".join(
            f"{holder['application_name'] or 'another session'} (PostgreSQL backend "
            f"{holder['pid']}, "
            + (f"from {holder['client_addr']}" if holder["client_addr"] else "local socket")
            + f", since {holder['backend_start']:%Y-%m-%d %H:%M:%S %Z})"
            for holder in lock_holders(connection, self.serve_key)) or "a session that ended"
        raise LogInUseError(
            f"the event log {self.url} (schema {self.schema}) is already served by: {holders}. "
            "A --role all process serves a database alone (two would hand out the same "
            "actions and corrupt the log); api and learner processes share it with each "
            "other, never with --role all. Stop that process first, or use another "
            "database or schema.", log=self.url, holder=holders)

    # -- reading (any thread) -----------------------------------------------------------
    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """A query on the reader connection, retried once on a new one if it was cut."""
        with self._reader_lock:
            for attempt in (1, 2):
                if self._reader.closed or self._reader.broken:
                    self._reader.close()
                    self._reader = self.connect("glmbandits-service-reader")
                try:
                    rows: list[tuple[Any, ...]] = self._reader.execute(sql, params).fetchall()
                    return rows
                except self._psycopg.OperationalError:
                    if attempt == 2 or not self._reader.broken:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def last_seq(self) -> int:
        """The sequence number of the last committed event (0 for an empty log)."""
        return int(self._rows(self._log.last_seq_query)[0][0])

    def get_meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM glmbandits_service_meta WHERE key = %s", (key,))
        return None if not rows else str(rows[0][0])

    def events(self, after: int = 0, limit: int | None = None, *,
               kinds: Iterable[str] | None = None) -> Iterator[Event]:
        """Committed events with ``seq > after`` in commit order, paged; of ``kinds`` if given."""
        checked = () if kinds is None else check_kinds(kinds, "PostgresStore.events")
        return page_events(lambda last, size: self._log.rows(
            self._rows, last, size, kinds=checked), after, limit, _PAGE)

    def totals(self) -> dict[str, int]:
        """The counters (decisions, retries, rewards, rewards_<status>, ...) of every process."""
        out = {"decisions": 0, "retries": 0, "rewards": 0}
        for name, value in self._rows("SELECT name, value FROM glmbandits_service_counters"):
            out[str(name)] = int(value)
        return out

    def find_decision(self, decision_id: str) -> Event | None:
        """The logged ``decision`` event with this id (None if there is none)."""
        rows = self._rows(f"SELECT {self._log.select} FROM {_EVENTS} WHERE decision_id = %s AND "
                          "kind = 'decision'", (decision_id,))
        return event_from_row(rows[0]) if rows else None

    def has_reward(self, decision_id: str) -> bool:
        """Whether a reward for this decision id is in the log."""
        return bool(self._rows(f"SELECT EXISTS (SELECT 1 FROM {_EVENTS} WHERE decision_id = %s "
                               "AND kind = 'reward')", (decision_id,))[0][0])

    def swept_after(self, seq: int, timestamp: float) -> bool:
        """Whether an ``expire`` sweep after event ``seq`` closed decisions made at
        ``timestamp`` (its ``timestamp - older_than >= timestamp``)."""
        return bool(self._rows(
            f"SELECT EXISTS (SELECT 1 FROM {_EVENTS} WHERE kind = 'expire' AND seq > %s AND "
            "timestamp - older_than >= %s)", (seq, timestamp))[0][0])

    def latest_version(self) -> ModelVersion | None:
        """The newest model version's row, without its bytes (None before the first)."""
        rows = self._rows(f"SELECT id, model_version, seq, sha256, pending, statistics FROM "
                          f"{_VERSIONS} ORDER BY id DESC LIMIT 1")
        return ModelVersion(rows[0]) if rows else None

    def load_version(self, row_id: int) -> ModelVersion | None:
        """A model version with its bytes, checksum verified (None if gone or damaged)."""
        rows = self._rows(f"SELECT id, model_version, seq, sha256, pending, statistics, data "
                          f"FROM {_VERSIONS} WHERE id = %s", (row_id,))
        if not rows or hashlib.sha256(rows[0][6]).hexdigest() != rows[0][3]:
            return None
        return ModelVersion(rows[0][:6], bytes(rows[0][6]))

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        """The newest snapshot whose checksum holds: (the seq it includes, its bytes)."""
        for (row_id,) in self._rows(f"SELECT id FROM {_VERSIONS} ORDER BY id DESC"):
            version = self.load_version(int(row_id))
            if version is not None and version.data is not None:
                return int(version.seq), version.data
        return None

    def close(self) -> None:
        """Close both connections (staged events are dropped)."""
        self._pending = []
        self._writer.close()
        with self._reader_lock:
            self._reader.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"
