"""EventLog: exact round trips, append-only sequence, what a policy writes, failures that change
nothing, concurrent readers, schema refusal, crash durability, the join and the Parquet export."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import glmbandits
from glmbandits import EventLog, UCBGLM
from glmbandits.data import LoggedBanditData, export_parquet
from glmbandits.data.event_records import EXPIRY_OUTCOMES, REWARD_STATUSES, Event
from glmbandits.policies import decisions as policy_decisions

SRC = str(Path(glmbandits.__file__).resolve().parents[1])


def _decision_args(rng: np.random.Generator, K: int = 4, d: int = 3) -> dict:
    p = rng.dirichlet(np.ones(K))
    action = int(rng.integers(K))
    return dict(timestamp=float(rng.random() * 1e9), contexts=rng.standard_normal((K, d)),
                probabilities=p, action=action, propensity=float(p[action]),
                model_version=int(rng.integers(1000)))


def test_statuses_match_the_policy_layer() -> None:
    assert REWARD_STATUSES == policy_decisions.REWARD_STATUSES
    assert EXPIRY_OUTCOMES == policy_decisions.EXPIRY_OUTCOMES


def test_every_record_kind_round_trips_exactly(tmp_path) -> None:
    rng = np.random.default_rng(0)
    args = _decision_args(rng, K=5, d=7)
    args["contexts"][0, 0] = 5e-324  # a subnormal and extremes survive bit for bit
    args["contexts"][1, 1] = -1e50  # the largest magnitude accepted (the readers' rule)
    with EventLog(tmp_path / "log.sqlite") as log:
        log.record_decision("d-1", **args)
        log.record_reward("d-1", 12.5, 0.25, "learned")
        log.record_expiry("d-2", 13.0, "default", 0.0)
        log.record_expiry("d-3", 14.0, "dropped", None)
    with EventLog(tmp_path / "log.sqlite", readonly=True) as log:
        decision, reward, default, dropped = list(log.events())
    assert isinstance(decision, Event) and decision.kind == "decision"
    assert decision.decision_id == "d-1"
    assert decision.contexts.tobytes() == np.asarray(args["contexts"], "<f8").tobytes()
    assert decision.contexts.shape == (5, 7) and decision.contexts.dtype == np.float64
    assert decision.probabilities.tobytes() == args["probabilities"].tobytes()
    assert (decision.timestamp, decision.action, decision.propensity, decision.model_version) == (
        args["timestamp"], args["action"], args["propensity"], args["model_version"])
    assert (reward.kind, reward.decision_id, reward.timestamp, reward.reward, reward.status) == (
        "reward", "d-1", 12.5, 0.25, "learned")
    assert (default.kind, default.outcome, default.reward) == ("expiry", "default", 0.0)
    assert (dropped.outcome, dropped.reward) == ("dropped", None)


def test_sequence_numbers_strictly_increase_and_pages_read_in_order(tmp_path) -> None:
    rng = np.random.default_rng(1)
    with EventLog(tmp_path / "log.db", durability="normal") as log:
        with log.batch():
            for i in range(2500):  # more than one page of events()
                log.record_decision(f"d{i}", **_decision_args(rng))
                if i % 3 == 0:
                    log.record_reward(f"d{i}", 1.0, 1.0, "learned")
        sequence = [event.sequence for event in log.events()]
        assert len(sequence) == len(log) == 2500 + 834
        assert np.all(np.diff(sequence) > 0) and sequence[-1] == log.last_sequence
        assert [e.sequence for e in log.events(after=sequence[99], limit=5)] == sequence[100:105]
        assert len(list(log.decisions())) == 2500 and len(list(log.rewards())) == 834
        assert log.counts() == {"decision": 2500,
                                "reward": {"learned": 834, "held": 0, "duplicate": 0, "late": 0},
                                "expiry": {"dropped": 0, "default": 0, "learned": 0}}


def test_the_table_refuses_updates_and_deletes(tmp_path) -> None:
    path = tmp_path / "log.sqlite"
    with EventLog(path) as log:
        log.record_reward("a", 0.0, 1.0, "learned")
    raw = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("UPDATE events SET reward = 0.0")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute("DELETE FROM events")
    raw.close()
    assert not hasattr(EventLog, "delete") and not hasattr(EventLog, "update")


@pytest.mark.parametrize("call, error, match", [
    (lambda log, a: log.record_decision(7, **a), TypeError, "decision_id must be a str"),
    (lambda log, a: log.record_decision("x", **{**a, "contexts": np.zeros(4)}), ValueError,
     "contexts must be a 2-d array"),
    (lambda log, a: log.record_decision("x", **{**a, "contexts": np.full((4, 3), "a")}),
     TypeError, "contexts must be an array of real numbers"),
    (lambda log, a: log.record_decision("x", **{**a, "probabilities": np.full(4, np.nan)}),
     ValueError, "probabilities must be finite"),
    (lambda log, a: log.record_decision("x", **{**a, "probabilities": np.ones(3) / 3}),
     ValueError, r"probabilities must have shape \(4,\)"),
    (lambda log, a: log.record_decision("x", **{**a, "action": 4}), ValueError,
     r"action must lie in \[0, 3\]"),
    (lambda log, a: log.record_decision("x", **{**a, "action": 1.0}), TypeError,
     "action must be an int"),
    (lambda log, a: log.record_decision("x", **{**a, "propensity": 0.999}), ValueError,
     "propensity must equal probabilities"),
    (lambda log, a: log.record_decision("x", **{**a, "timestamp": float("nan")}), ValueError,
     "timestamp must be finite"),
    (lambda log, a: log.record_reward("x", 0.0, "1", "learned"), TypeError,
     "reward must be a real number"),
    (lambda log, a: log.record_reward("x", 0.0, 1.0, "great"), ValueError,
     "status must be one of"),
    (lambda log, a: log.record_expiry("x", 0.0, "dropped", 1.0), ValueError,
     "reward must be None when outcome is 'dropped'"),
    (lambda log, a: log.record_expiry("x", 0.0, "default", None), TypeError,
     "reward must be a real number"),
])
def test_bad_input_names_the_parameter_and_writes_nothing(tmp_path, call, error, match) -> None:
    args = _decision_args(np.random.default_rng(2))
    with EventLog(tmp_path / "log.sqlite") as log:
        with pytest.raises(error, match=match):
            call(log, args)
        assert len(log) == 0 and log.last_sequence == 0


def _statuses(log: EventLog) -> list[tuple]:
    return [(e.kind, e.decision_id, getattr(e, "status", getattr(e, "outcome", None)))
            for e in log.events()]


def test_a_policy_writes_one_record_per_call_with_the_status_it_returned(tmp_path) -> None:
    rng = np.random.default_rng(3)
    with EventLog(tmp_path / "log.sqlite") as log:
        policy = UCBGLM(n_features=3, seed=0).configure_decisions(default_reward=0.0)
        policy.event_log = log
        expected = []
        decisions = {}
        for i in range(6):
            X = rng.standard_normal((4, 3)) / 3
            decisions[f"d{i}"] = policy.decide(X, decision_id=f"d{i}", now=float(i))
            expected.append(("decision", f"d{i}", None))
        assert policy.decide(X, decision_id="d5", now=9.0) is decisions["d5"]  # retry: no record
        for i, r in ((0, 1.0), (1, 0.0), (0, 1.0)):
            status = policy.reward(f"d{i}", r, now=10.0)
            expected.append(("reward", f"d{i}", status))
        assert [s for _, _, s in expected[-3:]] == ["learned", "learned", "duplicate"]
        outcomes = policy.expire(older_than=7.0, now=10.0)  # d2 (t=2) and d3 (t=3)
        assert outcomes == {"dropped": 0, "default": 2, "learned": 0}
        expected += [("expiry", "d2", "default"), ("expiry", "d3", "default")]
        expected.append(("reward", "d2", policy.reward("d2", 1.0, now=11.0)))
        assert expected[-1][2] == "late"
        assert _statuses(log) == expected
        logged = list(log.decisions())
        for event in logged:
            decision = decisions[event.decision_id]
            assert event.action == decision.action and event.propensity == decision.propensity
            assert event.probabilities.tobytes() == decision.probabilities.tobytes()
            assert event.model_version == decision.model_version
        rewards = {e.decision_id: e.reward for e in log.rewards() if e.status == "learned"}
        assert rewards == {"d0": 1.0, "d1": 0.0}


def test_summed_rewards_are_held_then_learned_by_the_expiry(tmp_path) -> None:
    with EventLog(tmp_path / "log.sqlite") as log:
        policy = UCBGLM(n_features=2, family="poisson", seed=0).configure_decisions(
            duplicate_rewards="sum")
        policy.event_log = log
        policy.decide(np.eye(2) / 2, decision_id="a", now=0.0)
        policy.decide(np.eye(2) / 2, decision_id="b", now=0.0)
        assert [policy.reward("a", 2.0, now=1.0), policy.reward("a", 3.0, now=1.0)] == [
            "held", "held"]
        assert policy.expire(now=5.0) == {"dropped": 1, "default": 0, "learned": 1}
        assert _statuses(log)[2:] == [("reward", "a", "held"), ("reward", "a", "held"),
                                      ("expiry", "a", "learned"), ("expiry", "b", "dropped")]
        assert [e.reward for e in log.expiries()] == [5.0, None]
        data = LoggedBanditData.from_event_log(log)
        assert data.rewards.tolist() == [5.0] and data.join_counts["sum"] == 1
        assert data.join_counts["dropped"] == 1


class _Failing(Exception):
    pass


@pytest.mark.parametrize("failing", ["closed", "record_decision", "record_reward",
                                     "record_expiry"])
def test_a_failing_log_leaves_the_policy_unchanged(tmp_path, monkeypatch, failing) -> None:
    rng = np.random.default_rng(4)
    log = EventLog(tmp_path / "log.sqlite")
    policy = UCBGLM(n_features=3, seed=0).configure_decisions(default_reward=0.0)
    policy.event_log = log
    for i in range(4):
        policy.decide(rng.standard_normal((5, 3)) / 3, decision_id=f"d{i}", now=float(i))
    policy.reward("d0", 1.0, now=4.0)
    before, written = pickle.dumps(policy), len(log)
    if failing == "closed":
        log.close()
        error, match = ValueError, "closed"
    else:
        def fail(*args, **kwargs):
            raise _Failing("disk on fire")
        monkeypatch.setattr(log, failing, fail)
        error, match = _Failing, "disk on fire"
    calls = {"record_decision": lambda: policy.decide(np.eye(3), decision_id="new", now=5.0),
             "record_reward": lambda: policy.reward("d1", 1.0, now=5.0),
             "record_expiry": lambda: policy.expire(now=50.0)}
    for name, call in calls.items():
        if failing in ("closed", name):
            with pytest.raises(error, match=match):
                call()
            assert pickle.dumps(policy) == before
    monkeypatch.undo()
    if failing != "closed":
        assert len(log) == written
        assert policy.reward("d1", 1.0, now=5.0) == "learned"  # it still works afterwards
        log.close()


def test_a_reader_sees_a_growing_prefix_while_another_connection_writes(tmp_path) -> None:
    path = tmp_path / "log.sqlite"
    writer = EventLog(path, durability="normal")
    n = 400
    rng = np.random.default_rng(5)
    rows = [_decision_args(rng) for _ in range(n)]

    def write() -> None:
        for i, args in enumerate(rows):
            writer.record_decision(f"d{i}", **args)

    thread = threading.Thread(target=write)
    seen = []
    with EventLog(path, readonly=True) as reader:
        thread.start()
        while thread.is_alive() or not seen or seen[-1] < n:
            ids = [int(e.decision_id[1:]) for e in reader.decisions()]
            assert ids == list(range(len(ids)))  # always a prefix, in order
            seen.append(len(ids))
        thread.join()
        assert seen[-1] == n and len(reader) == n
        with pytest.raises(ValueError, match="readonly=True"):
            reader.record_reward("d0", 0.0, 1.0, "learned")
    writer.close()
    assert len(set(seen)) > 1 or seen[0] == n


def test_batch_groups_writes_into_one_transaction(tmp_path) -> None:
    path = tmp_path / "log.sqlite"
    rng = np.random.default_rng(6)
    with EventLog(path) as log, EventLog(path, readonly=True) as reader:
        with log.batch():
            with log.batch():  # nested: joins the outer one
                log.record_decision("a", **_decision_args(rng))
            log.record_decision("b", **_decision_args(rng))
            assert len(reader) == 0  # not committed yet
        assert len(reader) == 2
        with pytest.raises(KeyError):
            with log.batch():
                log.record_decision("c", **_decision_args(rng))
                raise KeyError("the caller failed")
        assert len(reader) == 3  # what was written stands for completed policy calls


def test_unknown_schema_foreign_and_damaged_files_are_refused(tmp_path) -> None:
    path = tmp_path / "log.sqlite"
    EventLog(path).close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 99")
    raw.close()
    with pytest.raises(ValueError, match=r"log\.sqlite.*schema version 99; this glmbandits "
                                         r"reads versions 1 to 4"):
        EventLog(path)
    foreign = tmp_path / "results.db"
    raw = sqlite3.connect(foreign)
    raw.execute("CREATE TABLE runs (x)")
    raw.close()
    with pytest.raises(ValueError, match=r"results\.db.*another application"):
        EventLog(foreign)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ValueError, match=r"garbage\.db.*not a glmbandits event log"):
        EventLog(garbage)
    assert garbage.read_bytes() == b"not a database at all" * 100
    with pytest.raises(FileNotFoundError, match="missing.db"):
        EventLog(tmp_path / "missing.db", readonly=True)
    with pytest.raises(ValueError, match="durability must be one of"):
        EventLog(tmp_path / "x.db", durability="fast")
    assert not (tmp_path / "x.db").exists()


_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from glmbandits import EventLog, UCBGLM
    log = EventLog(sys.argv[1], durability=sys.argv[2])
    policy = UCBGLM(n_features=3, seed=0)
    policy.event_log = log
    rng = np.random.default_rng(0)
    i = 0
    while True:
        decision = policy.decide(rng.standard_normal((4, 3)) / 3, decision_id=f"d{i}")
        print(decision.decision_id, flush=True)
        if i % 2:
            policy.reward(decision.decision_id, 1.0)
            print(f"r{i}", flush=True)
        i += 1
""")


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["full", "normal"])
def test_every_returned_call_survives_sigkill(tmp_path, durability) -> None:
    path = tmp_path / "log.sqlite"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-c", _WRITER, str(path), durability],
                               stdout=subprocess.PIPE, text=True, env=env)
    returned = []
    try:
        for line in process.stdout:  # type: ignore[union-attr]
            returned.append(line.strip())
            if len(returned) >= 300:
                break
        process.send_signal(signal.SIGKILL)  # mid-write, very likely
    finally:
        process.kill()
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
    assert len(returned) >= 300
    with EventLog(path) as log:
        decided = {e.decision_id for e in log.decisions()}
        rewarded = {e.decision_id for e in log.rewards()}
        assert {i for i in returned if i.startswith("d")} <= decided
        assert {f"d{i[1:]}" for i in returned if i.startswith("r")} <= rewarded
        sequence = [e.sequence for e in log.events()]
        assert np.all(np.diff(sequence) > 0)
        log.record_reward("after", 0.0, 1.0, "learned")  # the reopened log takes writes


