"""Scale-out on PostgreSQL against real processes: API processes, one learner, a standby.

Every process is a real ``glmbandits serve --role ...`` on 127.0.0.1 over the test
PostgreSQL server (a fresh schema per test), stopped by the fixture. What is checked:
nothing acknowledged is lost or duplicated with two API processes; the learner's
published model equals, bit for bit, a model rebuilt offline from the log alone
(:func:`rebuild_learner_from_log`), also after a ``kill -9`` of the learner mid-load and
a restart; a second learner waits on the lock and takes over from a killed one; the
API processes swap to new model versions without a restart.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np
import pytest

from glmbandits.service.config import load_config
from glmbandits.service.postgres_store import PostgresStore
from glmbandits.service.replay import rebuild_learner_from_log
from glmbandits.service.snapshot import decode_snapshot
from servicekit import (LEARNER_HOLDS, LEARNER_WAITS, Client, ServerProcess,
                        assert_same_state, unit_rows, write_config)

pytestmark = pytest.mark.slow


class Topology:
    """Starts ``glmbandits serve`` processes on one log and stops every one at the end."""

    def __init__(self, folder, db: str, decisions: str = "") -> None:
        self.config = write_config(folder, decisions=decisions)
        self.db = db
        self.processes: list[ServerProcess] = []

    def start(self, role: str) -> ServerProcess:
        process = ServerProcess(self.config, self.db, role=role)
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            try:
                process.terminate(30)
            except Exception:
                process.kill()


@pytest.fixture
def topology(tmp_path, postgres_url):
    built = Topology(tmp_path, postgres_url)
    yield built
    built.close()


def settled(db: str, timeout: float = 30.0):
    """Wait until the newest published model includes the whole log; (store, version)."""
    store = PostgresStore(db)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        version = store.latest_version()
        if version is not None and version.seq == store.last_seq():
            return store, store.load_version(version.id)
        time.sleep(0.1)
    store.close()
    raise AssertionError(f"the learner did not publish the whole log in {timeout} s")


def assert_learner_equals_rebuild(config_path, store: PostgresStore, version) -> None:
    """The published model is, bit for bit, the log replayed offline by the learner's rule."""
    assert_same_state(decode_snapshot(version.data),
                      rebuild_learner_from_log(load_config(config_path), store))


