"""The ``request`` of a named decision in the exports (record and export schema version 3),
and the service's ``catalogue`` events in the join and the exports.

The joined-decisions Parquet file carries each decision's request as logged (null for a
dense decision) and still reads files without the column (versions 1 and 2); the
events layout carries every event's; the join skips catalogue changes, which name no
decision.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from glmbandits.data import EventLog, LoggedBanditData
from glmbandits.data.event_export import (JoinedDecisions, read_parquet_columns,
                                          write_joined_parquet)
from glmbandits.data.event_join import DecisionRewardJoin
from glmbandits.data.event_records import SCHEMA_VERSION
from glmbandits.service.events import Event
from glmbandits.service.store import open_store

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

#: an inline decide's request (its actions' features sent with it, as a service logs it)
REQUEST = json.dumps({"context": {"country": "DE", "segments": ["news"]},
                      "actions": [{"id": "a1", "features": {"topic": "news"}},
                                  {"id": "a2", "features": {"topic": "sports"}}]})


def _decision(decision_id: str, seq: int, request: str | None = None) -> Event:
    return Event("decision", decision_id, float(seq), seq=seq, contexts=np.eye(2), action=1,
                 probabilities=np.array([0.5, 0.5]), propensity=0.5, model_version=0,
                 request=request)


def _catalogue(seq: int, status: str = "put") -> Event:
    return Event("catalogue", None, float(seq), seq=seq, status=status,
                 request=json.dumps({"id": "a1", "features": {"topic": "news"}}))


def _log() -> list[Event]:
    return [_catalogue(1), _decision("named", 2, REQUEST), _catalogue(3),
            _decision("dense", 4), Event("reward", "named", 5.0, seq=5, reward=1.0,
                                         status="learned"),
            _catalogue(6, "delete"),
            Event("reward", "dense", 7.0, seq=7, reward=0.0, status="learned")]


def test_the_join_skips_catalogue_events_and_keeps_each_decisions_request() -> None:
    join = DecisionRewardJoin().extend(_log())
    assert [(row.decision.decision_id, row.reward, row.source) for row in join.rows()] == \
        [("named", 1.0, "learned"), ("dense", 0.0, "learned")]
    assert join.counts == {"duplicate_rewards": 0, "late_rewards": 0, "orphan_rewards": 0}
    joined = JoinedDecisions.from_events(_log())
    assert joined.decision_ids == ["named", "dense"]
    assert joined.requests == [REQUEST, None]
    assert joined.counts["orphan_rewards"] == 0 and joined.counts["decisions"] == 2


def test_the_joined_export_carries_the_request_and_reads_back(tmp_path: Path) -> None:
    path = write_joined_parquet(JoinedDecisions.from_events(_log()), tmp_path / "d.parquet")
    table = pq.read_table(path)
    assert table.schema.field("request").type == pa.string()
    assert table.column("request").to_pylist() == [REQUEST, None]
    info = json.loads(table.schema.metadata[b"glmbandits.event_log"])
    assert info["schema_version"] == SCHEMA_VERSION == 3
    columns = read_parquet_columns(path, "test")
    assert columns["request"] == [REQUEST, None]
    data = LoggedBanditData.from_parquet(path)
    assert data.rewards.tolist() == [1.0, 0.0] and data.actions.tolist() == [1, 1]


def _older_export(path: Path, version: int) -> Path:
    """``path`` as the export of an older glmbandits: no ``request`` column, and (version 1)
    no ``policy_action`` either."""
    table = pq.read_table(path).drop(["request"] + (["policy_action"] if version == 1 else []))
    table = table.replace_schema_metadata({b"glmbandits.event_log": json.dumps(
        {"schema_version": version, "source": "older", "counts": {"decisions": 2}}).encode()})
    older = path.with_name(f"v{version}.parquet")
    pq.write_table(table, older)
    return older


@pytest.mark.parametrize("version", [1, 2])
def test_an_export_without_the_request_column_still_reads(tmp_path: Path, version) -> None:
    path = write_joined_parquet(JoinedDecisions.from_events(_log()), tmp_path / "d.parquet")
    older = _older_export(path, version)
    assert "request" not in pq.read_table(older).column_names
    assert read_parquet_columns(older, "test")["request"] == [None, None]
    now, before = LoggedBanditData.from_parquet(path), LoggedBanditData.from_parquet(older)
    assert np.array_equal(now.rewards, before.rewards)
    assert np.array_equal(now.actions, before.actions)
    assert np.array_equal(now.propensities, before.propensities)
    assert all(np.array_equal(a, b) for a, b in zip(now.contexts, before.contexts))


def test_a_request_column_of_another_type_or_a_newer_export_is_refused(tmp_path: Path) -> None:
    path = write_joined_parquet(JoinedDecisions.from_events(_log()), tmp_path / "d.parquet")
    table = pq.read_table(path)
    ints = table.set_column(table.column_names.index("request"), "request",
                            pa.array([1, 2], pa.int64()))
    pq.write_table(ints, tmp_path / "ints.parquet")
    with pytest.raises(ValueError, match=r"ints\.parquet.*column 'request' must hold strings, "
                                         r"got int64"):
        LoggedBanditData.from_parquet(tmp_path / "ints.parquet")
    newer = table.replace_schema_metadata({b"glmbandits.event_log": json.dumps(
        {"schema_version": 4, "counts": {}}).encode()})
    pq.write_table(newer, tmp_path / "newer.parquet")
    with pytest.raises(ValueError, match=r"newer\.parquet.*schema version 4; this glmbandits "
                                         r"reads 1 to 3"):
        LoggedBanditData.from_parquet(tmp_path / "newer.parquet")


def test_a_services_exports_carry_the_requests_and_catalogue_changes(tmp_path: Path) -> None:
    from glmbandits.service.export import export_parquet

    db = f"sqlite:///{tmp_path / 'log.db'}"
    store = open_store(db)
    try:
        for event in _log():
            store.append(Event(**{**event.__dict__, "seq": 0}))
        store.commit()
    finally:
        store.close()
    assert export_parquet(db, tmp_path / "events.parquet", events=True) == len(_log())
    events = pq.read_table(tmp_path / "events.parquet")
    assert events.schema.field("request").type == pa.string()
    assert events.column("request").to_pylist() == [event.request for event in _log()]
    assert events.column("kind").to_pylist()[:3] == ["catalogue", "decision", "catalogue"]
    assert export_parquet(db, tmp_path / "decisions.parquet") == 2
    assert read_parquet_columns(tmp_path / "decisions.parquet", "test")["request"] == \
        [REQUEST, None]
    # a policy's reader of the same file: catalogue events are not its kinds
    with EventLog(tmp_path / "log.db", readonly=True) as log:
        assert [e.kind for e in log.events()] == ["decision", "decision", "reward", "reward"]
        assert JoinedDecisions.from_log(log).requests == [REQUEST, None]
