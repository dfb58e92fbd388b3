"""One SQLite log serves a policy's ``event_log`` and the service's store.

Both kinds of older file (a policy's :class:`EventLog` of schema version 2, a service
store of version 2: the fixtures under ``fixtures/``, written by the code before the
logs became one) are migrated in place when opened for writing, by either face, and
read as they are when opened read-only; a migrated file serves, exports and replays
as before.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from glmbandits.data import EventLog, LoggedBanditData
from glmbandits.data.event_export import JoinedDecisions
from glmbandits.data.sqlite_log import APPLICATION_ID, SCHEMA_VERSION, ROW_COLUMNS, SQLiteLog
from glmbandits.service.events import Event
from glmbandits.service.export import joined_decisions
from glmbandits.service.store import open_store

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _copy(name: str, folder: Path) -> Path:
    target = folder / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def _shape(path: Path) -> tuple[int, int, list[str], set[str]]:
    """(application_id, user_version, the events' columns, the triggers) of a file."""
    raw = sqlite3.connect(path)
    try:
        return (raw.execute("PRAGMA application_id").fetchone()[0],
                raw.execute("PRAGMA user_version").fetchone()[0],
                [row[1] for row in raw.execute("PRAGMA table_info(events)")],
                {row[0] for row in raw.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'trigger'")})
    finally:
        raw.close()


CURRENT = (APPLICATION_ID, SCHEMA_VERSION, ["seq", *ROW_COLUMNS],
           {"events_no_update", "events_no_delete"})


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _joined(joined: JoinedDecisions) -> tuple:
    return (joined.decision_ids, joined.actions.tolist(), joined.reward_sources,
            np.nan_to_num(joined.rewards, nan=-7.0).tolist(), joined.policy_actions.tolist(),
            np.nan_to_num(joined.propensities, nan=-7.0).tolist(), joined.counts)


@pytest.mark.parametrize("name", ["policy_event_log_v2.sqlite", "service_store_v1.db",
                                  "served_store_v2.db", "served_store_v3.db"])
def test_an_older_file_opened_read_only_is_read_as_it_is(tmp_path: Path, name: str) -> None:
    path = _copy(name, tmp_path)
    before = _digest(path)
    with EventLog(path, readonly=True) as log:
        events = list(log.events())
        joined = JoinedDecisions.from_log(log)
    assert _digest(path) == before  # nothing migrated, nothing written
    assert events and all(event.kind in ("decision", "reward", "expiry") for event in events)
    if name.startswith("policy"):
        assert _joined(joined)[0] == EXPECTED[name]["join"]["decision_ids"]


def test_a_policy_log_migrates_in_place_and_joins_and_replays_as_before(tmp_path) -> None:
    path = _copy("policy_event_log_v2.sqlite", tmp_path)
    with EventLog(path, readonly=True) as log:
        before_events = [(e.kind, e.sequence, e.decision_id, getattr(e, "reward", None))
                         for e in log.events()]
        decisions_before = list(log.decisions())
        before = _joined(JoinedDecisions.from_log(log))
    data_before = LoggedBanditData.from_event_log(path)
    EventLog(path).close()  # opened for writing: migrated
    assert _shape(path) == CURRENT
    with EventLog(path, readonly=True) as log:
        assert [(e.kind, e.sequence, e.decision_id, getattr(e, "reward", None))
                for e in log.events()] == before_events
        for old, new in zip(decisions_before, log.decisions(), strict=True):
            assert np.array_equal(old.contexts, new.contexts)  # bit for bit
            assert np.array_equal(old.probabilities, new.probabilities)
            assert (old.action, old.propensity, old.policy_action, old.model_version) == \
                (new.action, new.propensity, new.policy_action, new.model_version)
        assert _joined(JoinedDecisions.from_log(log)) == before
    data_after = LoggedBanditData.from_event_log(path)
    assert np.array_equal(data_before.contexts, data_after.contexts)
    assert np.array_equal(data_before.rewards, data_after.rewards)
    assert np.array_equal(data_before.propensities, data_after.propensities)
    # the service's face reads the same file, and joins it the same way
    store = open_store(f"sqlite:///{path}")
    try:
        assert _joined(joined_decisions(store)) == before
        assert store.last_seq() == len(before_events)
    finally:
        store.close()


@pytest.mark.parametrize("name", ["served_store_v2", "served_store_v3"])
def test_a_service_store_migrates_in_place_and_serves_as_before(tmp_path, name) -> None:
    path = _copy(f"{name}.db", tmp_path)
    served = json.loads((FIXTURES / f"{name}.json").read_text())
    store = open_store(f"sqlite:///{path}")  # opened for writing: migrated
    try:
        assert _shape(path) == CURRENT
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert [event.to_json() for event in store.events()] == served["events"]
        assert store.totals() == served["totals"]
        assert store.latest_snapshot()[0] == served["snapshot_seq"]
        service_join = _joined(joined_decisions(store))
    finally:
        store.close()
    # the policy's face reads the migrated store: the same decisions and join
    with EventLog(path, readonly=True) as log:
        assert _joined(JoinedDecisions.from_log(log)) == service_join
        assert len(log) == sum(e["kind"] in ("decision", "reward", "expiry")
                               for e in served["events"])
        assert log.counts()["decision"] == served["totals"]["decisions"]
    assert len(LoggedBanditData.from_event_log(path)) == \
        sum(source is not None for source in served["joined_sources"])


def test_a_policy_log_and_a_store_write_one_file(tmp_path) -> None:
    path = tmp_path / "one.db"
    with EventLog(path) as log:
        log.record_decision("a", 1.0, np.eye(2), [0.25, 0.75], 1, 0.75, 0)
    store = open_store(f"sqlite:///{path}")
    try:
        store.append(Event("retry", "a", 1.5, contexts=np.eye(2), action=1,
                           probabilities=np.array([0.25, 0.75]), propensity=0.75,
                           model_version=0))
        store.append(Event("reward", "a", 2.0, reward=1.0, status="learned"))
        store.append(Event("expire", None, 3.0, older_than=2.0))
        assert store.commit() == 4
        assert [e.kind for e in store.events()] == ["decision", "retry", "reward", "expire"]
    finally:
        store.close()
    assert _shape(path) == CURRENT
    with EventLog(path) as log:  # a policy's log reads its own kinds; the service's are kept
        assert [(e.kind, e.sequence) for e in log.events()] == [("decision", 1), ("reward", 3)]
        assert len(log) == 2 and log.last_sequence == 4
        log.record_expiry("a", 5.0, "dropped", None)
        assert [e.sequence for e in log.expiries()] == [5]
        assert JoinedDecisions.from_log(log).reward_sources == ["learned"]


def test_the_one_log_is_append_only_and_refuses_what_it_does_not_read(tmp_path) -> None:
    path = _copy("service_store_v1.db", tmp_path)
    open_store(f"sqlite:///{path}").close()
    assert _shape(path) == CURRENT  # with the triggers test_event_log tries
    foreign = tmp_path / "foreign.db"
    raw = sqlite3.connect(foreign)
    raw.execute("CREATE TABLE results (x)")
    raw.commit()
    raw.close()
    before = _digest(foreign)
    with pytest.raises(ValueError, match=r"foreign\.db.*another application.*not modified"):
        open_store(f"sqlite:///{foreign}")
    assert _digest(foreign) == before
    newer = _copy("served_store_v2.db", tmp_path)
    raw = sqlite3.connect(newer)
    raw.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    raw.commit()
    raw.close()
    with pytest.raises(RuntimeError, match="schema version 7, newer"):
        open_store(f"sqlite:///{newer}")
    with pytest.raises(ValueError, match="schema version 7"):
        EventLog(newer)


def test_the_migration_is_one_transaction(tmp_path, monkeypatch) -> None:
    """A migration that fails half way leaves the file as it was (same bytes, same
    version), and the next open migrates it."""
    path = _copy("policy_event_log_v2.sqlite", tmp_path)
    before = _shape(path)
    import glmbandits.data.sqlite_log as sqlite_log

    monkeypatch.setattr(sqlite_log, "_APPEND_ONLY", sqlite_log._APPEND_ONLY + ("NOT SQL",))
    with pytest.raises(ValueError, match="not a glmbandits event log"):
        SQLiteLog(path)
    assert _shape(path) == before
    monkeypatch.undo()
    SQLiteLog(path).close()
    assert _shape(path) == CURRENT