def _join_fixture(log: EventLog) -> None:
    X = np.arange(6, dtype=float).reshape(3, 2)
    p = np.array([0.2, 0.3, 0.5])
    for i, name in enumerate(["learned", "summed", "default", "dropped", "pending", "dup"]):
        log.record_decision(name, float(i), X + i, p, i % 3, float(p[i % 3]), i)
    log.record_reward("learned", 10.0, 1.0, "learned")
    log.record_reward("dup", 10.0, 0.0, "learned")
    log.record_reward("dup", 10.5, 1.0, "duplicate")
    log.record_reward("summed", 11.0, 1.0, "held")
    log.record_reward("summed", 11.0, 2.0, "held")
    log.record_expiry("summed", 12.0, "learned", 3.0)
    log.record_expiry("default", 12.0, "default", 0.5)
    log.record_expiry("dropped", 12.0, "dropped", None)
    log.record_reward("dropped", 13.0, 1.0, "late")
    log.record_reward("never-decided", 13.0, 1.0, "learned")


def test_from_event_log_joins_the_learned_reward_in_decision_order(tmp_path) -> None:
    with EventLog(tmp_path / "events.sqlite") as log:
        _join_fixture(log)
        data = LoggedBanditData.from_event_log(log)
        without = LoggedBanditData.from_event_log(tmp_path / "events.sqlite",
                                                  include_defaults=False, name="no-defaults")
    assert data.name == "events" and without.name == "no-defaults"
    # decisions: learned (a=0), summed (a=1), default (a=2), dup (a=2): decision order
    assert data.actions.tolist() == [0, 1, 2, 2]
    assert data.rewards.tolist() == [1.0, 3.0, 0.5, 0.0]
    assert data.propensities.tolist() == [0.2, 0.3, 0.5, 0.5]
    assert np.array_equal(data.contexts[3], np.arange(6.0).reshape(3, 2) + 5)
    assert without.rewards.tolist() == [1.0, 3.0, 0.0]
    assert data.join_counts == {"decisions": 6, "learned": 2, "sum": 1, "default": 1,
                                "dropped": 1, "pending": 1, "duplicate_rewards": 1,
                                "late_rewards": 1, "orphan_rewards": 1, "with_reward": 4,
                                "shadow": 0}
    with pytest.raises(ValueError, match="reward must be 'first'"):
        LoggedBanditData.from_event_log(tmp_path / "events.sqlite", reward="last")
    with pytest.raises(TypeError, match="log_or_path must be an EventLog"):
        LoggedBanditData.from_event_log(3)


