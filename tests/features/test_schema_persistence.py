"""A feature schema saved inside the model file: exact round trip, no separation, a schema
change refused with the first difference named, crafted states refused."""

from __future__ import annotations

import copy
import io
import json
import pickle

import numpy as np
import pytest

from glmbandits import UCBGLM, LinUCB
from glmbandits.exceptions import ModelFileError
from glmbandits.features import (Boolean, Categorical, FeatureSchema, MultiCategorical, Numeric,
                                 Vector, attach_schema)
from glmbandits.persistence import load, save
from glmbandits.persistence.archive import unpack

USERS = [{"country": c, "age": a, "emb": [a / 10, 1.0 / a, 0.5], "seg": s, "url": f"u{a}",
          "vip": a > 40}
         for c, a, s in [("DE", 34, ["news"]), ("FR", 51, []), ("IT", 23, ["a", "b", "c", "d"]),
                         ("ES", 45, ["e"]), ("PL", 29, ["f", "g"]), ("NL", 38, ["h", "i", "j"]),
                         ("BE", 61, ["k"]), ("AT", 19, ["l", "m"]), ("CH", 70, ["n"])]]
ITEMS = [{"topic": t, "price": p} for t, p in [("news", 1.0), ("tech", 2.5), ("golf", 0.1)]]


def fitted_schema() -> FeatureSchema:
    return FeatureSchema(
        context=[Categorical("country", vocabulary="fit"), Numeric("age", scale="fit"),
                 Vector("emb", length=3, scale="fit"), MultiCategorical("seg", vocabulary="fit"),
                 Categorical("url", buckets=32), Boolean("vip")],
        action=[Categorical("topic", vocabulary="fit", unseen="zero"), Numeric("price")],
        interactions=[("context", "action"), ("country", "topic")]).fit(USERS, ITEMS)


def trained(tmp_path, cls=UCBGLM):
    schema = fitted_schema()
    policy = attach_schema(cls(n_features=schema.n_features_out_, seed=0), schema)
    for t in range(20):
        X = schema.transform(USERS[t % len(USERS)], ITEMS)
        a = policy.select(X)
        policy.update(X[a], float(a == t % 3))
    return policy, save(policy, tmp_path / "model.glmb")


@pytest.mark.parametrize("cls", [UCBGLM, LinUCB])
def test_save_load_round_trips_the_schema_exactly(tmp_path, cls):
    policy, path = trained(tmp_path, cls)
    schema = policy.feature_schema_
    back = load(path, schema=schema)
    loaded = back.feature_schema_
    assert loaded is not schema and loaded.fingerprint_ == schema.fingerprint_
    assert loaded.declaration() == schema.declaration()
    assert loaded.feature_names_out_ == schema.feature_names_out_
    assert loaded.groups_ == schema.groups_
    np.testing.assert_array_equal(loaded.column_groups_, schema.column_groups_)
    assert loaded.norm_bound_ == schema.norm_bound_
    for mine, theirs in zip(schema.context + schema.action, loaded.context + loaded.action):
        assert type(mine) is type(theirs) and mine.fitted_state() == theirs.fitted_state()
    assert loaded.context[1].mean_ == schema.context[1].mean_  # fitted scale, bit for bit
    assert loaded.context[0].vocabulary_ == schema.context[0].vocabulary_
    new_user = {"country": "XX", "age": 99, "emb": [1, 2, 3], "seg": ["zz"], "url": "new",
                "vip": True}
    for user in USERS + [new_user]:
        X = schema.transform(user, ITEMS).copy()
        Y = loaded.transform(user, ITEMS)
        assert X.tobytes() == Y.tobytes()
        assert back.select(Y) == policy.select(X)
    assert loaded.attached_  # still frozen to its model
    with pytest.raises(ValueError, match="attached to a model"):
        loaded.fit(USERS, ITEMS)


def test_the_schema_travels_inside_the_one_file(tmp_path):
    policy, path = trained(tmp_path)
    manifest, state, _ = unpack(path, 1 << 30)
    assert b'"module":"glmbandits.features.schema","qualname":"FeatureSchema"' in state
    assert b"vocabulary" in state and b"pickle" not in state
    assert load(path).feature_schema_.fingerprint_ == policy.feature_schema_.fingerprint_
    copied = pickle.loads(pickle.dumps(policy))
    assert copied.feature_schema_.fingerprint_ == policy.feature_schema_.fingerprint_
    assert copy.deepcopy(policy).feature_schema_.feature_names_out_ == \
        policy.feature_schema_.feature_names_out_


