"""The decision-reward join has one home (:class:`glmbandits.data.event_join.DecisionRewardJoin`):
the export, ``from_event_log`` (replay), the service's export and its shadow evaluation
(``GET /v1/evaluation``, the dashboard's panel) all read it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glmbandits.data.event_export import JoinedDecisions
from glmbandits.data.event_join import DecisionRewardJoin
from glmbandits.data.event_records import Event


def _decision(seq: int, decision_id: str, shadow: bool = False) -> Event:
    p = np.array([0.25, 0.75])
    return Event("decision", decision_id, float(seq), seq=seq, contexts=np.eye(2) * seq,
                 probabilities=p, action=1, propensity=None if shadow else 0.75,
                 model_version=0, policy_action=0 if shadow else None)


def _reward(seq: int, decision_id: str, timestamp: float, reward: float, status: str) -> Event:
    return Event("reward", decision_id, timestamp, seq=seq, reward=reward, status=status)


def _expiry(seq: int, decision_id: str, timestamp: float, outcome: str,
            reward: float | None) -> Event:
    return Event("expiry", decision_id, timestamp, seq=seq, status=outcome, reward=reward)


def _events() -> list:
    return [_decision(1, "a"), _decision(2, "b", shadow=True), _decision(3, "c"),
            _reward(4, "a", 4.0, 1.0, "learned"),
            _reward(5, "a", 5.0, 0.0, "duplicate"),
            _reward(6, "b", 6.0, 0.5, "held"),
            _expiry(7, "b", 7.0, "learned", 0.5),
            _expiry(8, "c", 8.0, "dropped", None),
            _reward(9, "zzz", 9.0, 1.0, "learned"),
            _decision(10, "a"),                       # an id used again: a new round
            _expiry(11, "a", 11.0, "default", 0.0),
            _decision(12, "d", shadow=True)]


def test_the_join_one_event_at_a_time() -> None:
    join = DecisionRewardJoin()
    for event in _events():
        join.add(event)
    rows = join.rows()
    assert [row.decision.sequence for row in rows] == [1, 2, 3, 10, 12]
    assert [row.source for row in rows] == ["learned", "sum", "dropped", "default", None]
    assert [None if math.isnan(row.reward) else row.reward for row in rows] == \
        [1.0, 0.5, None, 0.0, None]
    assert join.counts == {"duplicate_rewards": 1, "late_rewards": 0, "orphan_rewards": 1}
    joined = JoinedDecisions.from_events(_events())
    assert joined.reward_sources == ["learned", "sum", None, "default", None]
    assert joined.counts["orphan_rewards"] == 1 and joined.counts["pending"] == 1


def test_a_window_keeps_the_most_recent_decisions_it_keeps() -> None:
    join = DecisionRewardJoin(keep=lambda event: event.shadow, max_decisions=1)
    for event in _events():
        join.add(event)
    assert [row.decision.decision_id for row in join.rows()] == ["d"]
    join = DecisionRewardJoin(keep=lambda event: event.shadow, max_decisions=2)
    for event in _events()[:-1]:
        join.add(event)
    assert [(row.decision.decision_id, row.source) for row in join.rows()] == [("b", "sum")]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_window_is_refused(bad) -> None:
    with pytest.raises((TypeError, ValueError), match="max_decisions"):
        DecisionRewardJoin(max_decisions=bad)


def test_the_service_evaluation_reads_the_same_join_as_the_export(tmp_path) -> None:
    """A decision id used again (after its first decision closed) is a second round for the
    export, replay and the service's evaluation alike (the evaluation had its own join,
    which merged the two rounds)."""
    from glmbandits.service.evaluation import ShadowEvaluator
    from glmbandits.service.events import Event
    from glmbandits.service.export import joined_decisions
    from glmbandits.service.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    p = np.array([0.5, 0.5])
    try:
        for i, decision_id in enumerate(["a", "b", "a", "c"]):
            store.append(Event("decision", decision_id, 2.0 * i, contexts=np.eye(2) * (i + 1),
                               action=1, probabilities=p, propensity=None, model_version=0,
                               policy_action=0))
            store.append(Event("reward", decision_id, 2.0 * i + 1, reward=float(i),
                               status="learned"))
        store.append(Event("decision", "live", 9.0, contexts=np.eye(2), action=1,
                           probabilities=p, propensity=0.5, model_version=0))
        store.commit()
        joined = joined_decisions(store)
        shadow = joined.policy_actions >= 0
        rewarded = [s is not None for s in joined.reward_sources]
        window = ShadowEvaluator(store, "bernoulli", "shadow").evaluate()["window"]
    finally:
        store.close()
    assert int(shadow.sum()) == 4
    assert window["shadow_decisions"] == 4
    assert window["rewarded_rounds"] == int(np.sum(shadow & rewarded)) == 4


def test_a_long_window_joins_as_the_whole_log_does_on_its_last_rows() -> None:
    """Thousands of decisions through a window of 3 (the forgotten rows are cut off the
    join's lists now and then): the same last rows as the whole join, and a reward for a
    forgotten decision is an orphan."""
    events: list = []
    for i in range(3000):
        events.append(_decision(2 * i + 1, f"d{i % 1500}"))  # every id used twice
        if i % 4:
            events.append(_reward(2 * i + 2, f"d{i % 1500}", 0.0, float(i), "learned"))
    # decision 2996 (id d1496, no reward yet) is forgotten by the window, not by the whole join
    events.append(_reward(7000, "d1496", 0.0, 5.0, "learned"))
    whole = DecisionRewardJoin().extend(events)
    window = DecisionRewardJoin(max_decisions=3).extend(events)
    assert len(window) == 3 and len(whole) == 3000
    last = [(r.decision.sequence, r.reward, r.source) for r in whole.rows()[-3:]]
    got = window.rows()
    for row, (sequence, reward, source) in zip(got, last):
        assert row.decision.sequence == sequence and row.source == source
        assert row.reward == reward or (math.isnan(row.reward) and math.isnan(reward))
    assert whole.counts["orphan_rewards"] == 0 and window.counts["orphan_rewards"] == 1
    assert whole.rows()[2996].reward == 5.0


def test_joined_decisions_without_policy_actions_export_as_live_rounds(tmp_path) -> None:
    """A JoinedDecisions built without ``policy_actions`` (its default, None) is written with
    a null policy_action column (live rounds) instead of failing on ``None < 0``."""
    pytest.importorskip("pyarrow")
    from dataclasses import replace

    from glmbandits.data import LoggedBanditData
    from glmbandits.data.event_export import write_joined_parquet

    live = [event for event in _events()[:4] if not getattr(event, "shadow", False)]
    joined = replace(JoinedDecisions.from_events(live), policy_actions=None)
    path = write_joined_parquet(joined, tmp_path / "joined.parquet")
    data = LoggedBanditData.from_parquet(path)
    assert data.rewards.tolist() == [1.0] and data.actions.tolist() == [1]
