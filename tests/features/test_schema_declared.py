"""What a service needs of a FeatureSchema (issue 24 item 2): a declared unit-ball factor
(``fit(norm_bound=)``), a fitted schema declared (``declaration(fitted=True)``), one
action's or context's features checked as transform checks them (``check_action``,
``check_context``), and refusals of a declaration that name its key."""

from __future__ import annotations

import json

import numpy as np
import pytest

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector)
from glmbandits.features.schema_io import DeclarationError

USERS = [
    {"country": "DE", "age": 34, "segments": ["sports", "news"]},
    {"country": "FR", "age": 51, "segments": []},
    {"country": "DE", "age": 22, "segments": ["news"]},
]
ITEMS = [{"topic": "news", "price": 1.0}, {"topic": "sports", "price": 3.0}]


def make_schema(**options) -> FeatureSchema:
    return FeatureSchema(
        context=[Categorical("country", vocabulary="fit"), Numeric("age", scale="fit"),
                 MultiCategorical("segments", vocabulary=["news", "sports"])],
        action=[Categorical("topic", vocabulary=["news", "sports"], unseen="refuse"),
                Numeric("price", range=(0, 100), missing=0.0)],
        interactions=[("context", "action")], **options)


# -- fit(norm_bound=) -------------------------------------------------------------------
def test_a_declared_norm_bound_is_the_factor_and_needs_no_data():
    declared = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
                             action=[Boolean("new")]).fit(norm_bound=4.0)
    assert declared.norm_bound_ == 4.0
    X = declared.transform({"age": 60}, [{"new": True}, {"new": False}])
    np.testing.assert_array_equal(X, np.array([[2.0, 1.0, 1.0], [2.0, 0.0, 1.0]]) / 4.0)
    fitted = FeatureSchema(context=[Numeric("age", scale=(40.0, 10.0))],
                           action=[Boolean("new")]).fit([{"age": 60}], [{"new": True}])
    assert fitted.norm_bound_ == pytest.approx(np.sqrt(6.0))  # fitted: the data's row norm
    assert fitted.fingerprint_ != declared.fingerprint_
    numpy_bound = FeatureSchema(action=[Boolean("new")]).fit(norm_bound=np.int64(4))
    assert numpy_bound.norm_bound_ == 4.0 and type(numpy_bound.norm_bound_) is float


def test_a_declared_norm_bound_still_fits_the_fitted_fields_on_data():
    schema = make_schema().fit(USERS, ITEMS, norm_bound=10.0)
    assert schema.norm_bound_ == 10.0
    assert schema.feature_names_out_[:3] == ["country=DE", "country=FR", "country=<other>"]
    with pytest.raises(TypeError, match=r"contexts must be a sequence of mappings"):
        make_schema().fit(None, ITEMS, norm_bound=10.0)  # the vocabulary needs data


def test_a_declared_norm_bound_replaces_the_fitted_one_and_round_trips():
    fitted = make_schema().fit(USERS, ITEMS)
    again = make_schema().fit(USERS, ITEMS, norm_bound=fitted.norm_bound_)
    assert again.fingerprint_ == fitted.fingerprint_
    assert again.transform(USERS[0], ITEMS).tobytes() == fitted.transform(USERS[0], ITEMS).tobytes()


@pytest.mark.parametrize("options, norm_bound, error, message", [
    ({"unit_ball": False}, 2.0, ValueError,
     r"norm_bound is the unit-ball factor; this schema has unit_ball=False, got norm_bound=2.0"),
    ({}, 0.0, ValueError, r"norm_bound must be a finite float > 0, got 0.0"),
    ({}, float("inf"), ValueError, r"norm_bound must be a finite float > 0, got inf"),
    ({}, float("nan"), ValueError, r"norm_bound must be a finite float > 0, got nan"),
    ({}, -1, ValueError, r"norm_bound must be a finite float > 0, got -1"),
    ({}, 10**400, ValueError, r"norm_bound must be a finite float > 0, got 1000"),
    ({}, "2", TypeError, r"norm_bound must be a float, got str"),
    ({}, True, TypeError, r"norm_bound must be a float, got bool"),
])
def test_a_bad_norm_bound_is_refused_and_changes_nothing(options, norm_bound, error, message):
    schema = make_schema(**options)
    with pytest.raises(error, match=r"^FeatureSchema.fit: " + message):
        schema.fit(USERS, ITEMS, norm_bound=norm_bound)
    assert not hasattr(schema, "fingerprint_")
    fitted = make_schema(**options).fit(USERS, ITEMS)
    before = fitted.fingerprint_
    with pytest.raises(error):
        fitted.fit(USERS, ITEMS, norm_bound=norm_bound)
    assert fitted.fingerprint_ == before


