"""The ``request`` column of every event log (SQLite schema version 4) and reading a
service's log by kind.

A named-feature decision's request as sent and a catalogue change's action are stored
as JSON text, exactly as given, by both stores, and read back by every reader; a file
of version 3 (``fixtures/served_store_v3.db``, written by the code of commit a9a809d:
``fixtures/make_served_store_v3_fixture.py``) gains the column in place, its rows
unchanged, or is read as it is with ``readonly=True``. ``Store.events(kinds=...)`` reads
only the kinds asked for (the catalogue's through its partial index).
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
from glmbandits.data.sqlite_log import (ROW_COLUMNS, SCHEMA_VERSION, LogVersionError,
                                        SQLiteLog)
from glmbandits.service.events import Event
from glmbandits.service.sqlite_store import SQLiteStore

FIXTURES = Path(__file__).parent / "fixtures"
#: a named-feature request as sent (non-ASCII text and nesting kept exactly)
REQUEST = json.dumps({"context": {"country": "DE", "age": 34, "segments": ["sports", "news"],
                                  "city": "K\u00f6ln \u2603"},
                      "action_ids": ["a1", "a2", "a3"], "excluded_ids": ["a3"]},
                     ensure_ascii=False)


def _decision(decision_id: str, t: float, request: str | None = None) -> Event:
    return Event("decision", decision_id, t, contexts=np.eye(3)[:2], action=1,
                 probabilities=np.array([0.25, 0.75]), propensity=0.75, model_version=0,
                 request=request)


def _catalogue(action_id: str, t: float, status: str = "put") -> Event:
    action = {"id": action_id} if status == "delete" else {
        "id": action_id, "features": {"topic": "sports", "length": 120.5}}
    return Event("catalogue", None, t, status=status, request=json.dumps(action))


def _mixed() -> list[Event]:
    """A named and a dense decision, a retry, rewards, catalogue changes and a sweep."""
    return [_catalogue("a1", 1.0), _catalogue("a2", 1.5),
            _decision("named", 2.0, REQUEST), _decision("dense", 3.0),
            Event("retry", "named", 3.5, contexts=np.eye(3)[:2], action=1,
                  probabilities=np.array([0.25, 0.75]), propensity=0.75, model_version=0),
            Event("reward", "named", 4.0, reward=1.0, status="learned"),
            _catalogue("a2", 5.0, "delete"),
            Event("reward", "dense", 6.0, reward=0.0, status="learned"),
            Event("expire", None, 7.0, older_than=1.0)]


def _as_logged(events: list[Event]) -> list[dict]:
    return [{**event.to_json(), "seq": seq} for seq, event in enumerate(events, start=1)]


TOTALS = {"decisions": 2, "retries": 1, "rewards": 2, "rewards_learned": 2,
          "catalogue_put": 2, "catalogue_delete": 1}


# -- the column, through both stores and both faces ---------------------------------------
def test_sqlite_stores_the_request_text_as_given_and_every_reader_reads_it(tmp_path) -> None:
    path = tmp_path / "log.db"
    store = SQLiteStore(str(path), checkpoint_interval=None)
    try:
        for event in _mixed():
            store.append(event)
        store.commit()
        read = list(store.events())
        assert [event.to_json() for event in read] == _as_logged(_mixed())
        assert read[2].request == REQUEST and read[2].request_json["context"]["age"] == 34
        assert read[3].request is None  # a dense decision has none
        assert store.totals() == TOTALS
    finally:
        store.close()
    raw = sqlite3.connect(path)
    stored = raw.execute("SELECT request FROM events WHERE decision_id = 'named' AND "
                         "kind = 'decision'").fetchone()[0]
    raw.close()
    assert stored == REQUEST  # the text as given, not re-encoded
    # a policy's face reads the same file: its own kinds, the request with the decision,
    # the catalogue's events (no decision id) left out of the events, counts and the join
    with EventLog(path, readonly=True) as log:
        assert [(e.kind, e.decision_id) for e in log.events()] == [
            ("decision", "named"), ("decision", "dense"), ("reward", "named"),
            ("reward", "dense")]
        assert next(log.decisions()).request == REQUEST
        assert len(log) == 4 and log.counts()["decision"] == 2
        joined = JoinedDecisions.from_log(log)
        assert joined.decision_ids == ["named", "dense"]
        assert joined.reward_sources == ["learned", "learned"]
    assert LoggedBanditData.from_event_log(path).rewards.tolist() == [1.0, 0.0]


def test_postgres_stores_the_request_text_as_given_and_every_reader_reads_it(
        postgres_url) -> None:
    psycopg = pytest.importorskip("psycopg")
    from glmbandits.data import PostgresEventLog
    from glmbandits.service.postgres_store import PostgresStore

    store = PostgresStore(postgres_url)
    try:
        for event in _mixed():
            store.append(event)
        store.commit()
        assert [event.to_json() for event in store.events()] == _as_logged(_mixed())
        assert store.find_decision("named").request == REQUEST
        assert store.find_decision("dense").request is None
        assert store.totals() == TOTALS
    finally:
        store.close()
    # the policy's table has the column too (version 4): a row holding one reads back
    with PostgresEventLog(postgres_url) as log:
        assert log.schema_version == 4
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("INSERT INTO glmbandits_events (kind, decision_id, timestamp, "
                           "reward, status, request) VALUES ('reward', 'x', 1.0, 1.0, "
                           "'late', %s)", (REQUEST,))
        columns = [row[0] for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = 'glmbandits_service_events' "
            "ORDER BY ordinal_position")]
    assert columns == ["seq", *ROW_COLUMNS]
    with PostgresEventLog(postgres_url) as log:
        assert [event.request for event in log.events()] == [REQUEST]


def test_a_version_1_postgres_service_table_gains_the_column_in_place(postgres_url) -> None:
    psycopg = pytest.importorskip("psycopg")
    from glmbandits.data.postgres_locks import apply_migrations
    from glmbandits.service.postgres_store import MIGRATIONS, PostgresStore

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        assert apply_migrations(connection, "test", "service_store", MIGRATIONS[:1],
                                "glmbandits_service_events") == 1
        connection.execute("INSERT INTO glmbandits_service_events (kind, decision_id, "
                           "timestamp, reward, status) VALUES ('reward', 'old', 1.0, 1.0, "
                           "'late')")
        before = connection.execute("SELECT ctid, * FROM glmbandits_service_events").fetchall()
    store = PostgresStore(postgres_url)
    try:
        assert store.schema_version == len(MIGRATIONS) == 2
        store.append(_catalogue("a1", 2.0))
        store.commit()
        assert [(e.kind, e.decision_id, e.request) for e in store.events()] == [
            ("reward", "old", None), ("catalogue", None, _catalogue("a1", 2.0).request)]
    finally:
        store.close()
    with psycopg.connect(postgres_url) as connection:
        after = connection.execute("SELECT ctid, * FROM glmbandits_service_events "
                                   "WHERE decision_id = 'old'").fetchall()
    assert after == [before[0] + (None,)]  # the row not rewritten (same ctid), request null


# -- reading by kind -----------------------------------------------------------------------
def _long_log(n: int) -> tuple[list[Event], list[int]]:
    """``n`` decisions and rewards with a catalogue change every 97 events; the
    catalogue's seqs."""
    events, seqs = [], []
    for i in range(n):
        if i % 97 == 5:
            events.append(_catalogue(f"a{i}", float(i), "delete" if i % 2 else "put"))
            seqs.append(i + 1)
        elif i % 2:
            events.append(Event("reward", f"d{i - 1}", float(i), reward=1.0, status="late"))
        else:
            events.append(_decision(f"d{i}", float(i)))
    return events, seqs


