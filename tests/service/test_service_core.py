"""The service core without HTTP: durability, rejected requests, recovery bit for bit."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from glmbandits.service.config import load_config
from glmbandits.service.core import (Conflict, DecisionService, Invalid, NotFound,
                                     StoreMismatchError, Unavailable)
from glmbandits.service.events import Event, LogSink
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.store import open_store
from servicekit import assert_same_state, unit_rows, write_config


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def start(tmp_path: Path, clock=None, **config_kw) -> DecisionService:
    config = load_config(write_config(tmp_path, **config_kw))
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    return DecisionService(config, store, clock=clock or time.time).start()


def wait_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def workload(service: DecisionService, clock: FakeClock, rounds: int, seed: int) -> dict:
    """Decisions, retries, rewards (some late, some repeated, some never), unknown ids."""
    rng = np.random.default_rng(seed)
    outcomes: dict[str, int] = {}
    for t in range(rounds):
        clock.now += 1.0
        K = int(rng.integers(2, 8))
        X = unit_rows(rng, K, 3)
        excluded = [0] if rng.random() < 0.2 else None
        answer = service.decide(X, decision_id=f"d{t}", excluded=excluded)
        if rng.random() < 0.2:
            assert service.decide(X, decision_id=f"d{t}", excluded=excluded) == answer
        if rng.random() < 0.8:
            status = service.reward(f"d{t}", float(rng.random() < 0.5))["status"]
            outcomes[status] = outcomes.get(status, 0) + 1
        if rng.random() < 0.1:
            service.reward(f"d{t}", 1.0)
        if rng.random() < 0.05:
            with pytest.raises(NotFound):
                service.reward(f"never-{t}", 1.0)
    return outcomes


def test_a_restored_service_equals_the_live_one_and_the_offline_rebuild(tmp_path):
    clock = FakeClock()
    live = start(tmp_path, clock, decisions="reward_wait = 3.0\nexpire_every = 0.001\n"
                                            'missing_reward = "default"\n')
    workload(live, clock, 120, seed=1)
    clock.now += 10.0  # every pending decision is now past the wait window
    wait_until(lambda: live.call_async is not None and
               live.submit(live.model_info_operation()).result()["pending"] == 0)
    info = live.submit(live.model_info_operation()).result()
    assert info["counts"].get("expiries_default", 0) > 0
    assert live.snapshot_seq > 0 and live.store.last_seq() > live.snapshot_seq
    # a second process opening the same file (the first one "crashed": no stop, no snapshot)
    restored = DecisionService(live.config, open_store(live.store.url), clock=clock).start()
    assert restored.restored_from["snapshot_seq"] == live.snapshot_seq
    assert restored.restored_from["replayed_events"] > 0
    assert_same_state(live.policy, restored.policy)
    offline = rebuild_from_log(live.config, live.store)
    assert_same_state(live.policy, offline)
    assert restored.totals() == live.totals()
    X = unit_rows(np.random.default_rng(9), 5, 3)
    a, b = live.decide(X, "next"), restored.decide(X, "next")
    assert a == b
    restored.stop(snapshot=False)
    live.stop()


def test_rejected_requests_write_nothing_and_change_nothing(tmp_path):
    service = start(tmp_path)
    rng = np.random.default_rng(0)
    X = unit_rows(rng, 4, 3)
    service.decide(X, "a")
    service.reward("a", 1.0)
    service.decide(X, "b")
    seq = service.store.last_seq()
    before = rebuild_from_log(service.config, service.store)
    assert_same_state(service.policy, before)
    with pytest.raises(Conflict, match="already closed"):
        service.decide(X, "a")
    with pytest.raises(Conflict, match="pending for another request"):
        service.decide(X[:3], "b")
    with pytest.raises(Conflict):
        service.decide(X, "b", excluded=[1])
    with pytest.raises(NotFound, match="'zz'"):
        service.reward("zz", 1.0)
    with pytest.raises(Invalid) as error:
        service.reward("b", 2.5)  # outside the logistic family's {0, 1}..[0, 1]
    assert error.value.field == "reward"
    with pytest.raises(Invalid) as error:
        service.decide(X, "c", excluded=[0, 1, 2, 3])
    assert error.value.field == "excluded"
    assert service.store.last_seq() == seq
    assert_same_state(service.policy, before)
    service.stop()


def test_a_failed_commit_answers_503_and_keeps_nothing(tmp_path, monkeypatch):
    service = start(tmp_path)
    X = unit_rows(np.random.default_rng(0), 4, 3)
    service.decide(X, "a")
    seq = service.store.last_seq()
    real_commit = type(service.store).commit
    calls = {"n": 0}

    def failing_commit(store):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk full (simulated)")
        return real_commit(store)

    monkeypatch.setattr(type(service.store), "commit", failing_commit)
    with pytest.raises(Unavailable, match="disk full"):
        service.reward("a", 1.0)
    assert service.store.last_seq() == seq
    assert service.policy.model_version == 0
    assert_same_state(service.policy, rebuild_from_log(service.config, service.store))
    assert service.reward("a", 1.0)["status"] == "learned"  # the retry works
    service.stop()


def test_a_log_is_never_replayed_into_another_config(tmp_path):
    service = start(tmp_path)
    service.decide(unit_rows(np.random.default_rng(0), 2, 3), "a")
    service.stop()
    with pytest.raises(StoreMismatchError, match="another policy config"):
        start(tmp_path, name="linucb")


def test_stop_answers_the_queue_and_snapshots(tmp_path):
    service = start(tmp_path)
    X = unit_rows(np.random.default_rng(0), 3, 3)
    futures = [service.submit(service.decide_operation(X, f"q{i}", None)) for i in range(50)]
    service.stop()
    assert all(f.result(timeout=60)["decision_id"] == f"q{i}" for i, f in enumerate(futures))
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    assert store.latest_snapshot()[0] == store.last_seq() == 50
    store.close()
    with pytest.raises(Unavailable, match="not running"):
        service.decide(X, "late")


def test_concurrent_requests_share_one_commit(tmp_path):
    """Requests queued while the worker is busy are applied together and made durable by
    one commit (one fsync), and none is answered before that commit."""
    import threading

    service = start(tmp_path)
    try:
        busy, release = threading.Event(), threading.Event()

        def hold() -> None:
            busy.set()
            release.wait(10)

        held = service.submit(hold)
        assert busy.wait(10)
        commits, _ = service.commit_counts()
        futures = [service.submit(service.decide_operation(unit_rows(np.random.default_rng(i), 4, 3),
                                                           f"g{i}", None))
                   for i in range(20)]
        time.sleep(0.05)
        assert not any(future.done() for future in futures)
        release.set()
        held.result(10)
        assert all(future.result(10)["decision_id"] == f"g{i}"
                   for i, future in enumerate(futures))
        # the hold's own batch, then the 20 decides in one batch (max_batch = 256)
        assert service.commit_counts()[0] - commits <= 2
    finally:
        service.stop()


def test_a_version_1_sqlite_log_is_migrated_in_place_and_keeps_its_events(tmp_path):
    """Files written before ``policy_action`` and ``tag`` existed gain the columns (NULL
    for old rows), become the one SQLite log's schema (version 4, the append-only
    triggers), and a newer version is refused."""
    import sqlite3

    from glmbandits.service.sqlite_store import SCHEMA_VERSION, SQLiteStore

    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
        "decision_id TEXT, timestamp REAL NOT NULL, n_actions INTEGER, contexts BLOB, "
        "excluded TEXT, action INTEGER, probabilities BLOB, propensity REAL, "
        "model_version INTEGER, reward REAL, status TEXT, older_than REAL);"
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO events (kind, decision_id, timestamp, reward, status) "
        "VALUES ('reward', 'a', 1.0, 1.0, 'late');")
    db.commit()
    db.close()
    store = SQLiteStore(str(path))
    assert store.schema_version() == SCHEMA_VERSION == 4
    store.append(Event("decision", "b", 2.0, contexts=np.eye(2), action=1,
                       probabilities=np.array([0.0, 1.0]), propensity=1.0, model_version=0,
                       tag=3, policy_action=0))
    store.commit()
    old, new = list(store.events())
    assert (old.kind, old.tag, old.policy_action) == ("reward", None, None)
    assert (new.tag, new.policy_action) == (3, 0)
    store.close()
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM events")
    db.execute("PRAGMA user_version = 5")
    db.commit()
    db.close()
    with pytest.raises(RuntimeError, match="schema version 5, newer"):
        SQLiteStore(str(path))


def test_a_served_supcb_glm_logs_the_stage_of_each_decision(tmp_path):
    from glmbandits.service.sqlite_store import SQLiteStore

    store = SQLiteStore(str(tmp_path / "log.db"))
    sink = LogSink(store.append)
    from glmbandits import SupCBGLM

    policy = SupCBGLM(n_features=3, seed=0)
    policy.event_log = sink
    decision = policy.decide(np.eye(3), now=1.0)
    store.commit()
    (event,) = list(store.events())
    assert event.tag == policy.decisions_.pending[decision.decision_id].tag is not None
    store.close()


def test_the_event_stream_may_resume_on_another_thread(tmp_path):
    """GET /v1/events streams a generator that the server resumes on any thread of its
    pool; reading on after the first thread must work (it raised ProgrammingError)."""
    import concurrent.futures

    service = start(tmp_path)
    try:
        for t in range(3):
            service.decide(unit_rows(np.random.default_rng(t), 3, 3), decision_id=f"t{t}")
        events = service.store.events()
        with concurrent.futures.ThreadPoolExecutor(1) as first, \
                concurrent.futures.ThreadPoolExecutor(1) as second:
            head = first.submit(next, events).result()
            rest = second.submit(list, events).result()  # ends (closes) on another thread
        assert [event.seq for event in [head, *rest]] == [1, 2, 3]
    finally:
        service.stop(snapshot=False)


def _decision(i: int) -> Event:
    """A decision event with 40 KB of contexts (K=100, d=50), as the service logs them."""
    contexts = np.full((100, 50), float(i))
    return Event("decision", f"d{i}", float(i), contexts=contexts, action=0,
                 probabilities=np.full(100, 0.01), propensity=0.01, model_version=i)


@pytest.mark.parametrize("in_transaction", [False, True])
def test_the_background_checkpointer_keeps_the_wal_bounded(tmp_path, in_transaction):
    """40 rounds of 5 decisions (8 MB): after the checkpointer has caught up with a round,
    the next one writes the WAL from its start again. With ``in_transaction`` the
    checkpointer catches up while the writer's next transaction is open, so only its
    second, locked pass (the WAL is over ``wal_limit``) lets the WAL start over."""
    from glmbandits.service.sqlite_store import SQLiteStore

    path = tmp_path / "log.db"
    store = SQLiteStore(str(path), checkpoint_interval=0.005, wal_limit=20)
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    wal = Path(f"{path}-wal")
    largest, rounds, per_round = 0, 40, 5
    for r in range(rounds):
        for i in range(per_round):
            store.append(_decision(r * per_round + i))
            if in_transaction and i == 0:
                wait_until(lambda: store._checkpointed == store._commits)
        store.commit()
        largest = max(largest, wal.stat().st_size)
        if not in_transaction:
            wait_until(lambda: store._checkpointed == store._commits)
    written = rounds * per_round * 100 * 50 * 8
    assert largest < written / 4, (largest, written)
    events = list(store.events())
    assert [event.decision_id for event in events] == [f"d{i}" for i in range(rounds * per_round)]
    assert np.array_equal(events[-1].contexts, _decision(rounds * per_round - 1).contexts)
    store.close()
    assert not store._checkpointer.is_alive()


def test_the_checkpointer_thread_stops_at_close_and_can_be_turned_off(tmp_path):
    import threading

    from glmbandits.service.sqlite_store import SQLiteStore

    before = set(threading.enumerate())
    store = SQLiteStore(str(tmp_path / "a.db"))
    (thread,) = set(threading.enumerate()) - before
    assert thread.daemon and thread.name == "glmbandits-sqlite-checkpoint"
    store.append(_decision(0))
    store.commit()
    store.close()
    assert not thread.is_alive()
    assert set(threading.enumerate()) == before
    plain = SQLiteStore(str(tmp_path / "b.db"), checkpoint_interval=None)
    assert set(threading.enumerate()) == before
    assert plain._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    plain.close()
    with pytest.raises(ValueError, match="checkpoint_interval"):
        SQLiteStore(str(tmp_path / "c.db"), checkpoint_interval=0)
    with pytest.raises(ValueError, match="wal_limit"):
        SQLiteStore(str(tmp_path / "c.db"), wal_limit=0)


def test_a_failed_begin_or_a_rollback_leaves_the_store_writable(tmp_path):
    """The writer's turn (shared with the checkpointer) ends at commit, rollback
    and a BEGIN that failed, so the next append does not deadlock."""
    import sqlite3

    from glmbandits.service.sqlite_store import SQLiteStore

    path = tmp_path / "log.db"
    store = SQLiteStore(str(path), checkpoint_interval=0.005)
    store.append(_decision(0))
    store.rollback()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    store._db.execute("PRAGMA busy_timeout=0")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        store.append(_decision(1))
    other.execute("ROLLBACK")
    other.close()
    store.append(_decision(2))
    assert store.commit() == 1
    assert [event.decision_id for event in store.events()] == ["d2"]
    store.close()


def test_last_seq_follows_commits_and_rollbacks_without_asking_the_file(tmp_path):
    """SQLiteStore.last_seq is tracked from the INSERTs of committed transactions: a
    rollback (or a failed COMMIT) leaves it at the last committed event, as MAX(seq) is."""
    import contextlib
    import sqlite3
    import threading

    from glmbandits.service.sqlite_store import SQLiteStore

    path = str(tmp_path / "log.db")

    def max_seq() -> int:
        with contextlib.closing(sqlite3.connect(path)) as reader:
            return int(reader.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0)

    store = SQLiteStore(path)
    assert store.last_seq() == 0 and store.commit() == 0
    for i in range(3):
        store.append(_decision(i))
    assert store.commit() == store.last_seq() == max_seq() == 3
    store.append(_decision(3))
    store.append(_decision(4))
    store.rollback()
    assert store.last_seq() == max_seq() == 3
    assert store.commit() == 3  # nothing open: the last committed seq
    store.append(_decision(5))
    store._db.execute("ROLLBACK")  # the COMMIT below fails: no transaction is active
    with pytest.raises(sqlite3.OperationalError):
        store.commit()
    assert store.last_seq() == max_seq() == 3
    store.append(_decision(6))
    assert store.commit() == max_seq() == 4
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(store.last_seq()))
    reader.start()
    reader.join()
    assert seen == [4]
    store.close()
    reopened = SQLiteStore(path)
    assert reopened.last_seq() == 4
    reopened.append(_decision(7))
    assert reopened.commit() == reopened.last_seq() == max_seq() == 5
    reopened.close()
