"""glmbandits.features.fields: every kind of field, its missing and unseen rules, fitted
against declared vocabularies and scales, stable hashing, column names."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector, stable_hash)


def one(field, value, fit=()):
    """The row one context value gives, through a schema of that single field."""
    schema = FeatureSchema(context=[field], intercept=False, unit_ball=False)
    schema.fit([{field.name: v} for v in fit] or None)
    return schema.transform({} if value is None else {field.name: value}, [{}])[0].copy()


def test_numeric_declared_fitted_and_unscaled():
    assert one(Numeric("age"), 34).tolist() == [34.0]
    assert one(Numeric("age", scale=(40.0, 10.0)), 50).tolist() == [1.0]
    ages = [20, 30, 40, 70]
    expected = (50 - np.mean(ages)) / np.std(ages)
    assert one(Numeric("age", scale="fit"), 50, fit=ages)[0] == pytest.approx(expected, rel=1e-15)
    assert one(Numeric("age", scale="fit"), 9, fit=[3, 3])[0] == 6.0  # constant: centred only


def test_numeric_missing_rules():
    assert one(Numeric("age", scale=(40.0, 10.0), missing="zero"), None).tolist() == [0.0]
    assert one(Numeric("age", scale=(40.0, 10.0), missing=30), None).tolist() == [-1.0]
    with pytest.raises(ValueError, match=r"feature 'age' of the context is missing"):
        one(Numeric("age"), None)
    with pytest.raises(ValueError, match=r"must lie in \[0.0, 120.0\], got 150.0"):
        Numeric("age", range=(0, 120), missing=150)


def test_boolean_and_its_missing_rule():
    assert one(Boolean("premium"), True).tolist() == [1.0]
    assert one(Boolean("premium"), np.bool_(False)).tolist() == [0.0]
    assert one(Boolean("premium", missing=True), None).tolist() == [1.0]
    with pytest.raises(TypeError, match=r"feature 'premium' of the context must be a bool .*"
                                        r"got int 1"):
        one(Boolean("premium"), 1)


def test_categorical_declared_vocabulary_unseen_rules():
    vocabulary = ["DE", "FR"]
    assert one(Categorical("c", vocabulary=vocabulary), "FR").tolist() == [0, 1, 0]
    assert one(Categorical("c", vocabulary=vocabulary), "IT").tolist() == [0, 0, 1]  # other
    assert one(Categorical("c", vocabulary=vocabulary, unseen="zero"), "IT").tolist() == [0, 0]
    with pytest.raises(ValueError, match=r"feature 'c' of the context has the category 'IT', "
                                         r"which is not in its vocabulary \['DE', 'FR'\]"):
        one(Categorical("c", vocabulary=vocabulary, unseen="refuse"), "IT")
    assert one(Categorical("c", vocabulary=vocabulary, missing="other", unseen="zero"),
               None).tolist() == [0, 0, 1]
    assert one(Categorical("c", vocabulary=vocabulary, missing="zero"), None).tolist() == [0, 0, 0]


def test_categorical_fitted_vocabulary_is_sorted_ints_first():
    schema = FeatureSchema(context=[Categorical("c", vocabulary="fit")], intercept=False,
                           unit_ball=False)
    schema.fit([{"c": v} for v in ["b", 2, "a", np.int64(2), 1, "b"]])
    assert schema.feature_names_out_ == ["c=1", "c=2", "c=a", "c=b", "c=<other>"]
    assert schema.context[0].vocabulary_ == [1, 2, "a", "b"]
    assert schema.transform({"c": "2"}, [{}])[0].tolist() == [0, 0, 0, 0, 1]  # "2" is not 2


def test_fitted_and_declared_vocabulary_give_the_same_columns():
    fitted = FeatureSchema(context=[Categorical("c", vocabulary="fit")]).fit(
        [{"c": "x"}, {"c": "y"}])
    declared = FeatureSchema(context=[Categorical("c", vocabulary=["x", "y"])]).fit(
        [{"c": "x"}, {"c": "y"}])
    assert fitted.feature_names_out_ == declared.feature_names_out_
    for value in ("x", "y", "z"):
        assert np.array_equal(fitted.transform({"c": value}, [{}]),
                              declared.transform({"c": value}, [{}]))


def test_hashed_buckets_are_stable_across_machines():
    """Stored bucket indices: BLAKE2b (RFC 7693) is the same everywhere, unlike hash()."""
    assert stable_hash("url", "example.org/a") == 2009513255938271016
    digest = hashlib.blake2b(b"url\x00s:example.org/a", digest_size=8).digest()
    assert stable_hash("url", "example.org/a") == int.from_bytes(digest, "little")
    # computed independently with coreutils: printf 'url\0s:example.org/b' | b2sum -l 64
    expected = {"example.org/a": 808, "example.org/b": 797, "": 112, "ü": 189, 7: 362}
    field = Categorical("url", buckets=1024)
    for value, bucket in expected.items():
        assert stable_hash("url", value) % 1024 == bucket
        row = one(field, value)
        assert np.flatnonzero(row).tolist() == [bucket]
    assert stable_hash("url", "7") != stable_hash("url", 7)  # str and int told apart
    assert stable_hash("other", "example.org/a") % 1024 != 808  # the field's name salts it
    names = FeatureSchema(context=[field], intercept=False).fit([{"url": "x"}]).feature_names_out_
    assert names[:2] == ["url#0", "url#1"] and len(names) == 1024


def test_multi_categorical_vocabulary_and_buckets():
    field = MultiCategorical("segments", vocabulary=["news", "sports"])
    assert one(field, ["sports", "news", "sports"]).tolist() == [1, 1, 0]
    assert one(field, ("cooking",)).tolist() == [0, 0, 1]
    assert one(field, []).tolist() == [0, 0, 0]
    assert one(MultiCategorical("segments", vocabulary="fit"), {"b"},
               fit=[["b", "a"], ["c"]]).tolist() == [0, 1, 0, 0]
    hashed = one(MultiCategorical("tags", buckets=64), ["x", "y"])
    assert sorted(np.flatnonzero(hashed).tolist()) == sorted(
        {stable_hash("tags", "x") % 64, stable_hash("tags", "y") % 64})
    with pytest.raises(TypeError, match=r"feature 'segments' of the context must be a list of "
                                        r"categories .*got str 'news'"):
        one(field, "news")


def test_vector_length_scale_and_missing():
    assert one(Vector("e", length=3), [1, 2.5, -1]).tolist() == [1.0, 2.5, -1.0]
    fit = [[0.0, 2.0], [2.0, 2.0]]
    assert one(Vector("e", length=2, scale="fit"), [3.0, 5.0], fit=fit).tolist() == [2.0, 3.0]
    assert one(Vector("e", length=2, missing="zero"), None).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match=r"feature 'e' of the context must have length 3, got 2"):
        one(Vector("e", length=3), [1.0, 2.0])
    with pytest.raises(TypeError, match=r"feature 'e' of the context must be a sequence of 3 "
                                        r"numbers, got list \[1, 'x', 2\]"):
        one(Vector("e", length=3), [1, "x", 2])


def test_column_names_of_every_kind():
    schema = FeatureSchema(
        context=[Numeric("age"), Boolean("premium"), Categorical("country", vocabulary=["DE"]),
                 Categorical("url", buckets=2), MultiCategorical("seg", vocabulary=["a"],
                                                                 unseen="zero"),
                 Vector("e", length=2)],
        action=[Categorical("topic", vocabulary=["news"], unseen="zero")],
        interactions=[("country", "topic")])
    schema.fit([{"age": 1, "premium": True, "country": "DE", "url": "u", "seg": [],
                 "e": [0, 1]}], [{"topic": "news"}])
    assert schema.feature_names_out_ == [
        "age", "premium", "country=DE", "country=<other>", "url#0", "url#1", "seg=a", "e[0]",
        "e[1]", "topic=news", "country=DE*topic=news", "country=<other>*topic=news", "intercept"]
    assert schema.groups_ == ["age", "premium", "country", "url", "seg", "e", "topic",
                              "country*topic", "intercept"]
    assert [schema.group_of_column(j) for j in (0, 3, 10, 12)] == [
        "age", "country", "country*topic", "intercept"]


@pytest.mark.parametrize("make, error, message", [
    (lambda: Numeric("a=b"), ValueError, r"name must be a non-empty str without"),
    (lambda: Numeric(3), TypeError, r"name must be a str, got int 3"),
    (lambda: Numeric("a", scale=(0.0, 0.0)), ValueError, r"sd > 0"),
    (lambda: Numeric("a", scale="mean"), TypeError, r"scale must be None, 'fit' or a"),
    (lambda: Numeric("a", range=(2, 1)), ValueError, r"low <= high"),
    (lambda: Numeric("a", missing="mean"), ValueError,
     r"missing must be one of \['refuse', 'zero'\], got 'mean'"),
    (lambda: Numeric("a", missing=[1]), TypeError, r"missing must be 'refuse', 'zero' or a"),
    (lambda: Categorical("c"), ValueError, r"exactly one of vocabulary .* and buckets"),
    (lambda: Categorical("c", vocabulary=["a", "a"]), ValueError, r"must not repeat"),
    (lambda: Categorical("c", vocabulary=[1.5]), TypeError, r"categories must be str or int"),
    (lambda: Categorical("c", buckets=0), ValueError, r"buckets must be >= 1, got 0"),
    (lambda: Categorical("c", buckets=4, missing="other"), ValueError, r"needs a vocabulary"),
    (lambda: Categorical("c", vocabulary="fit", unseen="drop"), ValueError,
     r"unseen must be one of \['other', 'zero', 'refuse'\], got 'drop'"),
    (lambda: Vector("e", length=0), ValueError, r"length must be >= 1, got 0"),
    (lambda: Vector("e", length=2, scale=(0.0, 1.0)), ValueError, r"scale must be None or 'fit'"),
    (lambda: Boolean("b", missing=1), TypeError, r"missing must be 'refuse', 'zero' or a bool"),
])
def test_bad_declarations_are_refused_naming_the_parameter(make, error, message):
    with pytest.raises(error, match=message):
        make()
