"""FeatureSchema under arbitrary requests (hypothesis): a refused call raises TypeError or
ValueError and changes nothing (state and buffer); an accepted one is finite."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector)

NAMES = ["age", "country", "seg", "vip", "emb", "url", "topic", "price", "other"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                    st.sampled_from(["DE", "FR", "news", "tech"]))
values = st.one_of(scalars, st.lists(scalars, max_size=4), st.dictionaries(st.text(max_size=2),
                                                                          scalars, max_size=2))
requests = st.dictionaries(st.sampled_from(NAMES), values, max_size=8)
GOOD_USER = {"age": 30, "country": "DE", "seg": ["a"], "vip": False, "emb": [0.0, 1.0],
             "url": "x"}
GOOD_ITEM = {"topic": "news", "price": 1.5}


def schema() -> FeatureSchema:
    return FeatureSchema(
        context=[Numeric("age", scale="fit", range=(0, 120)),
                 Categorical("country", vocabulary=["DE", "FR"], unseen="refuse"),
                 MultiCategorical("seg", vocabulary="fit", missing="zero"),
                 Boolean("vip", missing=False), Vector("emb", length=2, scale="fit"),
                 Categorical("url", buckets=8, missing="zero")],
        action=[Categorical("topic", vocabulary="fit"), Numeric("price", missing=0.0)],
        interactions=[("context", "action")]).fit(
            [GOOD_USER, {**GOOD_USER, "age": 50, "emb": [1.0, 0.0]}],
            [GOOD_ITEM, {"topic": "tech", "price": 0.5}])


FITTED = schema()


@settings(max_examples=150, deadline=None)
@given(context=requests, action=requests, mix=st.booleans())
def test_a_refused_transform_changes_nothing(context, action, mix):
    s = pickle.loads(pickle.dumps(FITTED))
    X = s.transform(GOOD_USER, [GOOD_ITEM, GOOD_ITEM])
    before, state = X.copy(), pickle.dumps(s)
    user = {**GOOD_USER, **context} if mix else context
    actions = [GOOD_ITEM, {**GOOD_ITEM, **action} if mix else action]
    try:
        Y = s.transform(user, actions)
    except (TypeError, ValueError):
        assert pickle.dumps(s) == state
        np.testing.assert_array_equal(X, before)
    else:
        assert Y is X and np.isfinite(Y).all()
        assert pickle.dumps(s) == state


@settings(max_examples=80, deadline=None)
@given(contexts=st.lists(requests, min_size=0, max_size=3),
       actions=st.lists(requests, min_size=0, max_size=3))
def test_a_refused_fit_changes_nothing(contexts, actions):
    s = pickle.loads(pickle.dumps(FITTED))
    state = pickle.dumps(s)
    try:
        s.fit([{**GOOD_USER, **c} for c in contexts], [{**GOOD_ITEM, **a} for a in actions])
    except (TypeError, ValueError):
        assert pickle.dumps(s) == state
    else:
        X = s.transform(GOOD_USER, [GOOD_ITEM])
        assert np.isfinite(X).all()
