"""The learner is a role of the one commit worker (``learner_role.LearnerRole``), in process.

The worker (:class:`~glmbandits.service.core.DecisionService`) runs a learner role on a
real PostgreSQL log (the test server): it takes the learner lock, reads the log from its
cursor, applies it through the decision protocol and publishes model versions that equal,
bit for bit, the log rebuilt offline; a role's hook overridden in a subclass is what the
worker calls; a learner that lost its lock stops without publishing; and the learner's
module has no loop of its own (the worker's loop is the only one).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from glmbandits.service import core, learner_role
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.events import Event
from glmbandits.service.learner_role import LearnerRole, LostLockError, learner_service
from glmbandits.service.postgres_store import PostgresStore
from glmbandits.service.replay import rebuild_learner_from_log
from glmbandits.service.snapshot import decode_snapshot
from servicekit import SRC, assert_same_state, unit_rows, write_config

DEADLINE = 60.0


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {DEADLINE} s")
        time.sleep(0.02)


def log_rounds(store: PostgresStore, rounds: range, *, rewarded: bool = True) -> int:
    """Decisions (and their rewards) as API processes log them; the last seq."""
    rng = np.random.default_rng(rounds.start)
    for i in rounds:
        store.append(Event("decision", f"d{i}", float(i), contexts=unit_rows(rng, 4, 3),
                           action=i % 4, probabilities=np.full(4, 0.25), propensity=0.25,
                           model_version=0))
        if rewarded:
            store.append(Event("reward", f"d{i}", i + 0.5, reward=float(i % 2),
                               status="accepted"))
    return store.commit()


class Observed(LearnerRole):
    """A learner role whose hooks count what the worker asks of it."""

    def __init__(self, store: PostgresStore, **options) -> None:
        super().__init__(store, **options)
        self.periodic_runs = 0
        self.published: list[int] = []

    def periodic(self, service) -> bool:
        self.periodic_runs += 1
        return super().periodic(service)

    def committed(self, service) -> None:
        before = self.published_seq
        super().committed(service)
        if self.published_seq != before:
            self.published.append(self.published_seq)


@pytest.mark.slow
def test_the_worker_runs_a_learner_role_and_publishes_the_log_bit_for_bit(tmp_path,
                                                                          postgres_url):
    config = load_config(write_config(tmp_path))
    writer = PostgresStore(postgres_url)
    store = PostgresStore(postgres_url)
    role = Observed(store, page=7)  # a small page: the worker reads the log in several runs
    service = DecisionService(config, store, role=role).start()
    try:
        assert service.role is role and service.running
        wait_until(lambda: role.lock is not None, "taking the learner lock")
        last = log_rounds(writer, range(40))
        wait_until(lambda: role.published_seq == last, "publishing the whole log")
        version = writer.latest_version()
        assert version is not None and version.seq == last and version.model_version == 40
        assert role.periodic_runs > 40 // 7 and role.published[-1] == last
        assert_same_state(decode_snapshot(writer.load_version(version.id).data),
                          rebuild_learner_from_log(config, writer))
        assert service.restored_from == {"snapshot_seq": 0, "replayed_events": 0}
        more = log_rounds(writer, range(40, 45), rewarded=False)
        wait_until(lambda: role.seq == more, "reading the new decisions")
    finally:
        service.stop()  # publishes what is unpublished, releases the lock, closes the store
    try:
        version = writer.latest_version()
        assert version.seq == more and version.pending == 5
        assert_same_state(decode_snapshot(writer.load_version(version.id).data),
                          rebuild_learner_from_log(config, writer))
        # a second learner restores from the newest version and the (empty) log after it
        second = learner_service(config, PostgresStore(postgres_url)).start()
        try:
            wait_until(lambda: second.restored_from, "the second learner's restore")
            assert second.restored_from == {"snapshot_seq": more, "replayed_events": 0}
            assert_same_state(second.policy, rebuild_learner_from_log(config, writer))
        finally:
            second.stop(snapshot=False)
    finally:
        writer.close()


@pytest.mark.slow
def test_a_learner_that_lost_its_lock_stops_without_publishing(tmp_path, postgres_url):
    config = load_config(write_config(tmp_path))
    writer = PostgresStore(postgres_url)
    store = PostgresStore(postgres_url)
    role = LearnerRole(store)
    service = DecisionService(config, store, role=role).start()
    try:
        wait_until(lambda: role.lock is not None, "taking the learner lock")
        log_rounds(writer, range(3))
        wait_until(lambda: role.published_seq > 0, "the first publication")
        published = writer.latest_version().id
        pid = role._connection.info.backend_pid
        with writer.connect("test-terminate") as connection:
            connection.execute("SELECT pg_terminate_backend(%s)", (pid,))
        log_rounds(writer, range(3, 6))
        wait_until(role.should_stop.is_set, "the learner asking to stop")
        assert isinstance(role.failure, LostLockError)
        assert "was lost" in str(role.failure)
    finally:
        service.stop()  # no last publication: the lock is lost
    try:
        assert writer.latest_version().id == published
    finally:
        writer.close()


def test_the_learner_role_checks_its_parameters(postgres_url):
    with pytest.raises(TypeError, match="LearnerRole: store must be a PostgresStore"):
        LearnerRole(object())  # type: ignore[arg-type]
    store = PostgresStore(postgres_url)
    try:
        for name, value in (("poll_interval", 0.0), ("min_interval", -1.0),
                            ("max_staleness", float("nan")), ("lock_timeout", 0)):
            with pytest.raises(ValueError, match=f"LearnerRole.*{name}"):
                LearnerRole(store, **{name: value})
        with pytest.raises(ValueError, match="LearnerRole.*page"):
            LearnerRole(store, page=0)
    finally:
        store.close()


def test_the_learner_has_no_loop_of_its_own():
    """The lock wait, the log reading and the publication are hooks the worker calls: the
    learner's module has no ``while`` (only ``core``'s worker loops), starts no thread,
    and the old module with its own loop is gone."""
    loops = [node.lineno for node in ast.walk(ast.parse(inspect.getsource(learner_role)))
             if isinstance(node, ast.While)]
    assert loops == []
    assert "Thread(" not in inspect.getsource(learner_role)
    assert importlib.util.find_spec("glmbandits.service.learner") is None
    work = ast.parse(textwrap.dedent(inspect.getsource(core.DecisionService._work)))
    assert any(isinstance(node, ast.While) for node in ast.walk(work))
    role = LearnerRole.__dict__
    for hook in ("begin", "restore", "periodic", "committed", "finish", "recover"):
        assert callable(role[hook]), hook
    assert not hasattr(LearnerRole, "run")


def test_the_learner_imports_no_http_server():
    """``glmbandits serve --role learner`` serves no HTTP: its module imports neither
    uvicorn nor starlette nor the service's routes."""
    code = ("import sys; import glmbandits.service.learner_role; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('uvicorn', 'starlette')"
            " or m in ('glmbandits.service.app', 'glmbandits.service.server')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
                            timeout=120, check=True, cwd=Path(__file__).parent)
    assert result.stdout.strip() == "[]"
