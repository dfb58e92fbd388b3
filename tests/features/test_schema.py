"""glmbandits.features.FeatureSchema: a request of named features to (K, d) contexts,
against a by-hand encoding; the reused buffer; norms; contributions; bad input."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from glmbandits import UCBGLM, LinUCB
from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector, attach_schema)

USERS = [
    {"country": "DE", "device": "ios", "age": 34, "segments": ["sports", "news"]},
    {"country": "FR", "device": "web", "age": 51, "segments": []},
    {"country": "DE", "device": "android", "age": 22, "segments": ["news"]},
]
ITEMS = [{"topic": "news", "price": 1.0}, {"topic": "sports", "price": 3.0},
         {"topic": "tech", "price": 2.0}]


def make_schema(**options) -> FeatureSchema:
    return FeatureSchema(
        context=[Categorical("country", vocabulary="fit"),
                 Categorical("device", vocabulary=["ios", "android"], unseen="zero"),
                 Numeric("age", scale="fit", range=(0, 120)),
                 MultiCategorical("segments", vocabulary="fit")],
        action=[Categorical("topic", vocabulary="fit"), Numeric("price")],
        interactions=[("context", "action")], **options)


def by_hand(user: dict, items: list[dict]) -> np.ndarray:
    """The rows of make_schema(unit_ball=False), written out with numpy."""
    ages = np.array([u["age"] for u in USERS], dtype=float)
    z = np.concatenate([
        [user["country"] == "DE", user["country"] == "FR", user["country"] not in ("DE", "FR")],
        [user["device"] == "ios", user["device"] == "android"],
        [(user["age"] - ages.mean()) / ages.std()],
        [s in user["segments"] for s in ("news", "sports")]
        + [any(s not in ("news", "sports") for s in user["segments"])]]).astype(float)
    topics = ["news", "sports", "tech"]
    V = np.array([[i["topic"] == t for t in topics] + [i["topic"] not in topics, i["price"]]
                  for i in items], dtype=float)
    K = len(items)
    return np.hstack([np.tile(z, (K, 1)), V, np.einsum("a,kb->kab", z, V).reshape(K, -1),
                      np.ones((K, 1))])


def test_transform_equals_the_encoding_by_hand():
    schema = make_schema(unit_ball=False).fit(USERS, ITEMS)
    assert schema.n_features_out_ == 9 + 5 + 9 * 5 + 1
    for user in USERS + [{"country": "IT", "device": "tv", "age": 80, "segments": ["x"]}]:
        np.testing.assert_allclose(schema.transform(user, ITEMS), by_hand(user, ITEMS),
                                   rtol=1e-15, atol=0)


def test_unit_ball_is_one_factor_and_norms_stay_below_one():
    plain = make_schema(unit_ball=False).fit(USERS, ITEMS)
    scaled = make_schema().fit(USERS, ITEMS)
    assert scaled.norm_bound_ > 1
    norms = []
    for user in USERS:
        X = scaled.transform(user, ITEMS)
        np.testing.assert_allclose(X * scaled.norm_bound_, plain.transform(user, ITEMS),
                                   rtol=1e-14)
        norms += np.linalg.norm(X, axis=1).tolist()
    assert max(norms) <= 1.0 and max(norms) > 0.5


def test_the_buffer_is_reused_and_nothing_of_size_k_d_is_allocated():
    import tracemalloc

    schema = make_schema().fit(USERS, ITEMS)
    items = ITEMS * 40  # K = 120
    X = schema.transform(USERS[0], items)
    first = X.copy()
    assert schema.transform(USERS[1], items) is X  # the same object while K is unchanged
    assert not np.array_equal(X, first)  # overwritten by the next call
    small = schema.transform(USERS[0], ITEMS)
    assert np.shares_memory(small, X)
    X = schema.transform(USERS[0], items)
    tracemalloc.start()
    for user in USERS * 10:
        schema.transform(user, items)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < len(items) * schema.n_features_out_ * 8 / 4  # a quarter of one (K, d) array
    out = np.zeros_like(X)
    assert schema.transform(USERS[0], items, out=out) is out
    np.testing.assert_array_equal(out, schema.transform(USERS[0], items))


def test_group_contributions_add_up_to_the_score():
    schema = make_schema().fit(USERS, ITEMS)
    theta = np.random.default_rng(0).normal(size=schema.n_features_out_)
    X = schema.transform(USERS[0], ITEMS)
    single = schema.group_contributions(X[1], theta)
    assert list(single) == schema.groups_
    assert "country*topic" in single and "age*price" in single
    assert sum(single.values()) == pytest.approx(X[1] @ theta, rel=1e-12, abs=1e-12)
    rows = schema.group_contributions(X, theta)
    np.testing.assert_allclose(sum(rows.values()), X @ theta, rtol=1e-12, atol=1e-12)
    for g, values in rows.items():  # each group's columns, summed
        columns = [j for j in range(schema.n_features_out_) if schema.group_of_column(j) == g]
        np.testing.assert_allclose(values, X[:, columns] @ theta[columns], rtol=1e-12, atol=1e-15)


def test_policies_learn_from_the_schema_rows():
    schema = make_schema().fit(USERS, ITEMS)
    for cls in (UCBGLM, LinUCB):
        policy = attach_schema(cls(n_features=schema.n_features_out_, seed=0), schema)
        for t in range(30):
            X = policy.feature_schema_.transform(USERS[t % 3], ITEMS)
            a = policy.select(X)
            policy.update(X[a], float(ITEMS[a]["topic"] == "news"))
        assert policy.n_updates_ == 30


def test_unknown_keys_refused_by_default_or_ignored():
    schema = make_schema().fit(USERS, ITEMS)
    with pytest.raises(ValueError, match=r"the context has an unknown feature 'topic' \('topic' "
                                         r"is an action feature\); the schema's context features "
                                         r"are \['age', 'country', 'device', 'segments'\]"):
        schema.transform({**USERS[0], "topic": "news"}, ITEMS)
    with pytest.raises(ValueError, match=r"actions\[1\] has an unknown feature 'colour'"):
        schema.transform(USERS[0], [ITEMS[0], {**ITEMS[1], "colour": "red"}])
    lax = make_schema(unknown="ignore").fit(USERS, ITEMS)
    np.testing.assert_array_equal(lax.transform({**USERS[0], "x": 1}, ITEMS),
                                  schema.transform(USERS[0], ITEMS))


@pytest.mark.parametrize("context, actions, error, message", [
    ({**USERS[0], "age": "34"}, ITEMS, TypeError,
     r"feature 'age' of the context must be a number, got str '34'"),
    ({**USERS[0], "age": True}, ITEMS, TypeError, r"feature 'age' .* got bool True"),
    ({**USERS[0], "age": 130}, ITEMS, ValueError,
     r"feature 'age' of the context must lie in \[0.0, 120.0\], got 130.0"),
    ({**USERS[0], "age": float("nan")}, ITEMS, ValueError, r"'age' .* must be a finite number"),
    ({k: v for k, v in USERS[0].items() if k != "age"}, ITEMS, ValueError,
     r"feature 'age' of the context is missing \(missing='refuse'\); expected a number"),
    ({**USERS[0], "country": 3.5}, ITEMS, TypeError,
     r"feature 'country' of the context must be a category \(str or int\), got float 3.5"),
    (USERS[0], [ITEMS[0], {**ITEMS[1], "price": "cheap"}], TypeError,
     r"feature 'price' of actions\[1\] must be a number, got str 'cheap'"),
    (USERS[0], [ITEMS[0], {"price": 1.0}], ValueError,
     r"feature 'topic' of actions\[1\] is missing"),
    (USERS[0], [], ValueError, r"actions must hold at least one mapping, got none"),
    (USERS[0], ITEMS[0], TypeError, r"actions must be a sequence of mappings .* got dict"),
    (USERS[0], ["news"], TypeError, r"actions\[0\] must be a mapping .* got str"),
    ([1, 2], ITEMS, TypeError, r"the context must be a mapping .* got list"),
])
def test_bad_requests_name_the_feature_and_change_nothing(context, actions, error, message):
    schema = make_schema().fit(USERS, ITEMS)
    X = schema.transform(USERS[2], ITEMS)
    before, state = X.copy(), pickle.dumps(schema)
    with pytest.raises(error, match=message):
        schema.transform(context, actions)
    assert pickle.dumps(schema) == state
    np.testing.assert_array_equal(X, before)  # not even the buffer was written


def test_a_refused_fit_changes_nothing():
    schema = make_schema().fit(USERS, ITEMS)
    state = pickle.dumps(schema)
    fingerprint = schema.fingerprint_
    with pytest.raises(TypeError, match=r"feature 'age' of contexts\[1\] must be a number"):
        schema.fit([USERS[0], {**USERS[1], "age": "old"}], ITEMS)
    with pytest.raises(ValueError, match=r"actions must hold at least one mapping"):
        schema.fit(USERS, [])
    assert pickle.dumps(schema) == state and schema.fingerprint_ == fingerprint
    fresh = make_schema()
    with pytest.raises(ValueError, match=r"'age' of contexts\[0\] must lie in"):
        fresh.fit([{**USERS[0], "age": -1}], ITEMS)
    assert not hasattr(fresh, "n_features_out_")
    assert all(not hasattr(f, "vocabulary_") for f in fresh.context)


def test_a_declared_schema_without_unit_ball_fits_on_nothing():
    schema = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0)), Boolean("premium")],
                           action=[Categorical("topic", vocabulary=["a", "b"])],
                           unit_ball=False).fit()
    assert schema.transform({"age": 50, "premium": False},
                            [{"topic": "b"}]).tolist() == [[1.0, 0.0, 0.0, 1.0, 0.0, 1.0]]
    with pytest.raises(TypeError, match=r"contexts must be a sequence of mappings"):
        make_schema().fit(None, ITEMS)  # fitted fields need data


def test_attach_freezes_the_schema_and_refuses_another():
    schema = make_schema().fit(USERS, ITEMS)
    policy = attach_schema(LinUCB(n_features=schema.n_features_out_), schema)
    with pytest.raises(ValueError, match=r"attached to a model"):
        schema.fit(USERS, ITEMS)
    other = make_schema().fit(USERS[:1], ITEMS)
    if other.n_features_out_ == schema.n_features_out_:  # pragma: no cover - not this data
        pytest.fail("the test needs schemas of different widths")
    with pytest.raises(ValueError, match=r"the schema has \d+ columns, the policy's n_features "
                                         r"is \d+"):
        attach_schema(policy, other)
    same_width = FeatureSchema.from_declaration(schema.declaration()).fit(
        [{**u, "age": u["age"] + 1} for u in USERS], ITEMS)
    with pytest.raises(ValueError, match=r"trained under feature schema [0-9a-f]{12}, not "
                                         r"[0-9a-f]{12}: fitted.context\[2\].mean is"):
        attach_schema(policy, same_width)
    assert policy.feature_schema_ is schema
    twin = copy.deepcopy(schema)
    assert attach_schema(policy, twin).feature_schema_ is twin  # the same fingerprint
    with pytest.raises(TypeError, match=r"schema must be a FeatureSchema, got dict"):
        attach_schema(policy, {})
    with pytest.raises(ValueError, match=r"schema must be fitted"):
        attach_schema(policy, make_schema())


def test_declaration_round_trip_and_its_refusals():
    schema = FeatureSchema(context=[Vector("e", length=2), Boolean("b", missing=False)],
                           action=[MultiCategorical("t", buckets=8)],
                           interactions=[("e", "t")], intercept=False, unknown="ignore")
    declaration = schema.declaration()
    assert FeatureSchema.from_declaration(declaration).declaration() == declaration
    bad = {**declaration, "context": [{"kind": "numeric", "name": "a", "scal": "fit"}]}
    with pytest.raises(ValueError, match=r"context\[0\] \(a numeric field\) has an unknown key "
                                         r"'scal'"):
        FeatureSchema.from_declaration(bad)
    with pytest.raises(ValueError, match=r"context\[0\].kind must be one of"):
        FeatureSchema.from_declaration({"context": [{"kind": "text", "name": "a"}]})
    with pytest.raises(ValueError, match=r"format must be an int in \[1, 1\]"):
        FeatureSchema.from_declaration({**declaration, "format": 2})
    with pytest.raises(ValueError, match=r"unknown key 'interaction'"):
        FeatureSchema.from_declaration({"interaction": []})


@pytest.mark.parametrize("arguments, error, message", [
    ({"context": [Numeric("a"), Numeric("a")]}, ValueError, r"repeats the field name 'a'"),
    ({"context": [Numeric("a")], "action": [Boolean("a")]}, ValueError, r"repeats the field"),
    ({"context": [Numeric("intercept")]}, ValueError, r"may not be named 'intercept'"),
    ({"context": ["age"]}, TypeError, r"context\[0\] must be a field"),
    ({"context": [Numeric("a")], "interactions": [("a", "action")]}, ValueError,
     r"interactions\[0\] names 'action', which is no field and no group with fields"),
    ({"context": [Numeric("a")], "interactions": ["a*b"]}, TypeError, r"must be a pair"),
    ({"unknown": "warn"}, ValueError, r"unknown must be 'refuse' or 'ignore', got 'warn'"),
    ({"intercept": 1}, TypeError, r"intercept must be a bool, got int"),
])
def test_bad_schemas_are_refused(arguments, error, message):
    with pytest.raises(error, match=message):
        FeatureSchema(**arguments)


def test_one_action_or_many_give_the_same_bits():
    """The scalar path (one row) and the vectorised path (many rows) compute alike."""
    schema = make_schema().fit(USERS, ITEMS)
    many = ITEMS * 4  # K = 12: the numbers are checked at once
    X = schema.transform(USERS[0], many).copy()
    for k, item in enumerate(many):
        assert schema.transform(USERS[0], [item])[0].tobytes() == X[k].tobytes()
    numpy_values = {"country": np.str_("DE"), "device": "ios", "age": np.int64(34),
                    "segments": np.array(["sports", "news"])}
    assert schema.transform(numpy_values, ITEMS).tobytes() == \
        schema.transform(USERS[0], ITEMS).tobytes()