def test_sqlite_reads_only_the_kinds_asked_for_in_order_and_paged(tmp_path) -> None:
    events, seqs = _long_log(2_300)  # more than two pages of 1,000
    store = SQLiteStore(str(tmp_path / "log.db"), checkpoint_interval=None)
    try:
        for event in events:
            store.append(event)
        store.commit()
        catalogue = list(store.events(kinds=("catalogue",)))
        assert [e.seq for e in catalogue] == seqs and len(seqs) == 24
        assert [e.to_json() for e in catalogue] == \
            [{**events[s - 1].to_json(), "seq": s} for s in seqs]
        assert [e.seq for e in store.events(after=seqs[3], limit=2, kinds=["catalogue"])] == \
            seqs[4:6]
        both = [(e.seq, e.kind) for e in store.events(kinds={"catalogue", "decision"})]
        assert both == [(i + 1, event.kind) for i, event in enumerate(events)
                        if event.kind in ("catalogue", "decision")]
        # through the partial index: the other events' rows are not read
        query = store._log.query(("catalogue",))
        plan = store._log.live().execute(f"EXPLAIN QUERY PLAN {query}", (0, 10)).fetchall()
        assert "events_catalogue" in str(plan), plan
        for bad, error, message in [
                ("catalogue", TypeError, "kinds must be an iterable of event kinds"),
                (("catalog",), ValueError, "kinds must be event kinds, each one of .*, "
                                              "got 'catalog'"),
                ((), ValueError, "kinds must name at least one event kind, got none"),
                (5, TypeError, "kinds must be an iterable .* got int 5")]:
            with pytest.raises(error, match=f"SQLiteStore.events: {message}"):
                store.events(kinds=bad)  # refused at the call, before any read
    finally:
        store.close()


def test_postgres_reads_only_the_kinds_asked_for_in_order_and_paged(postgres_url,
                                                                    monkeypatch) -> None:
    psycopg = pytest.importorskip("psycopg")
    import glmbandits.service.postgres_store as postgres_store

    events, seqs = _long_log(400)
    monkeypatch.setattr(postgres_store, "_PAGE", 3)  # several pages of the catalogue's
    store = postgres_store.PostgresStore(postgres_url)
    try:
        for event in events:
            store.append(event)
        store.commit()
        catalogue = list(store.events(kinds=("catalogue",)))
        assert [e.seq for e in catalogue] == seqs and len(seqs) == 5
        assert [e.request for e in catalogue] == [events[s - 1].request for s in seqs]
        assert [e.seq for e in store.events(after=seqs[0], limit=3, kinds=["catalogue"])] \
            == seqs[1:4]
        with pytest.raises(ValueError, match="PostgresStore.events: kinds must be event "
                                             "kinds, each one of"):
            store.events(kinds=["decision", "catalog"])
        query = store._log.query(kinds=("catalogue",))
    finally:
        store.close()
    with psycopg.connect(postgres_url) as connection:
        connection.execute("SET enable_seqscan = off")
        plan = connection.execute(f"EXPLAIN {query}", (0, "catalogue", 10)).fetchall()
    assert "glmbandits_service_events_catalogue" in str(plan), plan