def test_parquet_export_round_trips_to_the_same_rounds(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    with EventLog(tmp_path / "events.sqlite") as log:
        _join_fixture(log)
        rng = np.random.default_rng(7)
        for i in range(20):  # varying K
            args = _decision_args(rng, K=int(rng.integers(1, 6)), d=2)
            log.record_decision(f"v{i}", **args)
            log.record_reward(f"v{i}", 20.0, float(i % 2), "learned")
        path = export_parquet(log, tmp_path / "events.parquet")
        direct = LoggedBanditData.from_event_log(log)
    table = pq.read_table(path)
    assert table.num_rows == 26  # one row per decision, rewarded or not
    assert table.column("reward_source").to_pylist()[:6] == [
        "learned", "sum", "default", None, None, "learned"]
    import pyarrow as pa

    contexts_type = table.schema.field("contexts").type
    assert pa.types.is_list(contexts_type) and pa.types.is_list(contexts_type.value_type)
    assert contexts_type.value_type.value_type == pa.float64()
    back = LoggedBanditData.from_parquet(path)
    assert back.n_rounds == direct.n_rounds == 24
    assert back.actions.tolist() == direct.actions.tolist()
    assert back.rewards.tobytes() == direct.rewards.tobytes()
    assert back.propensities.tobytes() == direct.propensities.tobytes()
    for t in range(back.n_rounds):
        assert back.contexts[t].tobytes() == direct.contexts[t].tobytes()
    assert back.join_counts == direct.join_counts
    assert LoggedBanditData.from_parquet(path, include_defaults=False).n_rounds == 23


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with EventLog(tmp_path / "events.sqlite") as log:
        log.record_reward("a", 0.0, 1.0, "learned")
        with pytest.raises(ImportError, match=r"pip install 'glmbandits\[data\]'"):
            export_parquet(log, tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_an_event_log_is_not_pickled_with_a_policy(tmp_path) -> None:
    with EventLog(tmp_path / "events.sqlite") as log:
        policy = UCBGLM(n_features=2, seed=0)
        policy.event_log = log
        assert pickle.loads(pickle.dumps(policy)).event_log is None
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(log)
