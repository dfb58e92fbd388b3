"""The store interface of the service: an append-only event log plus snapshots and metadata.

:class:`Store` is what :class:`~glmbandits.service.core.DecisionService` needs;
:class:`~glmbandits.service.sqlite_store.SQLiteStore` and
:class:`~glmbandits.service.postgres_store.PostgresStore` implement it. A store is
written by one thread (the service's worker); :meth:`Store.events` and
:meth:`Store.totals` may be called from any thread. Sequence numbers increase in
commit order; only SQLite's have no gaps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Protocol

from .events import Event

__all__ = ["Store", "parse_db_url", "open_store"]


class Store(Protocol):
    """Durable events, snapshots and metadata (see the module docstring)."""

    url: str

    def append(self, event: Event) -> None:
        """Add an event to the open transaction (made durable by :meth:`commit`)."""

    def commit(self) -> int:
        """Make every appended event durable; returns the last sequence number written."""

    def rollback(self) -> None:
        """Forget the events appended since the last commit."""

    def last_seq(self) -> int:
        """The sequence number of the last committed event (0 for an empty log)."""

    def events(self, after: int = 0, limit: int | None = None, *,
               kinds: Iterable[str] | None = None) -> Iterator[Event]:
        """Committed events with ``seq > after`` in order (at most ``limit``), read page by
        page; ``kinds`` (event kinds, e.g. ``("catalogue",)``) reads only those, without
        reading the others (a bad ``kinds`` raises at the call:
        :func:`~glmbandits.data.sqlite_log.check_kinds`)."""

    def totals(self) -> dict[str, int]:
        """Counts over the whole log: ``decisions``, ``retries``, ``rewards``, ``rewards_<status>``,
        ``expiries_<outcome>``, ``catalogue_<change>`` (the keys of
        :func:`~glmbandits.data.vocabulary.total_keys`)."""

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        """The newest snapshot (the seq it includes, its bytes), checksum verified."""

    def write_snapshot(self, seq: int, data: bytes) -> None:
        """Store a snapshot of the state after event ``seq`` (atomically)."""

    def get_meta(self, key: str) -> str | None:
        """A metadata value (e.g. the config fingerprint), or None."""

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value (committed at once)."""

    def claim_topology(self, topology: str, holder: str | None = None) -> None:
        """Hold the log for this process until :meth:`close` (``"single"``: ``--role all``,
        alone; ``"scale-out"``: API processes and a learner, PostgreSQL only), or raise
        :class:`~glmbandits.service.log_lock.LogInUseError` naming the holder. ``holder``
        names this process in the refusals of others (e.g. ``"recover"``). A store
        opened only to read (``glmbandits export``) claims nothing."""

    def set_aside(self, after: int, label: str) -> tuple[int, str]:
        """Move the events after seq ``after`` and the snapshots out of the log, into a
        place named with ``label`` (``glmbandits recover --apply``); (events moved, where)."""

    def close(self) -> None:
        """Release the database (and the log, if this store claimed it)."""


def parse_db_url(url: str) -> tuple[str, str]:
    """Split a database URL into (scheme, location).

    ``sqlite:///relative.db`` is relative to the working folder and
    ``sqlite:////absolute/path.db`` absolute, the usual URL convention.

    Examples
    --------
    >>> parse_db_url("sqlite:///events.db")
    ('sqlite', 'events.db')
    >>> parse_db_url("sqlite:////var/lib/glmbandits/events.db")
    ('sqlite', '/var/lib/glmbandits/events.db')
    >>> parse_db_url("postgresql://app@db.example/events")
    ('postgresql', 'postgresql://app@db.example/events')
    """
    if not isinstance(url, str):
        raise TypeError(f"db must be a URL string, got {type(url).__name__}")
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not path or path.endswith("/"):
            raise ValueError(f"db must name a file, as sqlite:///file.db, got {url!r}")
        return "sqlite", path
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql", url
    raise ValueError(f"db must be a URL sqlite:///relative.db, sqlite:////absolute.db or "
                     f"postgresql://user@host/database, got {url!r}")


def open_store(url: str, *, synchronous: str = "FULL") -> Store:
    """Open (creating it if needed) the store a URL names.

    ``synchronous`` is SQLite's; on PostgreSQL durability is the server's
    ``synchronous_commit`` (on by default: a commit is flushed before it returns).
    """
    scheme, location = parse_db_url(url)
    if scheme == "postgresql":
        from .postgres_store import PostgresStore

        try:
            return PostgresStore(location)
        except Exception as error:
            _refuse_unreachable(error, location)
            raise
    import sqlite3

    from .sqlite_store import SQLiteStore

    try:
        Path(location).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
        return SQLiteStore(location, url=url, synchronous=synchronous)
    except (OSError, sqlite3.OperationalError) as error:
        if isinstance(error, StoreUnavailableError):
            raise
        raise StoreUnavailableError(f"the event log {location} cannot be opened: {error}") \
            from error


class StoreUnavailableError(OSError):
    """The event log's database cannot be reached or opened (a server that does not
    answer, a file that cannot be created): the message names it, without a password."""


def _refuse_unreachable(error: Exception, location: str) -> None:
    """Raise :class:`StoreUnavailableError` for psycopg's connection failures (its
    ``OperationalError``: refused, unknown host, timeout, authentication)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - PostgresStore needs it to get here
        return
    if isinstance(error, psycopg.OperationalError):
        from ..data.postgres_locks import redact_url

        raise StoreUnavailableError(
            f"the PostgreSQL event log {redact_url(location)} cannot be reached: "
            f"{str(error).strip()}") from error