def wait_for_model_version(api: ServerProcess, expected: int, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        model = api.client.get("/v1/model").json()
        if model["model_version"] == expected or time.monotonic() > deadline:
            return model
        time.sleep(0.1)


def run_clients(apis: list[ServerProcess], n: int, rounds: int) -> list[Client]:
    stop = threading.Event()
    clients = [Client(apis[i % len(apis)].url, i, rounds, stop) for i in range(n)]
    for client in clients:
        client.start()
    return clients


def test_two_api_processes_and_a_learner_lose_and_duplicate_nothing(topology):
    topology.start("learner")
    apis = [topology.start("api"), topology.start("api")]
    clients = run_clients(apis, 6, 30)
    for client in clients:
        client.join(120)
    assert not any(client.is_alive() for client in clients)
    assert all(client.error is None for client in clients)
    decided = [d for client in clients for d in client.decided]
    rewarded = [r for client in clients for r in client.rewarded]
    assert len(decided) == len(rewarded) == 6 * 30
    assert {status for _, status in rewarded} == {"accepted"}

    store, version = settled(topology.db)
    try:
        events = list(store.events())
        seqs = [e.seq for e in events]
        assert all(a < b for a, b in zip(seqs, seqs[1:]))
        assert Counter(e.decision_id for e in events if e.kind == "decision") == \
            Counter(decided)
        assert Counter((e.decision_id, e.status) for e in events if e.kind == "reward") == \
            Counter(rewarded)
        # every reward was learned once, by the learner, in log order
        assert version.model_version == len(rewarded)
        assert version.statistics["learned"] == len(rewarded)
        assert_learner_equals_rebuild(topology.config, store, version)
        # both API processes swapped to the published version without a restart, and
        # report the totals of both
        for api in apis:
            model = wait_for_model_version(api, version.model_version)
            assert model["model_version"] == version.model_version
            assert model["decisions"] == len(decided) and model["rewards"] == len(rewarded)
            assert model["counts"]["rewards_accepted"] == len(rewarded)
            assert model["pending"] == 0
        # the two copies decided with their own generators: a logged model_version of a
        # decision never exceeds what had been published
        assert max(e.model_version for e in events if e.kind == "decision") <= len(rewarded)
    finally:
        store.close()


def test_kill_9_of_the_learner_mid_load_resumes_exactly(topology):
    learner = topology.start("learner")
    apis = [topology.start("api"), topology.start("api")]
    clients = run_clients(apis, 4, 10_000)
    deadline = time.monotonic() + 60
    while sum(len(c.rewarded) for c in clients) < 80 and time.monotonic() < deadline:
        time.sleep(0.02)
    learner.wait_for("published model_version")
    learner.kill()  # kill -9, mid-load
    while sum(len(c.rewarded) for c in clients) < 160 and time.monotonic() < deadline:
        time.sleep(0.02)
    restarted = topology.start("learner")
    restarted.wait_for(LEARNER_HOLDS)
    while sum(len(c.rewarded) for c in clients) < 240 and time.monotonic() < deadline:
        time.sleep(0.02)
    for client in clients:
        client.stop.set()
    for client in clients:
        client.join(30)
    assert all(client.error is None for client in clients)
    rewarded = [r for client in clients for r in client.rewarded]
    assert len(rewarded) >= 240
    store, version = settled(topology.db)
    try:
        assert "restored from snapshot seq" in restarted.output()
        assert version.model_version == len(rewarded)
        assert_learner_equals_rebuild(topology.config, store, version)
    finally:
        store.close()


def test_a_second_learner_waits_and_takes_over_and_expires_by_the_log(tmp_path, postgres_url):
    topology = Topology(tmp_path, postgres_url,
                        decisions="reward_wait = 1.0\nexpire_every = 0.2\n")
    try:
        first = topology.start("learner")
        first.wait_for(LEARNER_HOLDS)
        second = topology.start("learner")
        second.wait_for(LEARNER_WAITS)
        api = topology.start("api")
        rng = np.random.default_rng(3)
        for t in range(5):
            answer = api.client.post("/v1/decide", json={
                "decision_id": f"d{t}", "contexts": unit_rows(rng, 4, 3).tolist()})
            assert answer.status_code == 200, answer.text
            assert api.client.post("/v1/reward", json={"decision_id": f"d{t}",
                                                       "reward": 1.0}).json()["status"] == \
                "accepted"
        assert wait_for_model_version(api, 5)["model_version"] == 5  # swapped, no restart
        time.sleep(0.5)
        assert LEARNER_HOLDS not in second.output()  # it still waits
        first.kill()  # kill -9: the server drops its session, and the lock with it
        second.wait_for(LEARNER_HOLDS, timeout=60)
        # a decision without a reward: the new learner's sweep appends an expire event
        assert api.client.post("/v1/decide", json={
            "decision_id": "forgotten", "contexts": unit_rows(rng, 4, 3).tolist()}
        ).status_code == 200
        late = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            model = api.client.get("/v1/model").json()
            if model["counts"].get("expired_dropped") == 1:
                late = api.client.post("/v1/reward", json={"decision_id": "forgotten",
                                                           "reward": 1.0}).json()
                break
            time.sleep(0.1)
        assert late is not None and late["status"] == "late"
        store, version = settled(topology.db)
        try:
            assert [e.kind for e in store.events()].count("expire") >= 1
            assert version.statistics["expired_dropped"] == 1
            assert version.model_version == 5
            assert_learner_equals_rebuild(topology.config, store, version)
        finally:
            store.close()
    finally:
        topology.close()


def test_shadow_mode_on_api_processes_and_a_learner(tmp_path, postgres_url):
    """In shadow mode an API process shows the client's default, answers the policy's
    own choice as ``policy_action`` with a null propensity, judges retries by the
    default too, and the learner learns the default's row: its published model equals
    the offline rebuild, and a reward of the shown row moves the estimate."""
    topology = Topology(tmp_path, postgres_url, decisions='mode = "shadow"\n')
    try:
        topology.start("learner").wait_for(LEARNER_HOLDS)
        apis = [topology.start("api"), topology.start("api")]
        rng = np.random.default_rng(11)
        shown = []
        for t in range(12):
            contexts = unit_rows(rng, 4, 3).tolist()
            body = {"decision_id": f"s{t}", "contexts": contexts, "default_action": t % 4}
            api = apis[t % 2]
            missing = api.client.post("/v1/decide", json={"decision_id": f"x{t}",
                                                          "contexts": contexts})
            assert missing.status_code == 422 and missing.json()["field"] == "default_action"
            answer = api.client.post("/v1/decide", json=body).json()
            assert answer["action"] == t % 4 and answer["propensity"] is None
            assert 0 <= answer["policy_action"] < 4
            assert abs(sum(answer["probabilities"]) - 1.0) < 1e-9
            # a retry on the other process returns the logged answer; another default is 409
            assert apis[(t + 1) % 2].client.post("/v1/decide", json=body).json() == answer
            other = apis[(t + 1) % 2].client.post(
                "/v1/decide", json={**body, "default_action": (t + 1) % 4})
            assert other.status_code == 409
            assert api.client.post("/v1/reward", json={"decision_id": f"s{t}",
                                                       "reward": 1.0}).json()["status"] == \
                "accepted"
            shown.append(contexts[t % 4])
        store, version = settled(topology.db)
        try:
            decisions = [e for e in store.events() if e.kind == "decision"]
            assert len(decisions) == 12
            assert all(e.propensity is None and e.policy_action is not None for e in decisions)
            assert [e.action for e in decisions] == [t % 4 for t in range(12)]
            assert version.model_version == 12
            assert_learner_equals_rebuild(topology.config, store, version)
            learned = decode_snapshot(version.data)
            # the learner learned the rows that were shown, not the policy's choices
            assert np.array_equal(learned.estimate_.history.X, np.asarray(shown))
        finally:
            store.close()
    finally:
        topology.close()


def test_kill_9_of_an_api_process_mid_load_loses_nothing_acknowledged(topology):
    """The serve issue's crash test on the scale-out topology: an API process killed
    with SIGKILL mid-load; every decision and reward it (or the other one) acknowledged
    is in the log, the surviving process carries on, and the learner's model still
    equals the offline rebuild."""
    topology.start("learner").wait_for(LEARNER_HOLDS)
    doomed, survivor = topology.start("api"), topology.start("api")
    clients = run_clients([doomed, survivor], 4, 10_000)  # clients 0, 2 on the doomed one
    deadline = time.monotonic() + 60
    while sum(len(c.rewarded) for c in clients) < 120 and time.monotonic() < deadline:
        time.sleep(0.02)
    doomed.kill()  # kill -9, mid-load
    for client in clients[0::2]:
        client.join(30)
        assert isinstance(client.error, Exception)  # its server went away mid-load
    before = sum(len(c.rewarded) for c in clients[1::2])
    while sum(len(c.rewarded) for c in clients[1::2]) < before + 60 and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    for client in clients:
        client.stop.set()
    for client in clients[1::2]:
        client.join(30)
        assert client.error is None
    store, version = settled(topology.db)
    try:
        events = list(store.events())
        logged_decisions = Counter(e.decision_id for e in events if e.kind == "decision")
        logged_rewards = Counter((e.decision_id, e.status) for e in events
                                 if e.kind == "reward")
        acknowledged = [d for c in clients for d in c.decided]
        assert all(logged_decisions[d] == 1 for d in acknowledged)
        assert all(logged_rewards[r] == 1 for c in clients for r in c.rewarded)
        # a request the dead process had not answered may or may not be in the log, once
        assert set(logged_decisions.values()) == {1}
        assert len(logged_decisions) - len(acknowledged) <= 2
        assert sum(len(c.rewarded) for c in clients[1::2]) >= before + 60
        assert version.model_version == sum(logged_rewards.values())
        assert_learner_equals_rebuild(topology.config, store, version)
    finally:
        store.close()


def test_the_learner_says_when_it_skips_an_event_the_policy_refuses(tmp_path, postgres_url,
                                                                    caplog):
    """A reward naming a decision the policy never saw cannot be learned: the learner
    skips it (as the offline rebuild does) and says so in its log, with the seq."""
    import logging

    from glmbandits.service.events import Event
    from glmbandits.service.learner_role import learner_service

    config = load_config(write_config(tmp_path))
    store = PostgresStore(postgres_url)
    store.append(Event("decision", "known", 1.0, contexts=unit_rows(
        np.random.default_rng(0), 4, 3), action=2, probabilities=np.full(4, 0.25),
        propensity=0.25, model_version=0))
    store.append(Event("reward", "never-decided", 2.0, reward=1.0, status="accepted"))
    store.append(Event("reward", "known", 3.0, reward=1.0, status="accepted"))
    last = store.commit()
    with caplog.at_level(logging.WARNING, logger="glmbandits.service"):
        learner = learner_service(config, store).start()  # restores once it holds the lock
        try:
            deadline = time.monotonic() + 60
            while learner.role.seq < last and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            learner.stop(snapshot=False)  # closes the store
    assert learner.role.skipped == 1 and learner.policy.model_version == 1
    (record,) = [r for r in caplog.records if "was not applied" in r.getMessage()]
    assert "seq 2" in record.getMessage() and "never-decided" in record.getMessage()
    reader = PostgresStore(postgres_url)
    try:
        assert_same_state(learner.policy, rebuild_learner_from_log(config, reader))
    finally:
        reader.close()
