"""One service per event log (issue 21, item 2).

A second ``glmbandits serve`` on a log another process serves is refused at once, naming
the log and the holder (SQLite: the ``<db>.lock`` file lock; PostgreSQL: the serve
advisory lock); a holder killed with ``kill -9`` blocks no restart; readers (export)
need no lock. A log written by two processes at once (made here by two cores on one
file, which bypass the lock as the old code did) is refused at start with one paragraph
that says what happened and how to recover, and ``glmbandits recover`` keeps the trusted
prefix, moves the rest out of the log and lets the service start.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from glmbandits.cli.main import main
from glmbandits.service.config import load_config
from glmbandits.service.core import DecisionService
from glmbandits.service.events import Event, event_row
from glmbandits.service.log_lock import LogInUseError, lock_path
from glmbandits.service.replay import ReplayMismatchError, rebuild_from_log
from glmbandits.service.snapshot import decode_snapshot
from glmbandits.service.sqlite_store import SQLiteStore
from glmbandits.service.store import open_store
from servicekit import ServerProcess, assert_same_state, environment, unit_rows, write_config

#: Generous bounds for processes on a busy machine (s).
DEADLINE = 120.0


def two_writer_log(folder: Path, db: str, *, snapshots: bool, rounds: int = 20) -> Path:
    """A log written by two cores at once (as two ``serve`` processes did before the lock):
    their decisions and rewards interleave; each writes its own snapshot at stop if
    ``snapshots``. Returns the config's path."""
    config_path = write_config(folder)
    config = load_config(config_path)
    first = DecisionService(config, open_store(db)).start()
    second = DecisionService(config, open_store(db)).start()
    rng = np.random.default_rng(0)
    for t in range(rounds):
        for name, core in (("a", first), ("b", second)):
            core.decide(unit_rows(rng, 6, 3), decision_id=f"{name}{t}")
            if t % 2:
                core.reward(f"{name}{t}", float(rng.random() < 0.5))
    first.stop(snapshot=snapshots)
    second.stop(snapshot=snapshots)
    return config_path


def read_events(db: str) -> list[tuple]:
    """The log's events as (seq, stored row) pairs, comparable with ``==``."""
    store = open_store(db)
    try:
        return [(event.seq, event_row(event)) for event in store.events()]
    finally:
        store.close()