# -- declaration(fitted=True) -------------------------------------------------------------
def test_a_fitted_schema_declared_gives_the_same_columns_without_data():
    fitted = make_schema().fit(USERS, ITEMS)
    declaration = fitted.declaration(fitted=True)
    assert declaration["context"][0]["vocabulary"] == ["DE", "FR"]
    assert declaration["context"][1]["scale"] == [fitted.context[1].mean_,
                                                   fitted.context[1].scale_]
    assert fitted.declaration()["context"][0]["vocabulary"] == "fit"  # the default: as declared
    declared = FeatureSchema.from_declaration(json.loads(json.dumps(declaration)))
    assert not any(f.learns() for f in (*declared.context, *declared.action))
    declared.fit(norm_bound=fitted.norm_bound_)  # no data
    for user in USERS + [{"country": "IT", "age": 70, "segments": ["x"]}]:
        assert declared.transform(user, ITEMS).tobytes() == \
            fitted.transform(user, ITEMS).tobytes()
    assert declared.feature_names_out_ == fitted.feature_names_out_
    with pytest.raises(ValueError, match=r"fitted=True needs a fitted schema"):
        make_schema().declaration(fitted=True)


def test_a_vectors_fitted_scale_has_no_declared_form():
    schema = FeatureSchema(context=[Vector("e", length=2, scale="fit")], unit_ball=False)
    schema.fit([{"e": [0.0, 1.0]}, {"e": [2.0, 3.0]}])
    assert schema.declaration(fitted=True)["context"][0]["scale"] == "fit"
    assert schema.context[0].fitted_keys() == ["scale"]


# -- check_action, check_context ------------------------------------------------------------
def test_check_action_returns_plain_json_values():
    schema = make_schema(unknown="ignore").fit(USERS, ITEMS)
    sent = {"topic": np.str_("news"), "price": np.float64(2.5), "extra": (1, np.int64(2)),
            "flag": np.bool_(True), "gone": None}
    copy = schema.check_action(sent)
    assert copy == {"topic": "news", "price": 2.5, "extra": [1, 2], "flag": True, "gone": None}
    assert [type(v) for v in copy.values()] == [str, float, list, bool, type(None)]
    assert json.loads(json.dumps(copy)) == copy
    assert copy is not sent and sent["extra"] == (1, 2)  # the mapping given is not changed
    assert schema.check_context({"country": "IT", "age": 3, "segments": {"sports", "news"}}) == \
        {"country": "IT", "age": 3, "segments": ["news", "sports"]}
    assert schema.check_action({"topic": "news"}) == {"topic": "news"}  # price: missing=0.0


BAD_ACTIONS = [
    {"price": 1.0},  # topic missing, missing='refuse'
    {"topic": "golf", "price": 1.0},  # unseen='refuse'
    {"topic": 3.5, "price": 1.0},  # not a category
    {"topic": "news", "price": 101.0},  # out of range
    {"topic": "news", "price": "cheap"},  # not a number
    {"topic": "news", "price": float("nan")},
    {"topic": "news", "age": 3},  # a context feature
    {"topic": "news", "colour": "red"},  # unknown
    ["topic", "news"],  # not a mapping
]
BAD_CONTEXTS = [
    {"age": 3, "segments": []},  # country missing
    {"country": "DE", "age": True, "segments": []},
    {"country": "DE", "age": 3, "segments": "news"},
    {"country": "DE", "age": 3, "segments": [], "price": 2},
    None,
]


def _refusal(call):
    with pytest.raises((TypeError, ValueError)) as error:
        call()
    return type(error.value), str(error.value).split(": ", 1)[1]


@pytest.mark.parametrize("action", BAD_ACTIONS)
def test_check_action_refuses_what_transform_refuses_in_its_words(action):
    schema = make_schema().fit(USERS, ITEMS)
    kind, message = _refusal(lambda: schema.transform(USERS[0], [action]))
    assert _refusal(lambda: schema.check_action(action, where="actions[0]")) == (kind, message)
    named = _refusal(lambda: schema.check_action(action, where="action 'a17'"))
    assert named == (kind, message.replace("actions[0]", "action 'a17'"))
    assert "action 'a17'" in named[1]


