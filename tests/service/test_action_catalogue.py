"""The action catalogue (glmbandits.service.catalogue): put, delete, the never-reused ids,
refusals that change nothing, and the replay of its logged events."""

from __future__ import annotations

import copy

import pytest

from glmbandits.data.event_records import Event
from glmbandits.features import Categorical, FeatureSchema, Numeric
from glmbandits.service.catalogue import (ActionCatalogue, RetiredActionError,
                                          UnknownActionError)


def _schema() -> FeatureSchema:
    return FeatureSchema(action=[Categorical("topic", vocabulary=["news", "sport"]),
                                 Numeric("length", range=(0.0, 10.0))],
                         unit_ball=False).fit()


def _events(catalogue_changes: list) -> list[Event]:
    return [Event("catalogue", None, float(seq), seq=seq, status=change.status,
                  request=change.request) for seq, change in enumerate(catalogue_changes, 1)]


def test_put_get_replace_and_delete() -> None:
    catalogue = ActionCatalogue(_schema())
    created = catalogue.put("a1", {"topic": "news", "length": 3})
    assert created is not None and created.created and created.status == "put"
    assert catalogue.get("a1") == {"topic": "news", "length": 3}
    assert catalogue.put("a1", {"topic": "news", "length": 3}) is None  # same: nothing logged
    replaced = catalogue.put("a1", {"topic": "sport", "length": 3})
    assert replaced is not None and not replaced.created
    catalogue.put("a2", {"topic": "news", "length": 1})
    assert [action_id for action_id, _ in catalogue.items()] == ["a1", "a2"]
    assert catalogue.features(["a2", "a1"])[1] == {"topic": "sport", "length": 3}
    deleted = catalogue.delete("a1")
    assert deleted is not None and deleted.status == "delete"
    assert catalogue.delete("a1") is None  # retired already: nothing logged
    assert "a1" not in catalogue and catalogue.retired == ["a1"] and len(catalogue) == 1


def test_a_retired_id_is_never_reused_and_unknown_ids_are_named() -> None:
    catalogue = ActionCatalogue(_schema())
    catalogue.put("a1", {"topic": "news", "length": 3})
    catalogue.delete("a1")
    with pytest.raises(RetiredActionError, match="never reused"):
        catalogue.put("a1", {"topic": "news", "length": 3})
    with pytest.raises(UnknownActionError, match=r"action_ids\[1\]: action 'a1' was deleted"):
        catalogue.put("a0", {"topic": "sport", "length": 2})
        catalogue.features(["a0", "a1"])
    with pytest.raises(UnknownActionError, match=r"action_ids\[0\]: no action 'zz'"):
        catalogue.features(["zz"])
    with pytest.raises(UnknownActionError, match="no action 'nope'"):
        catalogue.delete("nope")


@pytest.mark.parametrize("features, error, match", [
    ({"topic": "news", "length": 11.0}, ValueError, "length"),
    ({"topic": ["news"], "length": 1.0}, TypeError, "topic"),
    ({"topic": "news"}, ValueError, "length.*missing"),
    ({"topic": "news", "length": 1.0, "colour": "red"}, ValueError, "colour"),
    ("not a mapping", TypeError, "features must be a mapping"),
])
def test_refused_features_name_the_feature_and_change_nothing(features, error, match) -> None:
    catalogue = ActionCatalogue(_schema())
    catalogue.put("a1", {"topic": "news", "length": 3})
    before = copy.deepcopy((catalogue.items(), catalogue.retired))
    with pytest.raises(error, match=match):
        catalogue.put("a1", features)
    with pytest.raises(error, match=match):
        catalogue.put("a2", features)
    assert (catalogue.items(), catalogue.retired) == before


@pytest.mark.parametrize("action_id, error", [("", ValueError), ("a\x00", ValueError),
                                               ("x" * 257, ValueError), (3, TypeError)])
def test_ids_follow_the_decision_id_rule(action_id, error) -> None:
    catalogue = ActionCatalogue(_schema())
    with pytest.raises(error, match="action_id must"):
        catalogue.put(action_id, {"topic": "news", "length": 1})
    assert len(catalogue) == 0


def test_replaying_the_logged_changes_rebuilds_the_catalogue_exactly() -> None:
    catalogue = ActionCatalogue(_schema())
    changes = [catalogue.put("a1", {"topic": "news", "length": 3}),
               catalogue.put("a2", {"topic": "sport", "length": 5}),
               catalogue.put("a1", {"topic": "sport", "length": 1}),
               catalogue.delete("a2"),
               catalogue.put("a3", {"topic": "news", "length": 0})]
    events = _events(changes)
    others = [Event("reward", "d", 0.5, seq=100, reward=1.0, status="learned")]
    replayed = ActionCatalogue.replayed(others + events, _schema())
    assert replayed.items() == catalogue.items()
    assert replayed.retired == catalogue.retired == ["a2"]
    assert replayed.cursor == len(events)
    with pytest.raises(ValueError, match="not a catalogue change"):
        replayed.apply(others[0])


def test_a_full_catalogue_refuses_a_new_id_but_not_an_update_or_a_replay() -> None:
    from glmbandits.service.catalogue import CatalogueFullError

    catalogue = ActionCatalogue(_schema(), limit=2)
    changes = [catalogue.put("a1", {"topic": "news", "length": 1}),
               catalogue.put("a2", {"topic": "news", "length": 2})]
    with pytest.raises(CatalogueFullError, match="limit of 2 live actions.*'a3'"):
        catalogue.put("a3", {"topic": "news", "length": 3})
    assert [a for a, _ in catalogue.items()] == ["a1", "a2"]
    changes.append(catalogue.put("a2", {"topic": "sport", "length": 2}))  # an update fits
    changes.append(catalogue.delete("a1"))
    changes.append(catalogue.put("a3", {"topic": "news", "length": 3}))  # room again
    smaller = ActionCatalogue.replayed(_events(changes), _schema(), limit=1)  # never refused
    assert smaller.items() == catalogue.items() and len(smaller) == 2
    with pytest.raises(CatalogueFullError):
        smaller.put("a4", {"topic": "news", "length": 4})
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="limit must be an int >= 1"):
            ActionCatalogue(_schema(), limit=bad)
