"""Load, kill -9 and SIGTERM against real server processes: nothing acknowledged is lost,
nothing is duplicated, and the restored model equals, bit for bit, one rebuilt from the log."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import httpx
import numpy as np
import pytest

from glmbandits.service.config import load_config
from glmbandits.service.replay import rebuild_from_log
from glmbandits.service.snapshot import decode_snapshot
from glmbandits.service.store import open_store
from servicekit import HEADERS, ServerProcess, assert_same_state, unit_rows, write_config

pytestmark = pytest.mark.slow


class Client(threading.Thread):
    """Sends decide+reward pairs until ``rounds`` are done, ``stop`` is set or a request fails."""

    def __init__(self, url: str, index: int, rounds: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.index, self.rounds, self.stop = url, index, rounds, stop
        self.decided: list[str] = []
        self.rewarded: list[tuple[str, str]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = np.random.default_rng(self.index)
        with httpx.Client(base_url=self.url, headers=HEADERS, timeout=20.0) as client:
            for t in range(self.rounds):
                if self.stop.is_set():
                    return
                decision_id = f"c{self.index}-{t}"
                try:
                    answer = client.post("/v1/decide", json={
                        "decision_id": decision_id,
                        "contexts": unit_rows(rng, 6, 3).tolist()})
                    assert answer.status_code == 200, answer.text
                    self.decided.append(decision_id)
                    reward = client.post("/v1/reward", json={
                        "decision_id": decision_id, "reward": float(rng.random() < 0.5)})
                    assert reward.status_code == 200, reward.text
                    self.rewarded.append((decision_id, reward.json()["status"]))
                except httpx.TransportError as error:  # the server was killed
                    self.error = error
                    return


def read_log(db: str) -> list:
    store = open_store(db)
    try:
        return list(store.events())
    finally:
        store.close()


def test_concurrent_clients_lose_and_duplicate_nothing(tmp_path):
    config = write_config(tmp_path, service="")
    db = f"sqlite:///{tmp_path / 'log.db'}"
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
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
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
    assert seq == len(events)
    assert_same_state(decode_snapshot(data), rebuild_from_log(load_config(config), store))
    store.close()


def test_kill_9_mid_load_loses_no_acknowledged_event(tmp_path):
    config_path = write_config(tmp_path, service="")
    db = f"sqlite:///{tmp_path / 'log.db'}"
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
        assert int(match.group(1)) + int(match.group(2)) == len(events)
        model = restarted.client.get("/v1/model").json()
        assert model["decisions"] == sum(e.kind == "decision" for e in events)
        assert model["rewards"] == sum(e.kind == "reward" for e in events)
    finally:
        code = restarted.terminate()
    assert code == 0, restarted.output()
    store = open_store(db)
    seq, data = store.latest_snapshot()
    assert seq == len(events)  # nothing new since the restart: the snapshot is the restored model
    assert_same_state(decode_snapshot(data), rebuild_from_log(load_config(config_path), store))
    store.close()