def test_a_schema_change_is_refused_naming_the_difference(tmp_path):
    policy, path = trained(tmp_path)
    declaration = policy.feature_schema_.declaration()
    refit = FeatureSchema.from_declaration(declaration).fit(USERS[:5], ITEMS)
    with pytest.raises(ModelFileError, match=r"cannot be loaded: FeatureSchema: the model was "
                                             r"trained under feature schema [0-9a-f]{12}, not "
                                             r"[0-9a-f]{12}: fitted.context\[0\].vocabulary is "):
        load(path, schema=refit)
    changed = {**declaration, "unknown": "ignore"}
    with pytest.raises(ModelFileError, match=r"declaration [0-9a-f]{12}, not [0-9a-f]{12}: "
                                             r"unknown is 'refuse' in the model, 'ignore' here"):
        load(path, schema=FeatureSchema.from_declaration(changed))  # not fitted: declarations
    unfitted = FeatureSchema.from_declaration(declaration)
    assert load(path, schema=unfitted).feature_schema_.fingerprint_ == \
        policy.feature_schema_.fingerprint_  # the declaration matches: the model's fitted one
    bare = save(LinUCB(n_features=3), tmp_path / "bare.glmb")
    with pytest.raises(ModelFileError, match=r"holds no feature schema; attach one"):
        load(bare, schema=unfitted)
    with pytest.raises(TypeError, match=r"schema must be a FeatureSchema, got dict"):
        load(path, schema=declaration)


def _tampered(tmp_path, path, edit):
    """The model file with its schema state edited (re-signed: a crafted file)."""
    import zipfile

    from glmbandits.persistence.archive import build_manifest, npz_bytes, pack, write_atomic
    from glmbandits.persistence.codec import dumps_json, loads_json

    manifest, state, npz = unpack(path, 1 << 30)
    tree = loads_json(state)
    node = next(v for k, v in tree["state"]["items"] if k == "feature_schema_")
    edit(node["state"])
    with zipfile.ZipFile(io.BytesIO(npz)) as archive:
        arrays = {n[:-4]: np.load(archive.open(n), allow_pickle=False)
                  for n in archive.namelist()}
    data = dumps_json(tree)
    new = build_manifest(manifest["policy"]["class"], manifest["policy"]["params"], data, arrays)
    return write_atomic(tmp_path / "crafted.glmb", pack(new, data, npz_bytes(arrays)))


def _item(node, key):
    return next(pair for pair in node["items"] if pair[0] == key)


@pytest.mark.parametrize("edit, message", [
    (lambda s: _item(s, "fingerprint").__setitem__(1, "0" * 64), r"the saved fingerprint"),
    (lambda s: _item(_item(s, "declaration")[1], "format").__setitem__(1, 99),
     r"format must be an int in \[1, 1\]"),
    (lambda s: _item(_item(s, "fitted")[1], "norm_bound").__setitem__(1, -1.0),
     r"norm_bound must be a finite float > 0"),
])
def test_crafted_schema_states_are_refused(tmp_path, edit, message):
    _, path = trained(tmp_path)
    crafted = _tampered(tmp_path, path, edit)
    with pytest.raises(ModelFileError, match=message):
        load(crafted)


def test_a_schema_of_another_width_is_refused_at_load(tmp_path):
    schema = FeatureSchema(context=[Numeric("a")], unit_ball=False).fit()
    policy = LinUCB(n_features=3)
    policy.feature_schema_ = schema  # bypassing attach_schema's check
    path = save(policy, tmp_path / "wide.glmb")
    with pytest.raises(ModelFileError, match=r"feature_schema_ must be a fitted FeatureSchema of "
                                             r"3 columns \(n_features\), got 2"):
        load(path)


def test_the_fingerprint_covers_declaration_and_fitted_state():
    a, b = fitted_schema(), fitted_schema()
    assert a.fingerprint_ == b.fingerprint_
    assert a.declaration_fingerprint_ == a.declaration_fingerprint()
    text = json.dumps(a.declaration())  # plain JSON values
    assert FeatureSchema.from_declaration(json.loads(text)).declaration_fingerprint() == \
        a.declaration_fingerprint_
    c = FeatureSchema.from_declaration(a.declaration()).fit(USERS[:4], ITEMS)
    assert c.declaration_fingerprint_ == a.declaration_fingerprint_
    assert c.fingerprint_ != a.fingerprint_
