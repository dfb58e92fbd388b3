"""Load, kill -9 and SIGTERM against real server processes: nothing acknowledged is lost,
nothing is duplicated, and the restored model equals, bit for bit, one rebuilt from the log.

Both run against the SQLite store and the PostgreSQL store (``--role all``: one process);
the scale-out roles are tested in ``test_service_postgres.py``."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import pytest

from glmbandits.service.config import load_config
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.snapshot import decode_snapshot
from glmbandits.service.store import open_store
from servicekit import Client, ServerProcess, assert_same_state, write_config

pytestmark = pytest.mark.slow


def read_log(db: str) -> list:
    store = open_store(db)
    try:
        return list(store.events())
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """An empty event log: a SQLite file, or a fresh schema on the test PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'log.db'}"
    return request.getfixturevalue("postgres_url")


def assert_increasing(events: list, db: str) -> None:
    """Sequence numbers increase; on SQLite they have no gaps either."""
    seqs = [e.seq for e in events]
    if db.startswith("sqlite"):
        assert seqs == list(range(1, len(events) + 1))
    else:  # PostgreSQL: increasing in commit order, gaps allowed (rolled-back batches)
        assert all(a < b for a, b in zip(seqs, seqs[1:]))


def test_concurrent_clients_lose_and_duplicate_nothing(tmp_path, db):
    config = write_config(tmp_path, service="")
    server = ServerProcess(config, db)
    stop = threading.Event()
    clients = [Client(server.url, i, 40, stop) for i in range(8)]
    try:
        for client in clients:
            client.start()
        for client in clients:
            client.join(120)
        assert not any(client.is_alive() for client in clients)
        assert all(client.error is None for client in clients)
        model = server.client.get("/v1/model").json()
    finally:
        code = server.terminate()
    assert code == 0, server.output()
    decided = [d for client in clients for d in client.decided]
    rewarded = [r for client in clients for r in client.rewarded]
    assert len(decided) == len(rewarded) == 8 * 40
    events = read_log(db)
    assert_increasing(events, db)
    logged_decisions = Counter(e.decision_id for e in events if e.kind == "decision")
    logged_rewards = Counter((e.decision_id, e.status) for e in events if e.kind == "reward")
    assert logged_decisions == Counter(decided)  # exactly the acknowledged ones, once each
    assert logged_rewards == Counter(rewarded)
    learned = sum(1 for _, status in rewarded if status == "learned")
    assert learned == len(rewarded)
    assert model["model_version"] == learned == model["rewards"]
    assert model["decisions"] == len(decided)
    store = open_store(db)
    seq, data = store.latest_snapshot()  # SIGTERM wrote a snapshot of the final state
    assert seq == events[-1].seq
    assert_same_state(decode_snapshot(data), rebuild_from_log(load_config(config), store))
    store.close()


def test_kill_9_mid_load_loses_no_acknowledged_event(tmp_path, db):
    config_path = write_config(tmp_path, service="")
    server = ServerProcess(config_path, db)
    stop = threading.Event()
    clients = [Client(server.url, i, 10_000, stop) for i in range(6)]
    for client in clients:
        client.start()
    deadline = time.monotonic() + 60
    while sum(len(c.rewarded) for c in clients) < 150 and time.monotonic() < deadline:
        time.sleep(0.02)
    server.kill()  # kill -9, mid-load
    stop.set()
    for client in clients:
        client.join(30)
    assert not any(client.is_alive() for client in clients)
    decided = {d for client in clients for d in client.decided}
    rewarded = Counter(r for client in clients for r in client.rewarded)
    assert len(rewarded) >= 150
    events = read_log(db)
    assert decided <= {e.decision_id for e in events if e.kind == "decision"}
    logged_rewards = Counter((e.decision_id, e.status) for e in events if e.kind == "reward")
    assert all(logged_rewards[key] == 1 for key in rewarded)  # present, and once
    assert all(count == 1 for count in logged_rewards.values())

    restarted = ServerProcess(config_path, db)
    try:
        match = re.search(r"restored from snapshot seq (\d+) \+ (\d+) events",
                          restarted.output())
        assert match and int(match.group(1)) > 0, restarted.output()
        snapshot_seq = int(match.group(1))
        assert int(match.group(2)) == sum(e.seq > snapshot_seq for e in events)
        model = restarted.client.get("/v1/model").json()
        assert model["decisions"] == sum(e.kind == "decision" for e in events)
        assert model["rewards"] == sum(e.kind == "reward" for e in events)
    finally:
        code = restarted.terminate()
    assert code == 0, restarted.output()
    store = open_store(db)
    seq, data = store.latest_snapshot()
    assert seq == events[-1].seq  # nothing new since the restart: the snapshot is the restored model
    assert_same_state(decode_snapshot(data), rebuild_from_log(load_config(config_path), store))
    store.close()
