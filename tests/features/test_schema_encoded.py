"""FeatureSchema.encode_actions / transform_encoded: the actions encoded once (a catalogue)
give bit for bit what transform gives on their features; refusals are transform's."""

from __future__ import annotations

import numpy as np
import pytest

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical,
                                 Numeric, Vector)
from glmbandits.service.catalogue import ActionCatalogue


def _schema(unit_ball: bool = True) -> FeatureSchema:
    return FeatureSchema(
        context=[Numeric("age", scale=(40.0, 15.0)), Categorical("country", buckets=8),
                 MultiCategorical("segments", vocabulary=["a", "b", "c"]), Boolean("app")],
        action=[Categorical("topic", vocabulary=["news", "sport"]), Numeric("hours"),
                Vector("embedding", length=3)],
        interactions=[("context", "topic"), ("app", "action")], unit_ball=unit_ball,
    ).fit(norm_bound=7.5) if unit_ball else FeatureSchema(
        context=[Numeric("age", scale=(40.0, 15.0))], action=[Boolean("fresh")],
        interactions=[("context", "action")], unit_ball=False).fit()


def _actions(rng: np.random.Generator, K: int) -> list[dict]:
    return [{"topic": ["news", "sport", "golf"][int(rng.integers(3))],
             "hours": float(rng.normal()), "embedding": rng.normal(size=3).tolist()}
            for _ in range(K)]


def _context(rng: np.random.Generator) -> dict:
    return {"age": float(rng.integers(18, 90)), "country": str(rng.integers(50)),
            "segments": ["a", "c"][: int(rng.integers(3))], "app": bool(rng.integers(2))}


@pytest.mark.parametrize("seed", range(5))
def test_encoded_rows_give_what_transform_gives_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    schema = _schema()
    actions = _actions(rng, int(rng.integers(1, 30)))
    rows = schema.encode_actions(actions)
    for _ in range(3):
        context = _context(rng)
        expected = schema.transform(context, actions).copy()
        order = rng.permutation(len(actions))
        got = schema.transform_encoded(context, rows[order])
        np.testing.assert_array_equal(got, expected[order])
        assert got.tobytes() == expected[order].tobytes()


def test_the_catalogue_gathers_the_rows_of_its_actions() -> None:
    rng = np.random.default_rng(7)
    schema = _schema()
    catalogue = ActionCatalogue(schema)
    actions = _actions(rng, 40)
    for i, features in enumerate(actions):
        catalogue.put(f"a{i}", features)
    for i in range(0, 40, 3):  # deletes free slots, new puts reuse them, updates overwrite
        catalogue.delete(f"a{i}")
    more = _actions(rng, 10)
    for j, features in enumerate(more):
        catalogue.put(f"b{j}", features)
    catalogue.put("a1", more[0])
    ids = [action_id for action_id, _ in catalogue.items()]
    ids = [ids[i] for i in rng.permutation(len(ids))]
    context = _context(rng)
    expected = schema.transform(context, catalogue.features(ids)).copy()
    assert schema.transform_encoded(context, catalogue.encoded(ids)).tobytes() == \
        expected.tobytes()
    replayed = ActionCatalogue(schema)  # the same rows from the same changes
    for action_id, features in catalogue.items():
        replayed.put(action_id, features)
    assert replayed.encoded(ids).tobytes() == catalogue.encoded(ids).tobytes()


def test_refusals_are_transforms_and_name_the_argument() -> None:
    schema = _schema(unit_ball=False)
    rows = schema.encode_actions([{"fresh": True}, {"fresh": False}])
    with pytest.raises(ValueError, match=r"action_rows must be a float64 ndarray of shape "
                                         r"\(K, 1\).*got \(2, 3\)"):
        schema.transform_encoded({"age": 3}, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="got \\(0, 1\\)"):
        schema.transform_encoded({"age": 3}, np.zeros((0, 1)))
    with pytest.raises(TypeError, match="feature 'age' of the context must be a number"):
        schema.transform_encoded({"age": "3"}, rows)
    with pytest.raises(TypeError, match=r"feature 'fresh' of actions\[1\] must be"):
        schema.encode_actions([{"fresh": True}, {"fresh": 2.5}])
    with pytest.raises(ValueError, match="call fit first"):
        FeatureSchema(action=[Boolean("fresh")]).encode_actions([{"fresh": True}])
