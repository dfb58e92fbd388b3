"""learner_lock against a real PostgreSQL server: one holder at a time, a second waits
until the first releases, or until the first's session dies (backend terminated, or
its process killed with SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from glmbandits.data import learner_lock
from glmbandits.data.postgres_locks import advisory_key

psycopg = pytest.importorskip("psycopg")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(
    __import__("glmbandits").__file__)))


def _connect(url: str):
    return psycopg.connect(url, autocommit=True, connect_timeout=60)


class Waiter(threading.Thread):
    """A second learner waiting for the lock in a thread; records when it got it."""

    def __init__(self, url: str, name: str, timeout: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.url, self.name, self.timeout = url, name, timeout
        self.acquired_at: float | None = None
        self.error: BaseException | None = None
        self.release = threading.Event()

    def run(self) -> None:
        try:
            with _connect(self.url) as conn, learner_lock(conn, self.name, timeout=self.timeout,
                                                          poll_interval=0.05) as lock:
                assert lock.held()
                self.acquired_at = time.monotonic()
                self.release.wait(30)
        except BaseException as error:  # noqa: BLE001 - checked by the test
            self.error = error


def test_a_second_holder_times_out_then_gets_the_lock_once_the_first_releases(
        postgres_url) -> None:
    with _connect(postgres_url) as first:
        with learner_lock(first, "release-test") as lock:
            assert lock.held() and lock.key == advisory_key("release-test")
            with _connect(postgres_url) as second:
                started = time.monotonic()
                with pytest.raises(TimeoutError, match="held by another session; gave up"):
                    with learner_lock(second, "release-test", timeout=0.3, poll_interval=0.05):
                        pass
                assert 0.3 <= time.monotonic() - started < 60
            waiter = Waiter(postgres_url, "release-test")
            waiter.start()
            time.sleep(0.5)
            assert waiter.acquired_at is None  # still blocked while the first holds it
            released_at = time.monotonic()
        assert not lock.held()
        waiter.join(timeout=0.1)
        deadline = time.monotonic() + 60
        while waiter.acquired_at is None and waiter.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        waiter.release.set()
        waiter.join(timeout=60)
    assert waiter.error is None
    assert waiter.acquired_at is not None and waiter.acquired_at >= released_at


def test_a_waiter_takes_over_when_the_holders_backend_is_terminated(postgres_url) -> None:
    first = _connect(postgres_url)
    waiter = Waiter(postgres_url, "terminate-test")
    with learner_lock(first, "terminate-test") as lock:
        waiter.start()
        time.sleep(0.5)
        assert waiter.acquired_at is None
        with _connect(postgres_url) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first.info.backend_pid,))
        killed_at = time.monotonic()
        deadline = killed_at + 60
        while waiter.acquired_at is None and waiter.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not lock.held()  # the dead session knows it lost the lock
    first.close()
    waiter.release.set()
    waiter.join(timeout=60)
    assert waiter.error is None and waiter.acquired_at is not None


_HOLDER = """
import sys, time, psycopg
from glmbandits.data import learner_lock
with psycopg.connect(sys.argv[1], autocommit=True) as conn, learner_lock(conn, "kill-test"):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.slow
def test_a_waiter_takes_over_when_the_holding_process_is_killed(postgres_url) -> None:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, postgres_url],
                              stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": SRC})
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = Waiter(postgres_url, "kill-test")
        waiter.start()
        time.sleep(0.5)
        assert waiter.acquired_at is None
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        deadline = time.monotonic() + 60
        while waiter.acquired_at is None and waiter.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        waiter.release.set()
        waiter.join(timeout=60)
        assert waiter.error is None and waiter.acquired_at is not None
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=60)
        holder.stdout.close()


def test_learner_lock_checks_its_arguments(postgres_url) -> None:
    with psycopg.connect(postgres_url, connect_timeout=60) as conn:  # not autocommit
        with pytest.raises(ValueError, match="autocommit mode"):
            with learner_lock(conn):
                pass
    with _connect(postgres_url) as conn:
        with pytest.raises(ValueError, match="timeout must be"):
            with learner_lock(conn, timeout=-1):
                pass
        with pytest.raises(TypeError, match="name must be an int or a str"):
            with learner_lock(conn, 1.5):
                pass
    with pytest.raises(ValueError, match="open psycopg connection"):
        with learner_lock(conn):
            pass
    with pytest.raises(ValueError, match="fit in a signed 64-bit"):
        advisory_key(2**63)