def serve_expecting_refusal(config: Path, db: str,
                            role: str = "all") -> subprocess.CompletedProcess:
    """``glmbandits serve`` that must exit by itself (a refusal); fails if it serves on."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "glmbandits", "serve", str(config), "--host", "127.0.0.1",
             "--port", "0", "--db", db, "--role", role],
            capture_output=True, text=True, env=environment(), timeout=DEADLINE)
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"the second serve did not exit in {DEADLINE} s: it served a "
                             f"log another process serves\n{expired.stderr}") from None


def start_when_free(config: Path, db: str, role: str = "all") -> ServerProcess:
    """Start a server, retrying while the log is still held (a killed PostgreSQL holder's
    session ends when the server notices the closed socket), within a deadline."""
    deadline = time.monotonic() + DEADLINE
    while True:
        try:
            return ServerProcess(config, db, role=role)
        except RuntimeError as error:
            if "already served" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# -- the lock, in one process ----------------------------------------------------------------
def test_a_second_claim_of_a_sqlite_log_is_refused_and_readers_need_none(tmp_path):
    path = str(tmp_path / "log.db")
    holder = SQLiteStore(path)
    holder.claim_topology("single")
    holder.append(Event("reward", "r", 1.0, reward=1.0, status="late"))
    holder.commit()
    second = SQLiteStore(path)
    try:
        with pytest.raises(LogInUseError) as refused:
            second.claim_topology("single")
        message = str(refused.value)
        assert path in message and f"pid {os.getpid()}" in message
        assert lock_path(path) in message
        assert json.loads(Path(lock_path(path)).read_text())["pid"] == os.getpid()
        # a reader (what export opens) reads while the log is held
        assert [event.kind for event in second.events()] == ["reward"]
        assert second.totals()["rewards"] == 1
        with pytest.raises(ValueError, match="one process"):
            second.claim_topology("scale-out")
        holder.close()  # a clean stop releases the log
        second.claim_topology("single", holder="recover")
        third = SQLiteStore(path)
        with pytest.raises(LogInUseError, match=r"\(glmbandits recover, since"):
            third.claim_topology("single")
        third.close()
    finally:
        second.close()
        holder.close()


@pytest.mark.slow
def test_a_refusal_never_names_a_dead_former_holder(tmp_path):
    """Between taking the lock and writing its record, a holder leaves the former holder's
    record in the file; a process refused then must not name that dead pid."""
    from glmbandits.service.log_lock import FileLogLock

    path = str(tmp_path / "log.db")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(DEADLINE)
    holder = FileLogLock(path).acquire("glmbandits serve")
    try:
        Path(lock_path(path)).write_text(json.dumps(
            {"pid": dead.pid, "host": socket.gethostname(), "role": "glmbandits serve"}))
        with pytest.raises(LogInUseError) as refused:
            FileLogLock(path).acquire("glmbandits serve")
        assert f"pid {dead.pid}" not in str(refused.value)
        assert "has not written its pid yet" in str(refused.value)
    finally:
        holder.release()


# -- a log written by two processes ------------------------------------------------------------
def test_a_snapshot_that_missed_the_other_writers_events_is_refused(tmp_path):
    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = load_config(two_writer_log(tmp_path, db, snapshots=True))
    # the newest snapshot holds one writer's decisions only: restoring from it would
    # forget the other's pending decisions (their rewards answered 404)
    with pytest.raises(ReplayMismatchError, match="does not account for every event"):
        DecisionService(config, open_store(db)).start()


def test_a_logged_call_the_policy_refuses_is_a_replay_mismatch(tmp_path):
    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = load_config(write_config(tmp_path))
    store = open_store(db)
    store.append(Event("reward", "never-decided", 1.0, reward=1.0, status="learned"))
    store.commit()
    store.close()
    with pytest.raises(ReplayMismatchError, match="event 1 .*refused by the replayed policy"):
        DecisionService(config, open_store(db)).start()


@pytest.mark.parametrize("snapshots", [True, False])
def test_recover_keeps_the_trusted_prefix_and_moves_the_rest_out(tmp_path, snapshots):
    from glmbandits.service.recover import apply_recovery, plan_recovery

    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = load_config(two_writer_log(tmp_path, db, snapshots=snapshots))
    before = read_events(db)
    with sqlite3.connect(tmp_path / "log.db") as connection:
        snapshots_before = connection.execute("SELECT seq, data FROM snapshots").fetchall()
    assert snapshots_before  # written at stop or every snapshot_every events
    store = open_store(db)
    try:
        store.claim_topology("single")
        plan = plan_recovery(config, store)
        assert plan.needed and not plan.restores and plan.reason is not None
        assert plan.events == len(before) and 0 < plan.kept_seq < plan.last_seq
        assert read_events(db) == before  # planning changes nothing
        apply_recovery(config, store, plan, label="t1")
    finally:
        store.close()
    kept = read_events(db)
    aside_path = tmp_path / "log.db.set-aside-t1.db"
    assert plan.destination == str(aside_path)
    aside = read_events(f"sqlite:///{aside_path}")
    # nothing lost, nothing invented: the two parts are the log, event for event
    assert kept + aside == before
    assert kept[-1][0] == plan.kept_seq and plan.moved == len(aside)
    with sqlite3.connect(aside_path) as connection:  # the old snapshots are moved too
        assert connection.execute("SELECT seq, data FROM snapshots").fetchall() == \
            snapshots_before
    # the service now starts, from a new snapshot of exactly the trusted prefix
    service = DecisionService(config, open_store(db)).start()
    try:
        assert service.restored_from == {"snapshot_seq": plan.kept_seq, "replayed_events": 0}
        store = open_store(db)
        assert_same_state(service.policy, rebuild_from_log(config, store))
        assert json.loads(store.get_meta("recovered"))["kept_seq"] == plan.kept_seq
        store.close()
        # a new event gets a number never given before (the moved ones keep theirs)
        answer = service.decide(np.eye(3), decision_id="after-recovery")
        assert answer["decision_id"] == "after-recovery"
    finally:
        service.stop()
    assert read_events(db)[-1][0] == before[-1][0] + 1


def test_recover_refuses_a_served_log_and_changes_nothing_without_apply(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = two_writer_log(tmp_path, db, snapshots=True)
    before = read_events(db)
    holder = open_store(db)
    holder.claim_topology("single")
    try:
        assert main(["recover", str(config), "--db", db, "--apply"]) == 2
        assert "already served by pid" in capsys.readouterr().err
    finally:
        holder.close()
    assert main(["recover", str(config), "--db", db]) == 0
    out = capsys.readouterr().out
    assert "trusted prefix" in out and "nothing was changed" in out
    assert read_events(db) == before
    assert not list(tmp_path.glob("log.db.set-aside-*"))


@pytest.mark.parametrize("decisions", [
    'reward_wait = 5.0\nexpire_every = 0.001\nmax_pending = 4\nmissing_reward = "default"\n',
    'reward_wait = 5.0\nexpire_every = 0.001\nduplicate_rewards = "sum"\nmax_resolved = 3\n',
])
def test_a_log_of_every_kind_of_call_restores_without_a_false_alarm(tmp_path, decisions):
    """The restore check (the policy's counts equal the log's totals) holds for one writer
    whatever happened: retries, duplicates, held sums, late rewards, sweeps, evictions."""
    from glmbandits.service.errors import ServiceError
    from glmbandits.service.recover import plan_recovery

    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = load_config(write_config(tmp_path, decisions=decisions))
    now = [1000.0]
    service = DecisionService(config, open_store(db), clock=lambda: now[0]).start()
    rng = np.random.default_rng(3)
    contexts = {}
    for t in range(120):
        now[0] += float(rng.exponential(1.0))
        choice = rng.random()
        ids = list(contexts)
        try:
            if choice < 0.4 or not ids:
                contexts[f"d{t}"] = unit_rows(rng, 4, 3)
                service.decide(contexts[f"d{t}"], decision_id=f"d{t}")
            elif choice < 0.5:  # a retry of the same request
                old = ids[int(rng.integers(len(ids)))]
                service.decide(contexts[old], decision_id=old)
            else:  # rewards: first, duplicate, held, late or for a forgotten decision
                old = ids[int(rng.integers(len(ids)))]
                service.reward(old, float(rng.random() < 0.5))
        except ServiceError:  # a 404 or 409: nothing logged
            pass
        if t % 10 == 0:  # let the worker sweep at the new time
            service.submit(lambda: None).result(30)
    totals = service.totals()
    service.stop()
    assert totals.get("expiries_dropped", 0) + totals.get("expiries_default", 0) + \
        totals.get("expiries_learned", 0) > 0 and totals["retries"] > 0
    assert any(key in totals for key in ("rewards_late", "rewards_duplicate", "rewards_held"))
    restarted = DecisionService(config, open_store(db)).start()  # snapshot + tail
    restarted.stop(snapshot=False)
    store = open_store(db)
    try:
        assert not plan_recovery(config, store).needed  # the whole log, from its start
    finally:
        store.close()


# -- real processes: SQLite ---------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_serve_on_a_sqlite_log_is_refused_and_a_killed_holder_blocks_nothing(
        tmp_path, capsys):
    config = write_config(tmp_path)
    db_path = tmp_path / "log.db"
    db = f"sqlite:///{db_path}"
    first = ServerProcess(config, db)
    try:
        decided = first.client.post("/v1/decide", json={"decision_id": "d1",
                                                         "contexts": [[0.1, 0.2, 0.3]] * 3})
        assert decided.status_code == 200
        started = time.monotonic()
        second = serve_expecting_refusal(config, db)
        assert second.returncode != 0
        assert time.monotonic() - started < DEADLINE
        assert "Traceback" not in second.stderr
        assert str(db_path) in second.stderr and f"pid {first.process.pid}" in second.stderr
        # the holder serves on, and a reader (export) works beside it
        assert first.client.get("/v1/model").json()["decisions"] == 1
        assert main(["export", "--db", db, "--events", str(tmp_path / "e.parquet")]) == 0
        assert "wrote 1 events" in capsys.readouterr().out
        first.kill()  # kill -9: the OS releases the lock with the process
        restarted = start_when_free(config, db)
        try:
            reward = restarted.client.post("/v1/reward", json={"decision_id": "d1",
                                                                "reward": 1.0})
            assert reward.status_code == 200 and reward.json()["status"] == "learned"
            third = serve_expecting_refusal(config, db)
            assert third.returncode != 0 and f"pid {restarted.process.pid}" in third.stderr
        finally:
            assert restarted.terminate() == 0, restarted.output()
        # a clean stop released the log: the next start serves
        again = ServerProcess(config, db)
        assert again.terminate() == 0
    finally:
        first.kill()


@pytest.mark.slow
@pytest.mark.parametrize("snapshots", [True, False])
def test_serve_explains_a_log_written_by_two_processes_and_recover_fixes_it(tmp_path, snapshots):
    db = f"sqlite:///{tmp_path / 'log.db'}"
    config = two_writer_log(tmp_path, db, snapshots=snapshots)
    before = read_events(db)
    refused = serve_expecting_refusal(config, db)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    paragraph = refused.stderr.strip()
    assert "\n" not in paragraph, paragraph  # one paragraph, not a traceback
    assert "does not replay" in paragraph and "two processes" in paragraph
    command = f"glmbandits recover {config} --db {db}"
    assert command in paragraph
    assert read_events(db) == before  # the refusal changed nothing

    recover = [sys.executable, "-m"] + command.split()
    report = subprocess.run(recover, capture_output=True, text=True, env=environment(),
                            timeout=DEADLINE)
    assert report.returncode == 0, report.stderr
    assert "trusted prefix" in report.stdout and "nothing was changed" in report.stdout
    applied = subprocess.run(recover + ["--apply"], capture_output=True, text=True,
                             env=environment(), timeout=DEADLINE)
    assert applied.returncode == 0, applied.stderr
    assert "moved out of the log" in applied.stdout
    (aside,) = tmp_path.glob("log.db.set-aside-*.db")
    kept, moved = read_events(db), read_events(f"sqlite:///{aside}")
    assert kept + moved == before
    kept_events = [Event(*row[:3]) for _, row in kept]  # kind, decision_id, timestamp

    server = ServerProcess(config, db)
    try:
        model = server.client.get("/v1/model").json()
        assert model["decisions"] == sum(e.kind == "decision" for e in kept_events)
        rewarded = {e.decision_id for e in kept_events if e.kind == "reward"}
        pending = [e.decision_id for e in kept_events
                   if e.kind == "decision" and e.decision_id not in rewarded]
        for decision_id in pending:  # the trusted prefix's pending decisions are there
            answer = server.client.post("/v1/reward", json={"decision_id": decision_id,
                                                             "reward": 1.0})
            assert answer.status_code == 200, answer.text
    finally:
        assert server.terminate() == 0, server.output()
    store = open_store(db)
    try:
        seq, data = store.latest_snapshot()
        assert_same_state(decode_snapshot(data), rebuild_from_log(load_config(config), store))
    finally:
        store.close()


# -- real processes: PostgreSQL -----------------------------------------------------------------
@pytest.mark.slow
def test_a_second_role_all_on_a_postgresql_log_is_refused_naming_the_holder(
        tmp_path, postgres_url):
    config = write_config(tmp_path)
    first = ServerProcess(config, postgres_url)
    try:
        assert first.client.post("/v1/decide", json={
            "decision_id": "p1", "contexts": [[0.1, 0.2, 0.3]] * 3}).status_code == 200
        for role in ("all", "api"):
            second = serve_expecting_refusal(config, postgres_url, role)
            assert second.returncode != 0, second.stderr
            assert "Traceback" not in second.stderr
            assert "already served by" in second.stderr
            assert f"glmbandits all pid={first.process.pid}" in second.stderr
        first.kill()  # kill -9: the server ends the session and its lock with it
        restarted = start_when_free(config, postgres_url)
        try:
            reward = restarted.client.post("/v1/reward", json={"decision_id": "p1",
                                                                "reward": 1.0})
            assert reward.status_code == 200, reward.text
        finally:
            assert restarted.terminate() == 0, restarted.output()
    finally:
        first.kill()


@pytest.mark.slow
def test_role_all_is_refused_while_api_processes_serve_the_database(tmp_path, postgres_url):
    config = write_config(tmp_path)
    api = ServerProcess(config, postgres_url, role="api")
    learner = ServerProcess(config, postgres_url, role="learner")
    try:
        refused = serve_expecting_refusal(config, postgres_url)
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert f"glmbandits scale-out pid={api.process.pid}" in refused.stderr
        assert f"glmbandits scale-out pid={learner.process.pid}" in refused.stderr
    finally:
        codes = [api.terminate(), learner.terminate()]
    assert codes == [0, 0], api.output() + learner.output()


@pytest.mark.slow
def test_recover_on_postgresql_moves_the_rest_into_tables_of_the_schema(tmp_path, postgres_url):
    from glmbandits.service.postgres_store import PostgresStore
    from glmbandits.service.recover import apply_recovery, plan_recovery

    config = load_config(two_writer_log(tmp_path, postgres_url, snapshots=True))
    before = read_events(postgres_url)
    with pytest.raises(ReplayMismatchError):
        DecisionService(config, open_store(postgres_url)).start()
    store = PostgresStore(postgres_url)
    try:
        store.claim_topology("single")
        plan = plan_recovery(config, store)
        assert plan.needed and 0 < plan.kept_seq < plan.last_seq
        apply_recovery(config, store, plan, label="t2")
        assert plan.destination == "glmbandits_set_aside_t2_events"
        with store.connect("test") as connection:
            moved = connection.execute(
                f"SELECT seq FROM {plan.destination} ORDER BY seq").fetchall()
            versions = connection.execute(
                "SELECT count(*) FROM glmbandits_set_aside_t2_versions").fetchone()[0]
        kept = read_events(postgres_url)
        assert [seq for seq, _ in kept] + [seq for (seq,) in moved] == \
            [seq for seq, _ in before]
        assert versions >= 1  # the old snapshots (model versions) went too
        # the counters now count the kept events only
        assert store.totals()["decisions"] == sum(row[0] == "decision" for _, row in kept)
    finally:
        store.close()
    service = DecisionService(config, open_store(postgres_url)).start()
    try:
        assert service.restored_from["snapshot_seq"] == plan.kept_seq
        checker = open_store(postgres_url)
        assert_same_state(service.policy, rebuild_from_log(config, checker))
        checker.close()
    finally:
        service.stop()


@pytest.mark.slow
def test_a_role_all_that_lost_its_postgresql_session_never_writes_beside_another(
        tmp_path, postgres_url, postgres_server):
    config = write_config(tmp_path)
    first = ServerProcess(config, postgres_url)
    second = None
    try:
        body = {"contexts": [[0.1, 0.2, 0.3]] * 3}
        assert first.client.post("/v1/decide", json={**body, "decision_id": "f1"}
                                 ).status_code == 200
        # cut the first process's sessions (a network cut, a failover): its lock goes
        postgres_server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                             f"application_name LIKE 'glmbandits all pid={first.process.pid} %'")
        second = start_when_free(config, postgres_url)
        assert second.client.post("/v1/decide", json={**body, "decision_id": "s1"}
                                  ).status_code == 200
        # the first cannot take the lock again: it answers 503 and writes nothing
        for attempt in range(3):
            refused = first.client.post("/v1/decide",
                                        json={**body, "decision_id": f"f{attempt + 2}"})
            assert refused.status_code == 503, refused.text
        assert second.client.post("/v1/reward", json={"decision_id": "f1", "reward": 1.0}
                                  ).status_code == 200
        assert second.terminate() == 0, second.output()
        # once the second stops, the first takes the lock again, rebuilds from the log
        # (which the second changed) and serves on: the log still replays
        deadline = time.monotonic() + DEADLINE
        while True:
            answer = first.client.post("/v1/decide", json={**body, "decision_id": "f9"})
            if answer.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
        assert first.client.post("/v1/reward", json={"decision_id": "s1", "reward": 0.0}
                                 ).status_code == 200
        assert first.terminate() == 0, first.output()
        store = open_store(postgres_url)
        try:
            ids = [e.decision_id for e in store.events() if e.kind == "decision"]
            assert ids == ["f1", "s1", "f9"]
            seq, data = store.latest_snapshot()
            assert_same_state(decode_snapshot(data),
                              rebuild_from_log(load_config(config), store))
        finally:
            store.close()
    finally:
        first.kill()
        if second is not None:
            second.kill()
