"""PostgresEventLog against a real PostgreSQL server (the ``postgres_url`` fixture):
the same events as the SQLite EventLog, committed before returning, durable over a
restart, schema versioned and migrated, append-only, and sequence order = commit order
under concurrent writers."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

from glmbandits import UCBGLM
from glmbandits.data import EventLog, PostgresEventLog
from glmbandits.data.event_export import JoinedDecisions
from glmbandits.data.postgres_event_log import POSTGRES_SCHEMA_VERSION

psycopg = pytest.importorskip("psycopg")


def _drive(log, seed: int = 0) -> None:
    """A policy with ``log`` attached: decisions, rewards (learned, duplicate, late), expiries."""
    rng = np.random.default_rng(seed)
    policy = UCBGLM(n_features=3, seed=seed)
    policy.configure_decisions(default_reward=0.0, reward_wait=50.0)
    policy.event_log = log
    for i in range(12):
        contexts = rng.normal(size=(4, 3)) / 2
        policy.decide(contexts, decision_id=f"d{i}", now=float(i))
    for i in range(0, 12, 2):
        policy.reward(f"d{i}", float(rng.integers(0, 2)), now=20.0 + i)
    policy.reward("d0", 1.0, now=40.0)                  # a duplicate
    policy.expire(older_than=5.0, now=60.0)             # the odd ones get the default
    policy.reward("d1", 1.0, now=70.0)                  # late: already closed


def _fields(event) -> tuple:
    values = []
    for name, value in vars(event).items():
        values.append((name, value.tobytes() if isinstance(value, np.ndarray) else value))
    return tuple(values)


def test_a_policy_writes_the_same_events_as_to_the_sqlite_log(postgres_url, tmp_path) -> None:
    with EventLog(tmp_path / "events.sqlite") as sqlite_log, \
            PostgresEventLog(postgres_url) as pg_log:
        _drive(sqlite_log)
        _drive(pg_log)
        expected = [_fields(e) for e in sqlite_log.events()]
        assert [_fields(e) for e in pg_log.events()] == expected
        assert {event.kind for event in pg_log.events()} == {"decision", "reward", "expiry"}
        assert pg_log.counts() == sqlite_log.counts()
        assert pg_log.counts()["reward"]["duplicate"] == 1
        assert pg_log.counts()["reward"]["late"] == 1
        assert len(pg_log) == len(sqlite_log) == pg_log.last_sequence
        for method in ("decisions", "rewards", "expiries"):
            assert [_fields(e) for e in getattr(pg_log, method)()] == \
                [_fields(e) for e in getattr(sqlite_log, method)()]
        assert [e.sequence for e in pg_log.events(after=5, limit=3)] == [6, 7, 8]
        joined = JoinedDecisions.from_events(pg_log.events())
        assert joined.counts == JoinedDecisions.from_events(sqlite_log.events()).counts


def test_each_record_is_committed_before_it_returns(postgres_url) -> None:
    with PostgresEventLog(postgres_url) as log:
        log.record_decision("a", 1.0, np.eye(2), [0.25, 0.75], 1, 0.75, 0)
        # another connection, another process's view: the row is already committed
        with psycopg.connect(postgres_url) as other:
            assert other.execute("SELECT decision_id, propensity FROM glmbandits_events"
                                 ).fetchall() == [("a", 0.75)]


@pytest.mark.slow
def test_events_survive_a_server_restart_and_a_crash_and_the_log_reconnects(
        postgres_server, postgres_url) -> None:
    log = PostgresEventLog(postgres_url)
    try:
        log.record_decision("before", 1.0, np.eye(2), [0.5, 0.5], 0, 0.5, 3)
        postgres_server.restart()
        log.record_reward("before", 2.0, 1.0, "learned")   # reconnects by itself
        postgres_server.kill()
        postgres_server.start()
        log.record_expiry("other", 3.0, "dropped", None)
    finally:
        log.close()
    with PostgresEventLog(postgres_url) as reopened:
        assert [(e.kind, e.decision_id) for e in reopened.events()] == \
            [("decision", "before"), ("reward", "before"), ("expiry", "other")]
        assert reopened.decisions().__next__().model_version == 3


def test_the_schema_version_is_recorded_and_a_reopen_changes_nothing(postgres_url) -> None:
    with PostgresEventLog(postgres_url) as log:
        assert log.schema_version == POSTGRES_SCHEMA_VERSION == 4
        log.record_reward("x", 0.0, 1.0, "learned")
    with PostgresEventLog(postgres_url) as again:
        assert len(again) == 1
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT component, version FROM glmbandits_schema_version"
                            ).fetchall() == [("event_log", 4)]


def test_a_newer_schema_is_refused_and_left_unchanged(postgres_url) -> None:
    PostgresEventLog(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE glmbandits_schema_version SET version = 99")
    with pytest.raises(ValueError, match="schema version 99; this glmbandits knows versions "
                                         "up to 4 .* it was not modified"):
        PostgresEventLog(postgres_url)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM glmbandits_schema_version").fetchone() == (99,)


def test_a_foreign_events_table_is_refused(postgres_url) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE glmbandits_events (id int)")
    with pytest.raises(ValueError, match="not a glmbandits event log"):
        PostgresEventLog(postgres_url)
    with psycopg.connect(postgres_url) as conn:  # the failed migration was rolled back
        assert conn.execute("SELECT to_regclass('glmbandits_schema_version')").fetchone() \
            == (None,)


def test_two_processes_creating_the_schema_at_once_both_succeed(postgres_url) -> None:
    errors: list[BaseException] = []

    def open_log() -> None:
        try:
            PostgresEventLog(postgres_url).close()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_log) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []


def test_the_log_is_append_only(postgres_url) -> None:
    with PostgresEventLog(postgres_url) as log:
        log.record_reward("x", 0.0, 1.0, "learned")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in ("UPDATE glmbandits_events SET reward = 0",
                          "DELETE FROM glmbandits_events", "TRUNCATE glmbandits_events"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(statement)
        assert conn.execute("SELECT reward FROM glmbandits_events").fetchall() == [(1.0,)]


@pytest.mark.parametrize("call, error, match", [
    (lambda log: log.record_decision(7, 0.0, np.eye(2), [0.5, 0.5], 0, 0.5, 0), TypeError,
     "decision_id must be a str"),
    (lambda log: log.record_decision("a", 0.0, np.eye(2), [0.5, 0.5], 0, 0.4, 0), ValueError,
     "propensity must equal probabilities"),
    (lambda log: log.record_reward("a", 0.0, float("nan"), "learned"), ValueError, "reward"),
    (lambda log: log.record_reward("a", 0.0, 1.0, "maybe"), ValueError, "status must be one"),
    (lambda log: log.record_expiry("a", 0.0, "dropped", 1.0), ValueError,
     "reward must be None when outcome is 'dropped'"),
    (lambda log: list(log.events(after=-1.5)), TypeError, "after must be an int"),
    (lambda log: list(log.events(kind="click")), ValueError, "kind must be"),
])
def test_bad_input_raises_naming_it_and_writes_nothing(postgres_url, call, error, match) -> None:
    with PostgresEventLog(postgres_url) as log:
        with pytest.raises(error, match=match):
            call(log)
        assert len(log) == 0


def test_constructor_checks_and_secrets_stay_out_of_messages(postgres_url) -> None:
    with pytest.raises(TypeError, match="url must be a str, got int"):
        PostgresEventLog(5432)
    with pytest.raises(ValueError, match=r"url must start with postgresql://.*\*\*\*"):
        PostgresEventLog("mysql://root:hunter2@localhost/db")
    log = PostgresEventLog(postgres_url)
    assert "PostgresEventLog('postgresql://" in repr(log)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(log)
    log.close()
    log.close()
    assert log.closed
    with pytest.raises(ValueError, match="is closed"):
        log.record_reward("a", 0.0, 1.0, "learned")


def test_a_batch_is_one_commit_that_other_readers_see_at_its_end(postgres_url) -> None:
    with PostgresEventLog(postgres_url) as log, PostgresEventLog(postgres_url) as reader:
        with log.batch():
            for i in range(3):
                log.record_decision(f"d{i}", float(i), np.eye(2), [0.5, 0.5], 0, 0.5, 0)
                with log.batch():  # nested: joins the outer one
                    log.record_reward(f"d{i}", float(i), 1.0, "learned")
            assert len(reader) == 0
        assert len(reader) == 6
        assert [e.sequence for e in reader.events()] == list(range(1, 7))


@pytest.mark.slow
def test_a_tailing_reader_sees_every_event_of_concurrent_writers_in_commit_order(
        postgres_url) -> None:
    """The learner reads events(after=last) while API processes write: nothing is skipped."""
    n_writers, per_writer = 4, 40
    done = threading.Event()
    seen: list[tuple[int, str]] = []
    errors: list[BaseException] = []

    def write(w: int) -> None:
        try:
            with PostgresEventLog(postgres_url) as log:
                for i in range(per_writer):
                    log.record_decision(f"w{w}-{i}", float(i), np.eye(3), [0.2, 0.3, 0.5], 2,
                                        0.5, i)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    def tail() -> None:
        with PostgresEventLog(postgres_url) as log:
            last = 0
            while True:
                finished = done.is_set()
                for event in log.events(after=last):
                    seen.append((event.sequence, event.decision_id))
                    last = event.sequence
                if finished:
                    return

    reader = threading.Thread(target=tail)
    reader.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(n_writers)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=120)
    done.set()
    reader.join(timeout=60)
    assert errors == []
    assert len(seen) == n_writers * per_writer
    assert [s for s, _ in seen] == list(range(1, n_writers * per_writer + 1))


def test_logged_bandit_data_reads_a_postgres_log_as_it_reads_the_sqlite_one(postgres_url,
                                                                            tmp_path) -> None:
    from glmbandits.data import LoggedBanditData

    with EventLog(tmp_path / "events.sqlite") as sqlite_log, \
            PostgresEventLog(postgres_url) as pg_log:
        _drive(sqlite_log)
        _drive(pg_log)
        from_pg = LoggedBanditData.from_event_log(pg_log)
        from_sqlite = LoggedBanditData.from_event_log(sqlite_log)
        assert from_pg.join_counts == from_sqlite.join_counts
        assert from_pg.actions.tolist() == from_sqlite.actions.tolist()
        assert np.array_equal(from_pg.rewards, from_sqlite.rewards)
        assert np.array_equal(from_pg.propensities, from_sqlite.propensities)