@pytest.mark.parametrize("context", BAD_CONTEXTS)
def test_check_context_refuses_what_transform_refuses_in_its_words(context):
    schema = make_schema().fit(USERS, ITEMS)
    expected = _refusal(lambda: schema.transform(context, ITEMS))
    assert _refusal(lambda: schema.check_context(context, where="the context")) == expected


def test_check_needs_a_fitted_schema_and_json_values():
    with pytest.raises(ValueError, match=r"^FeatureSchema.check_action: call fit first"):
        make_schema().check_action({"topic": "news"})
    schema = make_schema(unknown="ignore").fit(USERS, ITEMS)
    with pytest.raises(TypeError, match=r"check_action: action.extra must be a JSON value .* "
                                        r"got object"):
        schema.check_action({"topic": "news", "extra": object()})
    with pytest.raises(ValueError, match=r"check_action: action.extra must be a finite number"):
        schema.check_action({"topic": "news", "extra": float("inf")})
    assert FeatureSchema(action=[Boolean("b")], unit_ball=False).fit().check_context(None) == {}


# -- refusals of a declaration name their key ---------------------------------------------
@pytest.mark.parametrize("declaration, error, key", [
    ({"context": [{"kind": "numeric", "name": "a=b"}]}, ValueError, "context[0] name"),
    ({"action": [{"kind": "numeric"}]}, TypeError, "action[0] name"),
    ({"action": [{"kind": "numeric", "name": 3}]}, TypeError, "action[0] name"),
    ({"context": [{"kind": "vector", "name": "e"}]}, TypeError, "context[0] length"),
    ({"context": [{"kind": "vector", "name": "e", "length": 0}]}, ValueError,
     "context[0] length"),
    ({"context": [{"kind": "numeric", "name": "a", "scale": [0, -1]}]}, ValueError,
     "context[0] scale"),
    ({"context": [{"kind": "numeric", "name": "a", "range": "x"}]}, TypeError,
     "context[0] range"),
    ({"context": [{"kind": "numeric", "name": "a"},
                  {"kind": "categorical", "name": "c", "vocabulary": ["x", "x"]}]}, ValueError,
     "context[1] vocabulary"),
    ({"context": [{"kind": "categorical", "name": "c", "buckets": 0}]}, ValueError,
     "context[0] buckets"),
    ({"context": [{"kind": "categorical", "name": "c", "buckets": 4, "missing": "other"}]},
     ValueError, "context[0] missing"),
    ({"context": [{"kind": "categorical", "name": "c", "buckets": 4, "unseen": "drop"}]},
     ValueError, "context[0] unseen"),
    ({"context": [{"kind": "numeric", "name": "a", "scal": "fit"}]}, ValueError,
     "context[0] scal"),
    ({"context": [{"kind": "text", "name": "a"}]}, ValueError, "context[0] kind"),
    ({"context": ["age"]}, TypeError, "context[0]"),
    ({"context": {"kind": "numeric"}}, TypeError, "context"),
    ({"context": [{"kind": "numeric", "name": "a"}], "action": [{"kind": "boolean",
                                                                  "name": "a"}]},
     ValueError, "action[0] name"),
    ({"action": [{"kind": "boolean", "name": "intercept"}]}, ValueError, "action[0] name"),
    ({"context": [{"kind": "numeric", "name": "a"}], "interactions": [["a", "a"], ["a", "b"]]},
     ValueError, "interactions[1]"),
    ({"interactions": [["context"]]}, TypeError, "interactions[0]"),
    ({"interactions": "context*action"}, TypeError, "interactions"),
    ({"intercept": "yes"}, TypeError, "intercept"),
    ({"unit_ball": 1}, TypeError, "unit_ball"),
    ({"unknown": "warn"}, ValueError, "unknown"),
    ({"format": 2}, ValueError, "format"),
    ({"colour": 2}, ValueError, "colour"),
    ([], TypeError, ""),
])
def test_a_refused_declaration_names_its_key(declaration, error, key):
    with pytest.raises(error) as raised:
        FeatureSchema.from_declaration(declaration)
    assert isinstance(raised.value, DeclarationError)
    assert raised.value.key == key
    assert str(raised.value).startswith("FeatureSchema")
