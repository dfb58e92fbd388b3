"""One service per event log: the lock a serving process holds for its whole life.

Two processes that serve one log each hold their own policy, hand out the same
actions and interleave their events, so that the log no longer replays (see
:func:`~glmbandits.service.replay.check_restored`). A serving process therefore
holds the log:

* **SQLite**: :class:`FileLogLock`, an exclusive ``flock`` on a file beside the
  log (``<db>.lock``) that holds the holder's pid, host and start time for the
  message of a refused process. The operating system releases the lock when the
  process ends in any way, ``kill -9`` included, so a crashed holder never blocks
  a restart; the file itself stays (the next holder writes over it). Readers of
  the log (``glmbandits export``, :func:`~glmbandits.service.store.open_store`)
  take no lock. On Windows the lock is ``msvcrt.locking`` on one byte far past
  the holder's line, also released by the system when the process ends.
* **PostgreSQL**: a session-level advisory lock
  (:meth:`~glmbandits.service.postgres_store.PostgresStore.claim_topology`),
  which the server releases when the session ends.

A refused process raises :class:`LogInUseError`, naming the log and the holder.
The lock covers processes of one machine on a local file system (as SQLite's own
locking does: a SQLite log on a network file system is not supported).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import sys
import time
from typing import Any

__all__ = ["LogInUseError", "FileLogLock", "lock_path", "holder_record", "describe_holder"]

#: Seconds a refused process waits for the holder's line (written just after its lock).
_HOLDER_WAIT_S = 2.0
#: The byte ``msvcrt.locking`` locks on Windows (its locks are mandatory: the holder's line
#: at the start of the file must stay readable).
_WINDOWS_LOCK_OFFSET = 1 << 20


class LogInUseError(RuntimeError):
    """Another process serves this event log; ``log`` names the log, ``holder`` who holds it."""

    def __init__(self, message: str, *, log: str, holder: str) -> None:
        super().__init__(message)
        self.log = log
        self.holder = holder


def lock_path(db_path: str) -> str:
    """The lock file of a SQLite log: ``<db>.lock`` beside the real file (symlinks resolved,
    so that two names of one log share one lock).

    Examples
    --------
    >>> lock_path("/var/lib/glmbandits/events.db")
    '/var/lib/glmbandits/events.db.lock'
    """
    return os.path.realpath(db_path) + ".lock"


def holder_record(role: str) -> dict[str, Any]:
    """What a holder writes about itself: pid, host, role and start time (UTC)."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "role": role,
            "since": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def describe_holder(record: dict[str, Any] | None) -> str:
    """A holder's record in words, e.g. ``pid 1234 on host web1 (glmbandits serve, since ...)``.

    Examples
    --------
    >>> describe_holder({"pid": 12, "host": "web1", "role": "glmbandits serve",
    ...                  "since": "2026-01-02T03:04:05+00:00"})
    'pid 12 on host web1 (glmbandits serve, since 2026-01-02T03:04:05+00:00)'
    >>> describe_holder(None)
    'a process that has not written its pid yet'
    """
    if not record or "pid" not in record:
        return "a process that has not written its pid yet"
    details = ", ".join(str(record[key]) if key == "role" else f"since {record[key]}"
                        for key in ("role", "since") if record.get(key))
    return (f"pid {record['pid']} on host {record.get('host', '?')}"
            + (f" ({details})" if details else ""))


class FileLogLock:
    """An exclusive lock on a SQLite log's ``<db>.lock``, released by the OS on death.

    Parameters
    ----------
    db_path : str
        The log's database file.
    log : str, optional
        How messages name the log (default: ``db_path``).

    Examples
    --------
    >>> import os, tempfile
    >>> db = os.path.join(tempfile.mkdtemp(), "log.db")
    >>> first = FileLogLock(db).acquire("glmbandits serve")
    >>> try:
    ...     FileLogLock(db).acquire("glmbandits serve")
    ... except LogInUseError as error:
    ...     print(error.holder == describe_holder(first.holder()))
    True
    >>> first.release()
    >>> FileLogLock(db).acquire("glmbandits serve").release()
    """

    def __init__(self, db_path: str, *, log: str | None = None) -> None:
        self.path = lock_path(db_path)
        self.log = log or db_path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, role: str) -> "FileLogLock":
        """Take the lock at once (never waits) and write this process's record into the file.

        Raises
        ------
        LogInUseError
            If another process (or another :class:`FileLogLock` of this one) holds it.
        OSError
            If the lock file cannot be created (e.g. a read-only folder).
        """
        if self._fd is not None:
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):
                record = self._wait_for_record(fd)
                holder = describe_holder(record)
                raise LogInUseError(
                    f"the event log {self.log} is already served by {holder}: its lock "
                    f"{self.path} is held. Two services on one log hand out the same actions "
                    "and corrupt it; stop that process first (its lock is released when it "
                    "ends, even by kill -9), or serve another log.", log=self.log, holder=holder)
            line = (json.dumps(holder_record(role)) + "\n").encode()
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, line)
        except BaseException:
            os.close(fd)  # closing the descriptor releases a lock taken on it
            raise
        self._fd = fd
        return self

    def holder(self) -> dict[str, Any] | None:
        """The record in the lock file (the holder's, or a former holder's), or None."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return _read_record(fd)
        finally:
            os.close(fd)

    def _wait_for_record(self, fd: int) -> dict[str, Any] | None:
        """The holder's record, waiting briefly for a holder that has just taken the lock
        (until it has written its record over a former holder's, whose pid is dead)."""
        deadline = time.monotonic() + _HOLDER_WAIT_S
        while True:
            record = _read_record(fd)
            if record is not None and _may_be_alive(record):
                return record
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)

    def release(self) -> None:
        """Empty the record and release the lock (the file stays; idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            _unlock(fd)
        finally:
            os.close(fd)  # releases the lock (on POSIX, also without _unlock)

    def __repr__(self) -> str:
        return f"FileLogLock({self.path!r}, held={self.held})"


def _may_be_alive(record: dict[str, Any]) -> bool:
    """False only for a record of this host whose pid is known to be dead (POSIX)."""
    pid = record.get("pid")
    if sys.platform == "win32" or record.get("host") != socket.gethostname() or \
            not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by another user
        return True
    return True


def _read_record(fd: int) -> dict[str, Any] | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 4096)
        record = json.loads(data.decode("utf-8")) if data.strip() else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:  # flock: per open file description, so a second open in this process is refused
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
