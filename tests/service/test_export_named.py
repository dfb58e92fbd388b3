"""``glmbandits export`` of a service with a feature schema: each named decision's row
carries its request with catalogue ids resolved to the features of that point of the log."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from glmbandits.data import LoggedBanditData
from glmbandits.data.event_records import Event
from glmbandits.service.export import export_parquet, joined_decisions, resolved_requests
from glmbandits.service.store import open_store
from named_log_kit import ARTICLES, CHANGED, named_service_log


def _rows(path: Path) -> dict[str, dict]:
    table = pq.read_table(path).to_pydict()
    return {decision: {"request": None if text is None else json.loads(text),
                       "action": action}
            for decision, text, action in zip(table["decision_id"], table["request"],
                                              table["action"])}


def test_catalogue_ids_resolve_to_the_features_of_their_decision(tmp_path: Path) -> None:
    _, db, _ = named_service_log(tmp_path / "serve", rounds=12)
    path = tmp_path / "decisions.parquet"
    assert export_parquet(db, path) == 13
    rows = _rows(path)
    before, after = rows["d0"]["request"], rows["d10"]["request"]  # by id, a1 changed at 6
    assert "action_ids" not in before and "action_ids" not in after
    assert before["actions"][0] == {"id": "a1", "features": ARTICLES["a1"]}
    assert after["actions"][0] == {"id": "a1", "features": CHANGED}
    assert [a["id"] for a in before["actions"]] == ["a1", "a2", "a3", "a4"]
    assert [a["id"] for a in after["actions"]] == ["a1", "a2", "a3"]  # a4 retired
    assert before["excluded_ids"] == ["a4"] and after["excluded_ids"] == ["a3"]
    assert set(before["context"]) == {"country", "segments"}
    # an inline decide keeps what was sent; a dense one has no request
    store = open_store(db)
    try:
        sent = {e.decision_id: json.loads(e.request) for e in store.events()
                if e.kind == "decision" and e.request is not None}
    finally:
        store.close()
    assert rows["d1"]["request"] == sent["d1"] and "actions" in sent["d1"]
    assert sent["d0"]["action_ids"] == ["a1", "a2", "a3", "a4"]  # the log keeps the ids
    assert rows["dense"]["request"] is None
    # the rows themselves are those of any export (same rounds, same contexts)
    data = LoggedBanditData.from_parquet(path)
    assert data.n_rounds == 13


def test_a_retired_action_resolves_for_the_decisions_before_its_deletion() -> None:
    put = Event("catalogue", None, 0.0, seq=1, status="put",
                request='{"features":{"topic":"news"},"id":"a1"}')
    decision = Event("decision", "r", 1.0, seq=2, contexts=np.eye(1, 2), action=0,
                     probabilities=np.ones(1), propensity=1.0, model_version=0,
                     request='{"action_ids":["a1"],"context":{"age":3}}')
    delete = Event("catalogue", None, 2.0, seq=3, status="delete", request='{"id":"a1"}')
    late = Event("decision", "s", 3.0, seq=4, contexts=np.eye(1, 2), action=0,
                 probabilities=np.ones(1), propensity=1.0, model_version=0,
                 request='{"action_ids":["a1"],"context":{"age":4}}')
    out = list(resolved_requests([put, decision, delete]))
    assert [e.seq for e in out] == [1, 2, 3]
    assert json.loads(out[1].request) == {"context": {"age": 3}, "actions": [
        {"id": "a1", "features": {"topic": "news"}}]}
    assert out[1].contexts is decision.contexts and out[0] is put  # nothing else changes
    with pytest.raises(ValueError, match=r"decision 's' \(seq 4\).*'a1' was deleted"):
        list(resolved_requests([put, decision, delete, late]))


def test_joined_decisions_carry_the_resolved_requests(tmp_path: Path) -> None:
    _, db, _ = named_service_log(tmp_path / "serve", rounds=4, dense=False)
    store = open_store(db)
    try:
        joined = joined_decisions(store)
    finally:
        store.close()
    assert len(joined) == 4
    assert all("actions" in json.loads(text) for text in joined.requests)
