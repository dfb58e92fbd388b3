"""Shadow decisions in the library's event logs (schema version 2): written by a policy in
shadow mode, read back, migrated from version-1 files and databases built here, and left
out (counted) by the readers that need a logging propensity."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from glmbandits import UCBGLM
from glmbandits.data import EventLog, LoggedBanditData
from glmbandits.data.event_export import JoinedDecisions
from glmbandits.data.sqlite_log import APPLICATION_ID, SCHEMA_VERSION

# the schema glmbandits wrote before shadow mode (version 1), verbatim
_V1_SQLITE = """
CREATE TABLE events (
    sequence      INTEGER PRIMARY KEY AUTOINCREMENT,
    kind          TEXT NOT NULL CHECK (kind IN ('decision', 'reward', 'expiry')),
    decision_id   TEXT NOT NULL,
    timestamp     REAL NOT NULL,
    n_actions     INTEGER,
    n_features    INTEGER,
    contexts      BLOB,
    probabilities BLOB,
    action        INTEGER,
    propensity    REAL,
    model_version INTEGER,
    reward        REAL,
    status        TEXT
);
CREATE INDEX events_decision_id ON events (decision_id);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
"""


def _drive(log, *, shadow_every: int = 2, rounds: int = 12) -> UCBGLM:
    """A policy writing to ``log``: every ``shadow_every``-th decision in shadow mode."""
    policy = UCBGLM(n_features=2, seed=0)
    policy.event_log = log
    rng = np.random.default_rng(0)
    for t in range(rounds):
        X = rng.normal(size=(3, 2)) / 2
        default = int(np.argmax(X[:, 0])) if t % shadow_every == 0 else None
        policy.decide(X, f"d{t}", default_action=default, now=float(t))
        policy.reward(f"d{t}", float(t % 3 == 0), now=t + 0.5)
    return policy


def _v1_file(path) -> None:
    raw = sqlite3.connect(path)
    raw.executescript(_V1_SQLITE + f"PRAGMA application_id={APPLICATION_ID};"
                      "PRAGMA user_version=1;")
    raw.execute("INSERT INTO events (kind, decision_id, timestamp, n_actions, n_features, "
                "contexts, probabilities, action, propensity, model_version) VALUES "
                "('decision', 'old', 0.0, 2, 2, ?, ?, 1, 0.5, 0)",
                (np.eye(2).tobytes(), np.array([0.5, 0.5]).tobytes()))
    raw.execute("INSERT INTO events (kind, decision_id, timestamp, reward, status) VALUES "
                "('reward', 'old', 1.0, 1.0, 'learned')")
    raw.commit()
    raw.close()


def test_shadow_decisions_are_written_and_read_back(tmp_path):
    with EventLog(tmp_path / "log.sqlite") as log:
        _drive(log)
        decisions = list(log.decisions())
    shadow = [d for d in decisions if d.shadow]
    assert len(shadow) == 6 and all(d.propensity is None for d in shadow)
    assert all(d.probabilities[d.policy_action] > 0 for d in shadow)
    assert all(d.policy_action is None and d.propensity == d.probabilities[d.action]
               for d in decisions if not d.shadow)


@pytest.mark.parametrize("call, error, match", [
    (dict(propensity=None), ValueError, "None only for a shadow decision"),
    (dict(propensity=None, policy_action=2), ValueError, "policy_action must be a row"),
    (dict(propensity=None, policy_action=1.0), TypeError, "policy_action must be an int"),
    (dict(propensity=0.25, policy_action=0), ValueError, "has propensity None"),
])
def test_a_bad_shadow_decision_is_refused_and_nothing_is_written(tmp_path, call, error,
                                                                 match):
    args = dict(decision_id="x", timestamp=0.0, contexts=np.eye(2),
                probabilities=[0.25, 0.75], action=0, propensity=0.25, model_version=0)
    with EventLog(tmp_path / "log.sqlite") as log:
        with pytest.raises(error, match=match):
            log.record_decision(**{**args, **call})
        assert len(log) == 0


def test_a_version_1_file_is_migrated_in_place_and_keeps_its_events(tmp_path):
    path = tmp_path / "old.sqlite"
    _v1_file(path)
    with EventLog(path, readonly=True) as old:  # read-only: read as it is, not migrated
        assert [e.kind for e in old.events()] == ["decision", "reward"]
        assert next(old.decisions()).policy_action is None
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    raw.close()
    with EventLog(path) as log:
        before = next(log.decisions())
        assert before.decision_id == "old" and before.propensity == 0.5
        assert before.policy_action is None
        log.record_decision("new", 2.0, np.eye(2), [0.25, 0.75], 0, None, 0, policy_action=1)
        assert [e.decision_id for e in log.decisions()] == ["old", "new"]
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    raw.close()
    with EventLog(path) as again:  # a second open changes nothing
        assert len(again) == 3 and list(again.decisions())[1].policy_action == 1


def test_readers_leave_shadow_decisions_out_and_count_them(tmp_path):
    with EventLog(tmp_path / "log.sqlite") as log:
        _drive(log, shadow_every=3)
        joined = JoinedDecisions.from_log(log)
        data = LoggedBanditData.from_event_log(log)
    assert joined.counts["shadow"] == 4 and int(np.sum(joined.policy_actions >= 0)) == 4
    assert np.isnan(joined.propensities[joined.policy_actions >= 0]).all()
    assert data.n_rounds == 8 and data.join_counts["shadow"] == 4
    assert np.all((data.propensities > 0) & (data.propensities <= 1))


def test_a_log_of_shadow_decisions_only_says_what_to_use(tmp_path):
    with EventLog(tmp_path / "log.sqlite") as log:
        _drive(log, shadow_every=1, rounds=4)
        with pytest.raises(ValueError, match="4 shadow decision.*evaluate_shadow"):
            LoggedBanditData.from_event_log(log)


def test_the_parquet_export_carries_policy_action(tmp_path):
    pytest.importorskip("pyarrow")
    from glmbandits.data import export_parquet
    import pyarrow.parquet as pq

    with EventLog(tmp_path / "log.sqlite") as log:
        _drive(log, shadow_every=3)
        export_parquet(log, tmp_path / "log.parquet")
        from_log = LoggedBanditData.from_event_log(log)
    table = pq.read_table(tmp_path / "log.parquet")
    policy_action = table.column("policy_action").to_pylist()
    propensity = table.column("propensity").to_pylist()
    assert sum(a is not None for a in policy_action) == 4
    assert all((a is None) != (p is None) for a, p in zip(policy_action, propensity))
    again = LoggedBanditData.from_parquet(tmp_path / "log.parquet")
    assert again.n_rounds == from_log.n_rounds == 8
    assert np.array_equal(again.propensities, from_log.propensities)


def test_postgres_logs_shadow_decisions_and_migrates_a_version_1_database(postgres_url):
    psycopg = pytest.importorskip("psycopg")
    from glmbandits.data import PostgresEventLog
    from glmbandits.data.postgres_event_log import MIGRATIONS

    with psycopg.connect(postgres_url, autocommit=True) as conn:  # a version-1 database
        conn.execute("CREATE TABLE glmbandits_schema_version (component text PRIMARY KEY, "
                     "version integer NOT NULL, migrated_at timestamptz NOT NULL "
                     "DEFAULT now())")
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO glmbandits_schema_version (component, version) "
                     "VALUES ('event_log', 1)")
        conn.execute("INSERT INTO glmbandits_events (kind, decision_id, timestamp, n_actions, "
                     "n_features, contexts, probabilities, action, propensity, "
                     "model_version) VALUES ('decision', 'old', 0.0, 2, 2, %s, %s, 1, 0.5, 0)",
                     (np.eye(2).tobytes(), np.array([0.5, 0.5]).tobytes()))
    with PostgresEventLog(postgres_url) as log:  # migrated through versions 2 and 3 to 4
        assert log.schema_version == len(MIGRATIONS) == 4
        old = next(log.decisions())
        assert old.decision_id == "old" and old.policy_action is None and old.sequence == 1
        assert np.array_equal(old.contexts, np.eye(2))
        _drive(log, shadow_every=2, rounds=6)
        decisions = list(log.decisions())
        shadow = [d for d in decisions if d.shadow]
        assert len(decisions) == 7 and len(shadow) == 3
        assert all(d.propensity is None for d in shadow)
        assert LoggedBanditData.from_event_log(log).join_counts["shadow"] == 3
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM glmbandits_schema_version").fetchone() == (4,)