# -- a file of schema version 3 ----------------------------------------------------------
def _v3_copy(folder: Path) -> Path:
    target = folder / "served_store_v3.db"
    shutil.copyfile(FIXTURES / "served_store_v3.db", target)
    return target


def _raw(path: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def test_a_version_3_file_read_only_is_read_as_it_is(tmp_path) -> None:
    path = _v3_copy(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    log = SQLiteLog(path, readonly=True)
    try:
        assert log.version == 3 and "request" not in log.present
        rows = log.rows(0, 10_000)
        assert rows and all(row[-1] is None for row in rows)  # request reads as NULL
        assert [row[0] for row in log.rows(0, 100, kinds=("retry",))] == \
            [row[0] for row in rows if row[1] == "retry"]
    finally:
        log.close()
    with EventLog(path, readonly=True) as reader:
        assert all(event.request is None for event in reader.events())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_a_version_3_file_gains_the_column_in_place_its_rows_unchanged(tmp_path) -> None:
    path = _v3_copy(tmp_path)
    rows_before = _raw(path, "SELECT * FROM events ORDER BY seq")
    triggers = _raw(path, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
    served = json.loads((FIXTURES / "served_store_v3.json").read_text())
    store = SQLiteStore(str(path), checkpoint_interval=None)  # opened for writing: migrated
    try:
        assert store.schema_version() == SCHEMA_VERSION == 4
        assert store.get_meta("schema_version") == "4"
        assert [event.to_json() for event in store.events()] == served["events"]
        assert store.totals() == served["totals"]
        store.append(_catalogue("a1", 9_999.0))
        last = store.commit()
        assert [(e.seq, e.request) for e in store.events(kinds=["catalogue"])] == \
            [(last, _catalogue("a1", 9_999.0).request)]
    finally:
        store.close()
    rows_after = _raw(path, "SELECT * FROM events ORDER BY seq")
    assert rows_after[:-1] == [row + (None,) for row in rows_before]  # same seqs, same bytes
    assert [column[1] for column in _raw(path, "PRAGMA table_info(events)")] == \
        ["seq", *ROW_COLUMNS]
    assert _raw(path, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'") == triggers
    assert _raw(path, "SELECT name FROM sqlite_master WHERE name = 'events_catalogue'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        connection = sqlite3.connect(path)
        try:
            connection.execute("UPDATE events SET request = 'x'")
        finally:
            connection.close()


def test_a_version_3_file_replays_as_before_after_the_migration(tmp_path) -> None:
    from glmbandits.service.config import load_config
    from glmbandits.service.replay import check_restored, rebuild_from_log

    path = _v3_copy(tmp_path)
    config_path = tmp_path / "served_store_v3.toml"
    shutil.copyfile(FIXTURES / "served_store_v3.toml", config_path)
    store = SQLiteStore(str(path), checkpoint_interval=None)
    try:
        policy = rebuild_from_log(load_config(config_path), store)
        check_restored(policy, store.totals(), log=store.url, snapshot_seq=0)
    finally:
        store.close()


def test_a_version_3_migration_is_one_transaction_and_a_version_5_file_is_refused(
        tmp_path, monkeypatch) -> None:
    import glmbandits.data.sqlite_log as sqlite_log

    path = _v3_copy(tmp_path)
    monkeypatch.setattr(sqlite_log, "_APPEND_ONLY", sqlite_log._APPEND_ONLY + ("NOT SQL",))
    with pytest.raises(ValueError, match="not a glmbandits event log"):
        SQLiteLog(path)
    assert _raw(path, "PRAGMA user_version") == [(3,)]
    assert "request" not in [column[1] for column in _raw(path, "PRAGMA table_info(events)")]
    monkeypatch.undo()
    newer = tmp_path / "newer.db"
    shutil.copyfile(FIXTURES / "served_store_v3.db", newer)
    connection = sqlite3.connect(newer)
    connection.execute("PRAGMA user_version = 5")
    connection.close()
    digest = hashlib.sha256(newer.read_bytes()).hexdigest()
    with pytest.raises(LogVersionError, match="schema version 5; this glmbandits reads "
                                              "versions 1 to 4"):
        SQLiteLog(newer)
    with pytest.raises(RuntimeError, match="schema version 5, newer"):
        SQLiteStore(str(newer))
    assert hashlib.sha256(newer.read_bytes()).hexdigest() == digest
    SQLiteLog(path).close()  # the failed migration left nothing behind: it runs now
    assert _raw(path, "PRAGMA user_version") == [(4,)]
