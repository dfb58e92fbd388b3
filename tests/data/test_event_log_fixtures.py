"""Event logs written by older code still open, read and join as they did.

The files under ``fixtures/`` were written by the code before the event vocabulary,
the decision-reward join and the logs were consolidated (``fixtures/make_event_log_fixtures.py``
says how); ``fixtures/expected.json`` holds what that code read from them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from glmbandits.data import EventLog, LoggedBanditData
from glmbandits.data.event_export import JoinedDecisions

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _copy(name: str, folder: Path) -> Path:
    target = folder / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def _as_expected(joined: JoinedDecisions) -> dict:
    def nullable(values: np.ndarray) -> list:
        return [None if math.isnan(v) else v for v in values.tolist()]

    return {"decision_ids": joined.decision_ids, "actions": joined.actions.tolist(),
            "rewards": nullable(joined.rewards), "reward_sources": joined.reward_sources,
            "counts": joined.counts, "policy_actions": joined.policy_actions.tolist(),
            "propensities": nullable(joined.propensities)}


def _policy_events(log: EventLog) -> list:
    return [[e.kind, e.decision_id, getattr(e, "status", None) or getattr(e, "outcome", None)]
            for e in log.events()]


def test_an_old_policy_event_log_reads_and_joins_as_before(tmp_path: Path) -> None:
    expected = EXPECTED["policy_event_log_v2.sqlite"]
    path = _copy("policy_event_log_v2.sqlite", tmp_path)
    with EventLog(path, readonly=True) as log:
        assert _policy_events(log) == expected["events"]
        assert _as_expected(JoinedDecisions.from_log(log)) == expected["join"]
    data = LoggedBanditData.from_event_log(path)
    # the live decisions with a reward (a shadow decision is not a logged round)
    assert len(data) == sum(source is not None and shadow < 0 for source, shadow in
                            zip(expected["join"]["reward_sources"],
                                expected["join"]["policy_actions"]))


def test_an_old_policy_event_log_opens_for_writing(tmp_path: Path) -> None:
    expected = EXPECTED["policy_event_log_v2.sqlite"]
    path = _copy("policy_event_log_v2.sqlite", tmp_path)
    with EventLog(path) as log:
        log.record_reward("p5", 20.0, 0.0, "learned")
    with EventLog(path, readonly=True) as log:
        assert _policy_events(log) == expected["events"] + [["reward", "p5", "learned"]]
        assert JoinedDecisions.from_log(log).reward_sources[5] == "learned"


def test_an_old_service_store_reads_and_joins_as_before(tmp_path: Path) -> None:
    from glmbandits.service.export import joined_decisions
    from glmbandits.service.store import open_store

    expected = EXPECTED["service_store_v1.db"]
    path = _copy("service_store_v1.db", tmp_path)
    store = open_store(f"sqlite:///{path}")
    try:
        assert [[e.seq, e.kind, e.decision_id, e.status] for e in store.events()] == \
            expected["events"]
        assert _as_expected(joined_decisions(store)) == expected["join"]
        assert store.totals() == expected["totals"]
        assert store.get_meta("fixture") == "service_store_v1"
    finally:
        store.close()


def test_an_old_service_store_opens_for_writing(tmp_path: Path) -> None:
    from glmbandits.service.events import Event
    from glmbandits.service.store import open_store

    path = _copy("service_store_v1.db", tmp_path)
    store = open_store(f"sqlite:///{path}")
    try:
        store.append(Event("reward", "s1", 7.0, reward=1.0, status="late"))
        assert store.commit() == len(EXPECTED["service_store_v1.db"]["events"]) + 1
    finally:
        store.close()
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.totals()["rewards_late"] == 1
    finally:
        store.close()


# -- a decision service's store of schema version 2 (meta) and 3 (the one log before the
# -- request column; fixtures/make_served_store_v3_fixture.py), with snapshots ----------
SERVED_STORES = ("served_store_v2", "served_store_v3")


def _served_copy(folder: Path, name: str) -> tuple[Path, Path, dict]:
    return (_copy(f"{name}.db", folder), _copy(f"{name}.toml", folder),
            json.loads((FIXTURES / f"{name}.json").read_text()))


@pytest.mark.parametrize("name", SERVED_STORES)
def test_a_served_store_reads_restores_and_decides_as_before(tmp_path: Path, name: str) -> None:
    from glmbandits.service.config import load_config
    from glmbandits.service.core import DecisionService
    from glmbandits.service.export import joined_decisions
    from glmbandits.service.store import open_store

    db, config, served = _served_copy(tmp_path, name)
    store = open_store(f"sqlite:///{db}")
    try:
        assert [event.to_json() for event in store.events()] == served["events"]
        assert store.totals() == served["totals"]
        assert store.latest_snapshot()[0] == served["snapshot_seq"]
        joined = joined_decisions(store)
        assert (joined.decision_ids, joined.reward_sources) == \
            (served["joined_ids"], served["joined_sources"])
    except BaseException:
        store.close()
        raise
    service = DecisionService(load_config(config), store, clock=lambda: 2_000.0).start()
    try:
        assert service.decide(np.array(served["next_rows"]), decision_id="next") == \
            served["next"]
    finally:
        service.stop(snapshot=False)


@pytest.mark.parametrize("name", SERVED_STORES)
def test_a_served_store_exports_as_before(tmp_path: Path, name: str) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from glmbandits.service.export import export_parquet

    db, _, served = _served_copy(tmp_path, name)
    url = f"sqlite:///{db}"
    assert export_parquet(url, tmp_path / "events.parquet", events=True) == len(served["events"])
    rows = pq.read_table(tmp_path / "events.parquet").to_pylist()
    assert [{name: value for name, value in row.items() if value is not None or
             name == "decision_id" or (name == "reward" and row["kind"] == "reward")} for row in rows] == served["events"]
    assert export_parquet(url, tmp_path / "decisions.parquet") == \
        sum(source is not None for source in served["joined_sources"])
    data = LoggedBanditData.from_parquet(tmp_path / "decisions.parquet")
    assert len(data) == sum(source is not None for source in served["joined_sources"])
